// Plays a step schedule out in SimGrid over the scenario's platform and network model.
#pragma once

#include "ralp/results/simulation_result.hpp"
#include "ralp/schedule/schedule.hpp"
#include "ralp/sim/run_options.hpp"

namespace ralp::sim {

// Simulates warmup_steps + steps steps of `schedule` and returns the result. It creates a SimGrid
// engine: SimGrid allows one per process and never resets its clock, so call it once per process
// (simulate.hpp runs each call in a child process). Throws InputError for platform problems found
// only now (a platform file's hosts), and std::runtime_error when the simulation deadlocks.
// The step model runs in the SimGrid simulator module (libralp_simgrid.so, beside the executable),
// opened on first use; throws std::runtime_error naming the file when it cannot be opened.
StrategyResult run_step_model(const Scenario& scenario, const schedule::Schedule& schedule,
                              const RunOptions& options);

// Opens the simulator module now, or throws std::runtime_error saying why it cannot be. Processes
// forked afterwards share the parent's copy instead of each loading SimGrid again.
void load_simulator();

}  // namespace ralp::sim
