// Images/s per GPU, scaling efficiency, time and cost to train: closed forms by hand.
#include "ralp/results/training_figures.hpp"

#include <gtest/gtest.h>

namespace ralp {
namespace {

StrategyResult strategy(StrategyKind kind, double images_per_s) {
  StrategyResult r;
  r.label = std::string(to_string(kind));
  r.kind = kind;
  r.images_per_s = images_per_s;
  return r;
}

// 8 workers on one node of 8 GPUs and one parameter server of its own, 90 epochs of 1,281,167
// images, 32.77 USD a host an hour; one GPU alone does 125 images/s.
TrainingPlan plan() {
  TrainingPlan p;
  p.epochs = 90;
  p.dataset_images = 1281167;
  p.price_per_hour = Price{32.77, "USD"};
  p.worker_hosts = 1;
  p.ps_hosts = 1;
  return p;
}

TEST(TrainingFigures, ClosedFormsOfOneStrategy) {
  const SingleDeviceBaseline one{"a100", 256, 2.048, 125.0};
  // 800 images/s over 8 GPUs: 100 per GPU, 100 / 125 = 80% of linear scaling.
  const TrainingFigures f = training_figures(strategy(StrategyKind::ps, 800.0), 8, plan(), one);
  EXPECT_DOUBLE_EQ(f.images_per_s_per_gpu, 100.0);
  ASSERT_TRUE(f.scaling_efficiency.has_value());
  EXPECT_DOUBLE_EQ(*f.scaling_efficiency, 0.8);
  // 90 x 1,281,167 = 115,305,030 images at 800 a second: 144,131.2875 s (40.04 h).
  EXPECT_DOUBLE_EQ(f.time_to_train_s, 144131.2875);
  // The node and the server's host: 2 x 32.77 USD x 40.036468... h = 2,623.99 USD.
  EXPECT_EQ(f.billed_hosts, 2);
  ASSERT_TRUE(f.cost.has_value());
  EXPECT_NEAR(*f.cost, 2.0 * 32.77 * 144131.2875 / 3600.0, 1e-9);
}

TEST(TrainingFigures, AllreducePaysNoServerAndUnknownsStayUnknown) {
  const TrainingFigures ring =
      training_figures(strategy(StrategyKind::allreduce, 800.0), 8, plan(), std::nullopt);
  EXPECT_EQ(ring.billed_hosts, 1);
  EXPECT_FALSE(ring.scaling_efficiency.has_value());  // no baseline
  TrainingPlan free = plan();
  free.price_per_hour.reset();
  EXPECT_FALSE(training_figures(strategy(StrategyKind::ralp, 800.0), 8, free, std::nullopt)
                   .cost.has_value());
  Json j;
  add_training_figures(j, ring);
  EXPECT_TRUE(j["scaling_efficiency"].is_null());
  EXPECT_DOUBLE_EQ(j["time_to_train_s"].get<double>(), 144131.2875);
}

TEST(TrainingPlan, JsonRoundTrips) {
  const TrainingPlan p = plan();
  EXPECT_EQ(training_plan_from_json(to_json(p), "/training", "r.json"), p);
  const SingleDeviceBaseline b{"v100", 64, 0.25, 256.0};
  EXPECT_EQ(baseline_from_json(to_json(b), "/baseline", "r.json"), b);
  Json bad = to_json(p);
  bad["price_per_hour"] = "lots";
  try {
    training_plan_from_json(bad, "/scenario/training", "r.json");
    ADD_FAILURE() << "expected an error";
  } catch (const InputError& e) {
    EXPECT_EQ(std::string(e.what()), "r.json: /scenario/training/price_per_hour is \"lots\", "
                                     "expected null or a price such as \"32.77 USD\"");
  }
}

}  // namespace
}  // namespace ralp
