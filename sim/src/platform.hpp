// Builds the SimGrid platform of a scenario (generated topologies or a platform file) and names
// each host by its role. SimGrid adapter: include only from the step model.
#pragma once

#include <vector>

#include <simgrid/s4u.hpp>

#include "ralp/spec/scenario.hpp"

namespace ralp::sim {

// Every host computes at this many flop/s, so that a duration of t seconds is t * kHostSpeed
// flop: the simulator's hosts only serialise work; the cost model gives the durations.
inline constexpr double kHostSpeed = 1e9;

struct Platform {
  std::vector<simgrid::s4u::Host*> ps;       // ps-0 .. ps-(P-1)
  std::vector<simgrid::s4u::Host*> workers;  // worker-0 .. worker-(W-1)
};

// Sets the network model's configuration; call before building the platform.
void configure_network_model(const NetworkModelSpec& spec);

// Creates the platform in the current engine. Throws InputError for a platform file whose role
// map names hosts it does not have, or that has too few hosts.
Platform build_platform(simgrid::s4u::Engine& engine, const Scenario& scenario);

}  // namespace ralp::sim
