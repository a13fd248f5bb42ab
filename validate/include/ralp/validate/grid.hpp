// The validation grid: scenarios x cluster shapes x link rates x strategies, the hosts each point
// runs on, which cores its ranks are pinned to, and the derived scenario file that both
// `ralp cluster` and `ralp simulate` read for it.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "ralp/core/precision.hpp"
#include "ralp/core/json_input.hpp"
#include "ralp/validate/link_fit.hpp"
#include "ralp/validate/testbed.hpp"

namespace ralp::validate {

// Cluster shapes. two_node: 1 PS + 1 worker, or 2 workers and no PS for allreduce (the default: it
// fits two cores). ps_two_workers: 1 PS + 2 workers for every strategy.
enum class Shape { two_node, ps_two_workers };
std::string to_string(Shape shape);  // "2-node", "1ps-2w"
// Accepts the names to_string gives; nullopt otherwise.
std::optional<Shape> parse_shape(const std::string& text);

// The roles a point needs: parameter servers that take part in the strategy, and workers.
struct Layout {
  int parameter_servers = 0;
  int workers = 0;
  friend bool operator==(const Layout&, const Layout&) = default;
};
Layout layout_of(Shape shape, const std::string& strategy_kind);

// The parameter servers the derived scenario has (none for an allreduce layout: a pure
// all-reduce cluster is workers only) and the ranks mpirun starts.
int scenario_parameter_servers(const Layout& layout);
int ranks_of(const Layout& layout);

// Which core each rank is pinned to. When the ranks fit in `cores` each has its own. When they
// do not, each parameter server keeps a core of its own and the workers share the cores left,
// round robin (with no core left for workers, rank r goes to core r mod `cores`), and the derived
// scenario says which share (shared_cores, DerivedSettings::shared_devices) so that the
// prediction divides those cores between them. Workers share with workers because two ranks that
// compute split a core as the simulator divides it, equally; a server that mostly waits does not
// take its share: each of its thousands of wake-ups a second slows the kernels beside it (the
// waiting share `ralp link-probe` measures, cluster.message_cpu.waiting_share).
std::vector<std::optional<int>> pin_ranks(const Layout& layout, int cores);
// True when pin_ranks gives every rank a core of its own.
bool fits_cores(const Layout& layout, int cores);
// The derived scenario's cluster.shared_devices for the layout: each host's core, when some
// share one; empty when every rank has its own core.
std::vector<int> shared_cores(const Layout& layout, int cores);

// One strategy as the base scenario lists it.
struct StrategyEntry {
  Json spec;          // the entry as written ("ps" or {"name": "ralp", "cut": "fc3"})
  std::string kind;   // "ps", "ralp", "allreduce", "hybrid"
  std::string label;  // "ps", "ralp@fc3", or the entry's own label
};
// The base scenario's strategies; throws InputError naming `file` for a malformed entry.
std::vector<StrategyEntry> strategy_entries(const Json& scenario, const std::string& file);

struct GridPoint {
  std::filesystem::path scenario_file;
  std::string scenario_name;
  std::string model;  // the base scenario's model as written
  StrategyEntry strategy;
  LinkRate rate;
  Shape shape = Shape::two_node;
  // "cifar-alexnet-1ps-2w_ps_100mbit_2-node": the point's file names.
  [[nodiscard]] std::string id() const;
};

// Filters: strategies by label or kind (empty: all); every (scenario, shape, rate, strategy) in
// the order rate, scenario, shape, strategy, so that each rate's link calibration and shaping is
// done once. A point whose layout equals the first shape's (allreduce has no PS in either) is
// left out. Throws InputError when a filter matches no strategy of any scenario.
std::vector<GridPoint> make_grid(const std::vector<std::filesystem::path>& scenarios,
                                 const std::vector<Shape>& shapes,
                                 const std::vector<LinkRate>& rates,
                                 const std::vector<std::string>& strategies);

// What a derived scenario takes from calibration.
struct DerivedSettings {
  std::filesystem::path profile;  // the calibrated device profile, used for workers and the PS
  NetworkFit network;             // the rate's fitted factors and latency
  int steps = 10;
  int warmup_steps = 2;
  std::vector<int> shared_devices;  // shared_cores(), or empty
  double nic_burst_bytes = 0.0;     // the links' token buckets (tbf_burst_bytes), 0 for none
  Precision precision = Precision::fp32;  // the scenario's "precision" when not fp32
};

// The base scenario with the point's shape, the rate as nic_bandwidth (bytes per second), half the
// measured RTT as each link's latency, the fitted factors as network_model, the profile as both
// devices, the ranks that share a core as cluster.shared_devices, the shaper's burst as the
// platform's nic_burst, the fitted CPU time of messages as cluster.message_cpu, only the point's
// strategy, the step counts, and the precision when it is not fp32. Relative model and device paths of the base are made absolute
// against `base_dir`, so the file works from any folder.
Json derived_scenario(const Json& base, const std::filesystem::path& base_dir,
                      const GridPoint& point, const DerivedSettings& settings);

// Measured steps for a point whose steps are predicted to take `predicted_s` each: as many as fit
// in `budget_s`, within [min_steps, max_steps].
int plan_steps(double predicted_s, double budget_s, int min_steps, int max_steps);

}  // namespace ralp::validate
