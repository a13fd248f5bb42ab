// The order in which the real cluster keeps, sends and dumps a model's parameters.
#pragma once

#include <cstdint>
#include <vector>

#include "ralp/model/layer_graph.hpp"

namespace ralp::cluster {

// The model's parameters in dump order: per layer with parameters, weight then bias.
struct ParameterEntry {
  LayerId layer = 0;
  bool bias = false;
  int64_t elements = 0;
};
std::vector<ParameterEntry> dump_layout(const LayerGraph& graph);

}  // namespace ralp::cluster
