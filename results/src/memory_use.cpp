// Memory per strategy on simulated results.
#include "ralp/results/memory_use.hpp"

#include "ralp/spec/memory_plan.hpp"

namespace ralp {

void add_memory(ScenarioResult& result, const Scenario& scenario) {
  for (StrategyResult& r : result.results) {
    for (const StrategySpec& spec : scenario.strategies) {
      if (spec.label != r.label) continue;
      const StrategyMemory m = strategy_memory(scenario, spec, std::nullopt, r.cut.value_or(""));
      r.worker_memory = m.worker;
      r.worker_memory_capacity = scenario.worker_device.memory_capacity;
      r.ps_memory = m.ps;
      if (m.ps) r.ps_memory_capacity = scenario.ps_device.memory_capacity;
      break;
    }
  }
}

}  // namespace ralp
