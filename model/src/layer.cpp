// Shape inference, parameter counts, FLOPs and bytes of each layer kind.
#include "ralp/model/layer.hpp"

#include <array>
#include <cstdio>
#include <sstream>
#include <utility>

namespace ralp {
namespace {

struct KindName {
  LayerKind kind;
  std::string_view name;
};

constexpr std::array kKindNames{
    KindName{LayerKind::conv2d, "conv2d"},
    KindName{LayerKind::max_pool, "max_pool"},
    KindName{LayerKind::avg_pool, "avg_pool"},
    KindName{LayerKind::relu, "relu"},
    KindName{LayerKind::lrn, "lrn"},
    KindName{LayerKind::batch_norm, "batch_norm"},
    KindName{LayerKind::dropout, "dropout"},
    KindName{LayerKind::flatten, "flatten"},
    KindName{LayerKind::fully_connected, "fc"},
    KindName{LayerKind::concat, "concat"},
    KindName{LayerKind::add, "add"},
    KindName{LayerKind::softmax_cross_entropy, "softmax_cross_entropy"},
    KindName{LayerKind::sigmoid, "sigmoid"},
    KindName{LayerKind::silu, "silu"},
    KindName{LayerKind::hard_sigmoid, "hard_sigmoid"},
    KindName{LayerKind::hard_swish, "hard_swish"},
    KindName{LayerKind::mul, "mul"},
};

// Per-element FLOP counts of the element-wise kinds (see Layer's comment).
constexpr double kLrnForwardExtra = 3.0;
constexpr double kBatchNormForward = 7.0;
constexpr double kBatchNormBackwardData = 9.0;
constexpr double kBatchNormBackwardWeight = 2.0;
constexpr double kSoftmaxForward = 4.0;
constexpr double kSoftmaxBackward = 1.0;
constexpr double kSigmoidForward = 4.0;
constexpr double kSigmoidBackward = 3.0;
constexpr double kSiluForward = 5.0;
constexpr double kSiluBackward = 7.0;
constexpr double kHardSigmoidForward = 2.0;
constexpr double kHardSigmoidBackward = 1.0;
constexpr double kHardSwishForward = 4.0;
constexpr double kHardSwishBackward = 3.0;
constexpr double kMulBackwardEqual = 2.0;
constexpr double kMulBackwardBroadcast = 3.0;

std::string shape_list(const std::vector<TensorShape>& shapes) {
  std::string out;
  for (size_t i = 0; i < shapes.size(); ++i) {
    if (i > 0) out += ',';
    out += shapes[i].to_string();
  }
  return out;
}

int64_t pooled_extent(int64_t in, int kernel, int stride, int pad, bool ceil_mode) {
  const int64_t span = in + 2 * pad - kernel;
  if (span < 0) return 0;
  int64_t out = (ceil_mode ? (span + stride - 1) / stride : span / stride) + 1;
  // PyTorch: with ceil_mode the last window must start inside the input or the left padding.
  if (ceil_mode && (out - 1) * stride >= in + pad) --out;
  return out;
}

int64_t conv_extent(int64_t in, int kernel, int stride, int pad, int dilation) {
  const int64_t span = in + 2 * pad - static_cast<int64_t>(dilation) * (kernel - 1) - 1;
  if (span < 0) return 0;
  return span / stride + 1;
}

void require(bool ok, size_t index, const std::string& attribute, const std::string& message) {
  if (!ok) throw ModelError(index, attribute, message);
}

void require_input_count(const LayerSpec& spec, size_t count, size_t expected, size_t index) {
  if (count != expected) {
    throw ModelError(index, "inputs",
                     std::string(to_string(spec.kind)) + " takes " + std::to_string(expected) +
                         " input" + (expected == 1 ? "" : "s") + ", got " + std::to_string(count));
  }
}

TensorShape infer_conv(const Conv2dAttrs& a, const TensorShape& in, size_t index) {
  require(a.out_channels >= 1, index, "out_channels", "must be >= 1");
  require(a.kernel_h >= 1 && a.kernel_w >= 1, index, "kernel", "must be >= 1");
  require(a.stride_h >= 1 && a.stride_w >= 1, index, "stride", "must be >= 1");
  require(a.pad_h >= 0 && a.pad_w >= 0, index, "padding", "must be >= 0");
  require(a.dilation_h >= 1 && a.dilation_w >= 1, index, "dilation", "must be >= 1");
  require(a.groups >= 1 && in.channels % a.groups == 0 && a.out_channels % a.groups == 0, index,
          "groups",
          "must divide the input channels (" + std::to_string(in.channels) +
              ") and out_channels (" + std::to_string(a.out_channels) + ")");
  const int64_t h = conv_extent(in.height, a.kernel_h, a.stride_h, a.pad_h, a.dilation_h);
  const int64_t w = conv_extent(in.width, a.kernel_w, a.stride_w, a.pad_w, a.dilation_w);
  require(h >= 1 && w >= 1, index, "kernel",
          "leaves no output: the kernel is larger than the padded " + in.to_string() + " input");
  return {a.out_channels, h, w};
}

TensorShape infer_pool(const PoolAttrs& a, const TensorShape& in, size_t index) {
  if (a.global) return {in.channels, 1, 1};
  require(a.kernel_h >= 1 && a.kernel_w >= 1, index, "kernel", "must be >= 1");
  require(a.stride_h >= 1 && a.stride_w >= 1, index, "stride", "must be >= 1");
  require(a.pad_h >= 0 && a.pad_w >= 0 && 2 * a.pad_h <= a.kernel_h && 2 * a.pad_w <= a.kernel_w,
          index, "padding", "must be between 0 and half the kernel");
  const int64_t h = pooled_extent(in.height, a.kernel_h, a.stride_h, a.pad_h, a.ceil_mode);
  const int64_t w = pooled_extent(in.width, a.kernel_w, a.stride_w, a.pad_w, a.ceil_mode);
  require(h >= 1 && w >= 1, index, "kernel",
          "leaves no output: the window is larger than the padded " + in.to_string() + " input");
  return {in.channels, h, w};
}

// mul's second input has the first's shape, or is C x 1 x 1 with the first's channels and is
// broadcast over its height and width (squeeze-and-excitation's channel scaling).
bool broadcasts_channels(const TensorShape& first, const TensorShape& second) {
  return second.channels == first.channels && second.height == 1 && second.width == 1;
}

TensorShape infer_mul(const std::vector<TensorShape>& inputs, size_t index) {
  require(inputs.size() == 2, index, "inputs",
          "mul takes 2 inputs, got " + std::to_string(inputs.size()));
  const TensorShape& a = inputs[0];
  const TensorShape& b = inputs[1];
  require(a == b || broadcasts_channels(a, b), index, "inputs",
          "mul's second input must have the first's shape or be " + std::to_string(a.channels) +
              "x1x1, got " + shape_list(inputs));
  return a;
}

}  // namespace

std::string_view to_string(LayerKind kind) {
  for (const auto& entry : kKindNames) {
    if (entry.kind == kind) return entry.name;
  }
  return "unknown";
}

std::optional<LayerKind> layer_kind_from_string(std::string_view name) {
  for (const auto& entry : kKindNames) {
    if (entry.name == name) return entry.kind;
  }
  return std::nullopt;
}

const std::vector<LayerKind>& all_layer_kinds() {
  static const std::vector<LayerKind> kinds = [] {
    std::vector<LayerKind> out;
    for (const auto& entry : kKindNames) out.push_back(entry.kind);
    return out;
  }();
  return kinds;
}

std::string TensorShape::to_string() const {
  return std::to_string(channels) + "x" + std::to_string(height) + "x" + std::to_string(width);
}

ModelError::ModelError(size_t layer_index, std::string attribute, const std::string& message)
    : std::runtime_error(message), layer_index_(layer_index), attribute_(std::move(attribute)) {}

Layer infer_layer(const LayerSpec& spec, std::vector<TensorShape> input_shapes, size_t index) {
  Layer layer;
  layer.spec = spec;
  layer.input_shapes = std::move(input_shapes);
  const auto& inputs = layer.input_shapes;
  require(!inputs.empty(), index, "inputs", "a layer needs at least one input");
  const TensorShape& in = inputs.front();

  switch (spec.kind) {
    case LayerKind::conv2d: {
      require_input_count(spec, inputs.size(), 1, index);
      const auto& a = std::get<Conv2dAttrs>(spec.attrs);
      layer.output = infer_conv(a, in, index);
      layer.weight_params = a.out_channels * (in.channels / a.groups) * a.kernel_h * a.kernel_w;
      layer.bias_params = a.bias ? a.out_channels : 0;
      break;
    }
    case LayerKind::max_pool:
    case LayerKind::avg_pool:
      require_input_count(spec, inputs.size(), 1, index);
      layer.output = infer_pool(std::get<PoolAttrs>(spec.attrs), in, index);
      break;
    case LayerKind::lrn: {
      require_input_count(spec, inputs.size(), 1, index);
      const auto& a = std::get<LrnAttrs>(spec.attrs);
      require(a.size >= 1, index, "size", "must be >= 1");
      layer.output = in;
      break;
    }
    case LayerKind::batch_norm:
      require_input_count(spec, inputs.size(), 1, index);
      require(std::get<BatchNormAttrs>(spec.attrs).epsilon > 0.0, index, "epsilon", "must be > 0");
      layer.output = in;
      layer.weight_params = in.channels;
      layer.bias_params = in.channels;
      break;
    case LayerKind::dropout: {
      require_input_count(spec, inputs.size(), 1, index);
      const double rate = std::get<DropoutAttrs>(spec.attrs).rate;
      require(rate >= 0.0 && rate < 1.0, index, "rate", "must be in [0, 1)");
      layer.output = in;
      break;
    }
    case LayerKind::relu:
    case LayerKind::sigmoid:
    case LayerKind::silu:
    case LayerKind::hard_swish:
      require_input_count(spec, inputs.size(), 1, index);
      layer.output = in;
      break;
    case LayerKind::hard_sigmoid: {
      require_input_count(spec, inputs.size(), 1, index);
      const auto& a = std::get<HardSigmoidAttrs>(spec.attrs);
      require(a.alpha > 0.0, index, "alpha", "must be > 0");
      layer.output = in;
      break;
    }
    case LayerKind::mul:
      layer.output = infer_mul(inputs, index);
      break;
    case LayerKind::flatten:
      require_input_count(spec, inputs.size(), 1, index);
      layer.output = {in.elements(), 1, 1};
      break;
    case LayerKind::fully_connected: {
      require_input_count(spec, inputs.size(), 1, index);
      const auto& a = std::get<FullyConnectedAttrs>(spec.attrs);
      require(a.out_features >= 1, index, "out_features", "must be >= 1");
      layer.output = {a.out_features, 1, 1};
      layer.weight_params = in.elements() * a.out_features;
      layer.bias_params = a.bias ? a.out_features : 0;
      break;
    }
    case LayerKind::concat: {
      require(inputs.size() >= 2, index, "inputs", "concat takes at least 2 inputs");
      int64_t channels = 0;
      for (const auto& shape : inputs) {
        require(shape.height == in.height && shape.width == in.width, index, "inputs",
                "concat inputs must have the same height and width, got " + shape_list(inputs));
        channels += shape.channels;
      }
      layer.output = {channels, in.height, in.width};
      break;
    }
    case LayerKind::add:
      require(inputs.size() >= 2, index, "inputs", "add takes at least 2 inputs");
      for (const auto& shape : inputs) {
        require(shape == in, index, "inputs",
                "add inputs must have the same shape, got " + shape_list(inputs));
      }
      layer.output = in;
      break;
    case LayerKind::softmax_cross_entropy:
      require_input_count(spec, inputs.size(), 1, index);
      require(in.height == 1 && in.width == 1 && in.channels >= 2, index, "inputs",
              "softmax_cross_entropy needs a flat input of at least 2 classes, got " +
                  in.to_string());
      layer.output = in;
      break;
  }
  return layer;
}

LayerWork Layer::work(int64_t batch) const {
  const double n = static_cast<double>(batch);
  int64_t in_elements = 0;
  for (const auto& shape : input_shapes) in_elements += shape.elements();
  const double in = static_cast<double>(in_elements);
  const double out = static_cast<double>(output.elements());
  const double weights = static_cast<double>(weight_params);
  const double all_params = static_cast<double>(params());
  const auto bytes = [](double floats) { return Bytes(floats * kBytesPerFloat); };

  double fwd = 0.0;
  double bwd_data = 0.0;
  double bwd_weight = 0.0;
  // Floats backward-data moves per image besides the weights (see Layer's comment).
  double bwd_data_floats = in + out;
  const auto element_wise = [&](double forward_per_element, double backward_per_element) {
    fwd = forward_per_element * out;
    bwd_data = backward_per_element * out;
    bwd_data_floats = out + 2.0 * in;
  };
  switch (spec.kind) {
    case LayerKind::conv2d: {
      const auto& a = std::get<Conv2dAttrs>(spec.attrs);
      const double k = static_cast<double>(input_shapes.front().channels / a.groups) * a.kernel_h *
                       a.kernel_w;
      const double macs = k * out;
      const double bias_ops = a.bias ? out : 0.0;
      fwd = 2.0 * macs + bias_ops;
      bwd_data = 2.0 * macs;
      bwd_weight = 2.0 * macs + bias_ops;
      break;
    }
    case LayerKind::fully_connected: {
      const auto& a = std::get<FullyConnectedAttrs>(spec.attrs);
      const double macs = in * static_cast<double>(a.out_features);
      const double bias_ops = a.bias ? static_cast<double>(a.out_features) : 0.0;
      fwd = 2.0 * macs + bias_ops;
      bwd_data = 2.0 * macs;
      bwd_weight = 2.0 * macs + bias_ops;
      break;
    }
    case LayerKind::max_pool:
    case LayerKind::avg_pool: {
      const auto& a = std::get<PoolAttrs>(spec.attrs);
      const double window = a.global ? static_cast<double>(input_shapes.front().height *
                                                           input_shapes.front().width)
                                     : static_cast<double>(a.kernel_h) * a.kernel_w;
      fwd = out * window;
      bwd_data = spec.kind == LayerKind::avg_pool ? out * window : out;
      break;
    }
    case LayerKind::relu:
    case LayerKind::dropout:
      fwd = out;
      bwd_data = out;
      break;
    case LayerKind::lrn: {
      const double per_element = 2.0 * std::get<LrnAttrs>(spec.attrs).size + kLrnForwardExtra;
      fwd = out * per_element;
      bwd_data = 2.0 * fwd;
      break;
    }
    case LayerKind::batch_norm:
      fwd = kBatchNormForward * out;
      bwd_data = kBatchNormBackwardData * out;
      bwd_weight = kBatchNormBackwardWeight * out;
      break;
    case LayerKind::add:
      fwd = out * static_cast<double>(input_shapes.size() - 1);
      break;
    case LayerKind::softmax_cross_entropy:
      fwd = kSoftmaxForward * out;
      bwd_data = kSoftmaxBackward * out;
      break;
    case LayerKind::sigmoid:
      element_wise(kSigmoidForward, kSigmoidBackward);
      break;
    case LayerKind::silu:
      element_wise(kSiluForward, kSiluBackward);
      break;
    case LayerKind::hard_sigmoid:
      element_wise(kHardSigmoidForward, kHardSigmoidBackward);
      break;
    case LayerKind::hard_swish:
      element_wise(kHardSwishForward, kHardSwishBackward);
      break;
    case LayerKind::mul:
      element_wise(1.0, input_shapes[0] == input_shapes[1] ? kMulBackwardEqual
                                                           : kMulBackwardBroadcast);
      break;
    case LayerKind::flatten:
      // A copy, as concat's: the kernels reorder the convolutions' layout into the plain one the
      // fully connected layers read, and the gradient back (a measured profile has its passes'
      // times: `ralp calibrate` times flatten like any layer).
    case LayerKind::concat:
      break;
  }

  LayerWork work;
  work.forward = {Flops(n * fwd), bytes(n * (in + out) + all_params)};
  if (needs_input_gradient) {
    work.backward_data = {Flops(n * bwd_data), bytes(n * bwd_data_floats + weights)};
  }
  if (params() > 0) {
    work.backward_weight = {Flops(n * bwd_weight), bytes(n * (in + out) + all_params)};
  }
  return work;
}

std::string Layer::signature() const {
  std::ostringstream out;
  out << to_string(spec.kind);
  std::visit(
      [&out](const auto& a) {
        using T = std::decay_t<decltype(a)>;
        if constexpr (std::is_same_v<T, Conv2dAttrs>) {
          out << "(out=" << a.out_channels << ",k=" << a.kernel_h << 'x' << a.kernel_w
              << ",s=" << a.stride_h << 'x' << a.stride_w << ",p=" << a.pad_h << 'x' << a.pad_w
              << ",d=" << a.dilation_h << 'x' << a.dilation_w << ",g=" << a.groups
              << (a.bias ? ",bias" : "") << ')';
        } else if constexpr (std::is_same_v<T, PoolAttrs>) {
          if (a.global) {
            out << "(global)";
          } else {
            out << "(k=" << a.kernel_h << 'x' << a.kernel_w << ",s=" << a.stride_h << 'x'
                << a.stride_w << ",p=" << a.pad_h << 'x' << a.pad_w << (a.ceil_mode ? ",ceil" : "")
                << (a.count_include_pad ? "" : ",exclude_pad") << ')';
          }
        } else if constexpr (std::is_same_v<T, LrnAttrs>) {
          out << "(size=" << a.size << ",alpha=" << a.alpha << ",beta=" << a.beta << ",k=" << a.k
              << ')';
        } else if constexpr (std::is_same_v<T, BatchNormAttrs>) {
          out << "(eps=" << a.epsilon << ')';
        } else if constexpr (std::is_same_v<T, DropoutAttrs>) {
          out << "(rate=" << a.rate << ')';
        } else if constexpr (std::is_same_v<T, FullyConnectedAttrs>) {
          out << "(out=" << a.out_features << (a.bias ? ",bias" : "") << ')';
        } else if constexpr (std::is_same_v<T, HardSigmoidAttrs>) {
          out << "(alpha=" << a.alpha << ",beta=" << a.beta << ')';
        }
      },
      spec.attrs);
  out << '<' << shape_list(input_shapes);
  if (!needs_input_gradient) out << ",nograd";
  return out.str();
}

}  // namespace ralp
