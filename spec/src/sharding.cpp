// Variable placement on parameter-server shards: round-robin, greedy, and the balanced
// assignment (a heuristic, and branch and bound for small cases) under a shard load model.
#include "ralp/spec/sharding.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <stdexcept>

namespace ralp {
namespace {

// Loads within this relative margin count as equal when comparing assignments, so that rounding
// in a sum's order never decides between two equally good answers.
constexpr double kRelativeTie = 1e-12;

bool clearly_less(double a, double b) { return a < b - kRelativeTie * std::max(1.0, std::abs(b)); }

std::vector<double> machine_loads(const std::vector<double>& item_s,
                                  const std::vector<double>& base_s,
                                  const std::vector<int64_t>& machine_of) {
  std::vector<double> load = base_s;
  for (size_t i = 0; i < item_s.size(); ++i) load[static_cast<size_t>(machine_of[i])] += item_s[i];
  return load;
}

size_t busiest_of(const std::vector<double>& load) {
  return static_cast<size_t>(std::max_element(load.begin(), load.end()) - load.begin());
}

// Moves and swaps out of the busiest machine while one lowers it below its load; stops when none
// does. Each accepted change lowers the busiest machine's load or the number of machines at it.
void improve(const std::vector<double>& item_s, std::vector<double>& load,
             std::vector<int64_t>& machine_of) {
  const size_t n = item_s.size();
  const size_t machines = load.size();
  const size_t max_rounds = 64 * (n + 1) * machines;
  for (size_t round = 0; round < max_rounds; ++round) {
    const size_t m = busiest_of(load);
    const double top = load[m];
    bool changed = false;
    for (size_t i = 0; i < n && !changed; ++i) {
      if (static_cast<size_t>(machine_of[i]) != m) continue;
      for (size_t s = 0; s < machines && !changed; ++s) {
        if (s == m) continue;
        // Move i to s.
        if (clearly_less(std::max(top - item_s[i], load[s] + item_s[i]), top)) {
          load[m] -= item_s[i];
          load[s] += item_s[i];
          machine_of[i] = static_cast<int64_t>(s);
          changed = true;
          break;
        }
        // Swap i with a smaller item j of s.
        for (size_t j = 0; j < n; ++j) {
          if (static_cast<size_t>(machine_of[j]) != s || item_s[j] >= item_s[i]) continue;
          const double d = item_s[i] - item_s[j];
          if (clearly_less(std::max(top - d, load[s] + d), top)) {
            load[m] -= d;
            load[s] += d;
            machine_of[i] = static_cast<int64_t>(s);
            machine_of[j] = static_cast<int64_t>(m);
            changed = true;
            break;
          }
        }
      }
    }
    if (!changed) return;
  }
}

// Items largest first; ties by index, so the order is deterministic.
std::vector<size_t> largest_first(const std::vector<double>& item_s) {
  std::vector<size_t> order(item_s.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return item_s[a] > item_s[b]; });
  return order;
}

struct BranchAndBound {
  const std::vector<double>& item_s;
  std::vector<size_t> order;
  std::vector<double> remaining;  // remaining[k]: the load of items order[k..]
  std::vector<double> load;
  std::vector<int64_t> current;
  std::vector<int64_t> best;
  double best_s = 0.0;
  int64_t nodes = 0;
  int64_t max_nodes = 0;
  bool stopped = false;
  std::vector<size_t> scratch;  // each depth's machine order

