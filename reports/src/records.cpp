// Records from sweeps and tables, and the selections that pick them.
#include "ralp/reports/records.hpp"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <set>

#include "ralp/reports/number_format.hpp"
#include "ralp/spec/scenario.hpp"

namespace ralp::reports {
namespace {

// An error message lists at most this many of an axis's values.
constexpr size_t kListedValues = 20;

std::string joined(const std::vector<std::string>& items, size_t limit = kListedValues) {
  std::string out;
  for (size_t i = 0; i < items.size() && i < limit; ++i) out += (i == 0 ? "" : ", ") + items[i];
  if (items.size() > limit) out += ", ... (" + std::to_string(items.size()) + " in all)";
  return out;
}

std::optional<double> parse_number(std::string_view text) {
  double value = 0.0;
  const char* end = text.data() + text.size();
  const auto [ptr, ec] = std::from_chars(text.data(), end, value);
  if (text.empty() || ec != std::errc() || ptr != end) return std::nullopt;
  return value;
}

// A column holding both numbers and text holds text: its numbers become their text.
void settle_types(RecordSet& set) {
  for (size_t c = 0; c < set.columns.size(); ++c) {
    bool text = false;
    for (const auto& record : set.records)
      text = text || std::holds_alternative<std::string>(record[c]);
    set.columns[c].text = text;
    if (!text) continue;
    for (auto& record : set.records) {
      if (std::holds_alternative<double>(record[c])) record[c] = value_text(record[c]);
    }
  }
}

RecordValue json_value(const Json& value) {
  if (value.is_number()) return value.get<double>();
  if (value.is_string()) return value.get<std::string>();
  return std::monostate{};
}

RecordValue optional_number(const std::optional<double>& value) {
  if (value) return *value;
  return std::monostate{};
}

std::vector<std::string> split_tsv(std::string_view line) {
  std::vector<std::string> out(1);
  for (size_t i = 0; i < line.size(); ++i) {
    const char c = line[i];
    if (c == '\t') {
      out.emplace_back();
    } else if (c == '\\' && i + 1 < line.size()) {
      const char next = line[++i];
      out.back() += next == 't' ? '\t' : next == 'n' ? '\n' : next == 'r' ? '\r' : next;
    } else {
      out.back() += c;
    }
  }
  return out;
}

std::vector<std::string> split_csv(std::string_view line) {
  std::vector<std::string> out(1);
  bool quoted = false;
  for (size_t i = 0; i < line.size(); ++i) {
    const char c = line[i];
    if (quoted && c == '"' && i + 1 < line.size() && line[i + 1] == '"') {
      out.back() += '"';
      ++i;
    } else if (c == '"') {
      quoted = !quoted;
    } else if (c == ',' && !quoted) {
      out.emplace_back();
    } else {
      out.back() += c;
    }
  }
  return out;
}

std::string read_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError(path, "", "cannot be read (missing or not a file)");
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (in.bad()) throw InputError(path, "", "cannot be read");
  return text;
}

std::string lower_extension(const std::string& path) {
  std::string ext = std::filesystem::path(path).extension().string();
  std::transform(ext.begin(), ext.end(), ext.begin(),
                 [](unsigned char c) { return std::tolower(c); });
  return ext;
}

std::string describe_kind(ResultKind kind) {
  switch (kind) {
    case ResultKind::simulate:
      return "`ralp simulate --json`";
    case ResultKind::sweep:
      return "`ralp sweep`";
    case ResultKind::place:
      return "`ralp place --json`";
    case ResultKind::validate:
      return "`ralp validate`";
  }
  return "another command";
}

// The column of `name` when it exists with the wanted role; else an error listing those there are.
size_t column_with_role(const RecordSet& set, const std::string& name, const std::string& option,
                        bool axis) {
  const auto c = set.find(name);
  if (c && (axis ? set.columns[*c].axis : set.columns[*c].field)) return *c;
  const std::vector<std::string> names = set.names(axis);
  const char* role = axis ? "an axis" : "a field";
  throw InputError("", option,
                   "names \"" + name + "\", which is not " + role + " of these inputs; the " +
                       (axis ? "axes" : "fields") + " are: " + joined(names, names.size()) +
                       did_you_mean(name, names));
}

}  // namespace

