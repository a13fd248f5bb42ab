// Layer maths: shapes, parameters, FLOPs and bytes on shapes small enough to check by hand.
#include "ralp/model/layer.hpp"

#include <gtest/gtest.h>

namespace ralp {
namespace {

LayerSpec conv_spec(int64_t out, int k, int s, int p, int64_t groups = 1, bool bias = true) {
  Conv2dAttrs a;
  a.out_channels = out;
  a.kernel_h = a.kernel_w = k;
  a.stride_h = a.stride_w = s;
  a.pad_h = a.pad_w = p;
  a.groups = groups;
  a.bias = bias;
  return {"conv", LayerKind::conv2d, a, {}};
}

TEST(Layer, ConvShapeParamsAndFlops) {
  // 3x32x32 input, 16 filters 3x3, stride 1, pad 1: output 16x32x32.
  Layer l = infer_layer(conv_spec(16, 3, 1, 1), {{3, 32, 32}}, 0);
  l.needs_input_gradient = true;
  EXPECT_EQ(l.output, (TensorShape{16, 32, 32}));
  // Weights 16*3*3*3 = 432, bias 16.
  EXPECT_EQ(l.weight_params, 432);
  EXPECT_EQ(l.bias_params, 16);
  // Per image: K = 27, outputs = 16*1024 = 16384, MACs = 442,368.
  // forward = 2*442,368 + 16,384 (bias) = 901,120; backward-data = 884,736.
  const LayerWork w = l.work(2);
  EXPECT_DOUBLE_EQ(w.forward.flops.value(), 2 * 901120.0);
  EXPECT_DOUBLE_EQ(w.backward_data.flops.value(), 2 * 884736.0);
  EXPECT_DOUBLE_EQ(w.backward_weight.flops.value(), 2 * 901120.0);
  // Forward bytes: 2 images * (3072 in + 16384 out) floats + 448 parameters, 4 bytes each.
  EXPECT_DOUBLE_EQ(w.forward.bytes.value(), 4.0 * (2 * (3072 + 16384) + 448));
}

TEST(Layer, StridedGroupedConvWithoutBias) {
  // 8x9x9, 4 filters 3x3 stride 2 no pad, 2 groups: output 4x4x4; weights 4*(8/2)*9 = 144.
  const Layer l = infer_layer(conv_spec(4, 3, 2, 0, 2, false), {{8, 9, 9}}, 0);
  EXPECT_EQ(l.output, (TensorShape{4, 4, 4}));
  EXPECT_EQ(l.weight_params, 144);
  EXPECT_EQ(l.bias_params, 0);
  // No input gradient needed (nothing upstream has parameters): no backward-data work.
  EXPECT_DOUBLE_EQ(l.work(1).backward_data.flops.value(), 0.0);
}

TEST(Layer, PoolingFollowsPyTorchCeilMode) {
  PoolAttrs a;
  a.kernel_h = a.kernel_w = 3;
  a.stride_h = a.stride_w = 2;
  // floor((112 - 3) / 2) + 1 = 55; with ceil_mode ceil(109 / 2) + 1 = 56.
  EXPECT_EQ(infer_layer({"p", LayerKind::max_pool, a, {}}, {{64, 112, 112}}, 0).output.height, 55);
  a.ceil_mode = true;
  EXPECT_EQ(infer_layer({"p", LayerKind::max_pool, a, {}}, {{64, 112, 112}}, 0).output.height, 56);
  // ceil_mode may not start a window past the input: 6 wide, k2 s2 p1 gives 4 windows, not 5.
  a.kernel_h = a.kernel_w = 2;
  a.pad_h = a.pad_w = 1;
  EXPECT_EQ(infer_layer({"p", LayerKind::max_pool, a, {}}, {{1, 6, 6}}, 0).output.height, 4);
}

TEST(Layer, FullyConnectedFlattensItsInput) {
  const Layer l = infer_layer({"fc", LayerKind::fully_connected, FullyConnectedAttrs{10, true}, {}},
                              {{4, 2, 2}}, 0);
  // 16 inputs x 10 outputs + 10 biases.
  EXPECT_EQ(l.params(), 170);
  EXPECT_DOUBLE_EQ(l.work(1).forward.flops.value(), 2 * 160 + 10);
}

TEST(Layer, ConcatAndAddCheckShapes) {
  const Layer cat =
      infer_layer({"c", LayerKind::concat, std::monostate{}, {}}, {{3, 5, 5}, {4, 5, 5}}, 0);
  EXPECT_EQ(cat.output, (TensorShape{7, 5, 5}));
  EXPECT_THROW(infer_layer({"c", LayerKind::concat, std::monostate{}, {}},
                           {{3, 5, 5}, {4, 4, 4}}, 0),
               ModelError);
  EXPECT_THROW(infer_layer({"a", LayerKind::add, std::monostate{}, {}}, {{3, 5, 5}, {4, 5, 5}}, 0),
               ModelError);
}

TEST(Layer, RejectsEmptyOutputsAndBadGroups) {
  EXPECT_THROW(infer_layer(conv_spec(4, 7, 1, 0), {{3, 5, 5}}, 3), ModelError);
  EXPECT_THROW(infer_layer(conv_spec(4, 3, 1, 0, 3), {{4, 5, 5}}, 3), ModelError);
  try {
    infer_layer(conv_spec(4, 7, 1, 0), {{3, 5, 5}}, 3);
  } catch (const ModelError& e) {
    EXPECT_EQ(e.layer_index(), 3u);
    EXPECT_EQ(e.attribute(), "kernel");
  }
}

TEST(Layer, SignatureIgnoresNameButNotShape) {
  LayerSpec a = conv_spec(16, 3, 1, 1);
  LayerSpec b = a;
  b.name = "other";
  EXPECT_EQ(infer_layer(a, {{3, 32, 32}}, 0).signature(), infer_layer(b, {{3, 32, 32}}, 0).signature());
  EXPECT_NE(infer_layer(a, {{3, 32, 32}}, 0).signature(), infer_layer(a, {{3, 16, 16}}, 0).signature());
  EXPECT_EQ(infer_layer(a, {{3, 32, 32}}, 0).signature(),
            "conv2d(out=16,k=3x3,s=1x1,p=1x1,d=1x1,g=1,bias)<3x32x32,nograd");
}

}  // namespace
}  // namespace ralp
