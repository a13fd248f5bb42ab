// The answers a cluster buyer acts on, per strategy: images/s per GPU, scaling efficiency against
// one GPU of the same device and batch, the time a training run takes and what it costs.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "ralp/core/json_input.hpp"
#include "ralp/results/simulation_result.hpp"
#include "ralp/results/training_plan.hpp"

namespace ralp {

struct TrainingFigures {
  double images_per_s_per_gpu = 0.0;  // images/s over the workers (each one device)
  // images/s / (workers x the baseline's images/s); nullopt without a baseline.
  std::optional<double> scaling_efficiency;
  double time_to_train_s = 0.0;  // epochs x dataset images / images/s
  // Hosts paid for: the workers' nodes, and the parameter servers' own hosts where the strategy
  // uses them (allreduce does not).
  int64_t billed_hosts = 0;
  std::optional<double> cost;  // billed hosts x price an hour x hours; nullopt without a price
  friend bool operator==(const TrainingFigures&, const TrainingFigures&) = default;
};

TrainingFigures training_figures(const StrategyResult& result, int64_t workers,
                                 const TrainingPlan& plan,
                                 const std::optional<SingleDeviceBaseline>& baseline);

// The figures' JSON fields, added to a strategy's object: images_per_s_per_gpu,
// scaling_efficiency, time_to_train_s, billed_hosts, cost (null where unknown).
void add_training_figures(Json& strategy, const TrainingFigures& figures);

// A scaling efficiency as outputs print it: "87%", and one decimal below 10% ("4.6%", "0.4%").
std::string format_efficiency(double efficiency);

// Every strategy of `result` as JSON (without timelines), each with its training figures.
Json results_with_figures_json(const ScenarioResult& result);

}  // namespace ralp