std::string value_text(const RecordValue& value) {
  if (const auto* number = std::get_if<double>(&value)) return shortest_text(*number);
  if (const auto* text = std::get_if<std::string>(&value)) return *text;
  return "";
}

std::optional<size_t> RecordSet::find(std::string_view name) const {
  for (size_t c = 0; c < columns.size(); ++c) {
    if (columns[c].name == name) return c;
  }
  return std::nullopt;
}

std::vector<std::string> RecordSet::names(bool axes) const {
  std::vector<std::string> out;
  for (const RecordColumn& c : columns) {
    if (axes ? c.axis : c.field) out.push_back(c.name);
  }
  return out;
}

std::vector<std::string> RecordSet::values_of(size_t column) const {
  std::vector<std::string> out;
  std::set<std::string> seen;
  for (const auto& record : records) {
    std::string text = value_text(record[column]);
    if (seen.insert(text).second) out.push_back(std::move(text));
  }
  return out;
}

RecordSet sweep_records(const SweepDocument& sweep) {
  RecordSet set;
  std::vector<std::string> axes;
  for (const SweepAxis& a : sweep.axes) {
    if (a.name != "strategies") axes.push_back(a.name);
  }
  for (const std::string& a : axes) set.columns.push_back({a, true, false, false});
  for (const char* a : {"strategy", "kind", "cut"}) set.columns.push_back({a, true, false, true});
  for (const char* f :
       {"step_time_mean_s", "step_time_median_s", "step_time_spread_s", "images_per_s",
        "speedup_vs_ps", "speedup_vs_allreduce", "ps_busy_s", "worker_mean.compute_s",
        "worker_mean.communication_s", "worker_mean.waiting_s"}) {
    set.columns.push_back({f, false, true, false});
  }
  for (const SweepPoint& p : sweep.points) {
    for (const StrategyResult& r : p.results) {
      std::vector<RecordValue> record;
      for (const std::string& a : axes) {
        record.push_back(p.values.contains(a) ? json_value(p.values.at(a)) : RecordValue());
      }
      record.emplace_back(r.label);
      record.emplace_back(std::string(to_string(r.kind)));
      record.push_back(r.cut ? RecordValue(*r.cut) : RecordValue());
      for (const double v :
           {r.step_time_mean_s, r.step_time_median_s, r.step_time_spread_s, r.images_per_s}) {
        record.emplace_back(v);
      }
      record.push_back(optional_number(r.speedup_vs_ps));
      record.push_back(optional_number(r.speedup_vs_allreduce));
      for (const double v : {r.ps_busy_s, r.worker_mean.compute, r.worker_mean.communication,
                             r.worker_mean.waiting}) {
        record.emplace_back(v);
      }
      set.records.push_back(std::move(record));
    }
  }
  settle_types(set);
  return set;
}

RecordSet table_records(std::string_view text, char separator, const std::string& file) {
  RecordSet set;
  size_t start = 0;
  size_t line_number = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string_view::npos) end = text.size();
    std::string_view line = text.substr(start, end - start);
    start = end + 1;
    ++line_number;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.empty()) continue;
    const std::vector<std::string> cells = separator == '\t' ? split_tsv(line) : split_csv(line);
    const std::string where = "line " + std::to_string(line_number);
    if (set.columns.empty()) {
      for (const std::string& name : cells) {
        if (set.find(name)) throw InputError(file, where, "names the column " + name + " twice");
        set.columns.push_back({name, true, true, false});
      }
      continue;
    }
    if (cells.size() != set.columns.size()) {
      throw InputError(file, where,
                       "has " + std::to_string(cells.size()) + " values, expected " +
                           std::to_string(set.columns.size()) + " as the header names");
    }
    std::vector<RecordValue> record;
    for (const std::string& cell : cells) {
      if (cell.empty()) {
        record.emplace_back();
      } else if (const auto number = parse_number(cell)) {
        record.emplace_back(*number);
      } else {
        record.emplace_back(cell);
      }
    }
    set.records.push_back(std::move(record));
  }
  if (set.columns.empty()) throw InputError(file, "", "is empty, expected a header line");
  settle_types(set);
  return set;
}

