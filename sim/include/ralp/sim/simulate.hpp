// Simulating a whole scenario: every strategy (every cut for cut "auto"), each in its own child
// process because SimGrid allows one engine per process, several at a time.
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <string>

#include "ralp/results/measured_result.hpp"
#include "ralp/results/simulation_result.hpp"
#include "ralp/sim/step_model.hpp"
#include "ralp/spec/head.hpp"

namespace ralp::sim {

struct SimulateOptions {
  int jobs = 0;                 // simulations running at once; 0 means one per hardware thread
  bool keep_timeline = false;   // keep each strategy's last-step timeline (for --trace)
  bool keep_messages = false;   // keep every host's sent messages of the last step
  // Called with a one-line progress message ("ralp: cut 12/39 ...") as simulations finish.
  std::function<void(const std::string&)> progress;
  // Device times a real run measured (read_device_times of replay_file), by strategy label: the
  // strategies named play their schedule with them instead of the profile's times (a cut the
  // run did not use shows as a mismatch: InputError).
  std::string replay_file;
  std::map<std::string, DeviceTimes> replay;
};

// A strategy with its head resolved: the scenario's cut or head, or for cut "auto" the head a
// search chose, with the trials it simulated. A head that is not a suffix of the file order runs
// the model in the head's order (spec/head.hpp); results name it by head_name.
struct ResolvedStrategy {
  StrategySpec spec;
  std::optional<Head> cut;  // ralp and hybrid
  std::vector<CutTrial> search;
  std::optional<StrategyResult> searched_result;  // the winning trial's result
};

// Resolves every strategy's cut by brute force: cut "auto" becomes the fastest of every suffix
// of the file order simulated (ties go to the earlier cut). The placement search (placement/sim_evaluator.hpp)
// resolves "auto" for `ralp simulate` and `ralp cluster`; this is its reference. Throws like
// simulate_scenario.
std::vector<ResolvedStrategy> resolve_cuts(const Scenario& scenario, const SimulateOptions& options);

// Runs every strategy of the scenario at its resolved cut (resolve_cuts), listing the search in
// cut_search. Speedups against the scenario's first ps and first allreduce strategy are filled
// in. Throws InputError for bad input found while simulating (a platform file),
// std::runtime_error when a simulation fails.
ScenarioResult simulate_scenario(const Scenario& scenario, const SimulateOptions& options);
// The same with the cuts already resolved (one entry per scenario strategy, in order).
ScenarioResult simulate_scenario(const Scenario& scenario, std::vector<ResolvedStrategy> resolved,
                                 const SimulateOptions& options);

// One strategy at one cut (ignored for ps and allreduce), in a child process.
StrategyResult simulate_isolated(const Scenario& scenario, const StrategySpec& strategy,
                                 std::optional<LayerId> cut, const RunOptions& run);

}  // namespace ralp::sim
