// Variables (each layer's weight and bias separately) and the parameter-server shard each lives
// on, with the messages they travel in: a layer's variables on one shard move as one message.
// The step schedule places variables with it for the simulator and the real cluster alike.
#pragma once

#include <cstdint>
#include <vector>

#include "ralp/core/layer_graph.hpp"
#include "ralp/core/scenario.hpp"

namespace ralp {

// Shards of the variables of layers [0, tail_end), in model order (per layer: weight, then bias).
// round_robin: variable i goes to shard i mod shards (TensorFlow's default device setter).
// greedy: each to the shard with the fewest bytes so far, ties to the lowest index.
// Precondition: shards >= 1.
std::vector<int64_t> assign_shards(const LayerGraph& graph, LayerId tail_end, int64_t shards,
                                   ShardPlacement placement);

struct Variable {
  LayerId layer = 0;
  bool bias = false;
  int64_t elements = 0;
  int64_t shard = 0;
  friend bool operator==(const Variable&, const Variable&) = default;
};

// One layer's variables on one shard: one pull message and one push message per worker and step.
struct VariableGroup {
  LayerId layer = 0;
  int64_t shard = 0;
  std::vector<size_t> variables;  // indices into ShardPlan::variables, weight first
  int64_t bytes = 0;
  friend bool operator==(const VariableGroup&, const VariableGroup&) = default;
};

struct ShardPlan {
  std::vector<Variable> variables;    // model order
  std::vector<VariableGroup> groups;  // forward order; in a layer, by first use of the shard

  // Groups of one layer (forward order), or of one shard (forward order).
  [[nodiscard]] std::vector<const VariableGroup*> groups_of_layer(LayerId layer) const;
  [[nodiscard]] std::vector<const VariableGroup*> groups_of_shard(int64_t shard) const;
};

ShardPlan make_shard_plan(const LayerGraph& graph, LayerId tail_end, int64_t shards,
                          ShardPlacement placement);

}  // namespace ralp
