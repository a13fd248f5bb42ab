// The scenario overrides (`--workers 16`, `--precision bf16`, ...) as command-line options of any
// subcommand that reads a scenario: registered in one group, read back as ScenarioOverride values.
#pragma once

#include <map>
#include <string>
#include <utility>
#include <vector>

#include <CLI/CLI.hpp>

#include "ralp/spec/scenario_overrides.hpp"

namespace ralp::cli {

class ScenarioOverrideFlags {
 public:
  // Registers every override of scenario_override_options() on `cmd`.
  void add_to(CLI::App& cmd);
  // The overrides given on the command line, in scenario_override_options() order.
  [[nodiscard]] std::vector<ScenarioOverride> overrides() const;

 private:
  std::map<std::string, std::string> values_;
  std::vector<std::pair<std::string, CLI::Option*>> options_;
};

}  // namespace ralp::cli
