// Pivot tables of records, and the writers every table of `ralp report pivot` and `ralp report
// summary` goes through.
#include "ralp/reports/pivot.hpp"

#include <algorithm>

#include "ralp/reports/markdown.hpp"

namespace ralp::reports {
namespace {

constexpr const char* kCellOption = "--rows and --columns";

std::string replace_all(std::string text, const std::string& from, const std::string& to) {
  for (size_t at = text.find(from); at != std::string::npos; at = text.find(from, at + to.size())) {
    text.replace(at, from.size(), to);
  }
  return text;
}

std::string csv_cell(const std::string& text) {
  if (text.find_first_of(",\"\n\r") == std::string::npos) return text;
  std::string out = "\"";
  out += replace_all(text, "\"", "\"\"");
  return out += '"';
}

std::string tsv_cell(const std::string& text) {
  std::string out;
  for (const char c : text) {
    switch (c) {
      case '\\':
        out += "\\\\";
        break;
      case '\t':
        out += "\\t";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\r':
        out += "\\r";
        break;
      default:
        out += c;
    }
  }
  return out;
}

// gnuplot reads "..." as one value and has no escape for '"'.
std::string dat_text(const std::string& text) {
  std::string out = "\"";
  out += replace_all(replace_all(text, "\"", "'"), "\n", " ");
  return out += '"';
}

std::string delimited(const ReportTable& table, char separator,
                      std::string (*cell)(const std::string&)) {
  std::string out;
  const auto line = [&](const std::vector<std::string>& cells) {
    for (size_t i = 0; i < cells.size(); ++i) {
      if (i > 0) out += separator;
      out += cell(cells[i]);
    }
    out += '\n';
  };
  line(table.header);
  for (const auto& row : table.rows) line(row);
  return out;
}

std::string dat(const ReportTable& table) {
  std::string out = "#";
  for (const std::string& h : table.header) {
    out += " " + (h.find(' ') == std::string::npos ? h : dat_text(h));
  }
  out += '\n';
  for (const auto& row : table.rows) {
    for (size_t i = 0; i < row.size(); ++i) {
      const bool text = i < table.text.size() && table.text[i];
      out += (i == 0 ? "" : " ") + (text ? dat_text(row[i]) : row[i]);
    }
    out += '\n';
  }
  return out;
}

// A column of the pivot: its heading, the field it shows and the axis values that pick its record.
struct PivotColumn {
  std::string heading;
  std::string id;  // the field column's id, for its format and divisor
  size_t field = 0;
  std::vector<std::pair<size_t, std::string>> pick;  // (column index, value)
};

std::vector<size_t> axis_columns(const RecordSet& set, const std::vector<std::string>& names,
                                 const std::string& option) {
  std::vector<size_t> out;
  for (const std::string& n : names) {
    const size_t c = axis_column(set, n, option);
    if (std::find(out.begin(), out.end(), c) != out.end()) {
      throw InputError("", option, "names " + n + " twice");
    }
    out.push_back(c);
  }
  return out;
}

std::string column_heading(const PivotSpec& spec, const std::vector<std::string>& key) {
  std::string out;
  for (size_t i = 0; i < key.size(); ++i) {
    const std::string& axis = spec.columns[i];
    const auto own = spec.style.headers.find(axis);
    const std::string tmpl = own != spec.style.headers.end() ? own->second
                             : axis == "workers"             ? "{} w"
                                                             : "{}";
    out += (i == 0 ? "" : ", ") + replace_all(tmpl, "{}", key[i]);
  }
  return out;
}

// The style's keys name columns the table has: row axes, --columns axes (headings only), fields.
void check_style(const PivotSpec& spec) {
  const auto known = [&](const std::string& key, bool heading) {
    const auto in = [&](const std::vector<std::string>& names) {
      return std::find(names.begin(), names.end(), key) != names.end();
    };
    const bool field = std::any_of(spec.fields.begin(), spec.fields.end(),
                                   [&](const FieldColumn& f) { return f.id == key; });
    return in(spec.rows) || (heading && in(spec.columns)) || field;
  };
  const auto check = [&](const std::string& key, const char* option, bool heading) {
    if (known(key, heading)) return;
    throw InputError("", option,
                     "names " + key + ", which is neither a --rows axis" +
                         (heading ? std::string(", a --columns axis") : std::string()) +
                         " nor a --field of this table");
  };
  for (const auto& [key, text] : spec.style.headers) check(key, "--header", true);
  for (const auto& [key, format] : spec.style.formats) check(key, "--format", false);
  for (const auto& [key, divisor] : spec.style.divisors) check(key, "--divide", false);
}

std::vector<PivotColumn> pivot_columns(const RecordSet& set, const PivotSpec& spec,
                                       const std::vector<size_t>& shown) {
  std::vector<PivotColumn> out;
  for (const FieldColumn& f : spec.fields) {
    PivotColumn c;
    c.id = f.id;
    c.field = field_column(set, f.field, "--field");
    for (const auto& [axis, value] : f.pick) {
      check_selection(set, {axis, {value}}, "--field");
      c.pick.emplace_back(*set.find(axis), value);
    }
    const auto own = spec.style.headers.find(f.id);
    c.heading = own != spec.style.headers.end() ? own->second : f.id;
    out.push_back(std::move(c));
  }
  if (spec.columns.empty()) return out;
  if (out.size() != 1) {
    throw InputError("", "--columns",
                     "takes one --field, given " + std::to_string(out.size()) +
                         "; without --columns each --field is a column");
  }
  const std::vector<size_t> axes = axis_columns(set, spec.columns, "--columns");
  const RecordGroups groups = group_records(set, shown, axes);
  std::vector<PivotColumn> columns;
  for (const auto& key : groups.keys) {
    PivotColumn c = out.front();
    c.heading = column_heading(spec, key);
    for (size_t i = 0; i < axes.size(); ++i) c.pick.emplace_back(axes[i], key[i]);
    columns.push_back(std::move(c));
  }
  return columns;
}

std::string describe_cell(const RecordSet& set, const std::vector<size_t>& rows,
                          const std::vector<std::string>& row_key, const PivotColumn& column) {
  std::string out;
  for (size_t i = 0; i < rows.size(); ++i) {
    out += (out.empty() ? "" : ", ") + set.columns[rows[i]].name + " " + row_key[i];
  }
  for (const auto& [axis, value] : column.pick) {
    out += (out.empty() ? "" : ", ") + set.columns[axis].name + " " + value;
  }
  return out.empty() ? "the only cell" : "the cell at " + out;
}

std::string number_text(const CellStyle& style, const std::string& id, double value) {
  const auto divisor = style.divisors.find(id);
  if (divisor != style.divisors.end()) value /= divisor->second;
  const auto own = style.formats.find(id);
  return own != style.formats.end() ? own->second(value) : style.format(value);
}

// The row's values of the row axes, numbers in their column's format where it has one.
std::vector<std::string> row_cells(const RecordSet& set, const PivotSpec& spec,
                                   const std::vector<size_t>& rows, size_t record) {
  std::vector<std::string> cells;
  for (size_t i = 0; i < rows.size(); ++i) {
    const RecordValue& v = set.records[record][rows[i]];
    const std::string& axis = spec.rows[i];
    const bool styled = spec.style.formats.count(axis) > 0 || spec.style.divisors.count(axis) > 0;
    if (styled && std::holds_alternative<double>(v)) {
      cells.push_back(number_text(spec.style, axis, std::get<double>(v)));
    } else {
      cells.push_back(value_text(v));
    }
  }
  return cells;
}

struct PivotContext {
  const RecordSet& set;
  const PivotSpec& spec;
  std::vector<size_t> rows;
  std::vector<size_t> base;  // where the reference records are found
};

// The cell of one row's records in one column; `text` is set when it shows text.
std::string pivot_cell(const PivotContext& context, const std::vector<std::string>& row_key,
                       const std::vector<size_t>& members, const PivotColumn& column, bool& text) {
  const RecordSet& set = context.set;
  std::vector<size_t> matches;
  for (const size_t r : members) {
    const bool picked = std::all_of(column.pick.begin(), column.pick.end(), [&](const auto& p) {
      return value_text(set.records[r][p.first]) == p.second;
    });
    if (picked) matches.push_back(r);
  }
  if (matches.size() > 1) {
    throw InputError("", kCellOption,
                     "leave " + std::to_string(matches.size()) + " records in " +
                         describe_cell(set, context.rows, row_key, column) + ", " +
                         how_they_differ(set, matches, column.field) +
                         "; add an axis to --rows or --columns, or pick one with --where");
  }
  if (matches.empty()) return context.spec.missing;
  const RecordValue& value = set.records[matches[0]][column.field];
  if (const auto* t = std::get_if<std::string>(&value)) {
    if (context.spec.reference) {
      throw InputError("", reference_option(*context.spec.reference),
                       "cannot compare " + set.columns[column.field].name + ", which holds text");
    }
    text = true;
    return *t;
  }
  if (!std::holds_alternative<double>(value)) return context.spec.missing;
  double number = std::get<double>(value);
  if (const auto& ref = context.spec.reference) {
    std::vector<size_t> key = context.rows;
    for (const auto& p : column.pick) key.push_back(p.first);
    key.push_back(*set.find(ref->axis));
    const auto compared = versus_reference(set, matches[0], column.field, *ref, key, context.base,
                                           reference_option(*ref));
    if (!compared) return context.spec.missing;
    number = *compared;
  }
  return number_text(context.spec.style, column.id, number);
}

}  // namespace

std::string render_table(const ReportTable& table, TableFormat format) {
  switch (format) {
    case TableFormat::markdown: {
      std::vector<MarkdownDocument::Align> align;
      for (size_t i = 0; i < table.header.size(); ++i) {
        const bool text = i < table.text.size() && table.text[i];
        align.push_back(text ? MarkdownDocument::Align::left : MarkdownDocument::Align::right);
      }
      MarkdownDocument doc;
      doc.table(table.header, table.rows, align);
      return doc.text();
    }
    case TableFormat::csv:
      return delimited(table, ',', csv_cell);
    case TableFormat::tsv:
      return delimited(table, '\t', tsv_cell);
    case TableFormat::dat:
      return dat(table);
  }
  return "";
}

std::optional<std::pair<std::string, std::string>> split_keyed(const std::string& text) {
  int depth = 0;
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '[') ++depth;
    if (text[i] == ']' && depth > 0) --depth;
    if (text[i] == '=' && depth == 0) return std::make_pair(text.substr(0, i), text.substr(i + 1));
  }
  return std::nullopt;
}

