// What a sweep is: a base scenario, named axes of values and the fidelity, read from command-line
// lists or a sweep file (docs/sweep.md), and the points it expands to, each a validated scenario.
#pragma once

#include <cstddef>
#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include "ralp/core/json_input.hpp"
#include "ralp/spec/scenario.hpp"
#include "ralp/spec/scenario_overrides.hpp"

namespace ralp::sweep {

// The axes, in the fixed order points are formed in (the last given one varies fastest):
// workers, bandwidth, batch, device, parameter_servers, latency, devices_per_node, transport,
// precision, strategies. `strategies` is not multiplied: its values are the strategies every
// point runs.
const std::vector<std::string>& axis_names();

// Whether an axis holds integers (workers, batch, parameter_servers), which take ranges.
bool is_integer_axis(const std::string& name);

struct Axis {
  std::string name;                 // one of axis_names()
  std::vector<std::string> values;  // as written (integers in decimal), in the given order
  friend bool operator==(const Axis&, const Axis&) = default;
};

struct SweepSpec {
  std::string base;                   // the base scenario's path as given
  std::filesystem::path base_path;    // where it is read from (a sweep file's base is relative
                                      // to the sweep file's folder)
  std::string fidelity = "event";     // "event" or "analytic"
  std::vector<Axis> axes;             // in axis_names() order, only the given ones

  // The multiplied axes (every one but strategies).
  [[nodiscard]] std::vector<const Axis*> point_axes() const;
  [[nodiscard]] const Axis* find(const std::string& name) const;
};

// One item of an axis list ("16", "4..64", "1-125", "8-64:8", "10Gbps") as values. Integer
// axes take a decimal integer, `A..B` (the doubling series A, 2A, 4A, .. up to B, which must be
// in it), `A-B` (every integer from A to B) and `A-B:S` (A, A+S, .. up to B, which must be in
// it); other axes take the text as it stands. Throws InputError(file, path, ...) for a malformed
// item, a range that runs backwards or misses its end, or more than kMaxAxisValues values.
std::vector<std::string> expand_axis_item(const std::string& axis, const std::string& item,
                                          const std::string& file, const std::string& path);
// A comma-separated list of items (the command line's `--workers 1,2,4..64`), expanded in order.
// Throws InputError for an empty item or list and for a value listed twice.
std::vector<std::string> expand_axis_list(const std::string& axis, const std::string& list,
                                          const std::string& file, const std::string& path);

inline constexpr size_t kMaxAxisValues = 65536;
inline constexpr size_t kMaxPoints = 1000000;

// Reads a sweep file: {"base": PATH, "fidelity": "event"|"analytic", "axes": {NAME: LIST}} where
// LIST is a string in the command line's syntax or an array of numbers and strings (each string
// itself an item as in expand_axis_item). Throws InputError naming the file, the JSON path and the
// expectation; unknown keys list the accepted ones.
SweepSpec read_sweep_file(const std::filesystem::path& file);

// Whether a JSON document is a sweep file rather than a scenario: its top level has "base".
bool is_sweep_file(const Json& document);

// Sets (or replaces) one axis, keeping axis_names() order.
void set_axis(SweepSpec& spec, Axis axis);

// One point of the sweep: its index, its value on every multiplied axis, and its scenario.
struct SweepPoint {
  size_t index = 0;
  std::vector<std::pair<std::string, std::string>> values;  // (axis, value), in axis order
  Scenario scenario;

  // "workers=16, bandwidth=10Gbps" for messages.
  [[nodiscard]] std::string describe() const;
};

// "workers=16, bandwidth=10Gbps".
std::string describe_values(const std::vector<std::pair<std::string, std::string>>& values);

// Every point, the cartesian product of the multiplied axes in axis order (the last varying
// fastest), each scenario parsed from the base with the point's values applied as `ralp
// simulate`'s overrides would apply them (device replaces /cluster/worker_device; strategies
// replace /strategies, each name picked as --strategy picks it) and checked against the
// simulator's limits. Throws InputError for the base, and for the first point whose scenario is
// invalid: "point 3 (workers=0) is refused: --workers is 0, expected ...".
std::vector<SweepPoint> make_points(const SweepSpec& spec);

}  // namespace ralp::sweep
