// Command-line overrides of a scenario's values (`--workers 16`, `--strategy ralp`), applied to
// the scenario's JSON before it is validated, so that an override is checked as strictly as the
// file and its errors name the option.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "ralp/core/json_input.hpp"
#include "ralp/spec/scenario.hpp"

namespace ralp {

// One override as typed: `name` is the option without its dashes ("workers", "network-model"),
// `value` its text ("16", "10Gbps", "ralp").
struct ScenarioOverride {
  std::string name;
  std::string value;
  friend bool operator==(const ScenarioOverride&, const ScenarioOverride&) = default;
};

// An override the scenario accepts, for registering command-line options: its name, the name of
// its value in help texts, and what it replaces.
struct OverrideOption {
  std::string name;
  std::string value_name;
  std::string help;
};

// Every override, in the order apply_scenario_overrides applies them (strategy before cut).
const std::vector<OverrideOption>& scenario_override_options();

// The scenario's JSON (as read from `file`) with the overrides applied:
//   workers, parameter-servers, batch   /cluster/workers, /cluster/parameter_servers,
//                                        /batch_per_worker (text that reads as a JSON number
//                                        becomes that number, other text stays a string)
//   bandwidth, latency                   /cluster/platform/nic_bandwidth and /latency (a quantity,
//                                        as in the file; per-role ps_nic / worker_nic values that
//                                        set their own keep them; not for kind "file")
//   network-model                        /network_model: tcp or ideal
//   strategy                             keeps only that strategy: the one with that label, else
//                                        the first of that kind, else a new one of that kind with
//                                        default options
//   cut                                  /strategies/N/cut of every ralp and hybrid strategy
// Throws InputError naming the option ("--strategy is \"x\", expected ...") for an unknown
// override name, one given twice, a strategy that is neither a label nor a kind, a cut with no
// ralp or hybrid strategy to take it, and bandwidth or latency on a platform file. Values are not
// checked here: parse_scenario checks them.
Json apply_scenario_overrides(const Json& scenario, const std::string& file,
                              const std::vector<ScenarioOverride>& overrides);

// parse_scenario and load_scenario with overrides, and the memory check (spec/memory_plan.hpp:
// a scenario whose memory_check is on and that does not fit its devices is refused). An error
// about an overridden value names the option instead of the file and path: "--workers is 0,
// expected an integer in [1, 65536]"; others name the file and the path the value has in the file.
Scenario parse_scenario(const Json& value, const std::string& file,
                        const std::filesystem::path& base_dir,
                        const std::vector<ScenarioOverride>& overrides);
Scenario load_scenario(const std::filesystem::path& file,
                       const std::vector<ScenarioOverride>& overrides);

}  // namespace ralp
