// Layer descriptions: kinds, attributes, tensor shapes, and the per-layer maths (shapes,
// parameters, FLOPs, bytes) that every other part reads.
#pragma once

#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "ralp/core/units.hpp"

namespace ralp {

enum class LayerKind {
  conv2d,
  max_pool,
  avg_pool,
  relu,
  lrn,
  batch_norm,
  dropout,
  flatten,
  fully_connected,
  concat,
  add,
  softmax_cross_entropy,
  sigmoid,
  silu,
  hard_sigmoid,
  hard_swish,
  mul,
};

// The names used in model files, profiles and outputs ("conv2d", "max_pool", "fc", ...).
std::string_view to_string(LayerKind kind);
std::optional<LayerKind> layer_kind_from_string(std::string_view name);
// All kinds, in enum order (for listing accepted names in error messages).
const std::vector<LayerKind>& all_layer_kinds();

// Shape of one image's tensor, channels x height x width; a flat vector is C x 1 x 1.
struct TensorShape {
  int64_t channels = 0;
  int64_t height = 1;
  int64_t width = 1;

  [[nodiscard]] int64_t elements() const { return channels * height * width; }
  [[nodiscard]] std::string to_string() const;  // "64x56x56"
  friend bool operator==(const TensorShape&, const TensorShape&) = default;
};

struct Conv2dAttrs {
  int64_t out_channels = 0;
  int kernel_h = 1, kernel_w = 1;
  int stride_h = 1, stride_w = 1;
  int pad_h = 0, pad_w = 0;
  int dilation_h = 1, dilation_w = 1;
  int64_t groups = 1;
  bool bias = true;
  friend bool operator==(const Conv2dAttrs&, const Conv2dAttrs&) = default;
};

// Max or average pooling (the kind says which). `global` pools the whole plane to 1x1 and ignores
// kernel, stride and padding. Output size follows PyTorch, including ceil_mode's rule that the
// last window must start inside the input or its left padding.
struct PoolAttrs {
  int kernel_h = 1, kernel_w = 1;
  int stride_h = 1, stride_w = 1;
  int pad_h = 0, pad_w = 0;
  bool ceil_mode = false;
  bool global = false;
  bool count_include_pad = true;  // average pooling only
  friend bool operator==(const PoolAttrs&, const PoolAttrs&) = default;
};

struct LrnAttrs {
  int size = 5;
  double alpha = 1e-4;
  double beta = 0.75;
  double k = 1.0;
  friend bool operator==(const LrnAttrs&, const LrnAttrs&) = default;
};

struct BatchNormAttrs {
  double epsilon = 1e-5;
  friend bool operator==(const BatchNormAttrs&, const BatchNormAttrs&) = default;
};

struct DropoutAttrs {
  double rate = 0.5;
  friend bool operator==(const DropoutAttrs&, const DropoutAttrs&) = default;
};

struct FullyConnectedAttrs {
  int64_t out_features = 0;
  bool bias = true;
  friend bool operator==(const FullyConnectedAttrs&, const FullyConnectedAttrs&) = default;
};

// y = max(0, min(1, alpha * x + beta)). The defaults are PyTorch's nn.Hardsigmoid (x / 6 + 1/2);
// ONNX's HardSigmoid defaults to alpha 0.2, so an import reads the node's attributes.
struct HardSigmoidAttrs {
  double alpha = 1.0 / 6;
  double beta = 0.5;
  friend bool operator==(const HardSigmoidAttrs&, const HardSigmoidAttrs&) = default;
};

// Layers with nothing to configure (ReLU, sigmoid, SiLU, hard swish, flatten, concat along
// channels, add, mul, softmax cross-entropy) carry std::monostate.
using LayerAttrs = std::variant<std::monostate, Conv2dAttrs, PoolAttrs, LrnAttrs, BatchNormAttrs,
                                DropoutAttrs, FullyConnectedAttrs, HardSigmoidAttrs>;

// A layer as written in a model: its inputs name earlier layers; empty means "the previous layer"
// (or the model input for the first layer). The name "input" denotes the model input.
struct LayerSpec {
  std::string name;
  LayerKind kind = LayerKind::relu;
  LayerAttrs attrs;
  std::vector<std::string> inputs;
  friend bool operator==(const LayerSpec&, const LayerSpec&) = default;
};

inline constexpr std::string_view kModelInputName = "input";

// Work of one pass over a batch: floating-point operations and the bytes a kernel must read and
// write (inputs, outputs, weights), the two inputs of a roofline estimate.
struct PassWork {
  Flops flops;
  Bytes bytes;
  friend bool operator==(const PassWork&, const PassWork&) = default;
};

struct LayerWork {
  PassWork forward;
  PassWork backward_data;    // zero when no input needs a gradient
  PassWork backward_weight;  // zero for layers without parameters
  friend bool operator==(const LayerWork&, const LayerWork&) = default;
};

// A layer after shape inference, with everything the cost model needs.
//
// FLOP conventions (a multiply-add counts 2; all per image):
//   conv2d  forward 2*K*Cout*Ho*Wo (+ Cout*Ho*Wo with bias), K = Cin/groups*kh*kw;
//           backward-data 2*K*Cout*Ho*Wo; backward-weight 2*K*Cout*Ho*Wo (+ Cout*Ho*Wo with bias)
//   fc      forward 2*in*out (+ out), backward-data 2*in*out, backward-weight 2*in*out (+ out)
//   pools   forward: one operation per window element per output; backward the same for average,
//           one per output for max
//   relu, dropout: one per element each way; add: (inputs - 1) per element forward
//   lrn     forward (2*size + 3) per element, backward twice that
//   batch norm: forward 7, backward-data 9, backward-weight 2 per element
//   softmax cross-entropy: forward 4 per class, backward 1 per class
//   sigmoid 1/(1+exp(-x)): forward 4 per element (negate, exp, add, divide), backward 3
//           (dy * y * (1 - y))
//   silu x*sigmoid(x): forward 5, backward 7 (dy * s * (1 + x * (1 - s)) with s recomputed)
//   hard_sigmoid: forward 2 (a multiply and an add; clamps are not counted), backward 1
//   hard_swish x*hard_sigmoid(x): forward 4 (hard sigmoid's 2, a product, one for the clamp),
//           backward 3
//   mul     forward 1 per output element; backward-data 2 per output element with equal shapes
//           (one product for each input's gradient), 3 when the second input is C x 1 x 1 and
//           broadcast (its gradient is a product and a sum over H x W)
//   flatten, concat: none (concat moves bytes)
// Bytes: each pass reads its inputs and writes its outputs; sigmoid, silu, the hard kinds and
// mul count backward-data as the output's gradient in, the saved inputs (sigmoid: its output, of
// the same size) and the inputs' gradients out.
struct Layer {
  LayerSpec spec;
  std::vector<TensorShape> input_shapes;
  TensorShape output;
  int64_t weight_params = 0;  // conv/fc weights; batch norm's scale (gamma)
  int64_t bias_params = 0;    // conv/fc bias; batch norm's shift (beta)
  bool needs_input_gradient = false;  // false when nothing upstream has parameters
  bool reads_model_input = false;

