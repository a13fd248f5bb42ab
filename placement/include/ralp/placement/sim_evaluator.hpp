// The StepEvaluator over the SimGrid simulator (built with it), and cut "auto" resolved for
// `ralp simulate` and `ralp cluster` alike.
#pragma once

#include "ralp/placement/search.hpp"
#include "ralp/sim/simulate.hpp"

namespace ralp::placement {

// Simulates each cut in its own child process, several at once (sim::simulate_scenario).
class SimulatedEvaluator final : public StepEvaluator {
 public:
  explicit SimulatedEvaluator(sim::SimulateOptions options = {}) : options_(std::move(options)) {}
  std::vector<double> step_times(const Scenario& scenario, const StrategySpec& strategy,
                                 const std::vector<std::optional<Head>>& heads) override;

 private:
  sim::SimulateOptions options_;
};

// Every strategy of the scenario with its cut: cut "auto" resolved by the placement search
// (search.hpp, top_k simulated), the simulated candidates listed in `search`.
std::vector<sim::ResolvedStrategy> resolve_cuts(const Scenario& scenario,
                                                const sim::SimulateOptions& options,
                                                const PlaceOptions& place = {});

// The scenario at analytic fidelity (`ralp simulate --fidelity analytic`): every strategy's step
// time from the analytic model, cut "auto" at the analytic ranking's best, for clusters too large
// to simulate event by event. Results carry step times, images/s, speedups and compute sources;
// no per-host traffic, links, splits or timeline. Throws InputError when a strategy with cut
// "auto" has no valid cut, and for hosts that share devices (cluster.shared_devices), which the
// analytic model does not describe.
ScenarioResult analytic_scenario(const Scenario& scenario);

}  // namespace ralp::placement
