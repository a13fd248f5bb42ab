// The placement search and the split-or-not rule.
#include "ralp/placement/search.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>

#include "ralp/placement/analytic.hpp"
#include "ralp/placement/heads.hpp"
#include "ralp/placement/plans.hpp"
#include "ralp/results/comparison.hpp"
#include "ralp/schedule/step_plan.hpp"
#include "ralp/spec/nccl_plan.hpp"
#include "ralp/spec/strategy_head.hpp"

namespace ralp::placement {
namespace {

bool has_cut(const StrategySpec& spec) {
  return spec.kind == StrategyKind::ralp || spec.kind == StrategyKind::hybrid;
}

std::string percent(double fraction) {
  char text[32];
  std::snprintf(text, sizeof text, "%.1f%%", 100.0 * fraction);
  return text;
}

std::string megabytes(int64_t bytes) {
  char text[32];
  std::snprintf(text, sizeof text, "%.2f MB", static_cast<double>(bytes) / 1e6);
  return text;
}

void check_options(const PlaceOptions& options) {
  if (options.top_k < 1) {
    throw InputError("--top", "", "is " + std::to_string(options.top_k) +
                                      ", expected an integer >= 1");
  }
}

// Searches one strategy's cut, or evaluates its given cut.
StrategyPlacement place_strategy(const Scenario& scenario, const StrategySpec& spec,
                                 StepEvaluator& evaluator, const PlaceOptions& options) {
  StrategyPlacement out;
  out.spec = spec;
  if (!has_cut(spec) || spec.cut) {
    out.cut = strategy_head(scenario.model, spec);
    if (out.cut) out.cut_name = head_name(scenario.model, *out.cut);
    out.analytic_s = analytic_step_time(scenario, spec, out.cut);
    out.simulated_s = evaluator.step_times(scenario, spec, {out.cut}).front();
    return out;
  }
  out.searched = true;
  if (scenario.model.cut_points().empty()) {
    throw InputError(scenario.file, "/strategies",
                     "asks strategy \"" + spec.label + "\" for cut \"auto\", but model " +
                         scenario.model.name() + " has no valid cut");
  }
  // The analytic model prices no transport (devices/transport.hpp) and no platform file: under
  // either, every cut is simulated and the ranking is the simulation's.
  const bool priced =
      (spec.transport.is_ideal() || uses_nccl_model(scenario, spec)) && analytic_covers(scenario);
  const size_t wanted = priced ? static_cast<size_t>(options.top_k)
                               : std::numeric_limits<size_t>::max();
  out.ranking = rank_cuts(scenario, spec, wanted);
  const size_t k = std::min(out.ranking.size(), wanted);
  std::vector<std::optional<Head>> heads;
  for (size_t i = 0; i < k; ++i) heads.emplace_back(out.ranking[i].candidate.head);
  const std::vector<double> times = evaluator.step_times(scenario, spec, heads);
  size_t best = 0;
  for (size_t i = 0; i < k; ++i) {
    out.ranking[i].simulated_s = times[i];
    const bool faster = times[i] < times[best];
    const bool tie_earlier = times[i] == times[best] &&
                             out.ranking[i].candidate.index < out.ranking[best].candidate.index;
    if (faster || tie_earlier) best = i;
  }
  out.cut = out.ranking[best].candidate.head;
  out.cut_name = out.ranking[best].candidate.name;
  out.analytic_s = out.ranking[best].analytic_s;
  out.simulated_s = *out.ranking[best].simulated_s;
  return out;
}

std::string label_of(const StrategyPlacement& p) {
  return p.cut && p.searched ? p.spec.label + " (cut " + p.cut_name + ")" : p.spec.label;
}

SplitVerdict decide(const Scenario& scenario, const std::vector<const StrategyPlacement*>& cut,
                    const std::vector<const StrategyPlacement*>& uncut) {
  const auto fastest = [](const std::vector<const StrategyPlacement*>& list) {
    return *std::min_element(list.begin(), list.end(), [](const auto* a, const auto* b) {
      return a->simulated_s < b->simulated_s;
    });
  };
  const StrategyPlacement& c = *fastest(cut);
  const StrategyPlacement& u = *fastest(uncut);
  SplitVerdict v;
  v.best_cut_label = label_of(c);
  v.best_cut_s = c.simulated_s;
  v.best_uncut_label = u.spec.label;
  v.best_uncut_s = u.simulated_s;
  v.gain = (u.simulated_s - c.simulated_s) / u.simulated_s;
  v.threshold = scenario.placement.split_threshold;
  v.split = v.gain > v.threshold && !equal_speed(u.simulated_s, c.simulated_s);

  const Scenario headed = c.cut ? scenario_for_head(scenario, *c.cut) : scenario;
  const schedule::StepPlan plan = schedule::make_step_plan(
      headed, c.spec, c.cut ? std::optional<LayerId>(c.cut->cut()) : std::nullopt);
  const double total = static_cast<double>(plan.head_param_bytes + plan.tail_param_bytes);
  const double head_share = total > 0.0 ? static_cast<double>(plan.head_param_bytes) / total : 0.0;
  const std::string comparison =
      compare_steps(v.best_cut_label, c.simulated_s, v.best_uncut_label, u.simulated_s);
  const std::string why = "the head holds " + percent(head_share) + " of the parameters; each worker sends " +
                          megabytes(plan.boundary_bytes) + " of boundary activations in place of " +
                          megabytes(plan.head_param_bytes) + " of head gradients";
  const std::string must = percent_less_time(v.threshold) + " a split must gain";
  if (v.split) {
    v.reason = "split: " + comparison + ", over the " + must + "; " + why;
  } else {
    v.reason = "do not split: " + comparison +
               (v.gain > 0.0 && !equal_speed(u.simulated_s, c.simulated_s) ? ", under the " + must
                                                                            : "") +
               "; " + why +
               (plan.boundary_bytes > plan.head_param_bytes
                    ? " (the boundary activation is larger than the head's gradients)"
                    : "");
  }
  return v;
}

}  // namespace

double analytic_step_time(const Scenario& scenario, const StrategySpec& strategy,
                          const std::optional<Head>& head) {
  if (!analytic_covers(scenario)) return std::numeric_limits<double>::quiet_NaN();
  if (!head) return estimate_strategy(scenario, strategy, std::nullopt).step_time_s;
  if (head->is_suffix()) return estimate_strategy(scenario, strategy, head->cut()).step_time_s;
  return estimate_strategy(scenario_for_head(scenario, *head), strategy, head->cut()).step_time_s;
}

std::vector<Candidate> candidates(const Scenario& scenario, const StrategySpec& strategy) {
  std::vector<Candidate> out;
  if (scenario.model.cut_points().empty()) return out;
  const CutPlans plans(scenario, strategy);
  for (Head& head : candidate_heads(scenario.model)) {
    const schedule::StepPlan plan = plans.plan_at(head);
    std::string name = head_name(scenario.model, head);
    out.push_back({std::move(head), std::move(name), plan.boundary_bytes,
                   plan.activation_grad_bytes, plan.head_param_bytes, plan.tail_param_bytes,
                   out.size()});
  }
  return out;
}

std::vector<RankedCut> rank_cuts(const Scenario& scenario, const StrategySpec& strategy,
                                 size_t exact) {
  std::vector<RankedCut> out;
  if (scenario.model.cut_points().empty()) return out;
  const CutPlans plans(scenario, strategy);
  std::vector<schedule::StepPlan> cut_plans;
  for (Head& head : candidate_heads(scenario.model)) {
    schedule::StepPlan plan = plans.plan_at(head);
    std::string name = head_name(scenario.model, head);
    Candidate c{std::move(head),          std::move(name),         plan.boundary_bytes,
                plan.activation_grad_bytes, plan.head_param_bytes, plan.tail_param_bytes,
                out.size()};
    // Without an analytic price (a platform file) the candidates stay in model order, unranked.
    const double bound = analytic_covers(scenario)
                             ? estimate_step(scenario, plan, AnalyticDetail::lower_bound).step_time_s
                             : std::numeric_limits<double>::quiet_NaN();
    out.push_back({std::move(c), bound, std::nullopt, !analytic_covers(scenario)});
    cut_plans.push_back(std::move(plan));
  }
  if (!analytic_covers(scenario)) return out;
  // Lowest bound first; ties to the earlier candidate, so the order is deterministic.
  std::stable_sort(out.begin(), out.end(), [](const RankedCut& a, const RankedCut& b) {
    return a.analytic_s < b.analytic_s;
  });
  // The fluid model for candidates in that order, until no bound left is below the exact-th
  // best estimate: no candidate left could enter the best `exact`.
  std::vector<double> best;  // the fluid estimates so far, the best `exact` of them, sorted
  exact = std::max<size_t>(exact, 1);
  for (RankedCut& r : out) {
    if (best.size() == exact && r.analytic_s >= best.back()) break;
    r.analytic_s = estimate_step(scenario, cut_plans[r.candidate.index]).step_time_s;
    r.estimated = true;
    best.insert(std::upper_bound(best.begin(), best.end(), r.analytic_s), r.analytic_s);
    if (best.size() > exact) best.pop_back();
  }
  // Fastest first, an estimate before a bound of the same value, then the earlier candidate.
  std::stable_sort(out.begin(), out.end(), [](const RankedCut& a, const RankedCut& b) {
    if (a.analytic_s != b.analytic_s) return a.analytic_s < b.analytic_s;
    if (a.estimated != b.estimated) return a.estimated;
    return a.candidate.index < b.candidate.index;
  });
  return out;
}

namespace {

void compare_shards(const Scenario& scenario, StrategyPlacement& p) {
  if (!analytic_covers(scenario)) return;  // the shards' loads are analytic
  const bool sharded = p.spec.kind == StrategyKind::ps || p.spec.kind == StrategyKind::ralp;
  if (sharded && scenario.parameter_servers > 1) {
    if (p.cut && !p.cut->is_suffix()) {
      p.shardings = compare_shardings(scenario_for_head(scenario, *p.cut), p.spec, p.cut->cut());
    } else {
      p.shardings = compare_shardings(scenario, p.spec,
                                      p.cut ? std::optional<LayerId>(p.cut->cut()) : std::nullopt);
    }
  }
}

}  // namespace

std::vector<StrategyPlacement> resolve_auto_cuts(const Scenario& scenario, StepEvaluator& evaluator,
                                                 const PlaceOptions& options) {
  check_options(options);
  // Bad input first, before any simulation runs.
  for (const StrategySpec& spec : scenario.strategies) {
    if (has_cut(spec) && !spec.cut && scenario.model.cut_points().empty()) {
      throw InputError(scenario.file, "/strategies",
                       "asks strategy \"" + spec.label + "\" for cut \"auto\", but model " +
                           scenario.model.name() + " has no valid cut");
    }
  }
  std::vector<StrategyPlacement> out;
  for (const StrategySpec& spec : scenario.strategies) {
    out.push_back(place_strategy(scenario, spec, evaluator, options));
  }
  return out;
}

Placement place(const Scenario& scenario, StepEvaluator& evaluator, const PlaceOptions& options) {
  Placement out;
  out.strategies = resolve_auto_cuts(scenario, evaluator, options);
  for (StrategyPlacement& p : out.strategies) compare_shards(scenario, p);
  std::vector<const StrategyPlacement*> cut;
  std::vector<const StrategyPlacement*> uncut;
  bool has_ps = false;
  bool has_allreduce = false;
  for (const StrategyPlacement& p : out.strategies) {
    (has_cut(p.spec) ? cut : uncut).push_back(&p);
    has_ps = has_ps || p.spec.kind == StrategyKind::ps;
    has_allreduce = has_allreduce || p.spec.kind == StrategyKind::allreduce;
  }
  if (cut.empty()) return out;
  // The rule compares against both uncut strategies, with their default settings where the
  // scenario does not list them, over the first cut strategy's transport.
  for (const StrategyKind kind : {StrategyKind::ps, StrategyKind::allreduce}) {
    if ((kind == StrategyKind::ps && has_ps) || (kind == StrategyKind::allreduce && has_allreduce)) {
      continue;
    }
    StrategySpec spec;
    spec.kind = kind;
    spec.label = std::string(to_string(kind));
    spec.local_aggregation = kind == StrategyKind::ps && scenario.nodes.devices_per_node > 1;
    spec.transport = cut.front()->spec.transport;
    out.baselines.push_back(place_strategy(scenario, spec, evaluator, options));
  }
  for (StrategyPlacement& p : out.baselines) compare_shards(scenario, p);
  for (const StrategyPlacement& p : out.baselines) uncut.push_back(&p);
  out.verdict = decide(scenario, cut, uncut);
  return out;
}

}  // namespace ralp::placement
