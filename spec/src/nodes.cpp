// Grouping hosts into nodes, and counting what crosses each node's NICs and interconnect.
#include "ralp/spec/nodes.hpp"

#include <algorithm>

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
  layout.gpu_direct = scenario.nodes.gpu_direct;
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
  if (link && link->kind != InterconnectKind::pcie) return link->bandwidth;
  return device_link_bandwidth(scenario, scenario.worker_device);
}

namespace {

// NVLink links between the GPUs of a DGX-1, upper triangle (row a < column b). V100: NVIDIA,
// "NVIDIA DGX-1 With Tesla V100 System Architecture" white paper (WP-08437-002, 2017), figure 4:
// six NVLink 2 links per GPU, pairs 0-3, 0-4, 1-2, 1-5, 2-3, 4-7, 5-6, 6-7 doubled (nvidia-smi
// topo -m prints NV2 for them). P100: NVIDIA, "NVIDIA DGX-1 System Architecture" white paper
// (WP-08437-001, 2016), figure 2: four NVLink 1 links per GPU, each quad fully joined and GPU i
// to GPU i + 4.
constexpr int kV100Mesh[8][8] = {
    {0, 1, 1, 2, 2, 0, 0, 0}, {0, 0, 2, 1, 0, 2, 0, 0}, {0, 0, 0, 2, 0, 0, 1, 0},
    {0, 0, 0, 0, 0, 0, 0, 1}, {0, 0, 0, 0, 0, 1, 1, 2}, {0, 0, 0, 0, 0, 0, 2, 1},
    {0, 0, 0, 0, 0, 0, 0, 2}, {0, 0, 0, 0, 0, 0, 0, 0}};
constexpr int kP100Mesh[8][8] = {
    {0, 1, 1, 1, 1, 0, 0, 0}, {0, 0, 1, 1, 0, 1, 0, 0}, {0, 0, 0, 1, 0, 0, 1, 0},
    {0, 0, 0, 0, 0, 0, 0, 1}, {0, 0, 0, 0, 0, 1, 1, 1}, {0, 0, 0, 0, 0, 0, 1, 1},
    {0, 0, 0, 0, 0, 0, 0, 1}, {0, 0, 0, 0, 0, 0, 0, 0}};
constexpr int64_t kMeshDevices = 8;

// Extends `path` to a cycle through all `n` devices over pairs with capacity left in the
// direction travelled, trying neighbours in index order; true when it closes.
bool extend_cycle(std::vector<int64_t>& path, std::vector<bool>& used,
                  const std::vector<std::vector<int64_t>>& left, int64_t n) {
  const int64_t at = path.back();
  if (static_cast<int64_t>(path.size()) == n) return left[at][path.front()] > 0;
  for (int64_t next = 0; next < n; ++next) {
    if (used[next] || left[at][next] <= 0) continue;
    used[next] = true;
    path.push_back(next);
    if (extend_cycle(path, used, left, n)) return true;
    path.pop_back();
    used[next] = false;
  }
  return false;
}

}  // namespace

int64_t cube_mesh_links(int64_t links_per_device, int64_t a, int64_t b) {
  if (a == b || a < 0 || b < 0 || a >= kMeshDevices || b >= kMeshDevices) return 0;
  const auto lo = static_cast<size_t>(std::min(a, b));
  const auto hi = static_cast<size_t>(std::max(a, b));
  return links_per_device == 4 ? kP100Mesh[lo][hi] : kV100Mesh[lo][hi];
}

std::optional<BytesPerSecond> direct_peer_bandwidth(const Scenario& scenario, int64_t a,
                                                     int64_t b) {
  const auto& link = scenario.nodes.interconnect;
  if (!link || link->kind == InterconnectKind::pcie) return std::nullopt;
  if (link->kind == InterconnectKind::nvswitch) return link->bandwidth;
  const int64_t links = cube_mesh_links(link->links_per_device, a, b);
  if (links == 0) return std::nullopt;
  return link->bandwidth * (static_cast<double>(links) / static_cast<double>(link->links_per_device));
}

std::vector<std::vector<int64_t>> nccl_node_rings(const Scenario& scenario) {
  const int64_t n = scenario.nodes.devices_per_node;
  std::vector<std::vector<int64_t>> rings;
  const auto& link = scenario.nodes.interconnect;
  if (n > 1 && link && link->kind == InterconnectKind::nvlink) {
    std::vector<std::vector<int64_t>> left(static_cast<size_t>(n), std::vector<int64_t>(static_cast<size_t>(n)));
    for (int64_t a = 0; a < n; ++a) {
      for (int64_t b = 0; b < n; ++b) left[a][b] = cube_mesh_links(link->links_per_device, a, b);
    }
    while (true) {
      std::vector<int64_t> path{0};
      std::vector<bool> used(static_cast<size_t>(n), false);
      used[0] = true;
      if (!extend_cycle(path, used, left, n)) break;
      for (size_t i = 0; i < path.size(); ++i) --left[path[i]][path[(i + 1) % path.size()]];
      // Enter each ring at a different device, so that the rings leave a node by different ones.
      std::rotate(path.begin(), path.begin() + static_cast<int64_t>(rings.size() % path.size()), path.end());
      rings.push_back(std::move(path));
    }
    if (!rings.empty()) return rings;
  }
  for (int64_t k = 0; k < n; ++k) {
    std::vector<int64_t> ring;
    for (int64_t i = 0; i < n; ++i) ring.push_back((k + i) % n);
    rings.push_back(std::move(ring));
  }
  return rings;
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
