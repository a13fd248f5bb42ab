// NCCL's tuning model applied to a scenario: when, on which machine, along which flows.
#include "ralp/spec/nccl_plan.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <string>
#include <tuple>

#include "ralp/spec/nodes.hpp"

namespace ralp {
namespace {

// NVLink's rate per link and direction: NVLink 1 (P100) 20 GB/s, NVLink 2 to 4 (V100, A100,
// H100) 25 GB/s (NVIDIA's P100, V100, A100 and H100 datasheets: 160, 300, 600 and 900 GB/s over
// 4, 6, 12 and 18 links, both directions).
constexpr double kNvlink1Rate = 20e9;
constexpr double kNvlinkRate = 25e9;

}  // namespace

bool uses_nccl_model(const Scenario& scenario, const StrategySpec& strategy) {
  const bool ring = strategy.kind == StrategyKind::allreduce || strategy.kind == StrategyKind::hybrid;
  if (!ring || strategy.transport.name != "nccl") return false;
  if (strategy.algorithm != AllreduceAlgorithm::ring || strategy.ring_model == RingModel::message) {
    return false;
  }
  const int64_t nodes = scenario.workers / scenario.nodes.devices_per_node;
  return nodes == 1 || is_rdma(scenario.platform.fabric);
}

NcclArch nccl_arch_of(const DeviceProfile& device) {
  const std::string& n = device.name;
  if (n.starts_with("h100") || n.starts_with("h200")) return NcclArch::hopper;
  if (n.starts_with("a100")) return NcclArch::ampere;
  if (n.starts_with("v100")) return NcclArch::volta;
  return NcclArch::pascal;
}

NcclTopology nccl_topology_of(const Scenario& scenario) {
  NcclTopology t;
  t.gpus_per_node = scenario.nodes.devices_per_node;
  t.nodes = scenario.workers / t.gpus_per_node;
  t.arch = nccl_arch_of(scenario.worker_device);
  const auto& link = scenario.nodes.interconnect;
  const bool nvlink = link && link->kind != InterconnectKind::pcie;
  t.intra = nvlink ? NcclIntraLink::nvlink : NcclIntraLink::pcie;
  if (nvlink) {
    const double rate = t.arch == NcclArch::pascal ? kNvlink1Rate : kNvlinkRate;
    t.nvlinks_per_gpu = link->kind == InterconnectKind::nvlink
                            ? link->links_per_device
                            : std::max<int64_t>(1, std::llround(link->bandwidth.value() / rate));
  }
  t.pcie_bandwidth = device_link_bandwidth(scenario, scenario.worker_device);
  t.nics_per_node = scenario.nodes.nics_per_node;
  t.nic_bandwidth = scenario.platform.worker_nic.value_or(scenario.platform.nic).bandwidth;
  t.nic_latency = scenario.platform.worker_nic.value_or(scenario.platform.nic).latency;
  t.nic_path = scenario.nodes.gpu_direct ? NcclNicPath::pcie_switch : NcclNicPath::cpu;
  return t;
}

NcclMachine nccl_machine_of(const Scenario& scenario) {
  return nccl_machine(nccl_topology_of(scenario));
}

std::optional<NcclAlgorithm> forced_nccl_algorithm(const StrategySpec& strategy) {
  switch (strategy.nccl_algorithm) {
    case NcclAlgorithmChoice::automatic:
      return std::nullopt;
    case NcclAlgorithmChoice::ring:
      return NcclAlgorithm::ring;
    case NcclAlgorithmChoice::tree:
      return NcclAlgorithm::tree;
  }
  return std::nullopt;
}

std::vector<std::vector<NcclFlow>> nccl_channel_flows(const Scenario& scenario) {
  const int64_t per_node = scenario.nodes.devices_per_node;
  const int64_t nodes = scenario.workers / per_node;
  const std::vector<std::vector<int64_t>> rings = nccl_node_rings(scenario);
  std::vector<std::map<int64_t, double>> shares(static_cast<size_t>(scenario.workers));
  const double part = 1.0 / static_cast<double>(rings.size());
  for (const auto& ring : rings) {
    // The channel's path through node n: the ring, backwards on odd nodes of an even count.
    const auto path = [&](int64_t n) {
      std::vector<int64_t> p = ring;
      if (nodes % 2 == 0 && n % 2 == 1) std::reverse(p.begin(), p.end());
      return p;
    };
    for (int64_t n = 0; n < nodes; ++n) {
      const std::vector<int64_t> p = path(n);
      for (size_t i = 0; i < p.size(); ++i) {
        const int64_t from = n * per_node + p[i];
        const int64_t to = i + 1 < p.size() ? n * per_node + p[i + 1]
                                            : ((n + 1) % nodes) * per_node + path((n + 1) % nodes).front();
        if (from != to) shares[static_cast<size_t>(from)][to] += part;
      }
    }
  }
  std::vector<std::vector<NcclFlow>> flows(shares.size());
  for (size_t w = 0; w < shares.size(); ++w) {
    for (const auto& [to, share] : shares[w]) flows[w].push_back({to, share});
  }
  return flows;
}

double nccl_efficiency(const NcclMachine& machine, const NcclCost& cost, int64_t bytes) {
  if (bytes <= 0) return 1.0;
  for (const NcclCost& c : nccl_allreduce_costs(machine)) {
    if (c.algorithm != NcclAlgorithm::ring || c.protocol != NcclProtocol::simple) continue;
    const double simple = (c.time(bytes) - c.time(0)).value();
    const double chosen = (cost.time(bytes) - cost.time(0)).value();
    return chosen > 0.0 ? std::min(1.0, simple / chosen) : 1.0;
  }
  return 1.0;
}

double nccl_seconds_per_byte(const Scenario& scenario, double nic_factor) {
  const NodeLayout layout = node_layout(scenario);
  const double device = device_link_bandwidth(scenario, scenario.worker_device).value();
  const double nic =
      nic_factor * scenario.platform.worker_nic.value_or(scenario.platform.nic).bandwidth.value();
  // Each link's load per byte a worker sends, keyed by (kind, index, direction).
  std::map<std::tuple<int, int64_t, int64_t, int>, std::pair<double, double>> load;
  const auto add = [&](int kind, int64_t a, int64_t b, int up, double bytes, double bandwidth) {
    auto& [sum, rate] = load[{kind, a, b, up}];
    sum += bytes;
    rate = bandwidth;
  };
  const auto flows = nccl_channel_flows(scenario);
  for (size_t w = 0; w < flows.size(); ++w) {
    const auto from = static_cast<int64_t>(w);
    for (const NcclFlow& f : flows[w]) {
      const int64_t da = layout.device_in_node(from);
      const int64_t db = layout.device_in_node(f.to);
      if (layout.node_of_worker(from) == layout.node_of_worker(f.to)) {
        const auto& link = scenario.nodes.interconnect;
        if (link && link->kind == InterconnectKind::nvswitch) {
          add(0, from, 0, 1, f.share, link->bandwidth.value());
          add(0, f.to, 0, 0, f.share, link->bandwidth.value());
        } else if (const auto direct = direct_peer_bandwidth(scenario, da, db)) {
          add(1, from, f.to, 1, f.share, direct->value());
        } else {
          add(2, from, 0, 1, f.share, device);
          add(2, f.to, 0, 0, f.share, device);
        }
        continue;
      }
      add(2, from, 0, 1, f.share, device);
      add(2, f.to, 0, 0, f.share, device);
      const auto nic_key = [&](int64_t worker) {
        return layout.node_of_worker(worker) * layout.nics_per_node + layout.nic_of_worker(worker);
      };
      add(3, nic_key(from), 0, 1, f.share, nic);
      add(3, nic_key(f.to), 0, 0, f.share, nic);
      if (!layout.gpu_direct) {
        const auto root_key = [&](int64_t worker) {
          return layout.node_of_worker(worker) * layout.host_links + layout.host_link_of_worker(worker);
        };
        add(4, root_key(from), 0, 1, f.share, device);
        add(4, root_key(f.to), 0, 0, f.share, device);
      }
    }
  }
  double slowest = 0.0;
  for (const auto& [key, value] : load) slowest = std::max(slowest, value.first / value.second);
  return slowest;
}

}  // namespace ralp
