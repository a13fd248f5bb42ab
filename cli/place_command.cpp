// `ralp place`: the placement search for a scenario: every candidate cut ranked by the analytic
// model, the best K simulated, the chosen cut per strategy and the split-or-not verdict, as a
// table and as JSON.
#include <unistd.h>

#include <cmath>
#include <iostream>
#include <memory>

#include "commands.hpp"
#include "ralp/placement/sim_evaluator.hpp"
#include "ralp/spec/scenario.hpp"
#include "ralp/spec/memory_plan.hpp"
#include "scenario_override_flags.hpp"

namespace ralp::cli {
namespace {

struct PlaceCommandOptions {
  std::string scenario;
  std::string json;
  int64_t top = 3;
  int jobs = 0;
  bool quiet = false;
  ScenarioOverrideFlags overrides;  // of the scenario's values, checked as the file is
};

// "-" where there is no time (the analytic model does not price a platform file).
std::string seconds(double s) { return std::isfinite(s) ? format_seconds(Seconds(s)) : "-"; }

std::string signed_percent(double fraction) {
  return (fraction >= 0.0 ? "+" : "") + fixed(100.0 * fraction, 1) + "%";
}

// Every layer of a head that is not a suffix of the file order (a suffix is named by its cut).
void add_head_layers(Json& j, const LayerGraph& model, const Head& head) {
  if (head.is_suffix()) return;
  Json layers = Json::array();
  for (const LayerId id : head.layers()) layers.push_back(model.layer(id).name());
  j["head_layers"] = std::move(layers);
}

Json placement_json(const placement::StrategyPlacement& p, const LayerGraph& model) {
  Json j = {{"label", p.spec.label},
            {"strategy", std::string(to_string(p.spec.kind))},
            {"searched", p.searched},
            {"analytic_step_time_s", p.analytic_s},
            {"simulated_step_time_s", p.simulated_s}};
  j["cut"] = p.cut ? Json(p.cut_name) : Json(nullptr);
  if (p.cut) add_head_layers(j, model, *p.cut);
  if (!p.shardings.empty()) {
    Json shardings = Json::array();
    for (const auto& o : p.shardings) {
      Json shards = Json::array();
      for (const ShardShare& share : o.shares) {
        shards.push_back({{"name", "ps-" + std::to_string(share.shard)},
                          {"bytes", share.bytes},
                          {"layers", share.layers}});
      }
      shardings.push_back({{"sharding", std::string(to_string(o.placement))},
                           {"chosen", o.placement == p.spec.sharding},
                           {"shard_loads_s", o.loads_s},
                           {"busiest_shard_load_s", o.busiest_s},
                           {"analytic_step_time_s", o.analytic_s},
                           {"shards", std::move(shards)}});
    }
    j["shardings"] = std::move(shardings);
  }
  if (p.searched) {
    Json ranking = Json::array();
    for (size_t i = 0; i < p.ranking.size(); ++i) {
      const auto& r = p.ranking[i];
      Json row = {{"rank", i + 1},
                  {"cut", r.candidate.name},
                  {"boundary_bytes", r.candidate.boundary_bytes},
                  {"activation_gradient_bytes", r.candidate.activation_grad_bytes},
                  {"head_param_bytes", r.candidate.head_param_bytes},
                  {"analytic_step_time_s", r.analytic_s},
                  {"analytic_is_lower_bound", !r.estimated}};
      row["simulated_step_time_s"] = r.simulated_s ? Json(*r.simulated_s) : Json(nullptr);
      row["gap"] = r.gap() ? Json(*r.gap()) : Json(nullptr);
      add_head_layers(row, model, r.candidate.head);
      ranking.push_back(std::move(row));
    }
    j["ranking"] = std::move(ranking);
  }
  return j;
}

Json to_json(const Scenario& scenario, const placement::Placement& answer, int64_t top) {
  Json strategies = Json::array();
  for (const auto& p : answer.strategies) strategies.push_back(placement_json(p, scenario.model));
  Json baselines = Json::array();
  for (const auto& p : answer.baselines) baselines.push_back(placement_json(p, scenario.model));
  Json out = {{"scenario", scenario.name},
              {"file", scenario.file},
              {"model", scenario.model.name()},
              {"workers", scenario.workers},
              {"parameter_servers", scenario.parameter_servers},
              {"precision", std::string(to_string(scenario.precision))},
              {"top_k", top},
              {"strategies", strategies},
              {"baselines", baselines}};
  if (answer.verdict) {
    const auto& v = *answer.verdict;
    out["verdict"] = {{"split", v.split},
                      {"best_cut", v.best_cut_label},
                      {"best_cut_step_time_s", v.best_cut_s},
                      {"best_uncut", v.best_uncut_label},
                      {"best_uncut_step_time_s", v.best_uncut_s},
                      {"gain", v.gain},
                      {"threshold", v.threshold},
                      {"reason", v.reason}};
  } else {
    out["verdict"] = nullptr;
  }
  return out;
}

void print_answer(const Scenario& scenario, const placement::Placement& answer, int64_t top) {
  std::cout << scenario.name << ": " << scenario.model.name() << ", " << scenario.workers
            << " workers x batch " << scenario.batch_per_worker << " in "
            << to_string(scenario.precision) << ", "
            << scenario.parameter_servers << " PS\n";
  for (const auto& p : answer.strategies) {
    if (!p.searched) continue;
    if (p.spec.transport.is_ideal()) {
      std::cout << "\n" << p.spec.label << ": " << p.ranking.size()
                << " candidate cuts ranked by the analytic model, the best " << top
                << " simulated\n";
    } else {
      std::cout << "\n" << p.spec.label << ": " << p.ranking.size() << " candidate cuts, every "
                << "one simulated over transport " << p.spec.transport.name
                << " (the analytic column prices no transport)\n";
    }
    TextTable table({{"rank"},
                     {"cut", TextTable::Align::left},
                     {"boundary"},
                     {"head params"},
                     {"analytic"},
                     {"simulated"},
                     {"gap"}});
    // The simulated ones and the ten best; the rest are in the JSON.
    constexpr size_t kShown = 10;
    for (size_t i = 0; i < p.ranking.size(); ++i) {
      const auto& r = p.ranking[i];
      if (i >= kShown && !r.simulated_s) continue;
      table.add_row({std::to_string(i + 1), r.candidate.name,
                     format_bytes(Bytes(static_cast<double>(r.candidate.boundary_bytes))),
                     format_bytes(Bytes(static_cast<double>(r.candidate.head_param_bytes))),
                     (r.estimated ? "" : ">= ") + seconds(r.analytic_s),
                     r.simulated_s ? seconds(*r.simulated_s) : "-",
                     r.gap() ? signed_percent(*r.gap()) : "-"});
    }
    table.print(std::cout);
    size_t bounds = 0;
    for (const auto& r : p.ranking) bounds += r.estimated ? 0 : 1;
    if (bounds > 0) {
      std::cout << "(\">=\": a lower bound; the full estimate of these " << bounds
                << " cuts was skipped, as none can beat the best " << top << ")\n";
    }
    if (p.ranking.size() > kShown) {
      std::cout << "(" << p.ranking.size() - kShown << " more in --json)\n";
    }
    std::cout << p.spec.label << ": cut " << p.cut_name << ", the fastest simulated\n";
  }
  for (const auto& p : answer.strategies) {
    if (p.shardings.empty()) continue;
    std::cout << "\n" << p.spec.label << (p.cut ? " (cut " + p.cut_name + ")" : std::string())
              << ": variables on " << scenario.parameter_servers
              << " shards, each shard's analytic load per step\n";
    TextTable table({{"sharding", TextTable::Align::left},
                     {"busiest shard"},
                     {"shard loads", TextTable::Align::left},
                     {"bytes per shard", TextTable::Align::left},
                     {"analytic step"}});
    for (const auto& o : p.shardings) {
      std::string loads;
      std::string bytes;
      for (size_t s = 0; s < o.loads_s.size(); ++s) {
        loads += (s == 0 ? "" : " / ") + seconds(o.loads_s[s]);
        bytes += (s == 0 ? "" : " / ") +
                 format_bytes(Bytes(static_cast<double>(o.shares[s].bytes)));
      }
      table.add_row({std::string(to_string(o.placement)) +
                         (o.placement == p.spec.sharding ? " (chosen)" : ""),
                     seconds(o.busiest_s), loads, bytes, seconds(o.analytic_s)});
    }
    table.print(std::cout);
  }
  std::cout << "\n";
  TextTable summary({{"strategy", TextTable::Align::left},
                     {"cut", TextTable::Align::left},
                     {"analytic"},
                     {"simulated"},
                     {"gap"}});
  const auto row = [&](const placement::StrategyPlacement& p, const std::string& note) {
    summary.add_row({p.spec.label + note, p.cut ? p.cut_name : "-", seconds(p.analytic_s),
                     seconds(p.simulated_s),
                     std::isfinite(p.analytic_s)
                         ? signed_percent((p.analytic_s - p.simulated_s) / p.simulated_s)
                         : "-"});
  };
  for (const auto& p : answer.strategies) row(p, "");
  for (const auto& p : answer.baselines) row(p, " (baseline)");
  summary.print(std::cout);
  if (answer.verdict) {
    std::cout << "verdict: " << answer.verdict->reason << "\n";
  } else {
    std::cout << "verdict: no strategy of the scenario splits the model\n";
  }
}

}  // namespace

void add_place_command(CLI::App& app, Action& action) {
  auto options = std::make_shared<PlaceCommandOptions>();
  auto* cmd = app.add_subcommand(
      "place",
      "Rank every cut, simulate the best, say whether splitting pays.\n"
      "Search where to cut the model: rank every candidate cut of each strategy with cut \"auto\" "
      "by the analytic model, simulate the best K, and say whether splitting pays at all");
  cmd->add_option("scenario", options->scenario, "Scenario file (JSON)")->required();
  cmd->add_option("--top", options->top, "Candidates simulated per searched strategy (default 3)");
  cmd->add_option("--json", options->json, "Write the answer as JSON to FILE ('-': stdout)");
  cmd->add_option("--jobs", options->jobs,
                  "Simulations run at once, each in its own process (default: one per CPU)")
      ->check(CLI::Range(1, 1024));
  cmd->add_flag("--quiet", options->quiet, "No progress lines on stderr");
  options->overrides.add_to(*cmd);
  cmd->callback([&action, options] {
    action = [options] {
      if (options->top < 1) {
        throw InputError("--top", "", "is " + std::to_string(options->top) +
                                          ", expected an integer >= 1");
      }
      const Scenario scenario = load_scenario(options->scenario, options->overrides.overrides());
      for (const std::string& line : scenario_warnings(scenario)) std::cerr << line << '\n';
      check_output_path("--json", options->json);
      sim::SimulateOptions sim_options;
      sim_options.jobs = options->jobs;
      placement::SimulatedEvaluator evaluator(sim_options);
      const placement::Placement answer =
          placement::place(scenario, evaluator, {.top_k = options->top});
      if (options->json != "-") print_answer(scenario, answer, options->top);
      if (!options->json.empty()) {
        write_output(options->json, to_json(scenario, answer, options->top).dump(2) + "\n");
      }
      return kExitOk;
    };
  });
}

}  // namespace ralp::cli
