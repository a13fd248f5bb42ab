// Sweep specifications: axis lists and ranges, sweep files, and the points they expand to.
#include "ralp/sweep/spec.hpp"

#include <algorithm>
#include <charconv>
#include <set>

#include "ralp/spec/simulation_limits.hpp"

namespace ralp::sweep {
namespace {

// Each axis's command-line option, for naming it in errors and as scenario overrides.
std::string option_of(const std::string& axis) {
  std::string out = axis;
  std::replace(out.begin(), out.end(), '_', '-');
  return out;
}

std::optional<int64_t> read_integer(std::string_view text) {
  int64_t value = 0;
  const char* end = text.data() + text.size();
  const auto [ptr, ec] = std::from_chars(text.data(), end, value);
  if (ec != std::errc() || ptr != end || text.empty()) return std::nullopt;
  return value;
}

}  // namespace

const std::vector<std::string>& axis_names() {
  static const std::vector<std::string> names{
      "workers", "bandwidth", "batch", "device", "parameter_servers", "latency",
      "devices_per_node", "transport", "precision", "strategies"};
  return names;
}

bool is_integer_axis(const std::string& name) {
  return name == "workers" || name == "batch" || name == "parameter_servers" ||
         name == "devices_per_node";
}

std::vector<const Axis*> SweepSpec::point_axes() const {
  std::vector<const Axis*> out;
  for (const Axis& a : axes) {
    if (a.name != "strategies") out.push_back(&a);
  }
  return out;
}

const Axis* SweepSpec::find(const std::string& name) const {
  for (const Axis& a : axes) {
    if (a.name == name) return &a;
  }
  return nullptr;
}

std::vector<std::string> expand_axis_item(const std::string& axis, const std::string& item,
                                          const std::string& file, const std::string& path) {
  if (item.empty()) throw InputError(file, path, "has an empty value, expected a value");
  if (!is_integer_axis(axis)) return {item};
  const std::string expected =
      "expected an integer, A..B (doubling: A, 2A, 4A, .. B), A-B (every integer) or A-B:S "
      "(every S-th integer)";
  const auto bad = [&](const std::string& why) {
    return InputError(file, path, "is \"" + item + "\"" + why + ", " + expected);
  };
  if (const auto single = read_integer(item)) return {std::to_string(*single)};
  int64_t first = 0;
  int64_t last = 0;
  int64_t step = 1;
  bool doubling = false;
  if (const size_t dots = item.find(".."); dots != std::string::npos) {
    const auto a = read_integer(std::string_view(item).substr(0, dots));
    const auto b = read_integer(std::string_view(item).substr(dots + 2));
    if (!a || !b) throw bad("");
    first = *a;
    last = *b;
    doubling = true;
    if (first < 1) throw bad(", whose start is below 1 (a doubling series starts at 1 or more)");
  } else if (const size_t dash = item.find('-', 1); dash != std::string::npos) {
    const size_t colon = item.find(':', dash);
    const auto a = read_integer(std::string_view(item).substr(0, dash));
    const auto b = read_integer(std::string_view(item).substr(
        dash + 1, colon == std::string::npos ? std::string::npos : colon - dash - 1));
    if (!a || !b) throw bad("");
    first = *a;
    last = *b;
    if (colon != std::string::npos) {
      const auto s = read_integer(std::string_view(item).substr(colon + 1));
      if (!s || *s < 1) throw bad(", whose step is not an integer >= 1");
      step = *s;
    }
  } else {
    throw bad("");
  }
  if (last < first) throw bad(", which runs backwards");
  std::vector<std::string> out;
  for (int64_t v = first; v <= last;) {
    if (out.size() >= kMaxAxisValues) {
      throw bad(", which has more than " + std::to_string(kMaxAxisValues) + " values");
    }
    out.push_back(std::to_string(v));
    if (v == last) return out;
    if (doubling ? v > last / 2 : v > last - step) break;
    v = doubling ? 2 * v : v + step;
  }
  throw bad(", whose series misses its end " + std::to_string(last));
}

std::vector<std::string> expand_axis_list(const std::string& axis, const std::string& list,
                                          const std::string& file, const std::string& path) {
  if (list.empty()) throw InputError(file, path, "is empty, expected a comma-separated list");
  std::vector<std::string> out;
  size_t start = 0;
  while (true) {
    const size_t comma = list.find(',', start);
    const std::string item =
        list.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    if (item.empty()) {
      throw InputError(file, path, "is \"" + list + "\", which has an empty item, expected a "
                                       "comma-separated list of values");
    }
    for (std::string& v : expand_axis_item(axis, item, file, path)) out.push_back(std::move(v));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  std::set<std::string> seen;
  for (const std::string& v : out) {
    if (!seen.insert(v).second) {
      throw InputError(file, path, "is \"" + list + "\", which gives " + v +
                                       " twice, expected each value once");
    }
  }
  return out;
}

bool is_sweep_file(const Json& document) {
  return document.is_object() && document.contains("base");
}

void set_axis(SweepSpec& spec, Axis axis) {
  const auto& names = axis_names();
  const auto rank = [&](const std::string& name) {
    return std::find(names.begin(), names.end(), name) - names.begin();
  };
  std::erase_if(spec.axes, [&](const Axis& a) { return a.name == axis.name; });
  const auto at = std::find_if(spec.axes.begin(), spec.axes.end(),
                               [&](const Axis& a) { return rank(a.name) > rank(axis.name); });
  spec.axes.insert(at, std::move(axis));
}

SweepSpec read_sweep_file(const std::filesystem::path& file) {
  const std::string name = file.string();
  const Json document = read_json_file(file);
  ObjectReader top(document, "", name);
  SweepSpec spec;
  spec.base = top.string("base");
  if (spec.base.empty()) top.fail("base", "is \"\", expected the path of a scenario file");
  spec.base_path = file.parent_path() / spec.base;
  spec.fidelity = top.optional_choice("fidelity", {"event", "analytic"}).value_or("event");
  if (const Json* axes = top.get("axes")) {
    ObjectReader reader(*axes, "/axes", name);
    for (const std::string& axis : axis_names()) {
      const Json* list = reader.get(axis);
      if (list == nullptr) continue;
      const std::string path = reader.path_of(axis);
      Axis a{axis, {}};
      if (list->is_string()) {
        a.values = expand_axis_list(axis, list->get<std::string>(), name, path);
      } else if (list->is_array() && !list->empty()) {
        for (size_t i = 0; i < list->size(); ++i) {
          const Json& item = (*list)[i];
          const std::string item_path = json_path(path, i);
          std::string text;
          if (item.is_number_integer() && is_integer_axis(axis)) {
            text = std::to_string(item.get<int64_t>());
          } else if (item.is_string()) {
            text = item.get<std::string>();
          } else {
            throw InputError(name, item_path,
                             "is " + describe_json(item) + ", expected " +
                                 (is_integer_axis(axis) ? "an integer or a range string such as "
                                                          "\"4..64\""
                                                        : "a string"));
          }
          for (std::string& v : expand_axis_item(axis, text, name, item_path)) {
            if (std::find(a.values.begin(), a.values.end(), v) != a.values.end()) {
              throw InputError(name, item_path, "gives " + v + " again, expected each value once");
            }
            a.values.push_back(std::move(v));
          }
        }
      } else {
        throw InputError(name, path,
                         "is " + (list->is_array() ? std::string("an empty array") : describe_json(*list)) +
                             ", expected a non-empty array of values or a comma-separated string");
      }
      set_axis(spec, std::move(a));
    }
    reader.finish();
  }
  top.finish();
  return spec;
}

std::string describe_values(const std::vector<std::pair<std::string, std::string>>& values) {
  std::string out;
  for (const auto& [axis, value] : values) {
    out += (out.empty() ? "" : ", ") + axis + "=" + value;
  }
  return out;
}

std::string SweepPoint::describe() const { return describe_values(values); }

std::vector<SweepPoint> make_points(const SweepSpec& spec) {
  const std::string file = spec.base_path.string();
  Json base = read_json_file(spec.base_path);
  // The strategies every point runs: each picked from the base as --strategy picks one.
  if (const Axis* strategies = spec.find("strategies")) {
    Json picked = Json::array();
    for (const std::string& s : strategies->values) {
      try {
        const Json one = apply_scenario_overrides(base, file, {{"strategy", s}});
        picked.push_back(one.at("strategies").at(0));
      } catch (const InputError& e) {
        throw InputError("", "--strategies", "has \"" + s + "\", which " + e.problem());
      }
    }
    base["strategies"] = std::move(picked);
  }
  const std::vector<const Axis*> axes = spec.point_axes();
  size_t count = 1;
  for (const Axis* a : axes) {
    if (a->values.empty()) throw InputError("", "--" + option_of(a->name), "has no values");
    if (count > kMaxPoints / a->values.size()) {
      throw InputError("", "sweep", "has more than " + std::to_string(kMaxPoints) +
                                        " points, expected fewer (split it into several sweeps)");
    }
    count *= a->values.size();
  }
  // The base alone first, so that its own errors are not blamed on a point.
  (void)parse_scenario(base, file, spec.base_path.parent_path(), {});
  std::vector<SweepPoint> points;
  points.reserve(count);
  std::vector<size_t> digit(axes.size(), 0);
  for (size_t index = 0; index < count; ++index) {
    std::vector<std::pair<std::string, std::string>> values;
    Json json = base;
    std::vector<ScenarioOverride> overrides;
    for (size_t i = 0; i < axes.size(); ++i) {
      const std::string& value = axes[i]->values[digit[i]];
      values.emplace_back(axes[i]->name, value);
      if (axes[i]->name == "device") {
        if (json.is_object() && json.contains("cluster") && json["cluster"].is_object()) {
          json["cluster"]["worker_device"] = value;
        }
      } else {
        overrides.push_back({option_of(axes[i]->name), value});
      }
    }
    try {
      Scenario scenario = parse_scenario(json, file, spec.base_path.parent_path(), overrides);
      check_simulation_limits(scenario);
      points.push_back(SweepPoint{index, std::move(values), std::move(scenario)});
    } catch (const InputError& e) {
      const std::string name = values.empty() ? "" : " (" + describe_values(values) + ")";
      throw InputError("", "point " + std::to_string(index) + name,
                       "is refused: " + std::string(e.what()));
    }
    for (size_t i = axes.size(); i-- > 0;) {
      if (++digit[i] < axes[i]->values.size()) break;
      digit[i] = 0;
    }
  }
  return points;
}

}  // namespace ralp::sweep
