// What each device of a strategy holds during a step (model/memory_footprint.hpp counts it), and
// the check of those footprints against the devices' memory_capacity (docs/precision.md#memory).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "ralp/model/memory_footprint.hpp"
#include "ralp/spec/scenario.hpp"

namespace ralp {

// One strategy's footprints: a worker's, and the busiest parameter server's (none for
// allreduce). Workers under ps and ralp keep no optimizer state (the parameter servers update);
// a ralp or hybrid head PS trains the head at its batch besides its shards.
struct StrategyMemory {
  MemoryFootprint worker;
  std::optional<MemoryFootprint> ps;
};

// The footprints of `strategy` cut at `cut` (the first head layer in the head's order, for ralp
// and hybrid; ignored otherwise). `head` names the head when it is not a suffix of the file
// order (as parse_head reads it); empty: the suffix from `cut`.
StrategyMemory strategy_memory(const Scenario& scenario, const StrategySpec& strategy,
                               std::optional<LayerId> cut, const std::string& head = "");

// The one line that refuses the scenario: the first strategy none of whose placements fits a
// device, naming the device, the memory needed and available, and the largest batch per worker
// at which every strategy fits; nullopt when every strategy fits somewhere (a ralp or hybrid strategy with cut
// "auto" fits when one of its suffix cuts does) or no device states its capacity.
std::optional<std::string> memory_problem(const Scenario& scenario);

// Throws InputError at /batch_per_worker with memory_problem's line when the scenario's
// memory_check is on; returns that line as a warning ("warning: ...") when it is off.
std::optional<std::string> check_memory(const Scenario& scenario);

// The warnings a command prints before it runs a scenario: precision_warnings, then the memory
// warning of a scenario whose memory_check is off.
std::vector<std::string> scenario_warnings(const Scenario& scenario);

}  // namespace ralp
