// Statistics of one field of records along an axis: `ralp report summary`.
#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <iterator>

#include "ralp/reports/pivot.hpp"

namespace ralp::reports {
namespace {

using Kind = Statistic::Kind;

constexpr const char* kStatistics =
    "count, min, max, absmax, first, last, argmin, argmax, count OP T, first OP T or all OP T "
    "(OP one of >=, >, <=, <)";

struct KindName {
  const char* name;
  Kind kind;
};
constexpr KindName kKinds[] = {
    {"count", Kind::count},   {"min", Kind::min},       {"max", Kind::max},
    {"absmax", Kind::absmax}, {"first", Kind::first},   {"last", Kind::last},
    {"argmin", Kind::argmin}, {"argmax", Kind::argmax}, {"all", Kind::all}};

bool holds(double value, const std::string& op, double threshold) {
  if (op == ">=") return value >= threshold;
  if (op == ">") return value > threshold;
  if (op == "<=") return value <= threshold;
  return value < threshold;
}

bool needs_along(const Statistic& s) {
  return s.kind == Kind::first || s.kind == Kind::last || s.kind == Kind::argmin ||
         s.kind == Kind::argmax || s.kind == Kind::all;
}

// One record of a row with its value and its --along values' text.
struct Entry {
  size_t record = 0;
  double value = 0.0;
  std::string along;
};

std::string joined(const std::vector<std::string>& items) {
  std::string out;
  for (const std::string& i : items) out += (out.empty() ? "" : ", ") + i;
  return out;
}

std::string heading(const SummarySpec& spec, const Statistic& s) {
  const std::string label = spec.label.empty() ? spec.field : spec.label;
  const std::string along = joined(spec.along);
  const std::string condition =
      s.op ? " " + *s.op + " " + spec.format.around(s.threshold_text) : std::string();
  switch (s.kind) {
    case Kind::count:
      return s.op ? "count " + label + condition : "count";
    case Kind::min:
      return "smallest " + label;
    case Kind::max:
      return "largest " + label;
    case Kind::absmax:
      return "largest |" + label + "|";
    case Kind::first:
      return s.op ? "first " + along + condition : "first " + label;
    case Kind::last:
      return "last " + label;
    case Kind::argmin:
    case Kind::argmax:
      return "at " + along;
    case Kind::all:
      return along + " with " + label + condition;
  }
  return s.text;
}

// The entry a min, max or absmax statistic picks: the first of the extremes in --along order.
const Entry* extreme(const std::vector<Entry>& entries, Kind kind) {
  const Entry* best = nullptr;
  for (const Entry& e : entries) {
    const bool better =
        best == nullptr || (kind == Kind::min || kind == Kind::argmin ? e.value < best->value
                            : kind == Kind::absmax ? std::abs(e.value) > std::abs(best->value)
                                                   : e.value > best->value);
    if (better) best = &e;
  }
  return best;
}

// The value at one end of the --along order; several records there are an error.
const Entry& end_entry(const std::vector<Entry>& entries, bool last, const std::string& row) {
  const Entry& e = last ? entries.back() : entries.front();
  if (entries.size() > 1) {
    const Entry& neighbour = last ? entries[entries.size() - 2] : entries[1];
    if (neighbour.along == e.along) {
      throw InputError("", "--stat",
                       std::string(last ? "last" : "first") + " finds several records at " +
                           e.along + row +
                           "; add the axis that tells them apart to --rows or --along, or pick "
                           "one with --where");
    }
  }
  return e;
}

std::string statistic_cell(const SummarySpec& spec, const Statistic& s,
                           const std::vector<Entry>& entries, size_t records,
                           const std::string& row) {
  if (s.kind == Kind::count) {
    if (!s.op) return std::to_string(spec.field.empty() ? records : entries.size());
    return std::to_string(std::count_if(entries.begin(), entries.end(), [&](const Entry& e) {
      return holds(e.value, *s.op, s.threshold);
    }));
  }
  if (s.kind == Kind::all || (s.kind == Kind::first && s.op)) {
    std::vector<std::string> hits;
    for (const Entry& e : entries) {
      if (!holds(e.value, *s.op, s.threshold)) continue;
      if (std::find(hits.begin(), hits.end(), e.along) == hits.end()) hits.push_back(e.along);
    }
    if (hits.empty()) return s.kind == Kind::all ? "none" : "never";
    return s.kind == Kind::all ? joined(hits) : hits.front();
  }
  if (entries.empty()) return "-";
  if (s.kind == Kind::first || s.kind == Kind::last) {
    return spec.format(end_entry(entries, s.kind == Kind::last, row).value);
  }
  const Entry* e = extreme(entries, s.kind);
  if (s.kind == Kind::argmin || s.kind == Kind::argmax) return e->along;
  return spec.format(e->value);
}

void check_summary(const RecordSet& set, const SummarySpec& spec) {
  for (const Selection& w : spec.where) check_selection(set, w, "--where");
  if (spec.reference) check_reference(set, *spec.reference);
  if (spec.statistics.empty())
    throw InputError("", "--stat", "is missing, expected " + std::string(kStatistics));
  const bool counts_only =
      std::all_of(spec.statistics.begin(), spec.statistics.end(),
                  [](const Statistic& s) { return s.kind == Kind::count && !s.op; });
  if (spec.field.empty() && !counts_only) {
    throw InputError("", "--field", "is missing, expected the field the statistics are of");
  }
  if (!spec.field.empty()) {
    const size_t f = field_column(set, spec.field, "--field");
    if (set.columns[f].text) {
      throw InputError("", "--field",
                       "names " + spec.field + ", which holds text, expected numbers");
    }
  }
  for (const Statistic& s : spec.statistics) {
    if (needs_along(s) && spec.along.empty()) {
      throw InputError("", "--stat", s.text + " needs --along, the axis its answer is a value of");
    }
  }
  for (const auto& [key, text] : spec.headers) {
    if (std::find(spec.rows.begin(), spec.rows.end(), key) == spec.rows.end()) {
      throw InputError("", "--header", "names " + key + ", which is not a --rows axis");
    }
  }
}

// Each record of one row with a value, in --along order (the order each --along axis's values
// first appear in the inputs; records alike there keep their input order).
std::vector<Entry> row_entries(const RecordSet& set, const SummarySpec& spec,
                               const std::vector<size_t>& members, const std::vector<size_t>& key,
                               const std::vector<size_t>& along, const std::vector<size_t>& base) {
  std::vector<Entry> entries;
  if (spec.field.empty()) return entries;
  const size_t field = *set.find(spec.field);
  for (const size_t r : members) {
    std::optional<double> value;
    if (spec.reference) {
      value = versus_reference(set, r, field, *spec.reference, key, base,
                               reference_option(*spec.reference));
    } else if (const auto* v = std::get_if<double>(&set.records[r][field])) {
      value = *v;
    }
    if (value) entries.push_back({r, *value, joined(key_of(set, r, along))});
  }
  std::vector<std::vector<std::string>> orders;
  for (const size_t a : along) orders.push_back(set.values_of(a));
  const auto rank = [&](const Entry& e) {
    std::vector<size_t> out;
    for (size_t i = 0; i < along.size(); ++i) {
      const std::string text = value_text(set.records[e.record][along[i]]);
      out.push_back(static_cast<size_t>(std::find(orders[i].begin(), orders[i].end(), text) -
                                        orders[i].begin()));
    }
    return out;
  };
  std::stable_sort(entries.begin(), entries.end(),
                   [&](const Entry& a, const Entry& b) { return rank(a) < rank(b); });
  return entries;
}

}  // namespace

Statistic parse_statistic(const std::string& text, const std::string& option) {
  Statistic s;
  s.text = text;
  size_t name_end = 0;
  while (name_end < text.size() && std::isalpha(static_cast<unsigned char>(text[name_end])))
    ++name_end;
  const std::string name = text.substr(0, name_end);
  const auto fail = [&] {
    std::vector<std::string> names;
    for (const KindName& k : kKinds) names.push_back(k.name);
    return InputError("", option,
                      "is \"" + text + "\", expected " + kStatistics + did_you_mean(name, names));
  };
  const auto* k = std::find_if(std::begin(kKinds), std::end(kKinds),
                               [&](const KindName& n) { return name == n.name; });
  if (k == std::end(kKinds)) throw fail();
  s.kind = k->kind;
  std::string rest = text.substr(name_end);
  rest.erase(std::remove(rest.begin(), rest.end(), ' '), rest.end());
  if (rest.empty()) {
    if (s.kind == Kind::all) throw fail();
    return s;
  }
  if (s.kind != Kind::count && s.kind != Kind::first && s.kind != Kind::all) throw fail();
  const size_t op_size = rest.size() > 1 && rest[1] == '=' ? 2 : 1;
  s.op = rest.substr(0, op_size);
  if (*s.op != ">=" && *s.op != "<=" && *s.op != ">" && *s.op != "<") throw fail();
  s.threshold_text = rest.substr(op_size);
  const char* first = s.threshold_text.data();
  const char* last = first + s.threshold_text.size();
  const auto [ptr, ec] = std::from_chars(first, last, s.threshold);
  if (s.threshold_text.empty() || ec != std::errc() || ptr != last) throw fail();
  return s;
}

ReportTable summary_table(const RecordSet& set, const SummarySpec& spec) {
  const auto columns_of = [&](const std::vector<std::string>& names, const char* option) {
    std::vector<size_t> out;
    for (const std::string& n : names) out.push_back(axis_column(set, n, option));
    return out;
  };
  const std::vector<size_t> rows = columns_of(spec.rows, "--rows");
  const std::vector<size_t> along = columns_of(spec.along, "--along");
  check_summary(set, spec);
  std::vector<size_t> key = rows;
  key.insert(key.end(), along.begin(), along.end());
  if (spec.reference) key.push_back(*set.find(spec.reference->axis));
  const std::vector<size_t> base =
      selected_records(set, spec.where, spec.reference ? spec.reference->axis : "");
  RecordGroups groups = group_records(set, shown_records(set, spec.where, spec.reference), rows);
  if (rows.empty() && groups.keys.empty()) {  // one row in all, even of nothing: "count" is 0
    groups.keys.emplace_back();
    groups.members.emplace_back();
  }

  ReportTable table;
  for (size_t i = 0; i < rows.size(); ++i) {
    const auto own = spec.headers.find(spec.rows[i]);
    table.header.push_back(own != spec.headers.end() ? own->second : spec.rows[i]);
    table.text.push_back(set.columns[rows[i]].text);
  }
  for (const Statistic& s : spec.statistics) {
    table.header.push_back(heading(spec, s));
    table.text.push_back(false);
  }
  for (size_t g = 0; g < groups.keys.size(); ++g) {
    const std::vector<Entry> entries = row_entries(set, spec, groups.members[g], key, along, base);
    std::string where;
    for (size_t i = 0; i < rows.size(); ++i) {
      where += (i == 0 ? " in the row " : ", ") + spec.rows[i] + " " + groups.keys[g][i];
    }
    std::vector<std::string> cells = groups.keys[g];
    for (const Statistic& s : spec.statistics) {
      cells.push_back(statistic_cell(spec, s, entries, groups.members[g].size(), where));
    }
    table.rows.push_back(std::move(cells));
  }
  return table;
}

}  // namespace ralp::reports
