// A finished sweep's rows as a buyer compares them: every point and strategy with its GPUs, time
// and cost to train and scaling efficiency, ranked by time and by cost, and the cheapest that
// trains within a deadline.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "ralp/core/json_input.hpp"
#include "ralp/sweep/spec.hpp"

namespace ralp::sweep {

struct SweepRow {
  size_t point = 0;
  std::string values;  // "workers=16, bandwidth=10Gbps"
  std::string strategy;
  int64_t gpus = 0;  // the point's workers
  double step_time_s = 0.0;
  double images_per_s = 0.0;
  std::optional<double> scaling_efficiency;
  double time_to_train_s = 0.0;
  std::optional<double> cost;
  std::string currency;  // with a cost
};

// The rows of `entries` (point_json's objects, in point order) for `points`.
std::vector<SweepRow> sweep_rows(const std::vector<SweepPoint>& points,
                                 const std::vector<Json>& entries);

struct SweepRanking {
  std::vector<size_t> by_time;  // row indices, shortest time to train first
  std::vector<size_t> by_cost;  // rows with a cost, cheapest first; empty without prices
  // The cheapest row whose time to train is within the deadline (with a deadline and prices);
  // without prices, the fastest within it.
  std::optional<size_t> within_deadline;
};

// Ties keep the rows' order (point, then strategy), so the ranking is deterministic.
SweepRanking rank_rows(const std::vector<SweepRow>& rows, std::optional<double> deadline_s);

}  // namespace ralp::sweep
