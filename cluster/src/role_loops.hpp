// The loop each role runs for one strategy: a worker, or a parameter server (shard, head PS, or
// idle). Internal.
#pragma once

#include "strategy_context.hpp"

namespace ralp::cluster {

// Values of every parameter this rank holds authoritatively at the end of the run, keyed by
// dump_layout() index (see run_cluster.hpp).
using FinalParameters = std::vector<std::pair<size_t, std::vector<float>>>;

FinalParameters run_worker(StrategyContext& context, int64_t worker);
FinalParameters run_parameter_server(StrategyContext& context, int64_t shard);

}  // namespace ralp::cluster