  [[nodiscard]] const std::string& name() const { return spec.name; }
  [[nodiscard]] LayerKind kind() const { return spec.kind; }
  [[nodiscard]] int64_t params() const { return weight_params + bias_params; }
  [[nodiscard]] Bytes weight_bytes() const { return Bytes(weight_params * kBytesPerFloat); }
  [[nodiscard]] Bytes bias_bytes() const { return Bytes(bias_params * kBytesPerFloat); }
  [[nodiscard]] Bytes param_bytes() const { return Bytes(params() * kBytesPerFloat); }
  [[nodiscard]] Bytes activation_bytes_per_image() const {
    return Bytes(output.elements() * kBytesPerFloat);
  }
  // FLOPs and bytes of each pass for `batch` images.
  [[nodiscard]] LayerWork work(int64_t batch) const;
  // Canonical description of what a kernel computes, independent of the layer's name:
  // "conv2d(out=64,k=3x3,s=1x1,p=1x1,d=1x1,g=1,bias)<3x224x224". Two layers with the same
  // signature and batch cost the same; calibration measures each signature once.
  [[nodiscard]] std::string signature() const;
};

// Thrown while building a layer graph: the layer's position in the list and what is wrong. Model
// files turn it into an InputError naming the file and JSON path.
class ModelError : public std::runtime_error {
 public:
  ModelError(size_t layer_index, std::string attribute, const std::string& message);
  [[nodiscard]] size_t layer_index() const { return layer_index_; }
  [[nodiscard]] const std::string& attribute() const { return attribute_; }

 private:
  size_t layer_index_;
  std::string attribute_;  // the JSON key at fault, or empty for the layer as a whole
};

// Infers a layer's output shape, parameters and gradient needs from its input shapes. Throws
// ModelError (with `index`) on inconsistent attributes or shapes.
Layer infer_layer(const LayerSpec& spec, std::vector<TensorShape> input_shapes, size_t index);

}  // namespace ralp
