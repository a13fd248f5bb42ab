// Segments of a worker's layer range, stepped through one kernel network.
#include "segmented_network.hpp"

#include <algorithm>
#include <stdexcept>

namespace ralp::cluster {

SegmentedNetwork::SegmentedNetwork(kernels::Backend& backend, const LayerGraph& graph, LayerId end,
                                   int64_t batch, uint64_t init_seed)
    : backend_(backend), graph_(graph), network_(backend, graph, 0, end, batch, init_seed) {
  starts_.push_back(0);
  for (LayerId id = 1; id < end; ++id) {
    if (graph.layer(id).params() > 0) starts_.push_back(id);
  }
  starts_.push_back(end);
}

std::optional<LayerId> SegmentedNetwork::parameter_layer(size_t i) const {
  const LayerId first = starts_.at(i);
  if (graph_.layer(first).params() > 0) return first;
  return std::nullopt;
}

void SegmentedNetwork::set_input(std::span<const float> images) {
  if (network_.reads_model_input()) backend_.copy_from_host(network_.model_input(), images);
}

void SegmentedNetwork::set_labels(std::span<const int32_t> labels) {
  if (!holds_loss()) throw std::logic_error("segmented network: this range has no loss");
  backend_.copy_labels_from_host(network_.labels(), labels);
}

void SegmentedNetwork::forward(size_t i, const kernels::StepContext& context) {
  for (LayerId id = starts_.at(i); id < starts_.at(i + 1); ++id) {
    network_.forward_layer(id, context);
  }
}

float SegmentedNetwork::loss() {
  if (!holds_loss()) throw std::logic_error("segmented network: this range has no loss");
  return network_.loss();
}

bool SegmentedNetwork::output_needs_gradient(LayerId id) const {
  // The executor's rule (kernels/src/network.cpp): a layer's output carries a gradient when the
  // layer has parameters or its input needs a gradient.
  const Layer& layer = graph_.layer(id);
  const auto& outs = outputs();
  return std::binary_search(outs.begin(), outs.end(), id) &&
         (layer.params() > 0 || layer.needs_input_gradient);
}

kernels::Tensor& SegmentedNetwork::output_gradient(LayerId id) {
  return network_.boundary_output_gradient(id);
}

void SegmentedNetwork::backward(size_t i, const kernels::StepContext& context) {
  if (i + 1 == segments()) network_.begin_backward();
  for (LayerId id = starts_.at(i + 1); id-- > starts_.at(i);) {
    network_.backward_layer(id, context);
  }
}

void SegmentedNetwork::forward_layer(LayerId id, const kernels::StepContext& context) {
  network_.forward_layer(id, context);
}

void SegmentedNetwork::backward_layer(LayerId id, const kernels::StepContext& context) {
  if (id + 1 == end()) network_.begin_backward();
  network_.backward_layer(id, context);
}

std::vector<SegmentedNetwork::Parameter*> SegmentedNetwork::parameters_of(LayerId layer) {
  return network_.parameters_of(layer);
}

std::vector<SegmentedNetwork::Parameter*> SegmentedNetwork::parameters() {
  std::vector<Parameter*> out;
  for (Parameter& p : network_.parameters()) out.push_back(&p);
  return out;
}

void SegmentedNetwork::sgd_step(const kernels::SgdOptions& options, float gradient_scale) {
  network_.sgd_step(options, gradient_scale);
}

}  // namespace ralp::cluster
