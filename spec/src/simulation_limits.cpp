// The simulator's limits on a scenario.
#include "ralp/spec/simulation_limits.hpp"

#include <string>

#include "ralp/core/json_input.hpp"

namespace ralp {

void check_simulation_limits(const Scenario& scenario) {
  if (scenario.workers <= kMaxSimulatedWorkers) return;
  throw InputError(scenario.file, "/cluster/workers",
                   "is " + std::to_string(scenario.workers) + ", expected at most " +
                       std::to_string(kMaxSimulatedWorkers) +
                       " (the simulator's limit: each worker costs SimGrid actors and their "
                       "stacks)");
}

}  // namespace ralp
