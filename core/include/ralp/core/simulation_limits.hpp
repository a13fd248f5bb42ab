// What the simulator can run, checked up front so that a scenario beyond it is refused before
// any work instead of failing midway. Pure.
#pragma once

#include <cstdint>

#include "ralp/core/scenario.hpp"

namespace ralp {

// The most workers one simulation runs. Each worker costs SimGrid actors (one per stream of its
// role and of the parameter server's connection to it) with their stacks: VGG-16 at 16,384
// workers needs about 6.5 GB (measured, README "Simulator speed").
inline constexpr int64_t kMaxSimulatedWorkers = 16384;

// Throws InputError naming /cluster/workers when the scenario has more workers than the
// simulator runs.
void check_simulation_limits(const Scenario& scenario);

}  // namespace ralp
