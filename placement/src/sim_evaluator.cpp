// The simulator behind the placement search: candidates simulated in parallel child processes.
#include "ralp/placement/sim_evaluator.hpp"

namespace ralp::placement {

std::vector<double> SimulatedEvaluator::step_times(const Scenario& scenario,
                                                   const StrategySpec& strategy,
                                                   const std::vector<std::optional<LayerId>>& cuts) {
  // One strategy per cut, each with its cut fixed, so that no search runs inside.
  Scenario one = scenario;
  one.strategies.clear();
  for (size_t i = 0; i < cuts.size(); ++i) {
    StrategySpec spec = strategy;
    spec.label = strategy.label + "#" + std::to_string(i);
    if (cuts[i]) spec.cut = scenario.model.layer(*cuts[i]).name();
    one.strategies.push_back(std::move(spec));
  }
  sim::SimulateOptions options = options_;
  options.keep_timeline = false;
  options.keep_messages = false;
  std::vector<double> out;
  for (const auto& r : sim::simulate_scenario(one, options).results) {
    out.push_back(r.step_time_mean_s);
  }
  return out;
}

std::vector<sim::ResolvedStrategy> resolve_cuts(const Scenario& scenario,
                                                const sim::SimulateOptions& options,
                                                const PlaceOptions& place) {
  SimulatedEvaluator evaluator(options);
  std::vector<sim::ResolvedStrategy> out;
  // Only strategies with cut "auto" need the simulator here; the others keep their cut.
  for (const StrategySpec& spec : scenario.strategies) {
    sim::ResolvedStrategy r{spec, std::nullopt, {}, std::nullopt};
    const bool has_cut = spec.kind == StrategyKind::ralp || spec.kind == StrategyKind::hybrid;
    if (has_cut && spec.cut) r.cut = scenario.model.find(*spec.cut);
    if (has_cut && !spec.cut) {
      Scenario one = scenario;
      one.strategies = {spec};
      const StrategyPlacement p = resolve_auto_cuts(one, evaluator, place).front();
      r.cut = p.cut;
      for (const RankedCut& c : p.ranking) {
        if (c.simulated_s) r.search.push_back({c.candidate.name, *c.simulated_s});
      }
    }
    out.push_back(std::move(r));
  }
  return out;
}

}  // namespace ralp::placement
