// What a simulation produces: step times, traffic per host and link, each worker's compute /
// communication / waiting split, and the timeline of the last step; value types, and their JSON
// form (the one `ralp simulate --json` writes per strategy and simulation processes return).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "ralp/core/json_input.hpp"
#include "ralp/core/precision.hpp"
#include "ralp/model/memory_footprint.hpp"
#include "ralp/results/compute_sources.hpp"
#include "ralp/results/step_result.hpp"
#include "ralp/results/training_plan.hpp"

namespace ralp {

struct LinkLoad {
  std::string name;
  double bytes = 0.0;        // per step, averaged over the measured steps
  double bandwidth = 0.0;    // bytes per second
  double utilisation = 0.0;  // bytes / (bandwidth * step time)
  friend bool operator==(const LinkLoad&, const LinkLoad&) = default;
};

struct CutTrial {
  std::string cut;  // first head layer
  double step_time_mean_s = 0.0;
  friend bool operator==(const CutTrial&, const CutTrial&) = default;
};

// A simulated strategy: the fields it shares with a measured one (results/step_result.hpp), and
// what only the simulator knows.
struct StrategyResult : StepResult {
  std::optional<double> speedup_vs_ps;         // filled in when the scenario has a ps strategy
  std::optional<double> speedup_vs_allreduce;  // filled in when it has an allreduce strategy
  std::vector<LinkLoad> links;  // links that carried traffic, busiest first
  std::string ring_model;  // "message" or "coalesced" where a ring ran
  ComputeSources worker_sources;
  std::optional<ComputeSources> ps_sources;
  std::vector<CutTrial> cut_search;  // cut "auto": every cut simulated
  // What a worker and the busiest parameter server hold during a step (spec/memory_plan.hpp),
  // with their devices' capacities where stated; set by add_memory (ralp simulate), else absent.
  std::optional<MemoryFootprint> worker_memory;
  std::optional<MemoryFootprint> ps_memory;
  std::optional<Bytes> worker_memory_capacity;
  std::optional<Bytes> ps_memory_capacity;
  friend bool operator==(const StrategyResult&, const StrategyResult&) = default;
};

struct ScenarioResult {
  std::string scenario;  // scenario name
  std::string file;
  std::string model;
  int64_t workers = 0;
  int64_t parameter_servers = 0;
  int64_t batch_per_worker = 0;
  Precision precision = Precision::fp32;  // what the step computed in
  std::string network_model;
  double split_threshold = 0.05;  // the gain a cut must bring over the best uncut strategy
  std::vector<StrategyResult> results;
  // One worker device alone, the reference of scaling efficiency; set by whoever can price it
  // (the placement part's analytic model), else nullopt.
  std::optional<SingleDeviceBaseline> baseline;
  TrainingPlan training;  // the run the time and cost to train are for
};

// Every field of a StrategyResult; the timeline only when asked.
Json to_json(const StrategyResult& result, bool with_timeline);
// The inverse of to_json; throws std::runtime_error on a malformed document.
StrategyResult strategy_result_from_json(const Json& json);

// A footprint as JSON: its parts and total in bytes, and the device's capacity (null: not stated).
Json memory_json(const MemoryFootprint& footprint, const std::optional<Bytes>& capacity);

}  // namespace ralp
