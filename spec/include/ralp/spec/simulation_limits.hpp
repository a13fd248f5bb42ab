// What the simulator can run, checked up front so that a scenario beyond it is refused before
// any work instead of failing midway. Pure.
#pragma once

#include <cstdint>

#include "ralp/spec/scenario.hpp"

namespace ralp {

// The most workers one simulation runs. Each worker costs SimGrid actors (one per stream of its
// role and of the parameter server's connection to it) with their stacks: memory, not time,
// bounds it (bench/sim_steps prints the peak memory of VGG-16 up to this many workers).
inline constexpr int64_t kMaxSimulatedWorkers = 16384;

// Throws InputError naming /cluster/workers when the scenario has more workers than the
// simulator runs.
void check_simulation_limits(const Scenario& scenario);

}  // namespace ralp
