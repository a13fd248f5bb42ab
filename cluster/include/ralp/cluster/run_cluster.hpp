// `ralp cluster`: runs a scenario's strategies as a real cluster, one MPI rank per host (the
// parameter servers first, then the workers), training the scenario's model with the real kernels
// on synthetic data, and measures what the simulator predicts. docs/cluster.md describes the
// protocol of each strategy, the output and the fault behaviour.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "ralp/cluster/cluster_options.hpp"
#include "ralp/cluster/fault_injection.hpp"
#include "ralp/cluster/measurement.hpp"
#include "ralp/cluster/mpi_session.hpp"
#include "ralp/cluster/parameter_layout.hpp"
#include "ralp/spec/head.hpp"
#include "ralp/spec/scenario.hpp"

namespace ralp::cluster {

struct PlannedStrategy {
  StrategySpec spec;
  std::optional<Head> cut;
};

// Resolves a strategy's cut "auto" (the placement search: placement/sim_evaluator.hpp).
using CutResolver = std::function<std::optional<Head>(const StrategySpec&)>;

// The strategies to run, in the scenario's order. --strategy picks one by label, else by kind
// (a kind the scenario does not list runs with default options). The cut of ralp and hybrid comes
// from --cut, else the scenario, else ("auto") `resolve_auto`, so that the real run uses the cut
// the prediction uses. Throws InputError for an unknown strategy or layer, a head that leaves no
// tail, "auto" without a resolver, or a scenario with compression (the real run moves
// uncompressed gradients).
std::vector<PlannedStrategy> plan_strategies(const Scenario& scenario,
                                             const ClusterOptions& options,
                                             const CutResolver& resolve_auto);

// Throws InputError unless the job has exactly parameter_servers + workers ranks.
void check_world_size(const Scenario& scenario, int ranks);

// Throws InputError naming the scenario's "/precision" unless the kernels this rank would run on
// `device` compute in the scenario's precision (the CPU: fp32, and bf16 with AVX-512).
void check_precision(const Scenario& scenario, ClusterDevice device);

// Runs the strategies on every rank of the job; rank 0 returns the measurements, the others
// nullopt. Throws ClusterFailure when this rank sees a peer stop answering, an MPI error or any
// other failure once communication has begun: the caller must then abort the job.
std::optional<MeasuredRun> run_cluster(MpiSession& session, const Scenario& scenario,
                                       const std::vector<PlannedStrategy>& strategies,
                                       const ClusterOptions& options);


}  // namespace ralp::cluster
