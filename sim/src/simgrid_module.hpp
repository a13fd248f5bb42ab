// The interface between ralp_sim and the SimGrid simulator module (libralp_simgrid.so): the one
// symbol the module exports and the table of functions it returns. No SimGrid header here: the
// library opens the module without linking SimGrid.
#pragma once

#include "ralp/sim/step_model.hpp"

namespace ralp::sim {

// Changes whenever SimgridModuleInterface or the types it passes change, so that a module from
// another build is refused with a reason instead of crashing.
inline constexpr int kSimgridModuleInterfaceVersion = 1;

struct SimgridModuleInterface {
  int version = 0;
  // run_step_model, as step_model.cpp defines it inside the module.
  StrategyResult (*run_step_model)(const Scenario&, const schedule::Schedule&,
                                   const RunOptions&) = nullptr;
};

// The module's entry point, looked up by this name.
inline constexpr const char* kSimgridModuleEntry = "ralp_simgrid_module";
using SimgridModuleEntry = const SimgridModuleInterface* (*)();

}  // namespace ralp::sim
