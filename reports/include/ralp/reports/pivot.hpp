// `ralp report pivot` and `ralp report summary`: tables of the fields of records (sweep results,
// table lines), rows and columns chosen from their axes, and statistics of one field along an
// axis; printed as Markdown, CSV, TSV or gnuplot data.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "ralp/reports/number_format.hpp"
#include "ralp/reports/records.hpp"

namespace ralp::reports {

// A table ready to print: a header and rows of cells; a column of text is left-aligned.
struct ReportTable {
  std::vector<std::string> header;
  std::vector<bool> text;  // per column
  std::vector<std::vector<std::string>> rows;
  friend bool operator==(const ReportTable&, const ReportTable&) = default;
};

enum class TableFormat { markdown, csv, tsv, dat };
// markdown: "| a | b |" lines under a rule, text columns left-aligned; csv: RFC 4180; tsv: tabs,
// with \t, \n, \r and \\ escaped as jq's @tsv does; dat: gnuplot data, the header as one "# "
// comment line, values separated by spaces, text in double quotes.
std::string render_table(const ReportTable& table, TableFormat format);

// A field column of a pivot without --columns: "ps0_in", or "ps0_in[strategy=ps]", whose cell in
// each row is the field of the row's record with strategy ps.
struct FieldColumn {
  std::string id;  // as written; names the column in --header, --format and --divide
  std::string field;
  std::vector<std::pair<std::string, std::string>> pick;  // (axis, value)
  friend bool operator==(const FieldColumn&, const FieldColumn&) = default;
};
// Throws InputError naming `option` for an empty field, an unclosed '[' or a pick without '='.
FieldColumn parse_field_column(const std::string& text, const std::string& option);

// "NAME=TEXT" split at the first '=' outside [...]; nullopt when there is none.
std::optional<std::pair<std::string, std::string>> split_keyed(const std::string& text);

// How cells show, by row axis, --columns axis or field column id: headings (for a --columns axis
// a template in which {} stands for the value; "{} w" for workers by default), number formats
// and divisors (a number is divided before it is formatted).
struct CellStyle {
  std::map<std::string, std::string> headers;
  NumberFormat format;  // for numbers without a format of their own
  std::map<std::string, NumberFormat> formats;
  std::map<std::string, double> divisors;
};

// One field's value by rows (each row a value of the rows' axes, in the order they first appear)
// and columns (each a value of the columns' axes, likewise), or several fields side by side.
struct PivotSpec {
  std::vector<FieldColumn> fields;  // exactly one with `columns`; else one column each
  std::vector<std::string> rows;
  std::vector<std::string> columns;
  std::vector<Selection> where;
  std::optional<Reference> reference;  // records at the reference's value are left out
  CellStyle style;
  std::string missing = "-";  // a cell no record fills
};

// Throws InputError naming the option at fault: an unknown axis or field (listing those there
// are), a selection value no record has, a style for a column the table lacks, a reference to a
// text field, and a cell that several records fill (naming the axes they differ in).
ReportTable pivot_table(const RecordSet& set, const PivotSpec& spec);

// A statistic of the field over a row's records, ordered by their --along values:
//   count, min, max, absmax (the largest absolute value), first and last (the values at the first
//   and last --along value), argmin and argmax (the --along value of the smallest and the largest),
//   count OP T (how many compare so with T), first OP T (the first --along value where the field
//   compares so with T; "never"), all OP T (every --along value where it does; "none");
//   OP one of >=, >, <=, <.
struct Statistic {
  enum class Kind { count, min, max, absmax, first, last, argmin, argmax, all };
  Kind kind = Kind::count;
  std::optional<std::string> op;  // count, first and all with a condition
  double threshold = 0.0;
  std::string threshold_text;  // as written, for headings
  std::string text;            // the whole statistic as written
  friend bool operator==(const Statistic&, const Statistic&) = default;
};
// Throws InputError naming `option`, listing the statistics, for an unknown one.
Statistic parse_statistic(const std::string& text, const std::string& option);

struct SummarySpec {
  std::string field;  // empty only when every statistic is a plain count
  std::string label;  // names the field in headings; the field's name when empty
  std::vector<std::string> rows;
  std::vector<std::string> along;
  std::vector<Statistic> statistics;
  std::vector<Selection> where;
  std::optional<Reference> reference;
  std::map<std::string, std::string> headers;  // by row axis
  NumberFormat format;                         // values and thresholds
};

// One row per value of the rows' axes (one row in all without them), one column per statistic.
// Throws InputError as pivot_table does, and for a text field or a statistic that needs --along
// without it.
ReportTable summary_table(const RecordSet& set, const SummarySpec& spec);

}  // namespace ralp::reports
