// The memory one device needs to train a range of a model's layers, or to hold parameter shards,
// by precision, counted the way PyTorch keeps tensors (docs/memory.md says what and why).
#pragma once

#include <cstdint>
#include <optional>

#include "ralp/core/precision.hpp"
#include "ralp/core/units.hpp"
#include "ralp/model/layer_graph.hpp"

namespace ralp {

// What a device holds during a training step, in bytes, by what it is for.
struct MemoryFootprint {
  Bytes weights;          // the parameters as stored: FP32 in every precision
  Bytes weight_copies;    // 16-bit copies of convolution and FC parameters under fp16/bf16; else 0
  Bytes gradients;        // parameter gradients: FP32 (AMP's parameters are FP32)
  Bytes optimizer_state;  // SGD momentum: one FP32 value per parameter
  Bytes activations;      // the tensors autograd saves for the backward pass, each once
  Bytes workspace;        // the largest set of activation gradients one layer's backward holds

  [[nodiscard]] Bytes total() const {
    return weights + weight_copies + gradients + optimizer_state + activations + workspace;
  }
  friend bool operator==(const MemoryFootprint&, const MemoryFootprint&) = default;
};

// Where PyTorch runs the step: its CUDA and CPU kernels save different tensors. Dropout's mask is
// a bool (1 byte) per element on CUDA (native_dropout) and a tensor of the input's dtype on the
// CPU (1.13's _dropout multiplies by a scaled Bernoulli noise tensor).
enum class TorchBackend { cuda, cpu };

struct FootprintOptions {
  TorchBackend backend = TorchBackend::cuda;
};

// The footprint of training layers [first, last) of `graph` on one device at `batch` images per
// pass: a worker's tail is [0, cut), a RALP head PS's head [cut, size()) (its batch is a worker's
// micro-batch when it runs them in turn, or all of them when it runs them at once). Inputs the
// range reads from earlier layers (a head's boundary activations) are counted when a layer in the
// range saves them. Throws std::invalid_argument unless first < last <= graph.size() and
// batch >= 1.
MemoryFootprint training_footprint(const LayerGraph& graph, LayerId first, LayerId last,
                                   int64_t batch, Precision precision,
                                   FootprintOptions options = {});

// The whole model on one device (data-parallel workers, all-reduce).
MemoryFootprint training_footprint(const LayerGraph& graph, int64_t batch, Precision precision,
                                   FootprintOptions options = {});

// A parameter server that only holds shards of `param_bytes` FP32 parameters: the weights, their
// momentum and one buffer in which the workers' gradients accumulate. No activations. Throws
// std::invalid_argument on negative bytes.
MemoryFootprint shard_footprint(Bytes param_bytes);

// The largest batch for which training layers [first, last) fits in `capacity` bytes, or nullopt
// when not even one image does. The footprint is affine in the batch (weights and batch norm
// statistics are fixed, the rest grows with it): the batch is solved for, then checked against
// training_footprint. Throws std::invalid_argument on a bad range, like training_footprint.
std::optional<int64_t> largest_batch_that_fits(const LayerGraph& graph, LayerId first,
                                               LayerId last, Precision precision, Bytes capacity,
                                               FootprintOptions options = {});

}  // namespace ralp
