// The simulator behind the placement search: candidates simulated in parallel child processes.
#include "ralp/placement/sim_evaluator.hpp"

#include "ralp/placement/analytic.hpp"
#include "ralp/schedule/step_plan.hpp"
#include "ralp/spec/nccl_plan.hpp"
#include "ralp/spec/strategy_head.hpp"

namespace ralp::placement {

std::vector<double> SimulatedEvaluator::step_times(const Scenario& scenario,
                                                   const StrategySpec& strategy,
                                                   const std::vector<std::optional<Head>>& heads) {
  // One strategy per head, each with its head fixed (by name), so that no search runs inside.
  Scenario one = scenario;
  one.strategies.clear();
  for (size_t i = 0; i < heads.size(); ++i) {
    StrategySpec spec = strategy;
    spec.label = strategy.label + "#" + std::to_string(i);
    if (heads[i]) spec.cut = head_name(scenario.model, *heads[i]);
    one.strategies.push_back(std::move(spec));
  }
  sim::SimulateOptions options = options_;
  options.keep_timeline = false;
  options.keep_messages = false;
  std::vector<double> out;
  for (const auto& r : sim::simulate_scenario(one, options).results) {
    out.push_back(r.step_time_mean_s);
  }
  return out;
}

std::vector<sim::ResolvedStrategy> resolve_cuts(const Scenario& scenario,
                                                const sim::SimulateOptions& options,
                                                const PlaceOptions& place) {
  SimulatedEvaluator evaluator(options);
  std::vector<sim::ResolvedStrategy> out;
  // Only strategies with cut "auto" need the simulator here; the others keep their cut.
  for (const StrategySpec& spec : scenario.strategies) {
    sim::ResolvedStrategy r{spec, std::nullopt, {}, std::nullopt};
    const bool has_cut = spec.kind == StrategyKind::ralp || spec.kind == StrategyKind::hybrid;
    if (has_cut && spec.cut) r.cut = strategy_head(scenario.model, spec);
    if (has_cut && !spec.cut) {
      Scenario one = scenario;
      one.strategies = {spec};
      const StrategyPlacement p = resolve_auto_cuts(one, evaluator, place).front();
      r.cut = p.cut;
      for (const RankedCut& c : p.ranking) {
        if (c.simulated_s) r.search.push_back({c.candidate.name, *c.simulated_s});
      }
    }
    out.push_back(std::move(r));
  }
  return out;
}

ScenarioResult analytic_scenario(const Scenario& scenario) {
  if (!analytic_covers(scenario)) {
    throw InputError(scenario.file, "/cluster/platform/kind",
                     "is \"file\", whose links and routes only the event simulation models; "
                     "expected a generated platform with --fidelity analytic");
  }
  if (!scenario.shared_devices.empty()) {
    throw InputError(scenario.file, "/cluster/shared_devices",
                     "describes hosts that share devices, which only the event simulation "
                     "models; expected no shared_devices with --fidelity analytic");
  }
  if (scenario.message_cpu.charged()) {
    throw InputError(scenario.file, "/cluster/message_cpu",
                     "charges messages CPU time, which only the event simulation models; "
                     "expected no message_cpu with --fidelity analytic");
  }
  for (size_t i = 0; i < scenario.strategies.size(); ++i) {
    const Transport& t = scenario.strategies[i].transport;
    if (t.is_ideal() || uses_nccl_model(scenario, scenario.strategies[i])) continue;
    throw InputError(scenario.file, json_path("/strategies", i) + "/transport",
                     "is \"" + t.name + "\", whose CPU time and link share only the event "
                     "simulation models; expected \"ideal\" with --fidelity analytic");
  }
  if (scenario.platform.nic_burst.value() > 0.0) {
    throw InputError(scenario.file, "/cluster/platform/nic_burst",
                     "shapes NICs with token buckets, which only the event simulation models; "
                     "expected no nic_burst with --fidelity analytic");
  }
  ScenarioResult out;
  out.scenario = scenario.name;
  out.file = scenario.file;
  out.model = scenario.model.name();
  out.workers = scenario.workers;
  out.parameter_servers = scenario.parameter_servers;
  out.batch_per_worker = scenario.batch_per_worker;
  out.precision = scenario.precision;
  out.network_model = scenario.network_model.kind == NetworkModelKind::tcp     ? "tcp"
                      : scenario.network_model.kind == NetworkModelKind::ideal ? "ideal"
                                                                               : "factors";
  out.training = training_plan(scenario);
  for (const StrategySpec& spec : scenario.strategies) {
    const bool has_cut = spec.kind == StrategyKind::ralp || spec.kind == StrategyKind::hybrid;
    std::optional<Head> cut;
    if (has_cut && spec.cut) cut = strategy_head(scenario.model, spec);
    if (has_cut && !spec.cut) {
      const std::vector<RankedCut> ranked = rank_cuts(scenario, spec);
      if (ranked.empty()) {
        throw InputError(scenario.file, "/strategies",
                         "asks strategy \"" + spec.label + "\" for cut \"auto\", but model " +
                             scenario.model.name() + " has no valid cut");
      }
      cut = ranked.front().candidate.head;
    }
    // A head that is not a suffix runs the model in its order.
    const Scenario headed = cut ? scenario_for_head(scenario, *cut) : scenario;
    const schedule::StepPlan plan = schedule::make_step_plan(
        headed, spec, cut ? std::optional<LayerId>(cut->cut()) : std::nullopt);
    const double t = estimate_step(scenario, plan).step_time_s;
    StrategyResult r;
    r.label = spec.label;
    r.kind = spec.kind;
    if (cut) {
      r.cut = head_name(scenario.model, *cut);
      r.head_layers = head_layer_names(scenario.model, *cut);
    }
    r.warmup_steps = scenario.warmup_steps;
    r.step_times.assign(static_cast<size_t>(scenario.warmup_steps + scenario.steps), t);
    r.step_time_mean_s = t;
    r.step_time_median_s = t;
    r.step_time_spread_s = 0.0;
    r.images_per_s = static_cast<double>(scenario.workers * scenario.batch_per_worker) / t;
    r.worker_sources = plan.worker_sources;
    r.ps_sources = plan.ps_sources;
    if (plan.uses_shards() && scenario.parameter_servers > 1) {
      r.shards = shard_shares(plan.shard_plan, headed.model, scenario.parameter_servers);
    }
    out.results.push_back(std::move(r));
  }
  const StrategyResult* ps = nullptr;
  const StrategyResult* allreduce = nullptr;
  for (const auto& r : out.results) {
    if (r.kind == StrategyKind::ps && ps == nullptr) ps = &r;
    if (r.kind == StrategyKind::allreduce && allreduce == nullptr) allreduce = &r;
  }
  for (auto& r : out.results) {
    if (ps != nullptr) r.speedup_vs_ps = ps->step_time_mean_s / r.step_time_mean_s;
    if (allreduce != nullptr) r.speedup_vs_allreduce = allreduce->step_time_mean_s / r.step_time_mean_s;
  }
  return out;
}

}  // namespace ralp::placement
