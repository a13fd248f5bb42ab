// The Markdown builder.
#include "ralp/reports/markdown.hpp"

#include <algorithm>
#include <stdexcept>

namespace ralp::reports {

std::string escape_cell(const std::string& cell) {
  std::string s;
  for (const char c : cell) {
    if (c == '|') {
      s += "\\|";
    } else if (c == '\n') {
      s += ' ';
    } else {
      s += c;
    }
  }
  return s;
}

void MarkdownDocument::separate() {
  if (!text_.empty()) text_ += "\n";
}

void MarkdownDocument::heading(int level, const std::string& text) {
  if (level < 1 || level > 6) throw std::invalid_argument("Markdown headings have levels 1 to 6");
  separate();
  text_ += std::string(static_cast<size_t>(level), '#') + " " + text + "\n";
}

void MarkdownDocument::paragraph(const std::string& text) {
  separate();
  text_ += text + "\n";
}

void MarkdownDocument::bullets(const std::vector<std::string>& items) {
  separate();
  for (const auto& i : items) text_ += "- " + i + "\n";
}

void MarkdownDocument::code_block(const std::string& text, const std::string& language) {
  separate();
  text_ += "```" + language + "\n" + text;
  if (!text.empty() && text.back() != '\n') text_ += "\n";
  text_ += "```\n";
}

void MarkdownDocument::image(const std::string& alt, const std::string& path) {
  separate();
  text_ += "![" + alt + "](" + path + ")\n";
}

void MarkdownDocument::table(const std::vector<std::string>& header,
                             const std::vector<std::vector<std::string>>& rows,
                             const std::vector<Align>& align) {
  separate();
  auto line = [&](const std::vector<std::string>& cells) {
    std::string s = "|";
    for (size_t c = 0; c < header.size(); ++c) {
      s += " " + (c < cells.size() ? escape_cell(cells[c]) : std::string()) + " |";
    }
    return s + "\n";
  };
  text_ += line(header);
  std::string rule = "|";
  for (size_t c = 0; c < header.size(); ++c) {
    rule += (c < align.size() && align[c] == Align::left) ? "---|" : "---:|";
  }
  text_ += rule + "\n";
  for (const auto& r : rows) text_ += line(r);
}

}  // namespace ralp::reports
