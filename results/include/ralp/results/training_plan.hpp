// What a run is measured against and paid by: one device's step (the reference of scaling
// efficiency) and the scenario's training run (epochs, images an epoch, hosts, their price).
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "ralp/core/json_input.hpp"
#include "ralp/spec/scenario.hpp"

namespace ralp {

// One worker device training alone at the scenario's batch: forward, backward and update, with no
// communication. Scaling efficiency is measured against it.
struct SingleDeviceBaseline {
  std::string device;        // the workers' device profile
  int64_t batch = 0;         // images a step
  double step_time_s = 0.0;  // analytic step model
  double images_per_s = 0.0;
  friend bool operator==(const SingleDeviceBaseline&, const SingleDeviceBaseline&) = default;
};

// The training run a scenario describes and what its hosts cost.
struct TrainingPlan {
  int64_t epochs = kDefaultEpochs;
  int64_t dataset_images = kImageNetTrainImages;
  std::optional<Price> price_per_hour;  // one host an hour
  int64_t worker_hosts = 0;             // nodes that hold the workers
  int64_t ps_hosts = 0;                 // parameter servers on hosts of their own
  friend bool operator==(const TrainingPlan&, const TrainingPlan&) = default;
};

TrainingPlan training_plan(const Scenario& scenario);

Json to_json(const SingleDeviceBaseline& baseline);
Json to_json(const TrainingPlan& plan);
// The inverses; throw InputError naming `file` and the JSON path on a malformed object.
SingleDeviceBaseline baseline_from_json(const Json& json, const std::string& path,
                                        const std::string& file);
TrainingPlan training_plan_from_json(const Json& json, const std::string& path,
                                     const std::string& file);

}  // namespace ralp
