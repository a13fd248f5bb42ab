// Images/s per GPU, scaling efficiency, time and cost to train, from a strategy's step.
#include "ralp/results/training_figures.hpp"

#include <cstdio>

namespace ralp {
namespace {

constexpr double kSecondsPerHour = 3600.0;

}  // namespace

TrainingFigures training_figures(const StrategyResult& result, int64_t workers,
                                 const TrainingPlan& plan,
                                 const std::optional<SingleDeviceBaseline>& baseline) {
  TrainingFigures f;
  const double images_per_s = result.images_per_s;
  f.images_per_s_per_gpu = workers > 0 ? images_per_s / static_cast<double>(workers) : 0.0;
  if (baseline && baseline->images_per_s > 0.0) {
    f.scaling_efficiency = f.images_per_s_per_gpu / baseline->images_per_s;
  }
  const double images = static_cast<double>(plan.epochs) * static_cast<double>(plan.dataset_images);
  f.time_to_train_s = images_per_s > 0.0 ? images / images_per_s : 0.0;
  const bool uses_servers = result.kind != StrategyKind::allreduce;
  f.billed_hosts = plan.worker_hosts + (uses_servers ? plan.ps_hosts : 0);
  if (plan.price_per_hour) {
    f.cost = static_cast<double>(f.billed_hosts) * plan.price_per_hour->amount *
             f.time_to_train_s / kSecondsPerHour;
  }
  return f;
}

std::string format_efficiency(double efficiency) {
  constexpr double kOneDecimalBelow = 0.1;
  char text[32];
  std::snprintf(text, sizeof text, efficiency < kOneDecimalBelow ? "%.1f%%" : "%.0f%%",
                100.0 * efficiency);
  return text;
}

void add_training_figures(Json& strategy, const TrainingFigures& f) {
  strategy["images_per_s_per_gpu"] = f.images_per_s_per_gpu;
  strategy["scaling_efficiency"] = f.scaling_efficiency ? Json(*f.scaling_efficiency) : Json();
  strategy["time_to_train_s"] = f.time_to_train_s;
  strategy["billed_hosts"] = f.billed_hosts;
  strategy["cost"] = f.cost ? Json(*f.cost) : Json();
}

Json results_with_figures_json(const ScenarioResult& result) {
  Json out = Json::array();
  for (const StrategyResult& r : result.results) {
    Json j = to_json(r, false);
    add_training_figures(j, training_figures(r, result.workers, result.training, result.baseline));
    out.push_back(std::move(j));
  }
  return out;
}

}  // namespace ralp
