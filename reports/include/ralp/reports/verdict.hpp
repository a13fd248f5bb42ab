// What a user should do, from a simulated scenario: the fastest strategy and its margin, whether
// cutting the model pays for each ralp and hybrid strategy (and the best cuts the search found),
// and the bottleneck in words. Pure: computed from the results alone.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "ralp/core/json_input.hpp"
#include "ralp/results/comparison.hpp"
#include "ralp/results/simulation_result.hpp"

namespace ralp::reports {

// Cutting pays when it takes less time than the best uncut strategy by more than this fraction of
// that strategy's step (the scenario's placement.split_threshold).
inline constexpr double kDefaultSplitThreshold = 0.05;

struct SplitVerdict {
  std::string label;               // the ralp or hybrid strategy
  std::optional<std::string> cut;  // its cut
  std::string compared_with;       // the fastest uncut strategy (ps, allreduce); empty if none
  double step_time_s = 0.0;        // this strategy's
  double compared_step_time_s = 0.0;  // compared_with's
  // The share of compared_with's step the cut saves: (compared - this) / compared; the cut pays
  // when it saves more than the threshold (and the two do not print as equal).
  double gain = 0.0;
  bool pays = false;
  std::vector<CutTrial> best_cuts;  // the search's best three, fastest first
};

struct Verdict {
  std::string fastest;        // label of the fastest strategy
  std::string runner_up;      // the next fastest; empty with one strategy
  double margin = 0.0;        // runner-up's step time / fastest's, minus 1
  bool equal = false;         // the two print as the same speed (1.00x)
  std::vector<SplitVerdict> splits;
  std::string bottleneck;     // of the fastest strategy, in words
  double threshold = kDefaultSplitThreshold;
};

// Precondition: at least one result. Throws std::invalid_argument for a threshold below 0.
Verdict make_verdict(const ScenarioResult& result, double threshold = kDefaultSplitThreshold);

// The verdict as lines a person reads ("fastest: hybrid-fc6, 2.78x faster than ralp (conv4_1)").
std::vector<std::string> verdict_lines(const Verdict& verdict);
Json to_json(const Verdict& verdict);

}  // namespace ralp::reports
