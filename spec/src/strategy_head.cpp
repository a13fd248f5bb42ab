// A strategy's head and the scenario as that head runs it.
#include "ralp/spec/strategy_head.hpp"

namespace ralp {

Scenario scenario_for_head(const Scenario& scenario, const Head& head) {
  Scenario out = scenario;
  if (!head.is_suffix()) out.model = model_for_head(scenario.model, head);
  return out;
}

std::optional<Head> strategy_head(const LayerGraph& model, const StrategySpec& spec) {
  const bool has_cut = spec.kind == StrategyKind::ralp || spec.kind == StrategyKind::hybrid;
  if (!has_cut || !spec.cut) return std::nullopt;
  return parse_head(model, *spec.cut);
}

}  // namespace ralp
