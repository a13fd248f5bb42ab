// Variables (each layer's weight and bias separately) and the parameter-server shard each lives
// on, with the messages they travel in: a layer's variables on one shard move as one message.
// The step schedule places variables with it for the simulator and the real cluster alike; the
// balanced placement minimises the busiest shard's load under a load model given by the caller.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "ralp/model/layer_graph.hpp"
#include "ralp/spec/scenario.hpp"

namespace ralp {

// Shards of the variables of layers [0, tail_end), in model order (per layer: weight, then bias).
// round_robin: variable i goes to shard i mod shards (TensorFlow's default device setter).
// greedy: each to the shard with the fewest bytes so far, ties to the lowest index.
// Precondition: shards >= 1; placement is round_robin or greedy (balanced needs a load model:
// make_shard_plan).
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
  friend bool operator==(const ShardPlan&, const ShardPlan&) = default;
};

// How long each shard is busy in one step, in seconds, for balancing: a fixed load per shard
// (ps-0 also runs the head in ralp) plus group_s(bytes) for each group it holds (a group's pulls,
// pushes, sums and update; the schedule's shard_load_model builds it from the analytic model's
// links and rates). group_s must be non-negative and non-decreasing in bytes.
struct ShardLoadModel {
  std::vector<double> base_s;  // one per shard
  std::function<double(int64_t bytes)> group_s;
};

// Each shard's load under `model` (base plus its groups).
std::vector<double> shard_loads(const ShardPlan& plan, const ShardLoadModel& model);

// Items (loads in seconds) on machines with fixed loads, minimising the busiest machine.
struct ItemAssignment {
  std::vector<int64_t> machine_of;  // per item
  double busiest_s = 0.0;
  bool optimal = false;  // proven optimal (exact search finished within its node budget)
  int64_t nodes = 0;     // search nodes the exact search visited
};
// The busiest machine's load with item i on machine_of[i].
double busiest_load(const std::vector<double>& item_s, const std::vector<double>& base_s,
                    const std::vector<int64_t>& machine_of);
// Longest processing time first (each item, largest first, to the least-loaded machine, ties to
// the lowest index), then local improvement: moves and swaps out of the busiest machine while
// they lower it. Precondition: base_s is not empty.
ItemAssignment balance_heuristic(const std::vector<double>& item_s,
                                 const std::vector<double>& base_s);
// Branch and bound from the heuristic's answer: items largest first, lightest machines first and
// machines with equal loads tried once, pruned by the average load, the next item on the lightest
// machine and the incumbent. Stops after max_nodes nodes (optimal is
// then false and the best found is returned). Deterministic.
ItemAssignment balance_exact(const std::vector<double>& item_s, const std::vector<double>& base_s,
                             int64_t max_nodes);

// The exact search runs on tails of at most this many layers with parameters, for at most this
// many shards, within this many nodes; larger cases keep the heuristic's answer.
inline constexpr size_t kExactShardItems = 20;
inline constexpr int64_t kExactShardMachines = 8;
inline constexpr int64_t kExactShardNodes = 2'000'000;

// The variables of layers [0, tail_end) on `shards` shards. round_robin and greedy as
// assign_shards; balanced (which needs `load`, else std::invalid_argument) keeps each layer's
// variables together and takes, of the round-robin, greedy, heuristic and (small cases) exact
// assignments, the one whose busiest shard has the least load (ties to the earlier in the order
// exact or heuristic, greedy, round-robin). Precondition: shards >= 1.
ShardPlan make_shard_plan(const LayerGraph& graph, LayerId tail_end, int64_t shards,
                          ShardPlacement placement, const ShardLoadModel* load = nullptr);

// One shard's share, for the outputs: its bytes and the layers it holds variables of.
struct ShardShare {
  int64_t shard = 0;
  int64_t bytes = 0;
  std::vector<std::string> layers;  // forward order
  friend bool operator==(const ShardShare&, const ShardShare&) = default;
};
std::vector<ShardShare> shard_shares(const ShardPlan& plan, const LayerGraph& graph,
                                     int64_t shards);

}  // namespace ralp
