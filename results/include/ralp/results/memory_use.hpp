// The memory each strategy of a simulated scenario takes, set on its results.
#pragma once

#include "ralp/results/simulation_result.hpp"
#include "ralp/spec/scenario.hpp"

namespace ralp {

// Sets every result's worker_memory and ps_memory (spec/memory_plan.hpp's strategy_memory at the
// result's cut) and the devices' capacities. A result whose label the scenario lacks is left as
// it is.
void add_memory(ScenarioResult& result, const Scenario& scenario);

}  // namespace ralp
