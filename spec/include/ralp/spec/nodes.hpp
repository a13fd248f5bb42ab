// Nodes: servers that hold several devices (GPUs behind PCIe switches or NVLink) and one NIC, or
// one per device. Workers are grouped into nodes in order (worker-0..D-1 on node-0); a co-located
// parameter server's shard i runs on node i mod nodes. Every mode (simulator, analytic model, real
// cluster) groups hosts with this one layout.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "ralp/spec/scenario.hpp"

namespace ralp {

struct NodeLayout {
  int64_t nodes = 0;
  int64_t devices_per_node = 1;
  int64_t nics_per_node = 1;
  int64_t host_links = 1;  // PCIe roots the devices are split among, in order
  bool gpu_direct = false;  // NIC traffic from a device's PCIe switch, not through the host
  int64_t workers = 0;
  int64_t parameter_servers = 0;
  bool colocated = false;  // parameter servers on the nodes

  [[nodiscard]] int64_t node_of_worker(int64_t w) const { return w / devices_per_node; }
  // The worker's index among its node's devices.
  [[nodiscard]] int64_t device_in_node(int64_t w) const { return w % devices_per_node; }
  [[nodiscard]] int64_t first_worker(int64_t node) const { return node * devices_per_node; }
  // The node a parameter server shard runs on; nullopt where it has a host of its own.
  [[nodiscard]] std::optional<int64_t> node_of_ps(int64_t shard) const;
  // The node of a host index (parameter servers first, then workers, as in the schedule);
  // nullopt for a parameter server on a host of its own.
  [[nodiscard]] std::optional<int64_t> node_of_host(int64_t host) const;
  // Which of its node's NICs a worker's traffic leaves by (0 with one NIC per node).
  [[nodiscard]] int64_t nic_of_worker(int64_t w) const {
    return nics_per_node == 1 ? 0 : device_in_node(w);
  }
  // Which of its node's host links (PCIe roots) a worker sits behind: the devices split in order.
  [[nodiscard]] int64_t host_link_of_worker(int64_t w) const {
    return device_in_node(w) * host_links / devices_per_node;
  }
  // Whether two hosts are on one node (and talk over its interconnect, not its NICs).
  [[nodiscard]] bool same_node(int64_t host_a, int64_t host_b) const;
};

// "node-3".
std::string node_name(int64_t node);

// The scenario's layout. Precondition: a validated scenario (workers a multiple of
// devices_per_node).
NodeLayout node_layout(const Scenario& scenario);

// Bytes per step of one node: in and out of its NICs, and moved between its own hosts over its
// interconnect (each byte once).
struct NodeTraffic {
  double nic_in = 0.0;
  double nic_out = 0.0;
  double interconnect = 0.0;
  friend bool operator==(const NodeTraffic&, const NodeTraffic&) = default;
};

// Adds a message of `bytes` from host `src` to host `dst` (schedule host indices) to the nodes'
// traffic (one entry per node).
void count_node_traffic(const NodeLayout& layout, int64_t src, int64_t dst, double bytes,
                        std::vector<NodeTraffic>& traffic);

// The links of a node (docs/nodes.md). A device's link to its node's host side (its PCIe link,
// and the host links): the `pcie` interconnect's bandwidth where given, else the device's PCIe
// bandwidth (a GPU), else its memory bandwidth (a CPU, whose ranks share the host).
BytesPerSecond device_link_bandwidth(const Scenario& scenario, const DeviceProfile& device);
// Device-to-device inside a node: NVLink's or NVSwitch's bandwidth per device (all its links),
// else the device link's.
BytesPerSecond peer_link_bandwidth(const Scenario& scenario);

// The NVLink links between devices a and b (indices in their node) of a DGX-1's hybrid
// cube-mesh with `links_per_device` links per device (6: V100, 4: P100); 0 where the pair has
// none (its traffic crosses PCIe). docs/fabrics.md draws the mesh and names its source.
int64_t cube_mesh_links(int64_t links_per_device, int64_t a, int64_t b);
// The bandwidth between two devices of one node over the interconnect's direct links (NVLink
// pairs, NVSwitch ports); nullopt where their traffic crosses PCIe.
std::optional<BytesPerSecond> direct_peer_bandwidth(const Scenario& scenario, int64_t a,
                                                     int64_t b);

// NCCL's rings inside a node (docs/fabrics.md): each a cycle through every device of the node,
// listed from the device it enters at. On the cube-mesh, cycles over NVLink pairs taken one after
// another while every pair on them has a link left in that direction (NCCL's search finds its
// rings the same way, link by link); elsewhere one rotation of node order per device, so that
// across nodes every device, and its NIC, carries one channel in and one out.
std::vector<std::vector<int64_t>> nccl_node_rings(const Scenario& scenario);
// Each link's latency inside a node (0 without a node_interconnect).
Seconds interconnect_latency(const Scenario& scenario);

// Throws InputError naming the first node key of the scenario that the modes cannot yet carry
// out, with what they can.
void require_modelled_nodes(const Scenario& scenario);

}  // namespace ralp
