// Grouping hosts into nodes, and counting what crosses each node's NICs and interconnect.
#include "ralp/spec/nodes.hpp"

#include "ralp/core/json_input.hpp"

namespace ralp {

std::optional<int64_t> NodeLayout::node_of_ps(int64_t shard) const {
  if (!colocated || nodes == 0) return std::nullopt;
  return shard % nodes;
}

std::optional<int64_t> NodeLayout::node_of_host(int64_t host) const {
  if (host < parameter_servers) return node_of_ps(host);
  return node_of_worker(host - parameter_servers);
}

bool NodeLayout::same_node(int64_t host_a, int64_t host_b) const {
  const auto a = node_of_host(host_a);
  return a && a == node_of_host(host_b);
}

std::string node_name(int64_t node) { return "node-" + std::to_string(node); }

NodeLayout node_layout(const Scenario& scenario) {
  NodeLayout layout;
  layout.devices_per_node = scenario.nodes.devices_per_node;
  layout.nodes = scenario.workers / layout.devices_per_node;
  layout.nics_per_node = scenario.nodes.nics_per_node;
  layout.host_links = scenario.nodes.interconnect ? scenario.nodes.interconnect->host_links : 1;
  layout.workers = scenario.workers;
  layout.parameter_servers = scenario.parameter_servers;
  layout.colocated = scenario.nodes.ps_placement == PsPlacement::colocated;
  return layout;
}

BytesPerSecond device_link_bandwidth(const Scenario& scenario, const DeviceProfile& device) {
  const auto& link = scenario.nodes.interconnect;
  if (link && link->kind == InterconnectKind::pcie) return link->bandwidth;
  if (device.pcie_bandwidth) return *device.pcie_bandwidth;
  return device.memory_bandwidth;
}

BytesPerSecond peer_link_bandwidth(const Scenario& scenario) {
  const auto& link = scenario.nodes.interconnect;
  if (link && link->kind == InterconnectKind::nvlink) return link->bandwidth;
  return device_link_bandwidth(scenario, scenario.worker_device);
}

Seconds interconnect_latency(const Scenario& scenario) {
  return scenario.nodes.interconnect ? scenario.nodes.interconnect->latency : Seconds(0.0);
}

void count_node_traffic(const NodeLayout& layout, int64_t src, int64_t dst, double bytes,
                        std::vector<NodeTraffic>& traffic) {
  const auto from = layout.node_of_host(src);
  const auto to = layout.node_of_host(dst);
  if (from && from == to) {
    traffic[static_cast<size_t>(*from)].interconnect += bytes;
    return;
  }
  if (from) traffic[static_cast<size_t>(*from)].nic_out += bytes;
  if (to) traffic[static_cast<size_t>(*to)].nic_in += bytes;
}

void require_modelled_nodes(const Scenario& scenario) {
  // A platform file's hosts stand for the devices and servers: its routes carry the traffic
  // inside nodes and between them, so there are no NICs per node to choose.
  if (scenario.platform.kind == PlatformKind::file && scenario.nodes.nics_per_node > 1) {
    throw InputError(scenario.file, "/cluster/nics_per_node",
                     "is " + std::to_string(scenario.nodes.nics_per_node) +
                         " with a platform file, whose routes carry every message; expected 1");
  }
}

}  // namespace ralp
