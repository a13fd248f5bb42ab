// The placement search: for every strategy with cut "auto", rank every candidate head
// (heads.hpp) with the analytic model, simulate the best K with a StepEvaluator and keep the
// fastest simulated; then the split-or-not rule (the paper's profiler): split only when the best
// cut beats the best uncut strategy by more than the scenario's threshold.
#pragma once

#include <cmath>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "ralp/placement/shards.hpp"
#include "ralp/spec/head.hpp"
#include "ralp/spec/scenario.hpp"

namespace ralp::placement {

// A candidate head (a suffix of the file order or any other successor-closed set), with what
// crosses the boundary (from the step plan of the model in the head's order).
struct Candidate {
  Head head;
  std::string name;              // head_name: the first head layer for a suffix
  int64_t boundary_bytes = 0;    // sent by one worker per step (activations, images, labels)
  int64_t activation_grad_bytes = 0;  // returned to it
  int64_t head_param_bytes = 0;
  int64_t tail_param_bytes = 0;
  size_t index = 0;  // position in candidates(): suffixes by their cut, then the others
};

// Every candidate head of the model (candidate_heads), each once, suffixes first in layer order.
std::vector<Candidate> candidates(const Scenario& scenario, const StrategySpec& strategy);

// Every candidate of a ralp or hybrid strategy ranked by the analytic model, fastest first: each
// candidate's lower bound (AnalyticDetail::lower_bound) in microseconds, then the full estimate for
// candidates in order of their bounds until no bound left is below the `exact`-th best estimate.
// So the first `exact` candidates are the analytic model's best, exactly, and every other
// candidate carries its estimate or, where it was skipped, its bound (ties to the earlier
// candidate).
struct RankedCut;
std::vector<RankedCut> rank_cuts(const Scenario& scenario, const StrategySpec& strategy,
                                 size_t exact = 1);

// Simulates strategies: the search's only view of the event simulator, so that tests can
// substitute a fake. Returns the mean step time in seconds of each head (nullopt for strategies
// without one), in the order given.
class StepEvaluator {
 public:
  virtual ~StepEvaluator() = default;
  virtual std::vector<double> step_times(const Scenario& scenario, const StrategySpec& strategy,
                                         const std::vector<std::optional<Head>>& heads) = 0;
};

struct RankedCut {
  Candidate candidate;
  double analytic_s = 0.0;             // the estimate, or with !estimated its lower bound
  std::optional<double> simulated_s;  // the best K
  bool estimated = false;             // analytic_s is the estimate (else a lower bound)
  // (analytic - simulated) / simulated, where simulated.
  [[nodiscard]] std::optional<double> gap() const {
    if (!simulated_s || std::isnan(analytic_s)) return std::nullopt;
    return (analytic_s - *simulated_s) / *simulated_s;
  }
};

struct StrategyPlacement {
  StrategySpec spec;
  bool searched = false;        // cut "auto"
  std::optional<Head> cut;      // chosen (or given) head; nullopt for ps and allreduce
  std::string cut_name;         // head_name
  std::vector<RankedCut> ranking;  // searched: every candidate, fastest analytic first
  double analytic_s = 0.0;         // at the chosen head
  double simulated_s = 0.0;        // at the chosen head
  // ps and ralp with several shards: round-robin, greedy and balanced at the chosen cut.
  std::vector<ShardingOption> shardings;
};

struct SplitVerdict {
  bool split = false;
  std::string best_cut_label;    // the fastest strategy with a head
  double best_cut_s = 0.0;
  std::string best_uncut_label;  // the fastest of ps and allreduce
  double best_uncut_s = 0.0;
  double gain = 0.0;       // (best_uncut - best_cut) / best_uncut
  double threshold = 0.0;
  std::string reason;      // one sentence: why split or why not
};

struct PlaceOptions {
  int64_t top_k = 3;  // candidates simulated per searched strategy, >= 1
};

struct Placement {
  std::vector<StrategyPlacement> strategies;  // the scenario's, in order
  std::vector<StrategyPlacement> baselines;   // ps and allreduce when the scenario lacks them
  std::optional<SplitVerdict> verdict;        // when some strategy has a head
};

// The analytic estimate of `strategy` with `head` (none for ps and allreduce): the model in the
// head's order, cut at head.cut().
double analytic_step_time(const Scenario& scenario, const StrategySpec& strategy,
                          const std::optional<Head>& head);

// Resolves every "auto" cut of the scenario (analytic ranking, best top_k simulated) and decides
// whether to split. Throws InputError when a strategy with cut "auto" has no valid cut or
// top_k < 1.
Placement place(const Scenario& scenario, StepEvaluator& evaluator, const PlaceOptions& options);

// Only the cuts: the first step of place() for each strategy, without the verdict's extra
// simulations. Same errors.
std::vector<StrategyPlacement> resolve_auto_cuts(const Scenario& scenario, StepEvaluator& evaluator,
                                                 const PlaceOptions& options);

}  // namespace ralp::placement
