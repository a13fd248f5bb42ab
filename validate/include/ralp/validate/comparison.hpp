// Predicted against measured: the quantities read from `ralp simulate --json` and
// `ralp cluster --json` (one small function per quantity, so that field names live in one
// place), the error of each grid point, and the summary per strategy and overall.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "ralp/core/json_input.hpp"

namespace ralp::validate {

// A role's time per step.
struct RoleSplit {
  double compute_s = 0.0;
  double communication_s = 0.0;
  double waiting_s = 0.0;
  friend bool operator==(const RoleSplit&, const RoleSplit&) = default;
};

struct HostBytes {
  double in = 0.0;
  double out = 0.0;
  friend bool operator==(const HostBytes&, const HostBytes&) = default;
};

// One host's time per step in device operations (its split's compute_s).
struct HostCompute {
  std::string name;
  double compute_s = 0.0;
  friend bool operator==(const HostCompute&, const HostCompute&) = default;
};

// The one strategy result of a document ({"results": [r]}); throws InputError naming `label`
// when there is not exactly one.
const Json& only_result(const Json& document, const std::string& label);

// Fields of one strategy result. Each throws InputError naming `label` and the path when the field
// is missing or not a number.
double measured_step_time_s(const Json& result, const std::string& label);    // median
double measured_step_spread_s(const Json& result, const std::string& label);  // IQR
double predicted_step_time_s(const Json& result, const std::string& label);   // median
RoleSplit worker_split(const Json& result, const std::string& label);  // the workers' mean
double ps_busy_s(const Json& result, const std::string& label);        // ps-0 compute + aggregation
HostBytes host_bytes(const Json& result, const std::string& host, const std::string& label);
std::vector<HostCompute> host_computes(const Json& result, const std::string& label);  // in order
// The profile the simulator's compute times came from ("name (source)"); "" when absent.
std::string predicted_profile(const Json& result);

// One grid point's figures.
struct PointFigures {
  double step_time_s = 0.0;
  double spread_s = 0.0;  // measured only
  RoleSplit worker;
  double ps_busy_s = 0.0;
  HostBytes ps0;       // zero for a layout without a PS
  HostBytes worker0;
  std::vector<HostCompute> hosts;  // every host's, in the result's order
};

// How long one rank's kernels took in its run against the profile (see kernel_speed below).
struct RankKernelSpeed {
  std::string host;
  double busy_share = 0.0;  // its measured compute over the measured step
  double ratio = 0.0;       // its replayed compute over its predicted compute
};

struct PointComparison {
  std::string id;
  std::string scenario;
  std::string model;
  std::string strategy;  // label
  std::string kind;
  std::string rate;
  std::string shape;
  int parameter_servers = 0;
  int workers = 0;
  bool pinned = false;
  int steps = 0;
  int warmup_steps = 0;
  PointFigures measured;
  PointFigures predicted;
  // The simulator again, its device operations given the times the run measured
  // (ralp simulate --replay): what is left of the error when the kernels' times are right.
  PointFigures replayed;
  // The share of the time the ranks' cores wanted to run that the hypervisor took (steal time,
  // /proc/stat) while the run ran, in percent; none with --hostfile, where the ranks run on
  // other machines.
  std::optional<double> steal_pct;
  // Each pass's measured step time (the median of its steps) and predicted step time (each pass
  // predicted with the profile measured just before it), in pass order, when the grid ran more
  // than once; `measured`, `predicted`, `replayed` and `steal_pct` are then the passes' means.
  std::vector<double> pass_step_times_s;
  std::vector<double> pass_predicted_step_times_s;
  // (predicted - measured) / measured x 100.
  [[nodiscard]] double error_pct() const;
  // The same for the replayed step time.
  [[nodiscard]] double replay_error_pct() const;
  // (largest - smallest) / mean of the passes' step times x 100: how far this machine's
  // measurements of the same point moved between passes; 0 with one pass.
  [[nodiscard]] double pass_spread_pct() const;
  // Each rank's kernel speed, for a pinned point (a core per rank) and the ranks with at least
  // kKernelSpeedMinComputeS of predicted compute a step; none otherwise.
  [[nodiscard]] std::vector<RankKernelSpeed> kernel_speeds() const;
};

// One point measured in several passes over the grid, as one: the measured, predicted and
// replayed figures and the steal are the passes' means, and pass_step_times_s and
// pass_predicted_step_times_s list each pass's step times. Throws std::invalid_argument for no passes or
// passes of different points.
PointComparison combine_passes(const std::vector<PointComparison>& passes);

PointFigures measured_figures(const Json& result, const std::string& label);
PointFigures predicted_figures(const Json& result, const std::string& label);

struct ErrorSummary {
  std::string group;  // a strategy kind, or "all"
  size_t points = 0;
  double median_abs_error_pct = 0.0;
  double max_abs_error_pct = 0.0;
};

// Median and largest |error| per strategy kind (in the order kinds first appear), then "all", of
// the prediction, of the replay, or of the spread between passes.
using ErrorOf = double (PointComparison::*)() const;
std::vector<ErrorSummary> summarise(const std::vector<PointComparison>& points,
                                    ErrorOf error = &PointComparison::error_pct);

// The accuracy target: median |error| <= 3% and max |error| <= 8% overall.
inline constexpr double kTargetMedianPct = 3.0;
inline constexpr double kTargetMaxPct = 8.0;
bool meets_target(const ErrorSummary& overall);

// Whether this machine's measurements hold still enough to judge the target: the spread between
// passes (summarise with &PointComparison::pass_spread_pct, its "all" group last) is within it,
// at the median and at most. A prediction cannot be shown closer to a measurement than the same
// measurement, taken again, comes to itself. Empty (one pass) says nothing: std::nullopt.
std::optional<bool> machine_resolves_target(const std::vector<ErrorSummary>& repeatability);

// How long the kernels took in the runs against the profile, by how busy their core was: every
// point's kernel_speeds() (each rank's replayed compute over its predicted compute, that is the
// run's CPU times of its device operations over the profile's on the same schedule), binned by
// the rank's measured compute's share of the measured step.
struct KernelSpeedBin {
  double busy_from = 0.0;  // the bin holds shares in [busy_from, busy_to); the last up to any
  double busy_to = 0.0;
  size_t hosts = 0;
  double median_ratio = 0.0;
  double min_ratio = 0.0;
  double max_ratio = 0.0;
};
inline constexpr double kKernelSpeedMinComputeS = 1e-3;
// The bins' lower edges, ascending; the last bin ends at 1 (busy all the step).
inline constexpr double kKernelSpeedBusyEdges[] = {0.0, 0.1, 0.4, 0.75};
// The bins, busiest first, empty ones left out.
std::vector<KernelSpeedBin> kernel_speed(const std::vector<PointComparison>& points);

Json to_json(const PointComparison& point);
Json to_json(const ErrorSummary& summary);
Json to_json(const KernelSpeedBin& bin);

}  // namespace ralp::validate
