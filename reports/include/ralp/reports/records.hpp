// Records for `ralp report pivot` and `ralp report summary`: one per strategy result of a sweep's
// points, or one per line of a CSV or TSV table, each a value per named column, and the
// selections (--where, --relative-to) that pick some of them.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "ralp/reports/results_report.hpp"

namespace ralp::reports {

// A value of a record: absent, a number or text.
using RecordValue = std::variant<std::monostate, double, std::string>;

// How an axis shows a value and --where matches it: "8", "0.5", "ralp"; "" when absent.
std::string value_text(const RecordValue& value);

struct RecordColumn {
  std::string name;
  bool axis = false;   // may make rows and columns, and be selected on
  bool field = false;  // may fill cells
  bool text = false;   // holds text; a column without it holds numbers
};

struct RecordSet {
  std::vector<RecordColumn> columns;
  std::vector<std::vector<RecordValue>> records;  // one value per column, in input order

  [[nodiscard]] std::optional<size_t> find(std::string_view name) const;
  // The names of the axes (or of the fields), in column order.
  [[nodiscard]] std::vector<std::string> names(bool axes) const;
  // Every text the axis takes, in the order it first appears.
  [[nodiscard]] std::vector<std::string> values_of(size_t column) const;
};

// A sweep's records: per point and strategy, the point's values of the sweep's axes (all but
// "strategies"), then strategy, kind and cut (axes), then the result's numbers (fields):
// step_time_mean_s, step_time_median_s, step_time_spread_s, images_per_s, speedup_vs_ps,
// speedup_vs_allreduce, ps_busy_s, worker_mean.compute_s, worker_mean.communication_s,
// worker_mean.waiting_s.
RecordSet sweep_records(const SweepDocument& sweep);

// A table's records: its first line names the columns, each further line is a record; every
// column is an axis and a field. A column whose every non-empty value is a number holds numbers,
// any other text. With `separator` '\t', values are unescaped as jq's @tsv escapes them (\t, \n,
// \r, \\); with ',', quoted as in RFC 4180. Empty lines are skipped. Throws InputError naming
// `file` and the line for a line whose number of values differs from the header's, and for a
// header naming a column twice.
RecordSet table_records(std::string_view text, char separator, const std::string& file);

// Appends `from` to `into`, with the file axis `file_axis` set to `label` on each of its records.
// Columns are matched by name; a column that holds numbers in one and text in the other holds
// text. Throws InputError naming `file` and --file-axis when `from` has a column `file_axis`.
void append_records(RecordSet& into, const RecordSet& from, const std::string& file_axis,
                    const std::string& label, const std::string& file);

// An input file, with the value its records take on the file axis.
struct RecordInput {
  std::string label;  // the path itself when none is given
  std::string path;
};
// "vgg16=data/speedup-vgg16/sweep.json" labels the file vgg16; a text whose part before its first
// '=' is empty or holds a '/' is a path alone.
RecordInput parse_record_input(const std::string& text);

// Reads each input in order: a sweep's sweep.json (`ralp sweep`), or a table named *.csv or *.tsv
// (a sweep's sweep.csv among them). The file axis comes first. Throws InputError naming the file
// for one that cannot be read or is neither a sweep nor a table.
RecordSet read_records(const std::vector<RecordInput>& inputs, const std::string& file_axis);

// --where AXIS=V1,V2: records whose AXIS is one of the values.
struct Selection {
  std::string axis;
  std::vector<std::string> values;
};
// --relative-to AXIS=VALUE (ratio) and --difference-from AXIS=VALUE: each value against the
// record's that differs from it only in having AXIS = VALUE.
struct Reference {
  std::string axis;
  std::string value;
  bool ratio = true;  // value / reference, else value - reference
};
// "AXIS=VALUE[,VALUE...]". Throws InputError naming `option` for text without '=', an empty axis
// or an empty value.
Selection parse_selection(const std::string& text, const std::string& option);
Reference parse_reference(const std::string& text, const std::string& option, bool ratio);

// The checks every option naming columns goes through. Each throws InputError naming `option`:
// for a name that is not an axis (a field) of the records, listing those there are; for a
// selection value the axis never takes, listing those it does.
size_t axis_column(const RecordSet& set, const std::string& name, const std::string& option);
size_t field_column(const RecordSet& set, const std::string& name, const std::string& option);
void check_selection(const RecordSet& set, const Selection& selection, const std::string& option);

// --relative-to and --difference-from: the axis exists and takes the value.
void check_reference(const RecordSet& set, const Reference& reference);
// The option a reference came from: "--relative-to" or "--difference-from".
std::string reference_option(const Reference& reference);

// The records that pass every selection, in input order, leaving out the selections on
// `except` (the reference's axis, whose reference records the selections must not remove).
std::vector<size_t> selected_records(const RecordSet& set, const std::vector<Selection>& where,
                                     const std::string& except = "");

// The records a table shows: those that pass every selection, less those at the reference's value.
std::vector<size_t> shown_records(const RecordSet& set, const std::vector<Selection>& where,
                                  const std::optional<Reference>& reference);

// The texts of a record's values on `columns`.
std::vector<std::string> key_of(const RecordSet& set, size_t record,
                                const std::vector<size_t>& columns);

// `records` grouped by their texts on `columns`: the keys in the order they first appear, and
// each key's records in input order. Without columns, one group holds every record (none when
// there are no records).
struct RecordGroups {
  std::vector<std::vector<std::string>> keys;
  std::vector<std::vector<size_t>> members;
};
RecordGroups group_records(const RecordSet& set, const std::vector<size_t>& records,
                           const std::vector<size_t>& columns);

// The axes other than `shown` (the field whose values they are) on which some of `records`
// differ, each with its values there: "strategy (ps, ralp)"; an absent value shows as (none).
std::vector<std::string> differing_axes(const RecordSet& set, const std::vector<size_t>& records,
                                        size_t shown);
// For error messages: "which differ in strategy (ps, ralp)", or "alike on every axis".
std::string how_they_differ(const RecordSet& set, const std::vector<size_t>& records, size_t shown);

// A record's number in `field` against its reference: among `candidates`, the one record that
// has the reference's value on its axis and `record`'s values on each of `key` (column indices);
// nullopt when there is none or `record` has no number there. Throws InputError naming
// `option` when several records match (an axis that tells them apart is missing from `key`).
std::optional<double> versus_reference(const RecordSet& set, size_t record, size_t field,
                                       const Reference& reference, const std::vector<size_t>& key,
                                       const std::vector<size_t>& candidates,
                                       const std::string& option);

}  // namespace ralp::reports