FieldColumn parse_field_column(const std::string& text, const std::string& option) {
  const auto fail = [&](const std::string& why) {
    return InputError("", option,
                      "is \"" + text + "\", " + why + ", expected FIELD or FIELD[AXIS=VALUE,...]");
  };
  FieldColumn f{text, text, {}};
  const size_t open = text.find('[');
  if (open == std::string::npos) {
    if (text.empty()) throw fail("which is empty");
    return f;
  }
  if (open == 0) throw fail("which names no field");
  if (text.back() != ']') throw fail("whose '[' is not closed at its end");
  f.field = text.substr(0, open);
  const std::string inside = text.substr(open + 1, text.size() - open - 2);
  size_t start = 0;
  while (start <= inside.size()) {
    size_t comma = inside.find(',', start);
    if (comma == std::string::npos) comma = inside.size();
    const std::string pair = inside.substr(start, comma - start);
    const size_t equals = pair.find('=');
    if (equals == std::string::npos || equals == 0 || equals + 1 == pair.size()) {
      throw fail("whose \"" + pair + "\" is not AXIS=VALUE");
    }
    f.pick.emplace_back(pair.substr(0, equals), pair.substr(equals + 1));
    start = comma + 1;
  }
  return f;
}

ReportTable pivot_table(const RecordSet& set, const PivotSpec& spec) {
  if (spec.fields.empty()) throw InputError("", "--field", "is missing, expected a field");
  PivotContext context{set, spec, axis_columns(set, spec.rows, "--rows"), {}};
  for (const std::string& c : spec.columns) {
    if (std::find(spec.rows.begin(), spec.rows.end(), c) != spec.rows.end()) {
      throw InputError("", "--columns", "names " + c + ", which --rows names too");
    }
  }
  for (const Selection& w : spec.where) check_selection(set, w, "--where");
  if (spec.reference) check_reference(set, *spec.reference);
  check_style(spec);
  context.base = selected_records(set, spec.where, spec.reference ? spec.reference->axis : "");
  const std::vector<size_t> shown = shown_records(set, spec.where, spec.reference);
  const std::vector<PivotColumn> columns = pivot_columns(set, spec, shown);

  ReportTable table;
  for (size_t i = 0; i < spec.rows.size(); ++i) {
    const auto own = spec.style.headers.find(spec.rows[i]);
    table.header.push_back(own != spec.style.headers.end() ? own->second : spec.rows[i]);
    table.text.push_back(set.columns[context.rows[i]].text);
  }
  for (const PivotColumn& c : columns) {
    table.header.push_back(c.heading);
    table.text.push_back(false);
  }
  const RecordGroups groups = group_records(set, shown, context.rows);
  for (size_t g = 0; g < groups.keys.size(); ++g) {
    std::vector<std::string> cells = row_cells(set, spec, context.rows, groups.members[g].front());
    for (size_t c = 0; c < columns.size(); ++c) {
      bool text = false;
      cells.push_back(pivot_cell(context, groups.keys[g], groups.members[g], columns[c], text));
      if (text) table.text[spec.rows.size() + c] = true;
    }
    table.rows.push_back(std::move(cells));
  }
  return table;
}

}  // namespace ralp::reports
