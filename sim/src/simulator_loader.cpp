// ralp_sim's side of the SimGrid simulator module: opens it on first use and runs the step model
// there, so that commands which simulate nothing do not load SimGrid (and the ns-3 libraries
// Debian's SimGrid links).
#include <stdexcept>

#include "ralp/core/loadable_module.hpp"
#include "simgrid_module.hpp"

namespace ralp::sim {
namespace {

// The module's functions, or why it cannot serve.
struct OpenedSimulator {
  const SimgridModuleInterface* api = nullptr;
  std::string error;
};

OpenedSimulator open_simulator() {
  const std::filesystem::path path = find_module(RALP_SIMGRID_MODULE_FILE, RALP_SIMGRID_MODULE_DIR);
  const ModuleEntry entry = open_module(path, kSimgridModuleEntry);
  if (entry.address == nullptr) return {nullptr, "the simulator is unavailable: " + entry.error};
  const SimgridModuleInterface* api = reinterpret_cast<SimgridModuleEntry>(entry.address)();
  if (api == nullptr || api->version != kSimgridModuleInterfaceVersion) {
    return {nullptr, "the simulator is unavailable: " + path.string() +
                         " was built for interface " +
                         std::to_string(api == nullptr ? 0 : api->version) + ", expected " +
                         std::to_string(kSimgridModuleInterfaceVersion)};
  }
  return {api, {}};
}

const SimgridModuleInterface& simulator() {
  static const OpenedSimulator opened = open_simulator();
  if (opened.api == nullptr) throw std::runtime_error(opened.error);
  return *opened.api;
}

}  // namespace

void load_simulator() { (void)simulator(); }

StrategyResult run_step_model(const Scenario& scenario, const schedule::Schedule& schedule,
                              const RunOptions& options) {
  return simulator().run_step_model(scenario, schedule, options);
}

}  // namespace ralp::sim
