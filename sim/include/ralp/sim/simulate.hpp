// Simulating a whole scenario: every strategy (every cut for cut "auto"), each in its own child
// process because SimGrid allows one engine per process, several at a time.
#pragma once

#include <functional>
#include <optional>
#include <string>

#include "ralp/sim/result.hpp"

namespace ralp::sim {

struct SimulateOptions {
  int jobs = 0;                 // simulations running at once; 0 means one per hardware thread
  bool keep_timeline = false;   // keep each strategy's last-step timeline (for --trace)
  // Called with a one-line progress message ("ralp: cut 12/39 ...") as simulations finish.
  std::function<void(const std::string&)> progress;
};

// Runs every strategy of the scenario. ralp and hybrid strategies with cut "auto" simulate every
// valid cut and keep the fastest (ties go to the earlier cut), listing all in cut_search.
// Speedups against the scenario's first ps and first allreduce strategy are filled in. Throws
// InputError for bad input found while simulating (a platform file), std::runtime_error when a
// simulation fails.
ScenarioResult simulate_scenario(const Scenario& scenario, const SimulateOptions& options);

// One strategy at one cut (ignored for ps and allreduce), in a child process.
StrategyResult simulate_isolated(const Scenario& scenario, const StrategySpec& strategy,
                                 std::optional<LayerId> cut, bool keep_timeline);

}  // namespace ralp::sim
