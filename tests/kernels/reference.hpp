// Naive double-precision reference implementations of every layer kind, in plain NCHW order,
// against which the kernel backends are tested. Slow by design: loops that follow the maths.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "ralp/kernels/backend.hpp"
#include "ralp/model/layer_graph.hpp"

namespace ralp::testing {

using Vec = std::vector<double>;

struct RefGradients {
  std::vector<Vec> inputs;  // one per layer input (empty when not computed)
  Vec weight, bias;
};

// `decide_on`, when given, holds the layer's first input as a kernel computed it (float
// activations, same order and size as inputs.front()). The layer's discrete decisions, ReLU's
// mask and max pooling's arg-max, are then taken from it instead of from `inputs`: where a value
// sits at a kink, the float kernel and the double reference may round it to different sides, and
// every gradient upstream would then differ by a whole term rather than by rounding. The values
// computed are still the reference's own (the chosen element of `inputs`).
//
// Forward of one layer over `batch` images. `loss` receives the mean loss of the loss layer.
Vec ref_forward(const Layer& layer, int64_t batch, const std::vector<const Vec*>& inputs,
                const Vec& weight, const Vec& bias, std::span<const int32_t> labels,
                const kernels::MaskKey& mask, double* loss = nullptr,
                const Vec* decide_on = nullptr);

// Both backward passes of one layer; `diff_output` is ignored for the loss layer.
RefGradients ref_backward(const Layer& layer, int64_t batch, const std::vector<const Vec*>& inputs,
                          const Vec& output, const Vec& weight, const Vec& bias,
                          const Vec& diff_output, std::span<const int32_t> labels,
                          const kernels::MaskKey& mask, const Vec* decide_on = nullptr);

// The initial parameters the executor uses, in double.
Vec ref_initial(uint64_t seed, const Layer& layer, bool bias);

}  // namespace ralp::testing
