// Plays a step plan out in SimGrid: the actors of PS shards, the head PS, workers and rings, over
// the scenario's platform and network model.
#pragma once

#include "ralp/sim/result.hpp"
#include "ralp/sim/step_plan.hpp"

namespace ralp::sim {

// Simulates warmup_steps + steps steps of `plan` and returns the result, its timeline holding the
// last step. It creates a SimGrid engine: SimGrid allows one per process and never resets its
// clock, so call it once per process (simulate.hpp runs each call in a child process). Throws
// InputError for platform problems found only now (a platform file's hosts), and
// std::runtime_error when the simulation deadlocks.
StrategyResult run_step_model(const Scenario& scenario, const StepPlan& plan);

}  // namespace ralp::sim
