// Heads: closure, checks, names and the head's model order.
#include "ralp/spec/head.hpp"

#include <algorithm>
#include <stdexcept>

namespace ralp {

Head Head::suffix(const LayerGraph& model, LayerId cut) {
  if (cut == 0 || cut >= model.size()) {
    throw std::invalid_argument("cut at layer " + std::to_string(cut) + " of " +
                                std::to_string(model.size()));
  }
  std::vector<LayerId> layers;
  for (LayerId id = cut; id < model.size(); ++id) layers.push_back(id);
  return Head(std::move(layers), model.size());
}

Head Head::closure(const LayerGraph& model, const std::vector<LayerId>& roots) {
  if (roots.empty()) throw std::invalid_argument("a head needs at least one layer");
  std::vector<bool> in(model.size(), false);
  for (const LayerId root : roots) {
    if (root >= model.size()) {
      throw std::invalid_argument("layer " + std::to_string(root) + " of " +
                                  std::to_string(model.size()));
    }
    in[root] = true;
  }
  // Successors have larger ids: one pass in file order reaches every descendant.
  std::vector<LayerId> layers;
  for (LayerId id = 0; id < model.size(); ++id) {
    if (!in[id]) continue;
    layers.push_back(id);
    for (const LayerId next : model.successors(id)) in[next] = true;
  }
  if (layers.size() == model.size()) {
    throw std::invalid_argument("the head would take every layer of " + model.name() +
                                ", leaving no tail");
  }
  return Head(std::move(layers), model.size());
}

Head Head::of_layers(const LayerGraph& model, std::vector<LayerId> layers) {
  std::sort(layers.begin(), layers.end());
  if (layers.empty()) throw std::invalid_argument("a head needs at least one layer");
  if (std::adjacent_find(layers.begin(), layers.end()) != layers.end() ||
      layers.back() >= model.size()) {
    throw std::invalid_argument("a head lists distinct layer ids of the model");
  }
  if (layers.size() == model.size()) {
    throw std::invalid_argument("a head must leave at least one layer in the tail");
  }
  Head head(std::move(layers), model.size());
  for (const LayerId id : head.layers_) {
    for (const LayerId next : model.successors(id)) {
      if (!head.contains(next)) {
        throw std::invalid_argument("layer '" + model.layer(next).name() + "' reads head layer '" +
                                    model.layer(id).name() + "' and is not in the head");
      }
    }
  }
  return head;
}

bool Head::contains(LayerId id) const {
  return std::binary_search(layers_.begin(), layers_.end(), id);
}

std::vector<LayerId> minimal_layers(const LayerGraph& model, const Head& head) {
  std::vector<LayerId> out;
  for (const LayerId id : head.layers()) {
    const std::vector<LayerId> inputs = model.predecessors(id);
    if (std::none_of(inputs.begin(), inputs.end(),
                     [&](LayerId p) { return head.contains(p); })) {
      out.push_back(id);
    }
  }
  return out;
}

std::string head_name(const LayerGraph& model, const Head& head) {
  if (head.is_suffix()) return model.layer(head.layers().front()).name();
  const std::vector<LayerId> minimal = minimal_layers(model, head);
  std::string out;
  for (size_t i = 0; i < minimal.size(); ++i) out += (i ? "+" : "") + model.layer(minimal[i]).name();
  if (minimal.size() == 1) out += "+";
  return out;
}

std::vector<std::string> head_layer_names(const LayerGraph& model, const Head& head) {
  std::vector<std::string> out;
  if (head.is_suffix()) return out;
  for (const LayerId id : head.layers()) out.push_back(model.layer(id).name());
  return out;
}

Head parse_head(const LayerGraph& model, std::string_view text) {
  if (const auto id = model.find(text)) {
    if (*id == 0) {
      throw std::invalid_argument("'" + std::string(text) + "' is the first layer of " +
                                  model.name() + ", and a head needs a tail before it");
    }
    return Head::suffix(model, *id);
  }
  std::vector<LayerId> roots;
  size_t start = 0;
  while (start <= text.size()) {
    const size_t plus = std::min(text.find('+', start), text.size());
    const std::string_view part = text.substr(start, plus - start);
    if (!part.empty()) {
      const auto id = model.find(part);
      if (!id) {
        throw std::invalid_argument("'" + std::string(part) + "' is not a layer of " +
                                    model.name());
      }
      roots.push_back(*id);
    }
    start = plus + 1;
  }
  if (roots.empty()) {
    throw std::invalid_argument("'" + std::string(text) + "' names no layer of " + model.name());
  }
  return Head::closure(model, roots);
}

std::vector<LayerId> head_order(const Head& head) {
  std::vector<LayerId> order;
  order.reserve(head.model_size());
  for (LayerId id = 0; id < head.model_size(); ++id) {
    if (!head.contains(id)) order.push_back(id);
  }
  order.insert(order.end(), head.layers().begin(), head.layers().end());
  return order;
}

LayerGraph model_for_head(const LayerGraph& model, const Head& head) {
  if (head.is_suffix()) return model;
  return model.reordered(head_order(head));
}

}  // namespace ralp
