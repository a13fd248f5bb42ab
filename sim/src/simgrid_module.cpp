// The SimGrid simulator module's entry point: the table through which ralp_sim reaches the step
// model (step_model.cpp, compiled into the module with the SimGrid adapter).
#include "simgrid_module.hpp"

namespace ralp::sim {
namespace {

constexpr SimgridModuleInterface kInterface{kSimgridModuleInterfaceVersion, &run_step_model};

}  // namespace
}  // namespace ralp::sim

// The module's one exported symbol (everything else in it is hidden).
extern "C" __attribute__((visibility("default"))) const ralp::sim::SimgridModuleInterface*
ralp_simgrid_module() {
  return &ralp::sim::kInterface;
}
