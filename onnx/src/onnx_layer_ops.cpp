// ONNX nodes that become layers: convolutions, pooling, fully connected layers, normalisation.
#include "onnx_layer_ops.hpp"

#include <string>
#include <tuple>
#include <utility>

namespace ralp::onnx_import {

namespace {

// x as a flat [batch, features] tensor, for a fully connected layer.
const Value& flat_input(ImportState& s, const onnx::NodeProto& node) {
  const Value& x = s.activation(node, 0);
  if (x.rank != 2) {
    s.fail_node(node, "multiplies a tensor of rank " + std::to_string(x.rank) +
                          "; ralp imports it on a flat [batch, features] input");
  }
  return x;
}

void fully_connected(ImportState& s, const onnx::NodeProto& node, const Value& x, int64_t in,
                     int64_t out, bool bias, int64_t params) {
  if (in != x.shape.channels) {
    s.fail_node(node, "has weights for " + std::to_string(in) +
                          " input features, but its input has " + std::to_string(x.shape.channels));
  }
  s.add_layer(node,
              LayerSpec{.kind = LayerKind::fully_connected,
                        .attrs = FullyConnectedAttrs{.out_features = out, .bias = bias}},
              {&x}, params, 2);
}

}  // namespace

void import_simple(ImportState& s, const onnx::NodeProto& node, LayerKind kind, LayerAttrs attrs) {
  const Value& x = s.activation(node, 0);
  s.add_layer(node, LayerSpec{.kind = kind, .attrs = std::move(attrs)}, {&x}, 0, x.rank);
}

void import_conv(ImportState& s, const onnx::NodeProto& node) {
  Value x = s.activation(node, 0);
  const Value& w = s.constant(node, 1, "weights");
  if (w.dims.size() != 4) {
    s.fail_node(node, "has " + std::to_string(w.dims.size()) +
                          "-dimensional weights; ralp imports 2-D convolutions");
  }
  const std::pair<int, int> kernel{static_cast<int>(w.dims[2]), static_cast<int>(w.dims[3])};
  if (s.attribute(node, "kernel_shape") != nullptr &&
      s.pair_attr(node, "kernel_shape", {}) != kernel) {
    s.fail_node(node,
                "has a kernel_shape that differs from its weights' [" + join_ints(w.dims) + "]");
  }
  Conv2dAttrs a;
  a.out_channels = w.dims[0];
  std::tie(a.kernel_h, a.kernel_w) = kernel;
  const auto stride = s.pair_attr(node, "strides", 1);
  const auto dilation = s.pair_attr(node, "dilations", 1);
  std::tie(a.stride_h, a.stride_w) = stride;
  std::tie(a.dilation_h, a.dilation_w) = dilation;
  std::tie(a.pad_h, a.pad_w) = s.padding(node, x, kernel, stride, dilation);
  a.groups = s.int_attr(node, "group", 1);
  if (a.groups < 1 || w.dims[1] * a.groups != x.shape.channels) {
    s.fail_node(node, "has weights [" + join_ints(w.dims) + "] in " + std::to_string(a.groups) +
                          " groups for an input of " + std::to_string(x.shape.channels) +
                          " channels");
  }
  int64_t params = element_count(w.dims);
  a.bias = s.has_input(node, 2);
  if (a.bias) params += element_count(s.constant(node, 2, "bias").dims);
  x.pad_h = x.pad_w = 0;
  s.add_layer(node, LayerSpec{.kind = LayerKind::conv2d, .attrs = a}, {&x}, params, 4);
}

void import_pool(ImportState& s, const onnx::NodeProto& node) {
  Value x = s.activation(node, 0);
  const bool average = node.op_type() == "AveragePool";
  if (x.rank != 4) s.fail_node(node, "pools a tensor of rank " + std::to_string(x.rank));
  PoolAttrs a;
  const auto kernel = s.pair_attr(node, "kernel_shape", std::nullopt);
  const auto stride = s.pair_attr(node, "strides", 1);
  if (s.pair_attr(node, "dilations", 1) != std::pair{1, 1}) {
    s.fail_node(node, "has dilations, which ralp does not model for pooling");
  }
  std::tie(a.kernel_h, a.kernel_w) = kernel;
  std::tie(a.stride_h, a.stride_w) = stride;
  const bool padded_before = x.pad_h != 0 || x.pad_w != 0;
  if (padded_before && !average) {
    s.fail_node(node, "reads the output of a Pad node; only Conv and AveragePool absorb one");
  }
  std::tie(a.pad_h, a.pad_w) = s.padding(node, x, kernel, stride, {1, 1});
  a.ceil_mode = s.int_attr(node, "ceil_mode", 0) != 0;
  if (average) {
    // ONNX excludes padding from the average unless told; zeros a Pad node added count.
    const bool own_pads = a.pad_h != x.pad_h || a.pad_w != x.pad_w;
    const bool include = s.int_attr(node, "count_include_pad", 0) != 0;
    if (padded_before && own_pads && !include) {
      s.fail_node(node, "averages over a Pad node's zeros and its own excluded padding");
    }
    a.count_include_pad = include || !own_pads;
  }
  // A 1x1 window with stride 1 copies its input (an adaptive pool at its output size): no layer.
  if (a.kernel_h == 1 && a.kernel_w == 1 && a.stride_h == 1 && a.stride_w == 1 && a.pad_h == 0 &&
      a.pad_w == 0) {
    s.set_output(node, x);
    return;
  }
  x.pad_h = x.pad_w = 0;
  const auto kind = average ? LayerKind::avg_pool : LayerKind::max_pool;
  s.add_layer(node, LayerSpec{.kind = kind, .attrs = a}, {&x}, 0, 4);
}

void import_gemm(ImportState& s, const onnx::NodeProto& node) {
  const Value& x = flat_input(s, node);
  if (s.int_attr(node, "transA", 0) != 0) s.fail_node(node, "has transA set");
  const Value& w = s.constant(node, 1, "weights");
  if (w.dims.size() != 2) s.fail_node(node, "has weights of rank " + std::to_string(w.dims.size()));
  const bool trans_b = s.int_attr(node, "transB", 0) != 0;
  const int64_t in = trans_b ? w.dims[1] : w.dims[0];
  const int64_t out = trans_b ? w.dims[0] : w.dims[1];
  int64_t params = element_count(w.dims);
  const bool bias = s.has_input(node, 2);
  if (bias) params += element_count(s.constant(node, 2, "bias").dims);
  fully_connected(s, node, x, in, out, bias, params);
}

void import_matmul(ImportState& s, const onnx::NodeProto& node) {
  const Value& x = flat_input(s, node);
  const Value& w = s.constant(node, 1, "weights");
  if (w.dims.size() != 2) s.fail_node(node, "has weights of rank " + std::to_string(w.dims.size()));
  fully_connected(s, node, x, w.dims[0], w.dims[1], false, element_count(w.dims));
  s.bias_free_fc() = s.specs().size() - 1;
}

void import_add(ImportState& s, const onnx::NodeProto& node) {
  const Value& a = s.value(node, 0);
  const Value& b = s.value(node, 1);
  if (!a.is_constant && !b.is_constant) {
    s.add_layer(node, LayerSpec{.kind = LayerKind::add}, {&a, &b}, 0, a.rank);
    return;
  }
  // MatMul then Add of a constant: a fully connected layer's bias.
  const Value& x = a.is_constant ? b : a;
  const Value& c = a.is_constant ? a : b;
  if (x.is_constant || !s.bias_free_fc() || *s.bias_free_fc() != s.specs().size() - 1 ||
      x.layer != s.specs().back().name) {
    s.fail_node(node,
                "adds a constant to an activation; ralp imports that only as the bias of "
                "the MatMul before it");
  }
  auto& attrs = std::get<FullyConnectedAttrs>(s.specs().back().attrs);
  if (element_count(c.dims) != attrs.out_features) {
    s.fail_node(node, "adds a bias of " + std::to_string(element_count(c.dims)) + " values to " +
                          std::to_string(attrs.out_features) + " features");
  }
  attrs.bias = true;
  s.bias_free_fc().reset();
  s.set_output(node, x);
}

void import_hard_sigmoid(ImportState& s, const onnx::NodeProto& node) {
  // ONNX's defaults (alpha 0.2, beta 0.5) are not PyTorch's; torch.onnx writes alpha = 1/6.
  constexpr double kOnnxAlpha = 0.2;
  constexpr double kOnnxBeta = 0.5;
  const HardSigmoidAttrs a{.alpha = s.float_attr(node, "alpha", kOnnxAlpha),
                           .beta = s.float_attr(node, "beta", kOnnxBeta)};
  import_simple(s, node, LayerKind::hard_sigmoid, a);
}

void import_mul(ImportState& s, const onnx::NodeProto& node) {
  const Value& a = s.value(node, 0);
  const Value& b = s.value(node, 1);
  if (a.is_constant || b.is_constant) {
    s.fail_node(node, "multiplies by a constant; ralp imports Mul of two activations only");
  }
  if (a.rank != b.rank) {
    s.fail_node(node, "multiplies tensors of rank " + std::to_string(a.rank) + " and " +
                          std::to_string(b.rank) + "; ralp imports equal ranks only");
  }
  // torch.onnx writes SiLU as Mul(x, Sigmoid(x)): the sigmoid just made, read by this Mul alone,
  // becomes a silu layer.
  for (int i = 0; i < 2 && !s.specs().empty(); ++i) {
    LayerSpec& last = s.specs().back();
    const Value& gate = i == 0 ? a : b;
    const Value& x = i == 0 ? b : a;
    if (last.kind == LayerKind::sigmoid && gate.layer == last.name &&
        last.inputs.front() == x.layer && s.readers(node.input(i)) == 1) {
      last.kind = LayerKind::silu;
      s.set_output(node, gate);
      return;
    }
  }
  // The per-channel scale of squeeze-and-excitation comes second in a mul layer, whichever
  // operand the file has it as.
  const bool a_is_scale = a.shape.height == 1 && a.shape.width == 1 && !(a.shape == b.shape);
  const Value& x = a_is_scale ? b : a;
  const Value& scale = a_is_scale ? a : b;
  s.add_layer(node, LayerSpec{.kind = LayerKind::mul}, {&x, &scale}, 0, x.rank);
}

void import_batch_norm(ImportState& s, const onnx::NodeProto& node) {
  const Value& x = s.activation(node, 0);
  const double epsilon = s.float_attr(node, "epsilon", 1e-5);
  // The scale and shift train; the running mean and variance do not.
  const int64_t params = element_count(s.constant(node, 1, "scale").dims) +
                         element_count(s.constant(node, 2, "bias").dims);
  s.add_layer(node, LayerSpec{.kind = LayerKind::batch_norm, .attrs = BatchNormAttrs{epsilon}},
              {&x}, params, x.rank);
}

void import_dropout(ImportState& s, const onnx::NodeProto& node) {
  const Value& x = s.activation(node, 0);
  double rate = s.float_attr(node, "ratio", 0.5);
  if (s.has_input(node, 1)) {
    const auto& v = s.values_of(node, s.constant(node, 1, "ratio"), "ratio");
    if (v.size() != 1) s.fail_node(node, "has a ratio of " + std::to_string(v.size()) + " values");
    rate = v[0];
  }
  constexpr double kMaxRate = 0.999;
  if (!(rate >= 0.0 && rate <= kMaxRate)) {
    s.fail_node(node, "has ratio " + std::to_string(rate) + ", expected 0 to 0.999");
  }
  s.add_layer(node, LayerSpec{.kind = LayerKind::dropout, .attrs = DropoutAttrs{rate}}, {&x}, 0,
              x.rank);
}

void import_flatten(ImportState& s, const onnx::NodeProto& node) {
  const Value& x = s.activation(node, 0);
  int64_t axis = s.int_attr(node, "axis", 1);
  if (axis < 0) axis += x.rank;
  if (axis != 1) {
    s.fail_node(node, "flattens from axis " + std::to_string(axis) +
                          "; ralp imports only [batch, features] (axis 1)");
  }
  s.add_layer(node, LayerSpec{.kind = LayerKind::flatten}, {&x}, 0, 2);
}

}  // namespace ralp::onnx_import
