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

#include "ralp/cluster/fault_injection.hpp"
#include "ralp/cluster/measurement.hpp"
#include "ralp/cluster/mpi_session.hpp"
#include "ralp/core/head.hpp"
#include "ralp/core/scenario.hpp"

namespace ralp::cluster {

// How gradients are all-reduced in allreduce and hybrid: this project's ring over point-to-point
// messages (the algorithm the simulator models), or the MPI library's MPI_Allreduce, to compare.
enum class AllreduceImplementation { ring, mpi };

enum class ClusterDevice { automatic, cpu, cuda };

struct ClusterOptions {
  std::optional<std::string> strategy;  // a label or kind of the scenario; nullopt: all of them
  std::optional<std::string> cut;       // ralp and hybrid: a head name (core/head.hpp parse_head)
  std::optional<int64_t> steps;         // measured steps (warm-up steps come on top)
  std::optional<Seconds> step_timeout;  // overrides the scenario's training.step_timeout
  AllreduceImplementation allreduce = AllreduceImplementation::ring;
  ClusterDevice device = ClusterDevice::automatic;
  // On a CPU, the compute thread runs in Linux's SCHED_IDLE class, below the threads that move
  // messages, which then take the core at once when they wake (docs/cluster.md). For ranks with
  // cores of their own: anything else busy on a rank's core takes it from the kernels.
  bool compute_yields = false;
  // A directory for each strategy's final parameters, "<label>.params": every parameter of the
  // model in model order (per layer weight, then bias), float32 in plain order, host byte order.
  std::string dump_parameters;
  // A fault to inject (fault_injection.hpp), read from the environment by the caller.
  std::optional<FaultSpec> fault;
  // Keep every host's sent messages of the last step in the results (for checking them against
  // the schedule and the simulator).
  bool keep_messages = false;
  // Keep the last step's timeline, every rank's, in the results (ralp cluster --trace).
  bool keep_timeline = false;
  // Rank 0's progress lines; may be empty.
  std::function<void(const std::string&)> progress;
};

// A strategy as the run will execute it: the spec and its resolved head. Every rank runs the
// model in the head's order (core/head.hpp), as the simulator does, so that both send the same
// messages; the parameter dump stays in the file's order.
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

// Runs the strategies on every rank of the job; rank 0 returns the measurements, the others
// nullopt. Throws ClusterFailure when this rank sees a peer stop answering, an MPI error or any
// other failure once communication has begun: the caller must then abort the job.
std::optional<MeasuredRun> run_cluster(MpiSession& session, const Scenario& scenario,
                                       const std::vector<PlannedStrategy>& strategies,
                                       const ClusterOptions& options);

// The model's parameters in dump order: per layer with parameters, weight then bias.
struct ParameterEntry {
  LayerId layer = 0;
  bool bias = false;
  int64_t elements = 0;
};
std::vector<ParameterEntry> dump_layout(const LayerGraph& graph);

}  // namespace ralp::cluster
