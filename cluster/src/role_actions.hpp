// What each role's operations mean on real tensors: a worker's tail network, pulled values and
// pushed gradients, boundary messages and all-reduced gradients; a PS shard's variables, sums and
// updates; the head PS's network and micro-batches. The schedule decides when; these only say
// how. Internal to cluster/.
#pragma once

#include <memory>
#include <utility>
#include <vector>

#include "step_executor.hpp"

namespace ralp::cluster {

// Values of every parameter this rank holds authoritatively at the end of the run, keyed by
// dump_layout() index (see parameter_layout.hpp).
using FinalParameters = std::vector<std::pair<size_t, std::vector<float>>>;

class RankActions : public RoleActions {
 public:
  [[nodiscard]] virtual FinalParameters final_parameters() = 0;
};

// The actions of this rank's role (a worker, or a parameter server: shard, head, or idle).
std::unique_ptr<RankActions> make_rank_actions(StrategyContext& context,
                                               const schedule::Schedule& schedule);

}  // namespace ralp::cluster
