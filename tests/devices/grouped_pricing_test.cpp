// Grouped and depthwise convolutions as one kernel for all groups, and the element-wise kinds
// (sigmoid, SiLU, the hard kinds, mul) as streaming kernels, in the GPU model and the datasheet.
#include <gtest/gtest.h>

#include <cmath>

#include "ralp/devices/cost_model.hpp"
#include "ralp/devices/datasheet.hpp"
#include "ralp/devices/gpu_kernels.hpp"
#include "ralp/devices/published_model.hpp"
#include "ralp/model/model_builder.hpp"

namespace ralp {
namespace {

// 64 multiprocessors at 10 TFLOP/s and 1 TB/s, as gpu_kernels_test's device.
GpuShape test_gpu() { return {FlopsPerSecond(10e12), BytesPerSecond(1e12), 64}; }
// Its tensor cores: 125 TFLOP/s of FP16 products, 2-byte operands, 10 TFLOP/s on CUDA cores.
GpuShape tensor_gpu() {
  return {FlopsPerSecond(125e12), BytesPerSecond(1e12), 64, 2.0, true, FlopsPerSecond(10e12)};
}
constexpr ConvAlgorithms kTensorOps{true, true, true};
GpuKernelParams test_params() {
  GpuKernelParams p;
  p.gemm_efficiency = 0.8;
  p.implicit_gemm_efficiency = 0.6;
  p.memory_efficiency = 0.8;
  p.cache_ratio = 1e6;
  p.tile_prologue = 0.0;
  p.launch = Seconds(5e-6);
  return p;
}

// `groups` groups of in -> out channels each, square input and kernel.
ConvShape grouped(int64_t n, int64_t groups, int64_t in, int64_t out, int64_t hw, int r, int pad) {
  ConvShape s;
  s.batch = n;
  s.groups = groups;
  s.in_channels = in;
  s.out_channels = out;
  s.height = s.width = hw;
  s.kernel_h = s.kernel_w = r;
  s.pad_h = s.pad_w = pad;
  return s;
}

// The issue's example: depthwise 3x3, 1,024 channels, 14x14, batch 64, stride 1, pad 1.
constexpr double kDepthwiseTensor = 64.0 * 1024 * 14 * 14;  // values of x, y, dy or dx
constexpr double kDepthwiseWeights = 1024.0 * 9;

TEST(GroupedPricing, DepthwiseMovesEachTensorOnce) {
  const ConvShape dw = grouped(64, 1024, 1, 1, 14, 3, 1);
  ASSERT_TRUE(dw.depthwise());
  // Every pass moves two activations and the weights once: 12.85 M values x 4 bytes at
  // 0.8 TB/s is 128.5 us; its 231 MFLOP at 6 TFLOP/s (the implicit-GEMM efficiency) take 38.5 us.
  const double memory = (2 * kDepthwiseTensor + kDepthwiseWeights) * 4 / 0.8e12;
  for (const ConvPass pass : {ConvPass::forward, ConvPass::backward_data, ConvPass::backward_filter}) {
    const KernelTime t = conv_pass_time(dw, pass, test_gpu(), test_params());
    EXPECT_EQ(t.algorithm, ConvAlgorithm::depthwise) << to_string(pass);
    EXPECT_NEAR(t.seconds.value(), memory + 5e-6, 1e-12) << to_string(pass);
  }
  // In FP16 it moves half the bytes and never reaches the tensor cores.
  const KernelTime half = conv_pass_time(dw, ConvPass::forward, tensor_gpu(), test_params(), kTensorOps);
  EXPECT_EQ(half.algorithm, ConvAlgorithm::depthwise);
  EXPECT_NEAR(half.seconds.value(), memory / 2 + 5e-6, 1e-12);
  // Its FLOPs bind only where the CUDA cores are slow: at 0.1 TFLOP/s x 0.6 its 231 MFLOP take
  // 3.85 ms.
  GpuShape slow = test_gpu();
  slow.peak = FlopsPerSecond(0.1e12);
  EXPECT_NEAR(conv_pass_time(dw, ConvPass::forward, slow, test_params()).seconds.value(),
              dw.direct_flops() / (0.1e12 * 0.6) + 5e-6, 1e-12);
}

TEST(GroupedPricing, AGroupedConvolutionIsOneImplicitGemmForAllGroups) {
  // 2 groups of 1x1 128 -> 128 on 32x32, batch 16: per group M = 16,384, N = K = 128, so
  // 128 tiles of 128 x 128 per group, 256 in all: 4 per SM on 64 SMs, no waste. One launch.
  const ConvShape c = grouped(16, 2, 128, 128, 32, 1, 0);
  const KernelTime t = conv_pass_time(c, ConvPass::forward, test_gpu(), test_params());
  EXPECT_EQ(t.algorithm, ConvAlgorithm::implicit_gemm);
  EXPECT_NEAR(t.seconds.value(), c.direct_flops() / (10e12 * 0.6) + 5e-6, 1e-12);
  // ResNeXt's 32 groups of 4 -> 4 channels (3x3 on 56x56, batch 16) cost less as one implicit
  // GEMM than as 32, each with its own launch and its own partial last wave.
  const ConvShape resnext = grouped(16, 32, 4, 4, 56, 3, 1);
  ConvShape one = resnext;
  one.groups = 1;
  for (const ConvPass pass : {ConvPass::forward, ConvPass::backward_data, ConvPass::backward_filter}) {
    const Seconds together = conv_pass_time(resnext, pass, test_gpu(), test_params()).seconds;
    const Seconds apart = conv_algorithm_time(one, pass, ConvAlgorithm::implicit_gemm, test_gpu(),
                                              test_params()) * 32.0;
    EXPECT_LT(together, apart) << to_string(pass);
  }
  // Winograd, FFT and explicit GEMM have no grouped kernel here.
  EXPECT_FALSE(std::isfinite(conv_algorithm_time(c, ConvPass::forward, ConvAlgorithm::gemm,
                                                 test_gpu(), test_params()).value()));
}

TEST(GroupedPricing, GroupsReachTheTensorCoresOnlyWithChannelsInEights) {
  // 32 groups of 8 -> 8: tensor-op implicit GEMM at the tensor peak.
  const ConvShape eights = grouped(16, 32, 8, 8, 56, 3, 1);
  GpuShape cuda = tensor_gpu();
  cuda.peak = FlopsPerSecond(10e12);
  cuda.tensor_cores = false;
  EXPECT_DOUBLE_EQ(
      conv_pass_time(eights, ConvPass::forward, tensor_gpu(), test_params(), kTensorOps).seconds.value(),
      conv_algorithm_time(eights, ConvPass::forward, ConvAlgorithm::implicit_gemm, tensor_gpu(),
                          test_params()).value());
  // 32 groups of 4 -> 4: the CUDA cores at their FP32 rate, 2-byte operands, nothing padded.
  const ConvShape fours = grouped(16, 32, 4, 4, 56, 3, 1);
  EXPECT_DOUBLE_EQ(
      conv_pass_time(fours, ConvPass::forward, tensor_gpu(), test_params(), kTensorOps).seconds.value(),
      conv_algorithm_time(fours, ConvPass::forward, ConvAlgorithm::implicit_gemm, cuda,
                          test_params()).value());
}

std::string profile_file(const std::string& name) {
  return std::string(RALP_SOURCE_DIR) + "/calibrate/profiles/" + name + ".json";
}

TEST(GroupedPricing, TheIssuesDepthwiseLayerCostsAMemoryBoundKernelOnV100) {
  const DeviceProfile v100 = load_device_profile(profile_file("v100"));
  ModelBuilder b("depthwise", {1024, 14, 14});
  b.conv("c", 1024, 1, 1, 0);  // so that the depthwise layer's input needs a gradient
  b.conv("dw", 1024, 3, 1, 1, {}, ConvOptions{false, 1024});
  b.flatten("flat");
  b.fc("fc", 8);
  b.softmax_cross_entropy();
  const LayerGraph g = b.build();
  const LayerKey key = make_layer_key(g.layer(*g.find("dw")), 64);
  // x read and y written once (and 9,216 weights), at V100's 900 GB/s x the fitted memory
  // efficiency (0.9 in FP32: about 0.13 ms); with a launch the pass costs at most 1.5 times that.
  const double bytes = 2 * kDepthwiseTensor + kDepthwiseWeights;
  for (const Precision precision : {Precision::fp32, Precision::fp16}) {
    const PublishedGpuModel model(v100, precision);
    const GpuKernelParams& fitted =
        precision == Precision::fp32 ? *v100.kernel_model : *v100.tensor_kernel_model;
    const double memory = bytes * activation_bytes(precision) /
                          (v100.memory_bandwidth.value() * fitted.memory_efficiency);
    const LayerCost cost = model.estimate(key);
    EXPECT_GT(cost.forward.value(), memory) << to_string(precision);
    EXPECT_LT(cost.forward.value(), 1.5 * memory) << to_string(precision);
    EXPECT_LT(cost.backward_data.value(), 1.5 * memory) << to_string(precision);
    EXPECT_LT(cost.backward_weight.value(), 1.5 * memory) << to_string(precision);
  }
  // 1,024 separate launches (the price before one kernel ran all groups) cost far more.
  const GpuShape gpu = gpu_shape(v100);
  ConvShape one = grouped(64, 1, 1, 1, 14, 3, 1);
  const Seconds apart = conv_pass_time(one, ConvPass::forward, gpu, *v100.kernel_model).seconds * 1024.0;
  EXPECT_GT(apart.value(), 10 * PublishedGpuModel(v100).estimate(key).forward.value());
}

// 1,000 channels of 10 x 10: each activation is 100,000 values, 400 kB in FP32.
LayerGraph element_wise_model() {
  ModelBuilder b("gates", {1000, 10, 10});
  b.conv("c", 1000, 1, 1, 0);  // so that every later layer's input needs a gradient
  const auto x = b.relu("x");
  b.global_avg_pool("squeeze", x);
  const auto gate = b.sigmoid("gate");
  b.mul("scale", x, gate);
  b.silu("silu");
  b.hard_sigmoid("hsig");
  b.hard_swish("hswish");
  const auto y = b.relu("y");
  b.mul("product", y, x);
  b.flatten("flat");
  b.fc("fc", 2);
  b.softmax_cross_entropy();
  return b.build();
}

TEST(GroupedPricing, ElementWiseKindsStreamTheirBytesWithOneLaunchEach) {
  const LayerGraph g = element_wise_model();
  const auto cost = [&](const std::string& name, const GpuShape& gpu) {
    return gpu_layer_cost(make_layer_key(g.layer(*g.find(name)), 1), gpu, test_params(),
                          Seconds(0.0));
  };
  const double tensor = 400e3 / 0.8e12;
  const double launch = 5e-6;
  // The activations read x and write y; their gradients read dy and the saved tensor (sigmoid's
  // output, the others' input) and write dx.
  for (const std::string name : {"silu", "hsig", "hswish"}) {
    EXPECT_NEAR(cost(name, test_gpu()).forward.value(), 2 * tensor + launch, 1e-12) << name;
    EXPECT_NEAR(cost(name, test_gpu()).backward_data.value(), 3 * tensor + launch, 1e-12) << name;
    EXPECT_NEAR(cost(name, tensor_gpu()).forward.value(), tensor + launch, 1e-12) << name;
  }
  // The gate is 1,000 x 1 x 1: 4 kB each way.
  EXPECT_NEAR(cost("gate", test_gpu()).forward.value(), 2 * 4e3 / 0.8e12 + launch, 1e-15);
  // The broadcast product reads x (100,000 values) and the gate (1,000) and writes y; its
  // gradient reads dy, both inputs and writes both gradients: 302,000 values.
  EXPECT_NEAR(cost("scale", test_gpu()).forward.value(), 201e3 * 4 / 0.8e12 + launch, 1e-12);
  EXPECT_NEAR(cost("scale", test_gpu()).backward_data.value(), 302e3 * 4 / 0.8e12 + launch, 1e-12);
  // With equal shapes: 3 tensors forward, dy + 2 inputs + 2 gradients backward.
  EXPECT_NEAR(cost("product", test_gpu()).forward.value(), 3 * tensor + launch, 1e-12);
  EXPECT_NEAR(cost("product", test_gpu()).backward_data.value(), 5 * tensor + launch, 1e-12);
  EXPECT_LT(cost("product", tensor_gpu()).backward_data, cost("product", test_gpu()).backward_data);
}

TEST(GroupedPricing, ElementWiseKindsAreMemoryBoundOnTheDatasheet) {
  DeviceProfile device;
  device.name = "round";
  device.kind = DeviceKind::gpu;
  device.peak_flops = FlopsPerSecond(1e12);
  device.memory_bandwidth = BytesPerSecond(1e11);
  device.default_efficiency = 0.5;
  device.memory_efficiency = 1.0;
  device.launch_overhead = Seconds(1e-5);
  device.precision_peaks[Precision::fp16] = FlopsPerSecond(8e12);
  const Roofline fp32 = make_datasheet_model(device);
  const Roofline fp16 = make_datasheet_model(device, Precision::fp16);
  const LayerGraph g = element_wise_model();
  for (const std::string name : {"gate", "scale", "silu", "hsig", "hswish", "product"}) {
    const LayerKey key = make_layer_key(g.layer(*g.find(name)), 1);
    const LayerCost full = fp32.estimate(key);
    // Their bytes at 100 GB/s, plus a launch: at most 7 FLOPs per 8 bytes never bind at 500 GFLOP/s.
    EXPECT_DOUBLE_EQ(full.forward.value(), key.work.forward.bytes.value() / 1e11 + 1e-5) << name;
    EXPECT_DOUBLE_EQ(full.backward_data.value(), key.work.backward_data.bytes.value() / 1e11 + 1e-5)
        << name;
    EXPECT_LT(fp16.estimate(key).forward, full.forward) << name;
  }
}

}  // namespace
}  // namespace ralp
