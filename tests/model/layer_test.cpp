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

// Backward-data work of an element-wise layer on a 2x3x4 input (24 elements) at batch 2.
PassWork element_wise_backward(LayerKind kind, LayerAttrs attrs = std::monostate{}) {
  Layer l = infer_layer({"e", kind, attrs, {}}, {{2, 3, 4}}, 0);
  EXPECT_EQ(l.output, (TensorShape{2, 3, 4}));
  EXPECT_EQ(l.params(), 0);
  l.needs_input_gradient = true;
  return l.work(2).backward_data;
}

TEST(Layer, ActivationsKeepTheShapeAndCountTheirFlops) {
  // 48 elements at batch 2. Forward moves input + output: 96 floats = 384 bytes; backward-data
  // the output's gradient, the saved tensor and the input's gradient: 144 floats = 576 bytes.
  const auto fwd = [](LayerKind kind, LayerAttrs attrs = std::monostate{}) {
    return infer_layer({"e", kind, attrs, {}}, {{2, 3, 4}}, 0).work(2).forward;
  };
  EXPECT_EQ(fwd(LayerKind::sigmoid), (PassWork{Flops(4 * 48), Bytes(384)}));
  EXPECT_EQ(element_wise_backward(LayerKind::sigmoid), (PassWork{Flops(3 * 48), Bytes(576)}));
  EXPECT_EQ(fwd(LayerKind::silu), (PassWork{Flops(5 * 48), Bytes(384)}));
  EXPECT_EQ(element_wise_backward(LayerKind::silu), (PassWork{Flops(7 * 48), Bytes(576)}));
  EXPECT_EQ(fwd(LayerKind::hard_sigmoid, HardSigmoidAttrs{}), (PassWork{Flops(2 * 48), Bytes(384)}));
  EXPECT_EQ(element_wise_backward(LayerKind::hard_sigmoid, HardSigmoidAttrs{}),
            (PassWork{Flops(1 * 48), Bytes(576)}));
  EXPECT_EQ(fwd(LayerKind::hard_swish), (PassWork{Flops(4 * 48), Bytes(384)}));
  EXPECT_EQ(element_wise_backward(LayerKind::hard_swish), (PassWork{Flops(3 * 48), Bytes(576)}));
  // Without an upstream parameter there is no backward at all.
  EXPECT_EQ(infer_layer({"s", LayerKind::sigmoid, std::monostate{}, {}}, {{2, 3, 4}}, 0)
                .work(2)
                .backward_data,
            PassWork{});
}

TEST(Layer, HardSigmoidDefaultsArePyTorchsAndAlphaMustBePositive) {
  EXPECT_DOUBLE_EQ(HardSigmoidAttrs{}.alpha, 1.0 / 6);
  EXPECT_DOUBLE_EQ(HardSigmoidAttrs{}.beta, 0.5);
  EXPECT_EQ(infer_layer({"h", LayerKind::hard_sigmoid, HardSigmoidAttrs{0.2, 0.5}, {}},
                        {{2, 3, 4}}, 0)
                .signature(),
            "hard_sigmoid(alpha=0.2,beta=0.5)<2x3x4,nograd");
  try {
    infer_layer({"h", LayerKind::hard_sigmoid, HardSigmoidAttrs{0.0, 0.5}, {}}, {{2, 3, 4}}, 5);
    ADD_FAILURE() << "alpha 0 was accepted";
  } catch (const ModelError& e) {
    EXPECT_EQ(e.layer_index(), 5u);
    EXPECT_EQ(e.attribute(), "alpha");
  }
}

TEST(Layer, MulTakesEqualShapesOrAChannelScale) {
  const LayerSpec mul{"m", LayerKind::mul, std::monostate{}, {}};
  // Equal shapes, 2x3x4 at batch 2: forward 48 products reading 96 floats and writing 48
  // (576 bytes); backward-data one product per output element for each input's gradient (96),
  // moving the gradient in 48, both saved inputs 96 and both gradients out 96 (960 bytes).
  Layer same = infer_layer(mul, {{2, 3, 4}, {2, 3, 4}}, 0);
  same.needs_input_gradient = true;
  EXPECT_EQ(same.output, (TensorShape{2, 3, 4}));
  EXPECT_EQ(same.params(), 0);
  EXPECT_EQ(same.work(2).forward, (PassWork{Flops(48), Bytes(576)}));
  EXPECT_EQ(same.work(2).backward_data, (PassWork{Flops(96), Bytes(960)}));
  // A 2x1x1 scale broadcast over 3x4: forward reads 24 + 2 and writes 24 per image (400 bytes at
  // batch 2); backward-data adds the sum over H x W for the scale's gradient: 3 x 48 = 144,
  // moving 24 + 2 x 26 floats per image (608 bytes at batch 2).
  Layer scale = infer_layer(mul, {{2, 3, 4}, {2, 1, 1}}, 0);
  scale.needs_input_gradient = true;
  EXPECT_EQ(scale.output, (TensorShape{2, 3, 4}));
  EXPECT_EQ(scale.work(2).forward, (PassWork{Flops(48), Bytes(400)}));
  EXPECT_EQ(scale.work(2).backward_data, (PassWork{Flops(144), Bytes(608)}));
  EXPECT_EQ(scale.signature(), "mul<2x3x4,2x1x1");
  // The scale must come second, match the channels and be 1x1; one or three inputs are refused.
  const auto error = [&](std::vector<TensorShape> inputs) {
    try {
      infer_layer(mul, std::move(inputs), 7);
    } catch (const ModelError& e) {
      EXPECT_EQ(e.layer_index(), 7u);
      EXPECT_EQ(e.attribute(), "inputs");
      return std::string(e.what());
    }
    return std::string("accepted");
  };
  EXPECT_EQ(error({{2, 1, 1}, {2, 3, 4}}),
            "mul's second input must have the first's shape or be 2x1x1, got 2x1x1,2x3x4");
  EXPECT_EQ(error({{2, 3, 4}, {3, 1, 1}}),
            "mul's second input must have the first's shape or be 2x1x1, got 2x3x4,3x1x1");
  EXPECT_EQ(error({{2, 3, 4}, {2, 3, 1}}),
            "mul's second input must have the first's shape or be 2x1x1, got 2x3x4,2x3x1");
  EXPECT_EQ(error({{2, 3, 4}}), "mul takes 2 inputs, got 1");
  EXPECT_EQ(error({{2, 3, 4}, {2, 3, 4}, {2, 3, 4}}), "mul takes 2 inputs, got 3");
}

TEST(Layer, NewKindsHaveTheirModelFileNames) {
  for (const auto& [kind, name] : std::vector<std::pair<LayerKind, std::string>>{
           {LayerKind::sigmoid, "sigmoid"},
           {LayerKind::silu, "silu"},
           {LayerKind::hard_sigmoid, "hard_sigmoid"},
           {LayerKind::hard_swish, "hard_swish"},
           {LayerKind::mul, "mul"}}) {
    EXPECT_EQ(to_string(kind), name);
    EXPECT_EQ(layer_kind_from_string(name), kind);
  }
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
