// Step plans of one strategy at every cut, built once: the per-layer times, variable groups and
// tensors of the longest tail and every layer's head time on the PS are computed once, and each
// cut's plan is cut from them, so ranking n cuts costs O(n^2) copies instead of O(n^2) cost-model
// estimates. Pure.
#pragma once

#include <vector>

#include "ralp/schedule/step_plan.hpp"

namespace ralp::placement {

class CutPlans {
 public:
  // Precondition: strategy is ralp or hybrid and the model has at least one cut.
  CutPlans(const Scenario& scenario, const StrategySpec& strategy);

  // The plan of `cut` (a cut point): equal to schedule::make_step_plan(scenario, strategy, cut)
  // in every field the analytic model reads (shard_plan only for balanced sharding); the compute sources describe the longest tail.
  [[nodiscard]] schedule::StepPlan plan_at(LayerId cut) const;

 private:
  const Scenario& scenario_;
  schedule::StepPlan longest_;                // at the last cut
  std::vector<LayerCost> head_micro_batch_;   // every layer on the PS at batch B
  std::vector<LayerCost> head_full_batch_;    // at batch W x B
};

}  // namespace ralp::placement