void append_records(RecordSet& into, const RecordSet& from, const std::string& file_axis,
                    const std::string& label, const std::string& file) {
  if (from.find(file_axis)) {
    throw InputError(file, "",
                     "has a column named " + file_axis +
                         ", the name of the files' axis; choose another with --file-axis");
  }
  if (into.columns.empty()) into.columns.push_back({file_axis, true, false, true});
  std::vector<size_t> target;
  for (const RecordColumn& c : from.columns) {
    auto at = into.find(c.name);
    if (!at) {
      into.columns.push_back({c.name, false, false, c.text});
      for (auto& record : into.records) record.emplace_back();
      at = into.columns.size() - 1;
    }
    into.columns[*at].axis = into.columns[*at].axis || c.axis;
    into.columns[*at].field = into.columns[*at].field || c.field;
    target.push_back(*at);
  }
  for (const auto& source : from.records) {
    std::vector<RecordValue> record(into.columns.size());
    record[0] = label;
    for (size_t c = 0; c < source.size(); ++c) record[target[c]] = source[c];
    into.records.push_back(std::move(record));
  }
  settle_types(into);
}

RecordInput parse_record_input(const std::string& text) {
  const size_t equals = text.find('=');
  if (equals == std::string::npos || equals == 0 ||
      text.substr(0, equals).find('/') != std::string::npos) {
    return {text, text};
  }
  return {text.substr(0, equals), text.substr(equals + 1)};
}

RecordSet read_records(const std::vector<RecordInput>& inputs, const std::string& file_axis) {
  RecordSet set;
  for (const RecordInput& input : inputs) {
    const std::string ext = lower_extension(input.path);
    RecordSet one;
    if (ext == ".tsv" || ext == ".csv") {
      one = table_records(read_text(input.path), ext == ".tsv" ? '\t' : ',', input.path);
    } else {
      const ResultDocument doc = read_result_document(input.path);
      if (doc.kind != ResultKind::sweep) {
        throw InputError(
            input.path, "",
            "is the JSON of " + describe_kind(doc.kind) +
                ", expected a sweep's sweep.json (ralp sweep) or a table (.csv, .tsv)");
      }
      one = sweep_records(doc.sweep);
    }
    append_records(set, one, file_axis, input.label, input.path);
  }
  return set;
}

