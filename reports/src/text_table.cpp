// Text table layout and number formatting for terminal output.
#include "ralp/reports/text_table.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace ralp::reports {

TextTable::TextTable(std::vector<Column> columns) : columns_(std::move(columns)) {}

void TextTable::add_row(std::vector<std::string> cells) {
  cells.resize(columns_.size());
  rows_.push_back(std::move(cells));
}

void TextTable::add_separator() { rows_.emplace_back(); }

void TextTable::print(std::ostream& out) const {
  std::vector<size_t> widths(columns_.size());
  for (size_t c = 0; c < columns_.size(); ++c) {
    widths[c] = columns_[c].header.size();
    for (const auto& row : rows_) {
      if (!row.empty()) widths[c] = std::max(widths[c], row[c].size());
    }
  }
  const auto line = [&](const std::vector<std::string>& cells) {
    std::string text;
    for (size_t c = 0; c < columns_.size(); ++c) {
      const std::string& cell = cells[c];
      const std::string pad(widths[c] - cell.size(), ' ');
      if (c > 0) text += "  ";
      text += columns_[c].align == Align::left ? cell + pad : pad + cell;
    }
    while (!text.empty() && text.back() == ' ') text.pop_back();
    out << text << '\n';
  };
  std::vector<std::string> headers;
  for (const auto& column : columns_) headers.push_back(column.header);
  line(headers);
  size_t total = 0;
  for (const size_t w : widths) total += w;
  const std::string rule(total + 2 * (widths.empty() ? 0 : widths.size() - 1), '-');
  out << rule << '\n';
  for (const auto& row : rows_) {
    if (row.empty()) {
      out << rule << '\n';
    } else {
      line(row);
    }
  }
}

std::string with_commas(long long value) {
  std::string digits = std::to_string(value < 0 ? -value : value);
  std::string out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return value < 0 ? "-" + out : out;
}

std::string fixed(double value, int decimals) {
  char buffer[64];
  std::snprintf(buffer, sizeof buffer, "%.*f", decimals, value);
  return buffer;
}

std::string si(double value, const char* unit) {
  static constexpr const char* kPrefixes[] = {"", "k", "M", "G", "T", "P", "E"};
  size_t index = 0;
  while (index + 1 < std::size(kPrefixes) && std::fabs(value) >= 1000.0) {
    value /= 1000.0;
    ++index;
  }
  char buffer[64];
  std::snprintf(buffer, sizeof buffer, "%.4g %s%s", value, kPrefixes[index], unit);
  return buffer;
}

}  // namespace ralp::reports
