// The model zoo: reference CNNs built layer by layer, with parameter counts equal to their
// reference definitions (torchvision, tf_cnn_benchmarks).
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "ralp/model/layer_graph.hpp"

namespace ralp {

struct ZooEntry {
  std::string name;         // "vgg16"
  std::string description;  // one line: origin and input
};

// All zoo models, in a fixed order.
const std::vector<ZooEntry>& zoo_entries();

// Builds a zoo model, or nullopt for an unknown name.
std::optional<LayerGraph> zoo_model(std::string_view name);

}  // namespace ralp
