// What `ralp cluster` is asked to run beside the scenario: which strategies, how many steps, on
// which device, and what to keep of the run.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>

#include "ralp/cluster/fault_injection.hpp"
#include "ralp/core/units.hpp"

namespace ralp::cluster {

// How gradients are all-reduced in allreduce and hybrid: this project's ring over point-to-point
// messages (the algorithm the simulator models), or the MPI library's MPI_Allreduce, to compare.
enum class AllreduceImplementation { ring, mpi };

enum class ClusterDevice { automatic, cpu, cuda };

struct ClusterOptions {
  std::optional<std::string> strategy;  // a label or kind of the scenario; nullopt: all of them
  std::optional<std::string> cut;       // ralp and hybrid: a head name (spec/head.hpp parse_head)
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
// model in the head's order (spec/head.hpp), as the simulator does, so that both send the same
// messages; the parameter dump stays in the file's order.
}  // namespace ralp::cluster
