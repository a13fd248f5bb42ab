// Training memory per device: parameters, their copies, gradients and momentum, the tensors
// autograd saves for backward, and the activation gradients one layer's backward holds.
#include "ralp/model/memory_footprint.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>
#include <vector>

namespace ralp {
namespace {

constexpr double kParamBytes = 4.0;        // FP32 master weights, gradients and momentum
constexpr double kStatisticBytes = 4.0;    // batch norm's saved mean and invstd are FP32
constexpr int64_t kBatchNormStatistics = 2;  // save_mean, save_invstd
constexpr double kIndexBytes = 8.0;        // int64: max-pooling indices, class labels
constexpr double kCudaMaskBytes = 1.0;     // native_dropout's bool mask
constexpr double kLossBytes = 4.0;         // log_softmax and nll_loss run in FP32 under autocast
constexpr double kLossScalarBytes = 4.0;   // nll_loss's saved total_weight, an FP32 scalar
// torch.nn.functional.local_response_norm saves its input, the scale and the scale's power
// (three input-sized tensors) and the squared input padded by size - 1 channels.
constexpr int64_t kLrnInputSizedTensors = 3;

// Bytes that do not depend on the batch, and bytes per image: the footprint at batch B is
// fixed + B x per_image in every part.
struct AffineFootprint {
  MemoryFootprint fixed;
  MemoryFootprint per_image;

