// Scenario overrides as command-line options.
#include "scenario_override_flags.hpp"

namespace ralp::cli {

void ScenarioOverrideFlags::add_to(CLI::App& cmd) {
  for (const auto& o : scenario_override_options()) {
    CLI::Option* option = cmd.add_option("--" + o.name, values_[o.name], o.help)
                              ->type_name(o.value_name)
                              ->group("Scenario overrides (checked as the file is)");
    options_.emplace_back(o.name, option);
  }
}

std::vector<ScenarioOverride> ScenarioOverrideFlags::overrides() const {
  std::vector<ScenarioOverride> out;
  for (const auto& [name, option] : options_) {
    if (option->count() > 0) out.push_back({name, values_.at(name)});
  }
  return out;
}

}  // namespace ralp::cli
