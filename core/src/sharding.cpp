// Variable placement on parameter-server shards.
#include "ralp/core/sharding.hpp"

#include <algorithm>
#include <stdexcept>

namespace ralp {

std::vector<int64_t> assign_shards(const LayerGraph& graph, LayerId tail_end, int64_t shards,
                                   ShardPlacement placement) {
  if (shards < 1) throw std::invalid_argument("at least one shard is needed");
  std::vector<int64_t> out;
  std::vector<double> load(static_cast<size_t>(shards), 0.0);
  int64_t next = 0;
  const auto place = [&](Bytes bytes) {
    int64_t shard = 0;
    if (placement == ShardPlacement::round_robin) {
      shard = next++ % shards;
    } else {
      // min_element returns the first minimum: ties go to the lowest index.
      shard = std::min_element(load.begin(), load.end()) - load.begin();
    }
    load[static_cast<size_t>(shard)] += bytes.value();
    out.push_back(shard);
  };
  for (LayerId id = 0; id < tail_end; ++id) {
    const Layer& layer = graph.layer(id);
    if (layer.weight_params > 0) place(layer.weight_bytes());
    if (layer.bias_params > 0) place(layer.bias_bytes());
  }
  return out;
}

std::vector<const VariableGroup*> ShardPlan::groups_of_layer(LayerId layer) const {
  std::vector<const VariableGroup*> out;
  for (const VariableGroup& g : groups) {
    if (g.layer == layer) out.push_back(&g);
  }
  return out;
}

std::vector<const VariableGroup*> ShardPlan::groups_of_shard(int64_t shard) const {
  std::vector<const VariableGroup*> out;
  for (const VariableGroup& g : groups) {
    if (g.shard == shard) out.push_back(&g);
  }
  return out;
}

ShardPlan make_shard_plan(const LayerGraph& graph, LayerId tail_end, int64_t shards,
                          ShardPlacement placement) {
  const std::vector<int64_t> shard_of = assign_shards(graph, tail_end, shards, placement);
  ShardPlan plan;
  for (LayerId id = 0; id < tail_end; ++id) {
    const Layer& layer = graph.layer(id);
    if (layer.weight_params > 0) plan.variables.push_back({id, false, layer.weight_params, 0});
    if (layer.bias_params > 0) plan.variables.push_back({id, true, layer.bias_params, 0});
  }
  for (size_t i = 0; i < plan.variables.size(); ++i) plan.variables[i].shard = shard_of[i];

  for (LayerId id = 0; id < tail_end; ++id) {
    const size_t layer_start = plan.groups.size();
    for (size_t i = 0; i < plan.variables.size(); ++i) {
      const Variable& v = plan.variables[i];
      if (v.layer != id) continue;
      auto same = std::find_if(plan.groups.begin() + static_cast<std::ptrdiff_t>(layer_start),
                               plan.groups.end(),
                               [&v](const VariableGroup& g) { return g.shard == v.shard; });
      if (same == plan.groups.end()) {
        plan.groups.push_back({id, v.shard, {}, 0});
        same = plan.groups.end() - 1;
      }
      same->variables.push_back(i);
      same->bytes += v.elements * static_cast<int64_t>(kBytesPerFloat);
    }
  }
  return plan;
}

}  // namespace ralp
