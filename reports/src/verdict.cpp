// The recommendation at the end of `ralp simulate`'s output.
#include "ralp/reports/verdict.hpp"

#include <algorithm>
#include <cstdio>
#include <stdexcept>

namespace ralp::reports {
namespace {

// A resource that takes at least this share of the step (the workers' compute or
// communication, or the busiest link's bandwidth) is what limits it.
constexpr double kBoundShare = 0.5;
constexpr size_t kBestCuts = 3;

bool cuts_model(StrategyKind kind) {
  return kind == StrategyKind::ralp || kind == StrategyKind::hybrid;
}

std::string percent(double fraction) {
  char text[32];
  std::snprintf(text, sizeof text, "%.0f%%", 100.0 * fraction);
  return text;
}

std::string with_cut(const std::string& label, const std::optional<std::string>& cut) {
  return cut && label.find(*cut) == std::string::npos ? label + " (cut " + *cut + ")" : label;
}

std::string bottleneck_of(const StrategyResult& r) {
  const TimeSplit& w = r.worker_mean;
  if (w.compute + w.communication + w.waiting <= 0.0 && r.links.empty()) {
    return "not known: the result has no worker time split and no link loads (the analytic "
           "fidelity gives step times only; --fidelity event says what limits the step)";
  }
  const double step = r.step_time_mean_s;
  const auto share = [step](double seconds) { return step > 0.0 ? seconds / step : 0.0; };
  const bool network = share(r.worker_mean.communication) >= kBoundShare ||
                       (!r.links.empty() && r.links.front().utilisation >= kBoundShare);
  if (network && !r.links.empty()) {
    const LinkLoad& l = r.links.front();
    return "the network: workers communicate " + percent(share(r.worker_mean.communication)) +
           " of the step; the busiest link, " + l.name + ", carries " +
           format_bytes(Bytes(l.bytes)) + " per step at " + percent(l.utilisation) +
           " of its bandwidth";
  }
  if (share(r.worker_mean.compute) >= kBoundShare) {
    return "the workers' compute: " + format_seconds(Seconds(r.worker_mean.compute)) + " of the " +
           format_seconds(Seconds(step)) + " step";
  }
  return "no single resource: workers compute " + percent(share(r.worker_mean.compute)) +
         " of the step, communicate " + percent(share(r.worker_mean.communication)) +
         " and wait " + percent(share(r.worker_mean.waiting));
}

}  // namespace

Verdict make_verdict(const ScenarioResult& result, double threshold) {
  if (result.results.empty()) throw std::invalid_argument("a verdict needs at least one result");
  if (threshold < 0.0) throw std::invalid_argument("the split threshold must be at least 0");
  Verdict v;
  v.threshold = threshold;
  std::vector<const StrategyResult*> order;
  for (const auto& r : result.results) order.push_back(&r);
  // Fastest first; ties keep the scenario's order.
  std::stable_sort(order.begin(), order.end(), [](const StrategyResult* a, const StrategyResult* b) {
    return a->step_time_mean_s < b->step_time_mean_s;
  });
  v.fastest = with_cut(order[0]->label, order[0]->cut);
  if (order.size() > 1) {
    v.runner_up = with_cut(order[1]->label, order[1]->cut);
    v.margin = order[1]->step_time_mean_s / order[0]->step_time_mean_s - 1.0;
    v.equal = equal_speed(order[0]->step_time_mean_s, order[1]->step_time_mean_s);
  }
  v.bottleneck = bottleneck_of(*order[0]);

  const StrategyResult* uncut = nullptr;
  for (const StrategyResult* r : order) {
    if (!cuts_model(r->kind)) {
      uncut = r;
      break;
    }
  }
  for (const auto& r : result.results) {
    if (!cuts_model(r.kind)) continue;
    SplitVerdict s;
    s.label = r.label;
    s.cut = r.cut;
    s.step_time_s = r.step_time_mean_s;
    if (uncut != nullptr) {
      s.compared_with = uncut->label;
      s.compared_step_time_s = uncut->step_time_mean_s;
      s.gain = (uncut->step_time_mean_s - r.step_time_mean_s) / uncut->step_time_mean_s;
      s.pays = s.gain > threshold && !equal_speed(uncut->step_time_mean_s, r.step_time_mean_s);
    }
    std::vector<CutTrial> trials = r.cut_search;
    std::stable_sort(trials.begin(), trials.end(), [](const CutTrial& a, const CutTrial& b) {
      return a.step_time_mean_s < b.step_time_mean_s;
    });
    if (trials.size() > kBestCuts) trials.resize(kBestCuts);
    s.best_cuts = std::move(trials);
    v.splits.push_back(std::move(s));
  }
  return v;
}

// "split: 5.98x faster than allreduce (83.3% less time), over the 5% less time a split must
// gain", and the other three cases, in the one vocabulary.
std::string split_line(const SplitVerdict& s, double threshold) {
  const std::string must = percent_less_time(threshold) + " a split must gain";
  if (equal_speed(s.step_time_s, s.compared_step_time_s)) {
    return "do not split: equal to " + s.compared_with;
  }
  if (s.gain < 0.0) {
    return "do not split: " + s.compared_with + " is " +
           times_faster(s.step_time_s / s.compared_step_time_s) + " (" +
           percent_less_time(-s.gain * s.compared_step_time_s / s.step_time_s) + ")";
  }
  const std::string faster = times_faster(s.compared_step_time_s / s.step_time_s) + " than " +
                             s.compared_with + " (" + percent_less_time(s.gain) + ")";
  return s.pays ? "split: " + faster + ", over the " + must
                : "do not split: " + faster + ", under the " + must;
}

std::vector<std::string> verdict_lines(const Verdict& v) {
  std::vector<std::string> lines;
  if (v.runner_up.empty()) {
    lines.push_back("fastest: " + v.fastest);
  } else if (v.equal) {
    lines.push_back("fastest: " + v.fastest + ", equal to " + v.runner_up);
  } else {
    lines.push_back("fastest: " + v.fastest + ", " + times_faster(1.0 + v.margin) + " than " +
                    v.runner_up);
  }
  for (const SplitVerdict& s : v.splits) {
    const std::string name = with_cut(s.label, s.cut);
    if (s.compared_with.empty()) {
      lines.push_back(name + ": no uncut strategy in the scenario to compare the cut with");
    } else {
      lines.push_back(name + ": " + split_line(s, v.threshold));
    }
    if (!s.best_cuts.empty()) {
      std::string best = "  best cuts searched:";
      for (size_t i = 0; i < s.best_cuts.size(); ++i) {
        best += (i == 0 ? " " : ", ") + s.best_cuts[i].cut + " " +
                format_seconds(Seconds(s.best_cuts[i].step_time_mean_s));
      }
      lines.push_back(best);
    }
  }
  lines.push_back("bottleneck: " + v.bottleneck);
  return lines;
}

Json to_json(const Verdict& v) {
  Json splits = Json::array();
  for (const SplitVerdict& s : v.splits) {
    Json best = Json::array();
    for (const CutTrial& t : s.best_cuts) {
      best.push_back({{"cut", t.cut}, {"step_time_mean_s", t.step_time_mean_s}});
    }
    splits.push_back({{"strategy", s.label},
                      {"cut", s.cut ? Json(*s.cut) : Json(nullptr)},
                      {"compared_with", s.compared_with.empty() ? Json(nullptr) : Json(s.compared_with)},
                      {"gain", s.gain},
                      {"split_pays", s.pays},
                      {"best_cuts", best}});
  }
  return {{"fastest", v.fastest},
          {"runner_up", v.runner_up.empty() ? Json(nullptr) : Json(v.runner_up)},
          {"margin", v.margin},
          {"equal", v.equal},
          {"split_threshold", v.threshold},
          {"splits", splits},
          {"bottleneck", v.bottleneck},
          {"lines", verdict_lines(v)}};
}

}  // namespace ralp::reports
