// Footprints per strategy and device, and the memory check.
#include "ralp/spec/memory_plan.hpp"

#include <algorithm>

#include "ralp/spec/head.hpp"
#include "ralp/spec/sharding.hpp"

namespace ralp {
namespace {

FootprintOptions options_of(const DeviceProfile& device) {
  return {device.kind == DeviceKind::cpu ? TorchBackend::cpu : TorchBackend::cuda};
}

// The parameter bytes of layers [0, tail_end) on the fullest shard; balanced sharding weighs
// loads, not bytes, and is taken as greedy by bytes here.
Bytes busiest_shard(const LayerGraph& graph, LayerId tail_end, int64_t shards,
                    ShardPlacement placement) {
  if (shards <= 0 || tail_end == 0) return Bytes(0.0);
  const ShardPlacement by_bytes =
      placement == ShardPlacement::balanced ? ShardPlacement::greedy : placement;
  const std::vector<int64_t> shard_of = assign_shards(graph, tail_end, shards, by_bytes);
  std::vector<double> bytes(static_cast<size_t>(shards), 0.0);
  size_t variable = 0;
  for (LayerId id = 0; id < tail_end; ++id) {
    const Layer& layer = graph.layer(id);
    if (layer.weight_params > 0) bytes.at(shard_of.at(variable++)) += layer.weight_bytes().value();
    if (layer.bias_params > 0) bytes.at(shard_of.at(variable++)) += layer.bias_bytes().value();
  }
  return Bytes(*std::max_element(bytes.begin(), bytes.end()));
}

MemoryFootprint without_optimizer(MemoryFootprint f) {
  f.optimizer_state = Bytes(0.0);
  return f;
}

MemoryFootprint plus_shard(MemoryFootprint f, Bytes shard) {
  const MemoryFootprint s = shard_footprint(shard);
  f.weights += s.weights;
  f.gradients += s.gradients;
  f.optimizer_state += s.optimizer_state;
  return f;
}

StrategyMemory memory_at(const Scenario& s, const StrategySpec& st, const LayerGraph& graph,
                         std::optional<LayerId> cut) {
  const int64_t batch = s.batch_per_worker;
  const FootprintOptions worker = options_of(s.worker_device);
  StrategyMemory m;
  switch (st.kind) {
    case StrategyKind::allreduce:
      m.worker = training_footprint(graph, batch, s.precision, worker);
      return m;
    case StrategyKind::ps:
      m.worker = without_optimizer(training_footprint(graph, batch, s.precision, worker));
      m.ps = shard_footprint(busiest_shard(graph, graph.size(), s.parameter_servers, st.sharding));
      return m;
    case StrategyKind::ralp:
    case StrategyKind::hybrid:
      break;
  }
  const LayerId c = cut.value();
  m.worker = training_footprint(graph, 0, c, batch, s.precision, worker);
  const int64_t devices = st.local_aggregation ? s.nodes.devices_per_node : 1;
  const int64_t head_batch =
      st.head_mode == HeadMode::per_worker ? batch * devices : batch * s.workers;
  MemoryFootprint head =
      training_footprint(graph, c, graph.size(), head_batch, s.precision, options_of(s.ps_device));
  if (st.kind == StrategyKind::ralp) {  // the tail's variables live on the parameter servers
    m.worker = without_optimizer(m.worker);
    head = plus_shard(head, busiest_shard(graph, c, s.parameter_servers, st.sharding));
  }
  m.ps = head;
  return m;
}

bool fits(const MemoryFootprint& f, const DeviceProfile& device) {
  return !device.memory_capacity || f.total() <= *device.memory_capacity;
}

bool fits(const StrategyMemory& m, const Scenario& s) {
  return fits(m.worker, s.worker_device) && (!m.ps || fits(*m.ps, s.ps_device));
}

// Every placement a strategy may take: its fixed head, or each suffix cut for "auto".
std::vector<std::pair<std::optional<LayerId>, std::string>> placements(const Scenario& s,
                                                                      const StrategySpec& st) {
  if (st.kind != StrategyKind::ralp && st.kind != StrategyKind::hybrid) return {{std::nullopt, ""}};
  if (st.cut) return {{std::nullopt, *st.cut}};
  std::vector<std::pair<std::optional<LayerId>, std::string>> out;
  for (const LayerId c : s.model.cut_points()) out.emplace_back(c, "");
  return out;
}

bool any_fits(const Scenario& s, const StrategySpec& st) {
  for (const auto& [cut, head] : placements(s, st)) {
    if (fits(strategy_memory(s, st, cut, head), s)) return true;
  }
  return false;
}

bool every_strategy_fits(const Scenario& s) {
  return std::all_of(s.strategies.begin(), s.strategies.end(),
                     [&](const StrategySpec& st) { return any_fits(s, st); });
}

// The largest batch per worker below the scenario's at which every strategy fits; 0 when none.
// Footprints grow with the batch, so the search halves the interval.
int64_t largest_fitting_batch(Scenario s) {
  int64_t low = 0;                    // fits (0: none known to)
  int64_t high = s.batch_per_worker;  // does not fit
  while (high - low > 1) {
    const int64_t mid = low + (high - low) / 2;
    s.batch_per_worker = mid;
    (every_strategy_fits(s) ? low : high) = mid;
  }
  return low;
}

std::string describe(const Scenario& s, const StrategySpec& st, const StrategyMemory& m) {
  const bool worker_over = !fits(m.worker, s.worker_device);
  const DeviceProfile& device = worker_over ? s.worker_device : s.ps_device;
  const MemoryFootprint& f = worker_over ? m.worker : *m.ps;
  return "strategy \"" + st.label + "\" needs " + format_bytes(f.total()) + " on each " +
         (worker_over ? "worker" : "parameter server") + "'s " + device.name + " (activations " +
         format_bytes(f.activations) + ", weights, gradients and optimizer state " +
         format_bytes(f.weights + f.weight_copies + f.gradients + f.optimizer_state) +
         ", workspace " + format_bytes(f.workspace) + ", in " + std::string(to_string(s.precision)) +
         "), which has " + format_bytes(*device.memory_capacity);
}

}  // namespace

StrategyMemory strategy_memory(const Scenario& scenario, const StrategySpec& strategy,
                               std::optional<LayerId> cut, const std::string& head) {
  if (head.empty()) return memory_at(scenario, strategy, scenario.model, cut);
  const Head h = parse_head(scenario.model, head);
  return memory_at(scenario, strategy, model_for_head(scenario.model, h), h.cut());
}

std::optional<std::string> memory_problem(const Scenario& scenario) {
  for (const StrategySpec& st : scenario.strategies) {
    if (any_fits(scenario, st)) continue;
    const auto [cut, head] = placements(scenario, st).front();
    const StrategyMemory m = strategy_memory(scenario, st, cut, head);
    const int64_t largest = largest_fitting_batch(scenario);
    return describe(scenario, st, m) + "; " +
           (largest > 0 ? "the largest batch per worker that fits is " + std::to_string(largest)
                        : "not even a batch of 1 fits");
  }
  return std::nullopt;
}

std::optional<std::string> check_memory(const Scenario& scenario) {
  const std::optional<std::string> problem = memory_problem(scenario);
  if (!problem) return std::nullopt;
  if (scenario.memory_check) {
    throw InputError(scenario.file, "/batch_per_worker",
                     "is " + std::to_string(scenario.batch_per_worker) + ", but " + *problem +
                         "; expected a batch that fits, or \"memory_check\": false to go on");
  }
  return "warning: " + *problem + " (memory_check is false: going on)";
}

std::vector<std::string> scenario_warnings(const Scenario& scenario) {
  std::vector<std::string> out = precision_warnings(scenario);
  if (!scenario.memory_check) {
    if (auto line = check_memory(scenario)) out.push_back(*line);
  }
  return out;
}

}  // namespace ralp
