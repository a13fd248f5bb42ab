// Ranking a finished sweep's rows by time and cost to train.
#include "ralp/sweep/ranking.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "ralp/sweep/output.hpp"

namespace ralp::sweep {

std::vector<SweepRow> sweep_rows(const std::vector<SweepPoint>& points,
                                 const std::vector<Json>& entries) {
  std::vector<SweepRow> rows;
  for (size_t i = 0; i < entries.size() && i < points.size(); ++i) {
    const Json& entry = entries[i];
    const std::string currency = price_currency(entry.at("training"));
    for (const Json& r : entry.at("results")) {
      SweepRow row;
      row.point = points[i].index;
      row.values = points[i].describe();
      row.strategy = r.at("strategy").get<std::string>();
      row.gpus = points[i].scenario.workers;
      row.step_time_s = r.at("step_time_mean_s").get<double>();
      row.images_per_s = r.at("images_per_s").get<double>();
      if (r.at("scaling_efficiency").is_number()) {
        row.scaling_efficiency = r.at("scaling_efficiency").get<double>();
      }
      row.time_to_train_s = r.at("time_to_train_s").get<double>();
      if (r.at("cost").is_number()) {
        row.cost = r.at("cost").get<double>();
        row.currency = currency;
      }
      rows.push_back(std::move(row));
    }
  }
  return rows;
}

SweepRanking rank_rows(const std::vector<SweepRow>& rows, std::optional<double> deadline_s) {
  SweepRanking out;
  out.by_time.resize(rows.size());
  std::iota(out.by_time.begin(), out.by_time.end(), size_t{0});
  std::stable_sort(out.by_time.begin(), out.by_time.end(), [&](size_t a, size_t b) {
    return rows[a].time_to_train_s < rows[b].time_to_train_s;
  });
  for (const size_t i : out.by_time) {
    if (rows[i].cost) out.by_cost.push_back(i);
  }
  // Costs that print alike (to the whole unit of their currency) tie, and the faster of them
  // ranks first (the order by time).
  const auto units = [&](size_t i) { return std::llround(*rows[i].cost); };
  std::stable_sort(out.by_cost.begin(), out.by_cost.end(),
                   [&](size_t a, size_t b) { return units(a) < units(b); });
  if (deadline_s) {
    const auto& order = out.by_cost.empty() ? out.by_time : out.by_cost;
    for (const size_t i : order) {
      if (rows[i].time_to_train_s <= *deadline_s) {
        out.within_deadline = i;
        break;
      }
    }
  }
  return out;
}

}  // namespace ralp::sweep
