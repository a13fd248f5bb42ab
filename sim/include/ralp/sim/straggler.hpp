// Straggler model: each worker's compute slowdown in each step, drawn from the scenario's seed.
#pragma once

#include <cstdint>

#include "ralp/spec/scenario.hpp"

namespace ralp::sim {

// The factor (>= 1) that multiplies `worker`'s compute times in `step`; 1 without stragglers. A
// pure function of (seed, step, worker), so every strategy meets the same slow workers in the same
// steps, and results do not depend on the order in which the simulator asks.
double straggler_factor(const StragglerSpec& spec, uint64_t seed, int64_t step, int64_t worker);

}  // namespace ralp::sim
