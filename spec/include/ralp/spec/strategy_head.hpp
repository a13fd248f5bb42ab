// A strategy's head and the scenario as that head runs it: the model reordered so that the head
// is the suffix [head.cut(), size).
#pragma once

#include <optional>

#include "ralp/model/layer_graph.hpp"
#include "ralp/spec/head.hpp"
#include "ralp/spec/scenario.hpp"

namespace ralp {

// The scenario as a strategy with `head` runs it: the model in the head's order (a copy of the
// scenario; the model unchanged for a suffix). Cut it at head.cut().
Scenario scenario_for_head(const Scenario& scenario, const Head& head);

// The head of a ralp or hybrid strategy with a fixed cut (StrategySpec::cut holds its name, as
// parse_head reads it); nullopt for "auto" and for ps and allreduce. Throws like parse_head.
std::optional<Head> strategy_head(const LayerGraph& model, const StrategySpec& spec);

}  // namespace ralp
