// Heads: the layers a cut puts on the head PS, any non-empty proper subset of the model's layers
// closed under successors, with their display names; and the one place that turns a head into
// the model order the schedule, both interpreters and the analytic model run (the tail in file
// order, then the head in file order, cut at the first head layer), so that none of them needs a
// notion of head beyond "the layers from the cut on".
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "ralp/model/layer_graph.hpp"

namespace ralp {

// A head, by the ids of its layers in the model file's order (sorted). Every layer that reads a
// head layer is in the head, the loss is always in it, and at least one layer stays in the tail.
// A suffix [cut, size) of the file order is the classic cut.
class Head {
 public:
  // The suffix [cut, size). Throws std::invalid_argument unless 1 <= cut < model.size().
  static Head suffix(const LayerGraph& model, LayerId cut);
  // `roots` and every layer they reach. Throws std::invalid_argument when roots is empty, holds
  // an id out of range, or reaches every layer.
  static Head closure(const LayerGraph& model, const std::vector<LayerId>& roots);
  // Exactly `layers`. Throws std::invalid_argument unless they are distinct ids of the model,
  // closed under successors, not empty and not every layer.
  static Head of_layers(const LayerGraph& model, std::vector<LayerId> layers);

  [[nodiscard]] const std::vector<LayerId>& layers() const { return layers_; }
  [[nodiscard]] size_t model_size() const { return model_size_; }
  [[nodiscard]] bool contains(LayerId id) const;
  // A suffix of the file order: the model needs no reordering.
  [[nodiscard]] bool is_suffix() const { return layers_.front() + layers_.size() == model_size_; }
  // The first head layer's id in the head's order (head_order): model size - head size. For a
  // suffix, its first layer's id.
  [[nodiscard]] LayerId cut() const { return model_size_ - layers_.size(); }

  friend bool operator==(const Head&, const Head&) = default;

 private:
  Head(std::vector<LayerId> layers, size_t model_size)
      : layers_(std::move(layers)), model_size_(model_size) {}
  std::vector<LayerId> layers_;
  size_t model_size_ = 0;
};

// The head's minimal layers: those none of whose inputs is in the head, in file order.
std::vector<LayerId> minimal_layers(const LayerGraph& model, const Head& head);

// How outputs name a head. A suffix: its first layer ("fc6"), as a cut has always been named.
// Any other head: its minimal layers joined with "+" ("b1.conv+b2.conv"); a lone minimal layer
// gets a trailing "+" ("b1.conv+": that layer and its descendants), which keeps it apart from
// the suffix named by the same layer.
std::string head_name(const LayerGraph& model, const Head& head);

// The names of the head's layers when it is not a suffix (outputs list them); empty for a suffix.
std::vector<std::string> head_layer_names(const LayerGraph& model, const Head& head);

// Reads a head name: a layer's name (the suffix from it), or layer names joined with "+" (those
// layers and their descendants; empty parts are ignored, so "a+" is a's descendants). Throws
// std::invalid_argument with a message for the user when a part names no layer, a layer name
// is the model's first layer (no tail would be left) or the head would take every layer.
Head parse_head(const LayerGraph& model, std::string_view text);

// The head's order: the tail's ids in file order, then the head's; a suffix gives 0, 1, ...
std::vector<LayerId> head_order(const Head& head);

// The model in the head's order (LayerGraph::reordered); the head is then [head.cut(), size).
LayerGraph model_for_head(const LayerGraph& model, const Head& head);

}  // namespace ralp
