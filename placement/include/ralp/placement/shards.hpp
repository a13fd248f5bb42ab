// Shard assignment compared: a ps or ralp strategy's variables placed round-robin, greedily by
// bytes and balanced (the busiest shard's analytic load minimised, spec/sharding.hpp), each with
// every shard's load under schedule::shard_load_model and the analytic step time it gives. Pure.
#pragma once

#include <optional>
#include <vector>

#include "ralp/spec/scenario.hpp"
#include "ralp/spec/sharding.hpp"

namespace ralp::placement {

struct ShardingOption {
  ShardPlacement placement = ShardPlacement::round_robin;
  std::vector<double> loads_s;  // per shard, seconds per step
  double busiest_s = 0.0;
  double analytic_s = 0.0;      // the analytic step time with this assignment
  std::vector<ShardShare> shares;
};

// The three assignments of `strategy` at `cut` (ignored by ps), in the order round_robin,
// greedy, balanced. Precondition: strategy is ps or ralp (ralp with a cut).
std::vector<ShardingOption> compare_shardings(const Scenario& scenario,
                                              const StrategySpec& strategy,
                                              std::optional<LayerId> cut);

}  // namespace ralp::placement
