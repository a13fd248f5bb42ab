// Grouping hosts into nodes, and counting what crosses each node's NICs and interconnect.
#include "ralp/core/nodes.hpp"

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
  const NodeSpec& nodes = scenario.nodes;
  const std::string later = ", which this version parses but does not yet simulate, expected ";
  const bool on_nodes =
      nodes.devices_per_node > 1 || nodes.ps_placement == PsPlacement::colocated;
  if (on_nodes && scenario.platform.kind == PlatformKind::file) {
    throw InputError(scenario.file, "/cluster/platform/kind",
                     "is \"file\" with nodes (several devices or co-located servers)" + later +
                         "a generated platform");
  }
}

}  // namespace ralp
