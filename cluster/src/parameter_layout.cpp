// The order of a model's parameters in the real cluster.
#include "ralp/cluster/parameter_layout.hpp"

namespace ralp::cluster {

std::vector<ParameterEntry> dump_layout(const LayerGraph& graph) {
  std::vector<ParameterEntry> out;
  for (LayerId id = 0; id < graph.size(); ++id) {
    const Layer& layer = graph.layer(id);
    if (layer.weight_params > 0) out.push_back({id, false, layer.weight_params});
    if (layer.bias_params > 0) out.push_back({id, true, layer.bias_params});
  }
  return out;
}

}  // namespace ralp::cluster
