// Round-robin, greedy and balanced shard assignments side by side under the analytic model.
#include "ralp/placement/shards.hpp"

#include <algorithm>

#include "ralp/placement/analytic.hpp"
#include "ralp/schedule/step_plan.hpp"

namespace ralp::placement {

std::vector<ShardingOption> compare_shardings(const Scenario& scenario,
                                              const StrategySpec& strategy,
                                              std::optional<LayerId> cut) {
  std::vector<ShardingOption> out;
  for (const ShardPlacement placement :
       {ShardPlacement::round_robin, ShardPlacement::greedy, ShardPlacement::balanced}) {
    StrategySpec spec = strategy;
    spec.sharding = placement;
    const schedule::StepPlan plan = schedule::make_step_plan(scenario, spec, cut);
    ShardingOption o;
    o.placement = placement;
    o.loads_s = shard_loads(plan.shard_plan, schedule::shard_load_model(scenario, plan));
    o.busiest_s = *std::max_element(o.loads_s.begin(), o.loads_s.end());
    o.analytic_s = estimate_step(scenario, plan).step_time_s;
    o.shares = shard_shares(plan.shard_plan, scenario.model, std::max<int64_t>(plan.shards, 1));
    out.push_back(std::move(o));
  }
  return out;
}

}  // namespace ralp::placement
