// Cost models: the roofline by hand, the measured > fitted > datasheet order, and in-step times
// before times alone.
#include "ralp/devices/cost_model.hpp"
#include "ralp/devices/profile_cost_model.hpp"

#include <gtest/gtest.h>

#include "ralp/devices/datasheet.hpp"
#include "ralp/devices/measured_profile.hpp"
#include "ralp/model/model_zoo.hpp"

namespace ralp {
namespace {

DeviceProfile round_device() {
  DeviceProfile p;
  p.name = "round";
  p.kind = DeviceKind::gpu;
  p.peak_flops = FlopsPerSecond(1e12);
  p.memory_bandwidth = BytesPerSecond(1e11);
  p.default_efficiency = 0.5;
  p.compute_efficiency[LayerKind::conv2d] = 1.0;
  p.memory_efficiency = 1.0;
  p.launch_overhead = Seconds(1e-5);
  return p;
}

TEST(Roofline, ComputeOrMemoryBoundPlusLaunch) {
  const Roofline model = make_datasheet_model(round_device());
  // 1 TFLOP at 1 TFLOP/s (conv efficiency 1) is 1 s; 1 GB at 100 GB/s is 10 ms: compute wins.
  EXPECT_DOUBLE_EQ(model.pass_time(LayerKind::conv2d, {Flops(1e12), Bytes(1e9)}).value(),
                   1.0 + 1e-5);
  // ReLU runs at the default 50%: 1 GFLOP takes 2 ms, 1 GB takes 10 ms: memory wins.
  EXPECT_DOUBLE_EQ(model.pass_time(LayerKind::relu, {Flops(1e9), Bytes(1e9)}).value(),
                   0.01 + 1e-5);
  // No work, no launch.
  EXPECT_DOUBLE_EQ(model.pass_time(LayerKind::relu, {}).value(), 0.0);
}

TEST(Roofline, PrecisionPricesProductsAtItsPeakAndMovesSmallerActivations) {
  DeviceProfile device = round_device();
  device.precision_peaks[Precision::fp16] = FlopsPerSecond(8e12);
  const Roofline fp16 = make_datasheet_model(device, Precision::fp16);
  // 8 TFLOP at the FP16 peak of 8 TFLOP/s (conv efficiency 1): 1 s, as FP32's 1 TFLOP.
  EXPECT_DOUBLE_EQ(fp16.pass_time(LayerKind::conv2d, {Flops(8e12), Bytes(1e9)}).value(),
                   1.0 + 1e-5);
  // A fully connected layer runs at the FP16 peak times the default efficiency: 4 TFLOP/s.
  EXPECT_DOUBLE_EQ(fp16.pass_time(LayerKind::fully_connected, {Flops(4e12), Bytes(0.0)}).value(),
                   1.0 + 1e-5);
  // ReLU stays at the FP32 peak, but its 1 GB of FP32-counted traffic moves as 0.5 GB: 5 ms.
  EXPECT_DOUBLE_EQ(fp16.pass_time(LayerKind::relu, {Flops(1e6), Bytes(1e9)}).value(),
                   0.005 + 1e-5);
  // TF32 is not listed: its products run at the FP32 peak, with FP32 traffic.
  const Roofline tf32 = make_datasheet_model(device, Precision::tf32);
  EXPECT_DOUBLE_EQ(tf32.pass_time(LayerKind::relu, {Flops(1e6), Bytes(1e9)}).value(), 0.01 + 1e-5);
  EXPECT_EQ(make_datasheet_model(device, Precision::fp16).describe(),
            "datasheet roofline of round in fp16");
  EXPECT_EQ(make_datasheet_model(device).describe(), "datasheet roofline of round");
}

TEST(MeasuredProfile, MeasuredThenFittedThenDatasheet) {
  const LayerGraph g = *zoo_model("cifar_alexnet");
  const Layer& conv2 = g.layer(*g.find("conv2"));
  const Layer& fc3 = g.layer(*g.find("fc3"));
  const Layer& relu1 = g.layer(*g.find("relu1"));

  DeviceProfile p = round_device();
  p.source = ProfileSource::measured;
  p.measured.push_back({conv2.signature(), LayerKind::conv2d, 8, Seconds(0.001), Seconds(0.002),
                        Seconds(0.003), 0.0});
  p.fitted[LayerKind::fully_connected] = {FlopsPerSecond(1e10), BytesPerSecond(1e20)};
  p.fitted_launch_overhead = Seconds(0.0);
  const MeasuredProfileModel model(p);

  const LayerCost exact = model.estimate(make_layer_key(conv2, 8));
  EXPECT_EQ(exact.source, CostSource::measured);
  EXPECT_DOUBLE_EQ(exact.backward_weight.value(), 0.003);
  // Another batch of the same shape is not measured: conv has no fit, so the datasheet answers.
  EXPECT_EQ(model.estimate(make_layer_key(conv2, 16)).source, CostSource::datasheet);
  // fc3 forward at batch 8: 8 * (2 * 4096 * 1024 + 1024) FLOPs at 10 GFLOP/s.
  const LayerCost fitted = model.estimate(make_layer_key(fc3, 8));
  EXPECT_EQ(fitted.source, CostSource::fitted);
  EXPECT_DOUBLE_EQ(fitted.forward.value(), 8.0 * (2.0 * 4096 * 1024 + 1024) / 1e10);
  EXPECT_EQ(model.estimate(make_layer_key(relu1, 8)).source, CostSource::datasheet);
}

TEST(MeasuredProfile, InStepTimesComeBeforeTimesAlone) {
  const LayerGraph g = *zoo_model("cifar_alexnet");
  const Layer& conv2 = g.layer(*g.find("conv2"));
  const Layer& fc3 = g.layer(*g.find("fc3"));
  DeviceProfile p = round_device();
  p.name = "round";
  p.source = ProfileSource::measured;
  p.measured.push_back({conv2.signature(), LayerKind::conv2d, 8, Seconds(0.001), Seconds(0.002),
                        Seconds(0.003), 0.0, InStepTimes{Seconds(0.0015), Seconds(0.0025),
                                                         Seconds(0.0035)}});
  p.measured.push_back({fc3.signature(), LayerKind::fully_connected, 8, Seconds(0.004),
                        Seconds(0.005), Seconds(0.006), 0.0});
  const MeasuredProfileModel model(p);
  const LayerCost in_step = model.estimate(make_layer_key(conv2, 8));
  EXPECT_EQ(in_step.source, CostSource::measured);
  EXPECT_DOUBLE_EQ(in_step.forward.value(), 0.0015);
  EXPECT_DOUBLE_EQ(in_step.backward_data.value(), 0.0025);
  EXPECT_DOUBLE_EQ(in_step.backward_weight.value(), 0.0035);
  // Without in-step times, the times alone.
  EXPECT_DOUBLE_EQ(model.estimate(make_layer_key(fc3, 8)).forward.value(), 0.004);
  EXPECT_EQ(model.describe(),
            "measured profile round (2 layer shapes, 1 of them timed inside a training step, and "
            "those times used; fitted model absent; datasheet fallback)");
}

TEST(ModelCost, SumsAndCountsSources) {
  const LayerGraph g = *zoo_model("cifar_allconv");
  const auto model = make_cost_model(round_device());
  const ModelCost cost = model_cost(g, *model, 4);
  ASSERT_EQ(cost.layers.size(), g.size());
  Seconds forward;
  for (const auto& layer : cost.layers) forward += layer.forward;
  EXPECT_DOUBLE_EQ(cost.forward.value(), forward.value());
  // Every layer has work (flatten copies), all of it from the datasheet.
  EXPECT_EQ(cost.datasheet, g.size());
  EXPECT_EQ(cost.measured + cost.fitted, 0u);
}

}  // namespace
}  // namespace ralp
