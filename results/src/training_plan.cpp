// One device's step and the scenario's training run, and their JSON.
#include "ralp/results/training_plan.hpp"

namespace ralp {
namespace {

constexpr int64_t kMaxCount = int64_t{1} << 50;
constexpr double kNoMax = 1e300;

}  // namespace

TrainingPlan training_plan(const Scenario& scenario) {
  TrainingPlan plan;
  plan.epochs = scenario.training.epochs;
  plan.dataset_images = scenario.training.dataset_images;
  plan.price_per_hour = scenario.price_per_hour;
  plan.worker_hosts = scenario.workers / scenario.nodes.devices_per_node;
  plan.ps_hosts =
      scenario.nodes.ps_placement == PsPlacement::separate ? scenario.parameter_servers : 0;
  return plan;
}

Json to_json(const SingleDeviceBaseline& b) {
  return {{"device", b.device},
          {"batch", b.batch},
          {"step_time_s", b.step_time_s},
          {"images_per_s", b.images_per_s}};
}

Json to_json(const TrainingPlan& p) {
  return {{"epochs", p.epochs},
          {"dataset_images", p.dataset_images},
          {"price_per_hour", p.price_per_hour ? Json(format_price(*p.price_per_hour)) : Json()},
          {"worker_hosts", p.worker_hosts},
          {"ps_hosts", p.ps_hosts}};
}

SingleDeviceBaseline baseline_from_json(const Json& json, const std::string& path,
                                        const std::string& file) {
  ObjectReader r(json, path, file);
  SingleDeviceBaseline b;
  b.device = r.string("device");
  b.batch = r.integer("batch", 1, kMaxCount);
  b.step_time_s = r.number("step_time_s", 0.0, kNoMax);
  b.images_per_s = r.number("images_per_s", 0.0, kNoMax);
  r.finish();
  return b;
}

TrainingPlan training_plan_from_json(const Json& json, const std::string& path,
                                     const std::string& file) {
  ObjectReader r(json, path, file);
  TrainingPlan p;
  p.epochs = r.integer("epochs", 1, kMaxCount);
  p.dataset_images = r.integer("dataset_images", 1, kMaxCount);
  const Json* price = r.get("price_per_hour");
  if (price != nullptr && !price->is_null()) {
    p.price_per_hour = price->is_string() ? parse_price(price->get<std::string>()) : std::nullopt;
    if (!p.price_per_hour) {
      r.fail("price_per_hour", "is " + describe_json(*price) +
                                   ", expected null or a price such as \"32.77 USD\"");
    }
  }
  p.worker_hosts = r.integer("worker_hosts", 0, kMaxCount);
  p.ps_hosts = r.integer("ps_hosts", 0, kMaxCount);
  r.finish();
  return p;
}

}  // namespace ralp
