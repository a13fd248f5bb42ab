// Plays a step schedule out in SimGrid over the scenario's platform and network model.
#pragma once

#include "ralp/schedule/schedule.hpp"
#include "ralp/core/simulation_result.hpp"

namespace ralp::sim {

// What a run keeps beyond the step times and counts.
struct RunOptions {
  bool timeline = false;  // the last step's activities
  bool messages = false;  // every host's sent messages in the last step
  // SimGrid's lazy max-min update instead of the full one the simulator uses. Lazy is faster in
  // SimGrid's design but gives flows wrong shares when several flows with latency start together
  // (tests/sim/closed_form_test.cpp shows a case 24% off); kept to measure the difference.
  bool lazy_network_update = false;
  // Connections at wire speed as flows the kernel starts, without actors (step_model.cpp), where
  // the run has few enough; false: every connection with payloads on actors, the same messages at
  // the same times (kept to check that).
  bool played_flows = true;
};

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
