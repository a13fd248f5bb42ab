// Step plans of one strategy at every cut, built once: the per-layer times, variable groups and
// tensors of the longest tail and every layer's head time on the PS are computed once, and each
// cut's plan is cut from them, so ranking n cuts costs O(n^2) copies instead of O(n^2) cost-model
// estimates; a head that is not a suffix takes its tail's layers from them in file order. Pure.
#pragma once

#include <vector>

#include "ralp/schedule/step_plan.hpp"
#include "ralp/spec/head.hpp"

namespace ralp::placement {

class CutPlans {
 public:
  // Precondition: strategy is ralp or hybrid and the model has at least one cut.
  CutPlans(const Scenario& scenario, const StrategySpec& strategy);

  // The plan of `cut` (a cut point): equal to schedule::make_step_plan(scenario, strategy, cut)
  // in every field the analytic model reads (shard_plan only for balanced sharding); the compute sources describe the longest tail.
  [[nodiscard]] schedule::StepPlan plan_at(LayerId cut) const;
  // The plan of any head: equal, in the same fields, to make_step_plan(scenario_for_head(scenario,
  // head), strategy, head.cut()), the plan of the model in the head's order. A suffix is
  // plan_at(head.cut()).
  [[nodiscard]] schedule::StepPlan plan_at(const Head& head) const;

 private:
  // The plan with the tail `order[0, cut)` (ids of the file order), the head the rest, its
  // boundary and shards read on `graph` (the model in that order), or, without one, on the file's
  // model with every variable on the one shard; groups cut from the longest tail's when
  // `prefix_groups`.
  [[nodiscard]] schedule::StepPlan plan_of(const std::vector<LayerId>& order, LayerId cut,
                                           const LayerGraph* graph, bool prefix_groups) const;

  const Scenario& scenario_;
  // The scenario with its model in a candidate's order, for placing that tail's variables.
  mutable Scenario reordered_;
  schedule::StepPlan longest_;                // at the last cut
  std::vector<LayerCost> head_micro_batch_;   // every layer on the PS at batch B
  std::vector<LayerCost> head_full_batch_;    // at batch W x B
};

}  // namespace ralp::placement