Selection parse_selection(const std::string& text, const std::string& option) {
  const size_t equals = text.find('=');
  if (equals == std::string::npos || equals == 0 || equals + 1 == text.size()) {
    throw InputError("", option, "is \"" + text + "\", expected AXIS=VALUE[,VALUE...]");
  }
  Selection s{text.substr(0, equals), {}};
  std::string rest = text.substr(equals + 1);
  size_t start = 0;
  while (true) {
    const size_t comma = rest.find(',', start);
    std::string value = rest.substr(start, comma == std::string::npos ? comma : comma - start);
    if (value.empty()) {
      throw InputError("", option, "is \"" + text + "\", which has an empty value");
    }
    s.values.push_back(std::move(value));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return s;
}

Reference parse_reference(const std::string& text, const std::string& option, bool ratio) {
  const size_t equals = text.find('=');
  if (equals == std::string::npos || equals == 0 || equals + 1 == text.size()) {
    throw InputError("", option, "is \"" + text + "\", expected AXIS=VALUE");
  }
  return {text.substr(0, equals), text.substr(equals + 1), ratio};
}

size_t axis_column(const RecordSet& set, const std::string& name, const std::string& option) {
  return column_with_role(set, name, option, true);
}

size_t field_column(const RecordSet& set, const std::string& name, const std::string& option) {
  return column_with_role(set, name, option, false);
}

void check_selection(const RecordSet& set, const Selection& selection, const std::string& option) {
  const size_t c = axis_column(set, selection.axis, option);
  const std::vector<std::string> values = set.values_of(c);
  for (const std::string& v : selection.values) {
    if (std::find(values.begin(), values.end(), v) != values.end()) continue;
    throw InputError("", option,
                     "names " + selection.axis + "=" + v + ", a value no record has; " +
                         selection.axis + " takes " + joined(values) + did_you_mean(v, values));
  }
}

std::vector<size_t> selected_records(const RecordSet& set, const std::vector<Selection>& where,
                                     const std::string& except) {
  std::vector<std::pair<size_t, std::set<std::string>>> tests;
  for (const Selection& s : where) {
    if (s.axis == except) continue;
    const auto c = set.find(s.axis);
    if (!c) continue;
    tests.emplace_back(*c, std::set<std::string>(s.values.begin(), s.values.end()));
  }
  std::vector<size_t> out;
  for (size_t r = 0; r < set.records.size(); ++r) {
    const bool pass = std::all_of(tests.begin(), tests.end(), [&](const auto& t) {
      return t.second.count(value_text(set.records[r][t.first])) > 0;
    });
    if (pass) out.push_back(r);
  }
  return out;
}

void check_reference(const RecordSet& set, const Reference& reference) {
  check_selection(set, {reference.axis, {reference.value}}, reference_option(reference));
}

std::string reference_option(const Reference& reference) {
  return reference.ratio ? "--relative-to" : "--difference-from";
}

std::vector<size_t> shown_records(const RecordSet& set, const std::vector<Selection>& where,
                                  const std::optional<Reference>& reference) {
  std::vector<size_t> out = selected_records(set, where);
  if (!reference) return out;
  const size_t axis = *set.find(reference->axis);
  std::erase_if(out,
                [&](size_t r) { return value_text(set.records[r][axis]) == reference->value; });
  return out;
}

std::vector<std::string> key_of(const RecordSet& set, size_t record,
                                const std::vector<size_t>& columns) {
  std::vector<std::string> key;
  for (const size_t c : columns) key.push_back(value_text(set.records[record][c]));
  return key;
}

RecordGroups group_records(const RecordSet& set, const std::vector<size_t>& records,
                           const std::vector<size_t>& columns) {
  RecordGroups groups;
  std::map<std::vector<std::string>, size_t> index;
  for (const size_t r : records) {
    std::vector<std::string> key = key_of(set, r, columns);
    const auto [at, added] = index.emplace(key, groups.keys.size());
    if (added) {
      groups.keys.push_back(std::move(key));
      groups.members.emplace_back();
    }
    groups.members[at->second].push_back(r);
  }
  return groups;
}

std::vector<std::string> differing_axes(const RecordSet& set, const std::vector<size_t>& records,
                                        size_t shown) {
  std::vector<std::string> out;
  for (size_t c = 0; c < set.columns.size(); ++c) {
    if (!set.columns[c].axis || c == shown) continue;
    std::vector<std::string> values;
    for (const size_t r : records) {
      std::string text = value_text(set.records[r][c]);
      if (text.empty()) text = "(none)";
      if (std::find(values.begin(), values.end(), text) == values.end()) values.push_back(text);
    }
    if (values.size() > 1) out.push_back(set.columns[c].name + " (" + joined(values) + ")");
  }
  return out;
}

std::string how_they_differ(const RecordSet& set, const std::vector<size_t>& records,
                            size_t shown) {
  const std::vector<std::string> axes = differing_axes(set, records, shown);
  if (axes.empty()) return "alike on every axis";
  std::string out = "which differ in ";
  for (size_t i = 0; i < axes.size(); ++i) out += (i == 0 ? "" : "; ") + axes[i];
  return out;
}

std::optional<double> versus_reference(const RecordSet& set, size_t record, size_t field,
                                       const Reference& reference, const std::vector<size_t>& key,
                                       const std::vector<size_t>& candidates,
                                       const std::string& option) {
  const auto* value = std::get_if<double>(&set.records[record][field]);
  if (value == nullptr) return std::nullopt;
  const size_t axis = *set.find(reference.axis);
  std::vector<size_t> matches;
  for (const size_t c : candidates) {
    if (value_text(set.records[c][axis]) != reference.value) continue;
    const bool same = std::all_of(key.begin(), key.end(), [&](size_t k) {
      return k == axis || value_text(set.records[c][k]) == value_text(set.records[record][k]);
    });
    if (same) matches.push_back(c);
  }
  if (matches.size() > 1) {
    throw InputError("", option,
                     "finds " + std::to_string(matches.size()) + " records with " + reference.axis +
                         "=" + reference.value + " to compare one record with, " +
                         how_they_differ(set, matches, field) +
                         "; add an axis that tells them apart to the rows, columns or --along, "
                         "or pick one with --where");
  }
  if (matches.empty()) return std::nullopt;
  const auto* base = std::get_if<double>(&set.records[matches[0]][field]);
  if (base == nullptr) return std::nullopt;
  return reference.ratio ? *value / *base : *value - *base;
}

}  // namespace ralp::reports
