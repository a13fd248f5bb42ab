// Segments of a worker's layer range and the boundary copies between them.
#include "segmented_network.hpp"

#include <algorithm>
#include <stdexcept>

namespace ralp::cluster {
namespace {

// The executor's rule for which tensors carry gradients (kernels/src/network.cpp): a layer's
// output does when the layer has parameters or its input needs a gradient, except the loss's.
bool output_needs_gradient_of(const LayerGraph& graph, LayerId id) {
  const Layer& layer = graph.layer(id);
  return (layer.params() > 0 || layer.needs_input_gradient) && id + 1 != graph.size();
}

}  // namespace

SegmentedNetwork::SegmentedNetwork(kernels::Backend& backend, const LayerGraph& graph, LayerId end,
                                   int64_t batch, uint64_t init_seed)
    : backend_(backend), graph_(graph), end_(end) {
  if (end == 0 || end > graph.size()) throw std::out_of_range("segmented network: bad range");
  std::vector<LayerId> starts = {0};
  for (LayerId id = 1; id < end; ++id) {
    if (graph.layer(id).params() > 0) starts.push_back(id);
  }
  starts.push_back(end);
  std::vector<size_t> segment_of(end);
  for (size_t i = 0; i + 1 < starts.size(); ++i) {
    for (LayerId id = starts[i]; id < starts[i + 1]; ++id) segment_of[id] = i;
    segments_.push_back(std::make_unique<kernels::Network>(backend, graph, starts[i], starts[i + 1],
                                                           batch, init_seed));
  }

  const size_t n = segments_.size();
  inputs_.resize(n);
  outputs_of_.resize(n);
  for (size_t j = 0; j < n; ++j) {
    for (const LayerId id : segments_[j]->boundary_outputs()) {
      Link link{id, j, {}, false, output_needs_gradient_of(graph, id)};
      for (const LayerId succ : graph.successors(id)) {
        if (succ >= end) link.external = true;
      }
      for (size_t c = n; c-- > j + 1;) {
        const auto& in = segments_[c]->boundary_inputs();
        if (std::find(in.begin(), in.end(), id) != in.end()) link.consumers.push_back(c);
      }
      outputs_of_[j].push_back(link);
      if (link.external) {
        outputs_.push_back(id);
        external_gradients_.emplace(id, backend.allocate(segments_[j]->output(id).desc()));
      }
    }
    for (const LayerId id : segments_[j]->boundary_inputs()) {
      inputs_[j].push_back({id, segment_of[id], {}, false, output_needs_gradient_of(graph, id)});
    }
  }
  std::sort(outputs_.begin(), outputs_.end());
}

std::optional<LayerId> SegmentedNetwork::parameter_layer(size_t i) const {
  const LayerId first = segments_.at(i)->first();
  if (graph_.layer(first).params() > 0) return first;
  return std::nullopt;
}

void SegmentedNetwork::set_input(std::span<const float> images) {
  for (auto& segment : segments_) {
    if (segment->reads_model_input()) backend_.copy_from_host(segment->model_input(), images);
  }
}

void SegmentedNetwork::set_labels(std::span<const int32_t> labels) {
  if (!holds_loss()) throw std::logic_error("segmented network: this range has no loss");
  backend_.copy_labels_from_host(segments_.back()->labels(), labels);
}

void SegmentedNetwork::forward(size_t i, const kernels::StepContext& context) {
  kernels::Network& segment = *segments_.at(i);
  for (const Link& in : inputs_[i]) {
    backend_.copy(segments_[in.producer]->output(in.layer), segment.boundary_input(in.layer));
  }
  segment.forward(context);
}

float SegmentedNetwork::loss() {
  if (!holds_loss()) throw std::logic_error("segmented network: this range has no loss");
  return segments_.back()->loss();
}

const kernels::Tensor& SegmentedNetwork::output(LayerId id) const {
  for (const auto& segment : segments_) {
    if (id >= segment->first() && id < segment->last()) return segment->output(id);
  }
  throw std::out_of_range("segmented network: layer " + std::to_string(id) + " is not in range");
}

bool SegmentedNetwork::output_needs_gradient(LayerId id) const {
  return external_gradients_.contains(id) && output_needs_gradient_of(graph_, id);
}

kernels::Tensor& SegmentedNetwork::output_gradient(LayerId id) {
  const auto it = external_gradients_.find(id);
  if (it == external_gradients_.end()) {
    throw std::out_of_range("segmented network: layer " + std::to_string(id) +
                            " is not an output of the range");
  }
  return it->second;
}

void SegmentedNetwork::backward(size_t i, const kernels::StepContext& context) {
  kernels::Network& segment = *segments_.at(i);
  for (const Link& out : outputs_of_[i]) {
    if (!out.needs_gradient) continue;
    kernels::Tensor& target = segment.boundary_output_gradient(out.layer);
    bool first = true;
    const auto contribute = [&](const kernels::Tensor& g) {
      if (first) {
        backend_.copy(g, target);
        first = false;
      } else {
        backend_.add_into(target, g);
      }
    };
    if (out.external) contribute(external_gradients_.at(out.layer));
    for (const size_t c : out.consumers)
      contribute(segments_[c]->boundary_input_gradient(out.layer));
  }
  segment.backward(context);
}

std::vector<SegmentedNetwork::Parameter*> SegmentedNetwork::parameters_of(LayerId layer) {
  for (auto& segment : segments_) {
    if (layer >= segment->first() && layer < segment->last()) return segment->parameters_of(layer);
  }
  return {};
}

std::vector<SegmentedNetwork::Parameter*> SegmentedNetwork::parameters() {
  std::vector<Parameter*> out;
  for (auto& segment : segments_) {
    for (Parameter& p : segment->parameters()) out.push_back(&p);
  }
  return out;
}

void SegmentedNetwork::sgd_step(const kernels::SgdOptions& options, float gradient_scale) {
  for (auto& segment : segments_) segment->sgd_step(options, gradient_scale);
}

}  // namespace ralp::cluster
