// A worker's layers [0, end) in segments, one per layer with parameters (plus a leading segment
// without any when the model does not start with one), so that a strategy can wait for a
// layer's pulled parameters just before its forward and send its gradients as soon as its
// backward produced them, while the rest of backward goes on. One kernel network holds the
// layers; segments step it layer by layer, so nothing is copied between them.
#pragma once

#include <optional>
#include <span>
#include <vector>

#include "ralp/kernels/network.hpp"
#include "ralp/model/layer_graph.hpp"

namespace ralp::cluster {

class SegmentedNetwork {
 public:
  using Parameter = kernels::Network::Parameter;

  // Precondition: 0 < end <= graph.size(). `graph` and `backend` must outlive the network.
  SegmentedNetwork(kernels::Backend& backend, const LayerGraph& graph, LayerId end, int64_t batch,
                   uint64_t init_seed);

  [[nodiscard]] size_t segments() const { return starts_.size() - 1; }
  [[nodiscard]] LayerId end() const { return network_.last(); }
  // The layer with parameters that segment i starts with, if any.
  [[nodiscard]] std::optional<LayerId> parameter_layer(size_t i) const;
  [[nodiscard]] bool holds_loss() const { return network_.has_loss(); }

  // Inputs of the next forward: images in plain order (batch x C x H x W) and labels.
  void set_input(std::span<const float> images);
  void set_labels(std::span<const int32_t> labels);  // precondition: holds_loss()

  // Segment i forward; segments run in order.
  void forward(size_t i, const kernels::StepContext& context);
  [[nodiscard]] float loss();  // precondition: holds_loss(), after the last segment's forward

  // Layers before end() whose outputs layers at or after end() read (a cut's boundary), sorted,
  // with their activations after forward and the slots for the gradients that come back.
  [[nodiscard]] const std::vector<LayerId>& outputs() const { return network_.boundary_outputs(); }
  [[nodiscard]] const kernels::Tensor& output(LayerId id) const { return network_.output(id); }
  // Whether a gradient flows back into output `id` (not when nothing before it has parameters).
  [[nodiscard]] bool output_needs_gradient(LayerId id) const;
  [[nodiscard]] kernels::Tensor& output_gradient(LayerId id);

  // Segment i backward; segments run in reverse order, the last first. Afterwards segment i's
  // parameters hold their gradients.
  void backward(size_t i, const kernels::StepContext& context);

  // The same one layer at a time: forward in id order, backward in reverse id order from the
  // last layer (which starts the backward pass).
  void forward_layer(LayerId id, const kernels::StepContext& context);
  void backward_layer(LayerId id, const kernels::StepContext& context);

  [[nodiscard]] std::vector<Parameter*> parameters_of(LayerId layer);
  [[nodiscard]] std::vector<Parameter*> parameters();  // model order
  void sgd_step(const kernels::SgdOptions& options, float gradient_scale);

 private:
  kernels::Backend& backend_;
  const LayerGraph& graph_;
  kernels::Network network_;
  std::vector<LayerId> starts_;  // segment i is [starts_[i], starts_[i + 1])
};

}  // namespace ralp::cluster