  void search(size_t k, double busiest) {
    if (stopped) return;
    if (++nodes > max_nodes) {
      stopped = true;
      return;
    }
    if (k == order.size()) {
      if (clearly_less(busiest, best_s)) {
        best_s = busiest;
        best = current;
      }
      return;
    }
    const size_t item = order[k];
    const double c = item_s[item];
    // Bounds: the average load, and the next (largest remaining) item on the lightest machine.
    const double total = std::accumulate(load.begin(), load.end(), 0.0) + remaining[k];
    const double average = total / static_cast<double>(load.size());
    const double lightest = *std::min_element(load.begin(), load.end()) + c;
    if (!clearly_less(std::max({busiest, average, lightest}), best_s)) return;
    // The lightest machines first (good answers early tighten the bound); machines with equal
    // loads lead to the same subproblems: the first of them only.
    const size_t m_count = load.size();
    size_t* machines = scratch.data() + k * m_count;
    std::iota(machines, machines + m_count, size_t{0});
    std::stable_sort(machines, machines + m_count,
                     [this](size_t a, size_t b) { return load[a] < load[b]; });
    for (size_t m = 0; m < m_count; ++m) {
      const size_t s = machines[m];
      if (m > 0 && load[machines[m - 1]] == load[s]) continue;
      const double next = load[s] + c;
      if (!clearly_less(next, best_s)) continue;
      load[s] = next;
      current[item] = static_cast<int64_t>(s);
      search(k + 1, std::max(busiest, next));
      load[s] = next - c;
      if (stopped) return;
    }
  }
};

ShardPlan plan_from(const LayerGraph& graph, LayerId tail_end,
                    const std::vector<int64_t>& shard_of) {
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

double busiest_of_plan(const ShardPlan& plan, const ShardLoadModel& model) {
  const std::vector<double> loads = shard_loads(plan, model);
  return *std::max_element(loads.begin(), loads.end());
}

// The balanced plan: each layer with parameters is one item, all its variables on one shard.
ShardPlan balanced_plan(const LayerGraph& graph, LayerId tail_end, int64_t shards,
                        const ShardLoadModel& model) {
  if (model.base_s.size() != static_cast<size_t>(shards) || !model.group_s) {
    throw std::invalid_argument("a shard load model needs one base load per shard");
  }
  std::vector<LayerId> layers;
  std::vector<double> item_s;
  for (LayerId id = 0; id < tail_end; ++id) {
    const Layer& layer = graph.layer(id);
    if (layer.params() == 0) continue;
    layers.push_back(id);
    const int64_t bytes = (layer.weight_params + layer.bias_params) *
                          static_cast<int64_t>(kBytesPerFloat);
    item_s.push_back(model.group_s(bytes));
  }
  ItemAssignment items = balance_heuristic(item_s, model.base_s);
  if (items.machine_of.size() <= kExactShardItems && shards <= kExactShardMachines) {
    items = balance_exact(item_s, model.base_s, kExactShardNodes);
  }
  std::vector<int64_t> shard_of;
  for (size_t i = 0; i < layers.size(); ++i) {
    const Layer& layer = graph.layer(layers[i]);
    if (layer.weight_params > 0) shard_of.push_back(items.machine_of[i]);
    if (layer.bias_params > 0) shard_of.push_back(items.machine_of[i]);
  }
  ShardPlan best = plan_from(graph, tail_end, shard_of);
  double best_s = busiest_of_plan(best, model);
  for (const ShardPlacement other : {ShardPlacement::greedy, ShardPlacement::round_robin}) {
    ShardPlan plan = plan_from(graph, tail_end, assign_shards(graph, tail_end, shards, other));
    const double s = busiest_of_plan(plan, model);
    if (clearly_less(s, best_s)) {
      best = std::move(plan);
      best_s = s;
    }
  }
  return best;
}

}  // namespace

std::vector<int64_t> assign_shards(const LayerGraph& graph, LayerId tail_end, int64_t shards,
                                   ShardPlacement placement) {
  if (shards < 1) throw std::invalid_argument("at least one shard is needed");
  if (placement == ShardPlacement::balanced) {
    throw std::invalid_argument("balanced sharding needs a load model (make_shard_plan)");
  }
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

std::vector<double> shard_loads(const ShardPlan& plan, const ShardLoadModel& model) {
  std::vector<double> load = model.base_s;
  for (const VariableGroup& g : plan.groups) {
    load.at(static_cast<size_t>(g.shard)) += model.group_s(g.bytes);
  }
  return load;
}

double busiest_load(const std::vector<double>& item_s, const std::vector<double>& base_s,
                    const std::vector<int64_t>& machine_of) {
  const std::vector<double> load = machine_loads(item_s, base_s, machine_of);
  return load[busiest_of(load)];
}

ItemAssignment balance_heuristic(const std::vector<double>& item_s,
                                 const std::vector<double>& base_s) {
  if (base_s.empty()) throw std::invalid_argument("at least one machine is needed");
  ItemAssignment out;
  out.machine_of.assign(item_s.size(), 0);
  std::vector<double> load = base_s;
  for (const size_t i : largest_first(item_s)) {
    const size_t s = static_cast<size_t>(std::min_element(load.begin(), load.end()) - load.begin());
    load[s] += item_s[i];
    out.machine_of[i] = static_cast<int64_t>(s);
  }
  improve(item_s, load, out.machine_of);
  out.busiest_s = busiest_load(item_s, base_s, out.machine_of);
  return out;
}

ItemAssignment balance_exact(const std::vector<double>& item_s, const std::vector<double>& base_s,
                             int64_t max_nodes) {
  const ItemAssignment start = balance_heuristic(item_s, base_s);
  BranchAndBound bb{item_s, largest_first(item_s), {}, base_s, start.machine_of,
                    start.machine_of, start.busiest_s, 0, max_nodes, false};
  bb.remaining.assign(item_s.size() + 1, 0.0);
  bb.scratch.assign(item_s.size() * base_s.size(), 0);
  for (size_t k = item_s.size(); k-- > 0;) bb.remaining[k] = bb.remaining[k + 1] + item_s[bb.order[k]];
  const double fixed = *std::max_element(base_s.begin(), base_s.end());
  bb.search(0, fixed);
  ItemAssignment out;
  out.machine_of = bb.best;
  out.busiest_s = busiest_load(item_s, base_s, out.machine_of);
  out.optimal = !bb.stopped;
  out.nodes = bb.nodes;
  return out;
}

ShardPlan make_shard_plan(const LayerGraph& graph, LayerId tail_end, int64_t shards,
                          ShardPlacement placement, const ShardLoadModel* load) {
  if (shards < 1) throw std::invalid_argument("at least one shard is needed");
  if (placement == ShardPlacement::balanced) {
    if (load == nullptr) {
      throw std::invalid_argument("balanced sharding needs a load model");
    }
    return balanced_plan(graph, tail_end, shards, *load);
  }
  return plan_from(graph, tail_end, assign_shards(graph, tail_end, shards, placement));
}

std::vector<ShardShare> shard_shares(const ShardPlan& plan, const LayerGraph& graph,
                                     int64_t shards) {
  std::vector<ShardShare> out(static_cast<size_t>(shards));
  for (int64_t s = 0; s < shards; ++s) out[static_cast<size_t>(s)].shard = s;
  for (const VariableGroup& g : plan.groups) {
    ShardShare& share = out.at(static_cast<size_t>(g.shard));
    share.bytes += g.bytes;
    share.layers.push_back(graph.layer(g.layer).name());
  }
  return out;
}

}  // namespace ralp
