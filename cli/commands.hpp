// The subcommands of `ralp`. Each add_* function registers its subcommands on the app; parsing
// stores the chosen subcommand's work in `action`, which main runs and whose result is the exit
// status.
#pragma once

#include <functional>
#include <string>

#include <CLI/CLI.hpp>

#include "ralp/model/layer_graph.hpp"
#include "ralp/reports/text_table.hpp"
#include "ralp/results/step_result.hpp"
#include "ralp/spec/scenario.hpp"

namespace ralp::cli {

using Action = std::function<int()>;

// The terminal tables and number formatting every command prints with.
using reports::fixed;
using reports::si;
using reports::TextTable;
using reports::with_commas;

// Exit statuses: success, a failure while running, bad input or usage.
inline constexpr int kExitOk = 0;
inline constexpr int kExitFailure = 1;
inline constexpr int kExitBadInput = 2;

void add_model_commands(CLI::App& app, Action& action);
void add_scenario_commands(CLI::App& app, Action& action);
void add_profile_commands(CLI::App& app, Action& action);
void add_transport_commands(CLI::App& app, Action& action);
void add_simulate_command(CLI::App& app, Action& action);
void add_calibrate_command(CLI::App& app, Action& action);
void add_cluster_command(CLI::App& app, Action& action);
void add_link_probe_command(CLI::App& app, Action& action);
void add_validate_command(CLI::App& app, Action& action);
void add_place_command(CLI::App& app, Action& action);
void add_sweep_command(CLI::App& app, Action& action);
void add_report_command(CLI::App& app, Action& action);
void add_published_command(CLI::App& app, Action& action);

// One line saying which shard holds which layers of a ps or ralp result with several shards
// ("ps: variables on 2 shards (balanced): ps-0 4 MB: conv1, fc3; ps-1 ..."); long lists become
// counts with the first and last layer. Empty when the result has no shards.
std::string shard_line(const StepResult& result, const Scenario& scenario);

// A zoo model name or a model file path; throws InputError for neither.
LayerGraph resolve_model(const std::string& name_or_file);

// Writes `text` to `path`, or to standard output for "-". Throws std::runtime_error naming the
// path when it cannot be written.
void write_output(const std::string& path, const std::string& text);

// Checks, before long work starts, that `path` (given with `option`) can be written: its folder
// exists and is writable. Throws InputError naming the option otherwise; "-" and "" pass.
void check_output_path(const std::string& option, const std::string& path);

}  // namespace ralp::cli