  [[nodiscard]] MemoryFootprint at(int64_t batch) const {
    const auto b = static_cast<double>(batch);
    return {fixed.weights + per_image.weights * b,
            fixed.weight_copies + per_image.weight_copies * b,
            fixed.gradients + per_image.gradients * b,
            fixed.optimizer_state + per_image.optimizer_state * b,
            fixed.activations + per_image.activations * b,
            fixed.workspace + per_image.workspace * b};
  }
};

// Tensors are numbered 0 for the model input and id + 1 for layer id's output.
constexpr size_t kModelInputTensor = 0;

size_t tensor_named(const LayerGraph& graph, const std::string& name) {
  if (name == kModelInputName) return kModelInputTensor;
  return *graph.find(name) + 1;
}

std::vector<size_t> input_tensors(const LayerGraph& graph, const Layer& layer) {
  std::vector<size_t> out;
  for (const auto& name : layer.spec.inputs) out.push_back(tensor_named(graph, name));
  return out;
}

int64_t tensor_elements(const LayerGraph& graph, size_t tensor) {
  return tensor == kModelInputTensor ? graph.input_shape().elements()
                                     : graph.layer(tensor - 1).output.elements();
}

// The tensor whose storage a tensor uses: flatten's output is a view of its input.
size_t storage_root(const LayerGraph& graph, size_t tensor) {
  while (tensor != kModelInputTensor) {
    const Layer& layer = graph.layer(tensor - 1);
    if (layer.kind() != LayerKind::flatten) break;
    tensor = tensor_named(graph, layer.spec.inputs.front());
  }
  return tensor;
}

// Saved tensors of one range: which layer inputs and outputs autograd keeps (each storage once,
// in the compute dtype), and what else each layer saves.
struct SavedTensors {
  std::vector<bool> kept;  // by tensor number
  double extra_per_image = 0.0;
  double extra_fixed = 0.0;
};

// What PyTorch 1.13's autograd saves for each kind (derivatives.yaml; checked with
// saved_tensors_hooks by scripts/torch-footprint). Convolution and addmm save their input (and
// weight, counted with the parameters); batch norm its input and two FP32 statistics per channel
// (its running statistics are module buffers, not counted); ReLU its output; pooling its input,
// max pooling also its int64 indices; dropout only its mask; the loss its FP32 log-probabilities,
// the labels and a scalar; sigmoid its output; SiLU, hardsigmoid and hardswish their input; mul
// both inputs; add, concat and flatten nothing.
void record_saved(const LayerGraph& graph, const Layer& layer, LayerId id, double mask_bytes,
                  double compute_bytes, SavedTensors& saved) {
  const auto inputs = input_tensors(graph, layer);
  const auto keep_input = [&] { saved.kept[storage_root(graph, inputs.front())] = true; };
  const auto out = static_cast<double>(layer.output.elements());
  switch (layer.kind()) {
    case LayerKind::conv2d:
    case LayerKind::fully_connected:
    case LayerKind::avg_pool:
      keep_input();
      break;
    case LayerKind::batch_norm:
      keep_input();
      saved.extra_fixed +=
          static_cast<double>(kBatchNormStatistics * layer.output.channels) * kStatisticBytes;
      break;
    case LayerKind::max_pool:
      keep_input();
      saved.extra_per_image += out * kIndexBytes;
      break;
    case LayerKind::relu:
    case LayerKind::sigmoid:
      saved.kept[id + 1] = true;
      break;
    case LayerKind::silu:
    case LayerKind::hard_sigmoid:
    case LayerKind::hard_swish:
      keep_input();
      break;
    case LayerKind::mul:
      for (const size_t tensor : inputs) saved.kept[storage_root(graph, tensor)] = true;
      break;
    case LayerKind::dropout:
      saved.extra_per_image += out * mask_bytes;
      break;
    case LayerKind::lrn: {
      keep_input();
      const auto& a = std::get<LrnAttrs>(layer.spec.attrs);
      const TensorShape& in = layer.input_shapes.front();
      const auto padded_square = (in.channels + a.size - 1) * in.height * in.width;
      saved.extra_per_image +=
          static_cast<double>((kLrnInputSizedTensors - 1) * in.elements() + padded_square) *
          compute_bytes;
      break;
    }
    case LayerKind::softmax_cross_entropy:
      saved.extra_per_image +=
          static_cast<double>(layer.input_shapes.front().elements()) * kLossBytes + kIndexBytes;
      saved.extra_fixed += kLossScalarBytes;
      break;
    case LayerKind::flatten:
    case LayerKind::concat:
    case LayerKind::add:
      break;
  }
}

// Activation gradients held while one layer's backward runs, per image: the gradient of its
// output and the gradients it computes for its inputs. Add, concat and flatten pass views of
// the output's gradient on; the loss starts from a scalar.
double backward_gradients_per_image(const Layer& layer, double compute_bytes) {
  double elements = 0.0;
  if (layer.kind() != LayerKind::softmax_cross_entropy) {
    elements += static_cast<double>(layer.output.elements());
  }
  const bool views = layer.kind() == LayerKind::add || layer.kind() == LayerKind::concat ||
                     layer.kind() == LayerKind::flatten;
  if (layer.needs_input_gradient && !views) {
    for (const auto& shape : layer.input_shapes) elements += static_cast<double>(shape.elements());
  }
  return elements * compute_bytes;
}

void check_range(const LayerGraph& graph, LayerId first, LayerId last) {
  if (first >= last || last > graph.size()) {
    throw std::invalid_argument("layer range [" + std::to_string(first) + ", " +
                                std::to_string(last) + ") is not a non-empty range of the " +
                                std::to_string(graph.size()) + " layers of " + graph.name());
  }
}

AffineFootprint affine_footprint(const LayerGraph& graph, LayerId first, LayerId last,
                                 Precision precision, FootprintOptions options) {
  check_range(graph, first, last);
  const double compute_bytes = activation_bytes(precision);
  const double mask_bytes =
      options.backend == TorchBackend::cuda ? kCudaMaskBytes : compute_bytes;
  AffineFootprint f;
  SavedTensors saved{std::vector<bool>(graph.size() + 1, false)};
  double params = 0.0;
  double copied_params = 0.0;  // what autocast casts to 16 bits: convolution and FC parameters
  double workspace = 0.0;
  for (LayerId id = first; id < last; ++id) {
    const Layer& layer = graph.layer(id);
    params += static_cast<double>(layer.params());
    if (layer.kind() == LayerKind::conv2d || layer.kind() == LayerKind::fully_connected) {
      copied_params += static_cast<double>(layer.params());
    }
    record_saved(graph, layer, id, mask_bytes, compute_bytes, saved);
    workspace = std::max(workspace, backward_gradients_per_image(layer, compute_bytes));
  }
  double kept_elements = 0.0;
  for (size_t tensor = 0; tensor < saved.kept.size(); ++tensor) {
    if (saved.kept[tensor]) kept_elements += static_cast<double>(tensor_elements(graph, tensor));
  }
  f.fixed.weights = Bytes(params * kParamBytes);
  f.fixed.weight_copies = Bytes(is_mixed(precision) ? copied_params * compute_bytes : 0.0);
  f.fixed.gradients = Bytes(params * kParamBytes);
  f.fixed.optimizer_state = Bytes(params * kParamBytes);
  f.fixed.activations = Bytes(saved.extra_fixed);
  f.per_image.activations = Bytes(kept_elements * compute_bytes + saved.extra_per_image);
  f.per_image.workspace = Bytes(workspace);
  return f;
}

void check_batch(int64_t batch) {
  if (batch < 1) {
    throw std::invalid_argument("batch " + std::to_string(batch) + " is not >= 1");
  }
}

}  // namespace

MemoryFootprint training_footprint(const LayerGraph& graph, LayerId first, LayerId last,
                                   int64_t batch, Precision precision, FootprintOptions options) {
  check_batch(batch);
  return affine_footprint(graph, first, last, precision, options).at(batch);
}

MemoryFootprint training_footprint(const LayerGraph& graph, int64_t batch, Precision precision,
                                   FootprintOptions options) {
  return training_footprint(graph, 0, graph.size(), batch, precision, options);
}

MemoryFootprint shard_footprint(Bytes param_bytes) {
  if (param_bytes < Bytes(0.0)) {
    throw std::invalid_argument("a shard's parameter bytes must be >= 0");
  }
  MemoryFootprint f;
  f.weights = param_bytes;
  f.gradients = param_bytes;  // the buffer the workers' gradients are summed into
  f.optimizer_state = param_bytes;
  return f;
}

std::optional<int64_t> largest_batch_that_fits(const LayerGraph& graph, LayerId first,
                                               LayerId last, Precision precision, Bytes capacity,
                                               FootprintOptions options) {
  const AffineFootprint f = affine_footprint(graph, first, last, precision, options);
  const Bytes fixed = f.fixed.total();
  const Bytes per_image = f.per_image.total();  // > 0: every layer holds its output's gradient
  if (f.at(1).total() > capacity) return std::nullopt;
  auto batch = static_cast<int64_t>(std::floor((capacity - fixed) / per_image));
  // The division rounds; step to the exact answer against the footprint itself.
  while (batch > 1 && f.at(batch).total() > capacity) --batch;
  while (f.at(batch + 1).total() <= capacity) ++batch;
  return batch;
}

}  // namespace ralp
