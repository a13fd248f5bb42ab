// The GPU kernel model on shapes whose times can be worked out by hand.
#include "ralp/devices/gpu_kernels.hpp"

#include <gtest/gtest.h>

#include <cmath>

#include "ralp/devices/cost_model.hpp"
#include "ralp/devices/published_model.hpp"
#include "ralp/model/model_builder.hpp"

namespace ralp {
namespace {

// 64 multiprocessors at 10 TFLOP/s and 1 TB/s; no prologue, and a cache fast enough never to
// bind, so a tile-aligned GEMM takes exactly its FLOPs at the efficiency.
GpuShape test_gpu() { return {FlopsPerSecond(10e12), BytesPerSecond(1e12), 64}; }
GpuKernelParams test_params() {
  GpuKernelParams p;
  p.gemm_efficiency = 0.8;
  p.implicit_gemm_efficiency = 0.6;
  p.winograd_efficiency = 0.5;
  p.fft_efficiency = 0.5;
  p.memory_efficiency = 0.8;
  p.cache_ratio = 1e6;
  p.tile_prologue = 0.0;
  p.launch = Seconds(5e-6);
  return p;
}

ConvShape conv(int64_t n, int64_t c, int64_t k, int64_t hw, int r, int stride, int pad) {
  ConvShape s;
  s.batch = n;
  s.in_channels = c;
  s.out_channels = k;
  s.height = s.width = hw;
  s.kernel_h = s.kernel_w = r;
  s.stride_h = s.stride_w = stride;
  s.pad_h = s.pad_w = pad;
  return s;
}

TEST(GpuKernels, AlignedGemmTakesItsFlopsAtTheEfficiency) {
  // 4096^3: 32 x 32 = 1,024 tiles of 128 x 128, 16 rounds on 64 SMs, no partial round.
  const double flops = 2.0 * 4096.0 * 4096.0 * 4096.0;
  const Seconds t = gemm_time(4096, 4096, 4096, test_gpu(), test_params());
  EXPECT_NEAR(t.value(), flops / (10e12 * 0.8) + 5e-6, 1e-9);
}

TEST(GpuKernels, WinogradDoes2Point25TimesFewerMultiplies) {
  // 3x3 stride 1 on 56x56, 128 -> 128 channels, batch 16: 16 x 28 x 28 = 12,544 output tiles of
  // 2x2, x 16 transformed elements. In 32x32 GEMM tiles that is 392 x 4 x 16 = 25,088 tiles,
  // 392 per SM exactly: no waste, so the time is the direct FLOPs / 2.25 at the efficiency.
  const ConvShape c = conv(16, 128, 128, 56, 3, 1, 1);
  const Seconds t = conv_algorithm_time(c, ConvPass::forward, ConvAlgorithm::winograd, test_gpu(),
                                        test_params());
  EXPECT_NEAR(t.value(), c.direct_flops() / 2.25 / (10e12 * 0.5) + 5e-6, 1e-9);
  // With a cache a tenth of DRAM's bandwidth every tile waits for its operands, and the largest
  // tile, which loads least per FLOP, wins despite its partial round: 98 x 16 = 1,568 tiles of
  // 128x128 are 24.5 per SM, so 25, each loading (128 + 128) x 128 floats at 1e11 / 64 B/s.
  GpuKernelParams slow_cache = test_params();
  slow_cache.cache_ratio = 0.1;
  const Seconds rounded = conv_algorithm_time(c, ConvPass::forward, ConvAlgorithm::winograd,
                                              test_gpu(), slow_cache);
  EXPECT_NEAR(rounded.value(), 25 * 256.0 * 128 * 4 / (1e11 / 64) + 5e-6, 1e-9);
}

TEST(GpuKernels, A3x3Stride1TakesWinogradOrFftWhereCheaper) {
  const ConvShape c = conv(16, 256, 256, 28, 3, 1, 1);
  const KernelTime best = conv_pass_time(c, ConvPass::forward, test_gpu(), test_params());
  const Seconds implicit = conv_algorithm_time(c, ConvPass::forward, ConvAlgorithm::implicit_gemm,
                                               test_gpu(), test_params());
  EXPECT_NE(best.algorithm, ConvAlgorithm::implicit_gemm);
  EXPECT_LT(best.seconds, implicit);
  // Make implicit GEMM nearly free and it wins: the choice is by time, not by kind.
  GpuKernelParams fast = test_params();
  fast.implicit_gemm_efficiency = 1.0;
  fast.winograd_efficiency = fast.fft_efficiency = fast.gemm_efficiency = 0.1;
  EXPECT_EQ(conv_pass_time(c, ConvPass::forward, test_gpu(), fast).algorithm,
            ConvAlgorithm::implicit_gemm);
}

TEST(GpuKernels, A1x1TakesGemm) {
  // 1x1 stride 1, 256 -> 512 on 28x28, batch 16: M = 12,544 (392 tiles of 32), N = 512 (16),
  // K = 256: 6,272 tiles, 98 per SM, no waste; cuBLAS's efficiency, not implicit GEMM's.
  const ConvShape c = conv(16, 256, 512, 28, 1, 1, 0);
  const KernelTime best = conv_pass_time(c, ConvPass::forward, test_gpu(), test_params());
  EXPECT_EQ(best.algorithm, ConvAlgorithm::gemm);
  EXPECT_NEAR(best.seconds.value(), c.direct_flops() / (10e12 * 0.8) + 5e-6, 1e-9);
}

TEST(GpuKernels, StridedAndLargeKernelsHaveOnlyTheirAlgorithms) {
  const ConvShape strided = conv(16, 64, 64, 56, 3, 2, 1);
  for (const ConvAlgorithm a : {ConvAlgorithm::gemm, ConvAlgorithm::winograd,
                                ConvAlgorithm::winograd_nonfused, ConvAlgorithm::fft,
                                ConvAlgorithm::fft_tiling}) {
    EXPECT_TRUE(std::isinf(conv_algorithm_time(strided, ConvPass::forward, a, test_gpu(),
                                               test_params()).value())) << to_string(a);
  }
  const ConvShape five = conv(16, 64, 64, 28, 5, 1, 2);
  EXPECT_TRUE(std::isinf(conv_algorithm_time(five, ConvPass::forward, ConvAlgorithm::winograd,
                                             test_gpu(), test_params()).value()));
  EXPECT_TRUE(std::isfinite(conv_algorithm_time(five, ConvPass::forward, ConvAlgorithm::fft,
                                                test_gpu(), test_params()).value()));
  // Fused Winograd computes no filter gradient; the non-fused one does.
  const ConvShape three = conv(16, 64, 64, 28, 3, 1, 1);
  EXPECT_TRUE(std::isinf(conv_algorithm_time(three, ConvPass::backward_filter,
                                             ConvAlgorithm::winograd, test_gpu(), test_params()).value()));
  EXPECT_TRUE(std::isfinite(conv_algorithm_time(three, ConvPass::backward_filter,
                                                ConvAlgorithm::winograd_nonfused, test_gpu(),
                                                test_params()).value()));
}

TEST(GpuKernels, SplitKFillsTheDeviceForALongThinGemm) {
  // 64 x 64 x 1,048,576 is one tile: alone it runs on one SM; split-K spreads it over all 64.
  const double k = 1048576.0;
  const double one_sm = 4.0 * 2.0 * 64 * 64 * k / (10e12 / 64 * 0.8);  // 4 resident 64x64 slots
  const Seconds t = gemm_time(64, 64, k, test_gpu(), test_params());
  EXPECT_LT(t.value(), one_sm / 16.0);
  EXPECT_GT(t.value(), 2.0 * 64 * 64 * k / (10e12 * 0.8));
}

TEST(GpuKernels, StreamingKernelsRunAtAchievedBandwidth) {
  EXPECT_NEAR(streaming_time(Bytes(8e9), test_gpu(), test_params()).value(), 8e9 / 0.8e12 + 5e-6,
              1e-12);
}

TEST(GpuKernels, StreamingLayersMoveWhatTheirKernelsReadAndWrite) {
  // One image of 1,000 x 10 x 10 floats in and out: a tensor is 400 kB, 0.5 us at 0.8 TB/s.
  ModelBuilder b("elementwise", {1000, 10, 10});
  const auto c = b.conv("c", 1000, 1, 1, 0);
  const auto bn = b.batch_norm("bn");
  const auto relu = b.relu("relu");
  const auto pool = b.max_pool("pool", 1, 1);
  b.add("sum", {c, pool});
  b.flatten("flat");
  b.fc("fc", 2);
  b.softmax_cross_entropy();
  const LayerGraph g = b.build();
  const auto cost = [&](const std::string& name) {
    return gpu_layer_cost(make_layer_key(g.layer(*g.find(name)), 1), test_gpu(), test_params(),
                          Seconds(0.0));
  };
  const double tensor = 400e3 / 0.8e12;
  const double launch = 5e-6;
  // ReLU reads x and writes y; its gradient reads dy and y and writes dx.
  EXPECT_NEAR(cost(relu).forward.value(), 2 * tensor + launch, 1e-12);
  EXPECT_NEAR(cost(relu).backward_data.value(), 3 * tensor + launch, 1e-12);
  // Max pooling's gradient reads x, y and dy and writes dx (cuDNN's signature).
  EXPECT_NEAR(cost(pool).forward.value(), 2 * tensor + launch, 1e-12);
  EXPECT_NEAR(cost(pool).backward_data.value(), 4 * tensor + launch, 1e-12);
  // Batch norm reads x twice (statistics, then normalizing) and writes y; its data gradient
  // reads dy and x and writes dx, besides the reductions of its scale and shift gradients.
  const double params = 2000 * 4 / 0.8e12;
  EXPECT_NEAR(cost(bn).forward.value(), 3 * tensor + params + launch, 1e-12);
  EXPECT_NEAR(cost(bn).backward_data.value(), 3 * tensor + 1000 * 4 / 0.8e12 + launch, 1e-12);
  EXPECT_NEAR(cost(bn).backward_weight.value(), 2 * tensor + params + launch, 1e-12);
  // A residual sum reads both inputs and writes once; its gradient passes on with no kernel.
  EXPECT_NEAR(cost("sum").forward.value(), 3 * tensor + launch, 1e-12);
  EXPECT_EQ(cost("sum").backward_data.value(), 0.0);
}

// The same device's tensor cores: 125 TFLOP/s of FP16 products, 2-byte operands.
GpuShape tensor_gpu() { return {FlopsPerSecond(125e12), BytesPerSecond(1e12), 64, 2.0}; }
constexpr ConvAlgorithms kTensorOps{true, true, true};

TEST(GpuKernels, ALargeTensorCoreGemmTakesItsFlopsAtTheTensorPeak) {
  // 4096^3 in 128 x 128 tiles: 16 full rounds on 64 SMs, at the tensor peak x the efficiency.
  const double flops = 2.0 * 4096.0 * 4096.0 * 4096.0;
  const Seconds t = gemm_time(4096, 4096, 4096, tensor_gpu(), test_params());
  EXPECT_NEAR(t.value(), flops / (125e12 * 0.8) + 5e-6, 1e-10);
  // A GEMM too small to be compute-bound streams its 2-byte operands: 3 x 64 MB at 0.8 TB/s.
  const Seconds thin = gemm_time(4096, 8, 4096, tensor_gpu(), test_params());
  EXPECT_GE(thin.value(), (4096.0 * 4096 + 4096 * 8 + 4096 * 8) * 2 / 0.8e12 + 5e-6 - 1e-12);
}

TEST(GpuKernels, TensorOpsRunImplicitGemmOnChannelsPaddedTo8) {
  // 3 -> 64 channels, 7x7 stride 2 (a first layer): the tensor-op kernels compute 8 input
  // channels, as DeepBench's padded FP16 rows timed it, by implicit GEMM (no FFT, no GEMM).
  const ConvShape three = conv(16, 3, 64, 224, 7, 2, 3);
  ConvShape eight = three;
  eight.in_channels = 8;
  EXPECT_EQ(tensor_op_shape(three).in_channels, 8);
  EXPECT_EQ(tensor_op_shape(three).out_channels, 64);
  const KernelTime padded = conv_pass_time(three, ConvPass::forward, tensor_gpu(), test_params(), kTensorOps);
  EXPECT_EQ(padded.algorithm, ConvAlgorithm::implicit_gemm);
  EXPECT_DOUBLE_EQ(padded.seconds.value(),
                   conv_algorithm_time(eight, ConvPass::forward, ConvAlgorithm::implicit_gemm,
                                       tensor_gpu(), test_params()).value());
  EXPECT_GT(padded.seconds, conv_algorithm_time(three, ConvPass::forward, ConvAlgorithm::implicit_gemm,
                                                tensor_gpu(), test_params()));
  // A 1x1 takes implicit GEMM too: cuDNN's explicit GEMM has no tensor-op kernel.
  EXPECT_EQ(conv_pass_time(conv(16, 256, 512, 28, 1, 1, 0), ConvPass::forward, tensor_gpu(),
                           test_params(), kTensorOps).algorithm,
            ConvAlgorithm::implicit_gemm);
}

TEST(GpuKernels, ATensorOpLayerWithUnalignedChannelsPaysItsPaddingCopy) {
  // 3 -> 64 channels on 32 x 32, batch 1: the forward first copies the 3-channel input into an
  // 8-channel one, a kernel that reads 3 x 1,024 and writes 8 x 1,024 2-byte values.
  ModelBuilder b("first", {3, 32, 32});
  b.conv("c", 64, 3, 1, 1, {}, ConvOptions{false});
  b.flatten("flat");
  b.fc("fc", 8);
  b.softmax_cross_entropy();
  const LayerGraph g = b.build();
  const LayerKey key = make_layer_key(g.layer(*g.find("c")), 1);
  const LayerCost cost = gpu_layer_cost(key, tensor_gpu(), test_params(), Seconds(0.0), kTensorOps);
  ConvShape padded = conv(1, 8, 64, 32, 3, 1, 1);
  const double copy = (3.0 + 8.0) * 1024 * 2 / 0.8e12 + 5e-6;
  EXPECT_NEAR(cost.forward.value(),
              conv_pass_time(padded, ConvPass::forward, tensor_gpu(), test_params(), kTensorOps)
                      .seconds.value() + copy, 1e-12);
  // With 8 channels nothing is copied.
  ModelBuilder b8("aligned", {8, 32, 32});
  b8.conv("c", 64, 3, 1, 1, {}, ConvOptions{false});
  b8.flatten("flat");
  b8.fc("fc", 8);
  b8.softmax_cross_entropy();
  const LayerGraph g8 = b8.build();
  const LayerCost aligned = gpu_layer_cost(make_layer_key(g8.layer(*g8.find("c")), 1), tensor_gpu(),
                                           test_params(), Seconds(0.0), kTensorOps);
  EXPECT_NEAR(cost.forward.value() - aligned.forward.value(), copy, 1e-12);
}

TEST(GpuKernels, StreamingLayersMoveTwoByteValuesInFp16) {
  ModelBuilder b("relu", {1000, 10, 10});
  b.relu("relu");
  b.flatten("flat");
  b.fc("fc", 8);
  b.softmax_cross_entropy();
  const LayerGraph g = b.build();
  const LayerKey key = make_layer_key(g.layer(*g.find("relu")), 1);
  const double half_tensor = 200e3 / 0.8e12;  // 100,000 values x 2 bytes
  EXPECT_NEAR(gpu_layer_cost(key, tensor_gpu(), test_params()).forward.value(),
              2 * half_tensor + 5e-6, 1e-12);
}

TEST(GpuKernels, ParametersRoundTripThroughTheirArray) {
  const auto values = as_array(test_params());
  const auto back = as_array(params_from_array(values));
  for (size_t i = 0; i < values.size(); ++i) EXPECT_DOUBLE_EQ(back[i], values[i]) << i;
}

}  // namespace
}  // namespace ralp
