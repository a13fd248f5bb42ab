// How a scenario's all-reduce runs under the nccl transport (docs/fabrics.md): whether NCCL's
// tuning model prices it (devices/nccl_tuning.hpp), the machine NCCL's topology search sees, and
// the flows of NCCL's channels: its rings inside each node following the node's links, and across
// nodes every NIC of the node.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "ralp/devices/nccl_tuning.hpp"
#include "ralp/spec/scenario.hpp"

namespace ralp {

// Whether `strategy`'s all-reduce follows NCCL's tuning model: the nccl transport, a ring through
// every device (not hierarchical, not forced to the message form), and no socket on its way: one
// node, or nodes joined by an RDMA fabric. NCCL over Ethernet between nodes is its socket
// transport, priced by the transport's fitted costs instead.
bool uses_nccl_model(const Scenario& scenario, const StrategySpec& strategy);

// NCCL's compute-capability class of a device profile, by its name (p100, v100, a100, h100, h200
// and their variants; older GPUs are tuned as Pascal, as NCCL tunes every GPU before Volta).
NcclArch nccl_arch_of(const DeviceProfile& device);

// The cluster as NCCL's topology detection sees it, and the machine its search builds.
NcclTopology nccl_topology_of(const Scenario& scenario);
NcclMachine nccl_machine_of(const Scenario& scenario);

// The algorithm a strategy forces (nccl_algorithm), or nullopt for NCCL's own choice.
std::optional<NcclAlgorithm> forced_nccl_algorithm(const StrategySpec& strategy);

// One flow of a worker's share of an all-reduce: to worker `to`, `share` of what the worker sends
// in the ring (its shares sum to 1).
struct NcclFlow {
  int64_t to = 0;
  double share = 0.0;
  friend bool operator==(const NcclFlow&, const NcclFlow&) = default;
};
// Per worker, its flows (one per distinct successor, in increasing worker order): each of NCCL's
// channels carries an equal part of every buffer along a ring that runs through each node by one
// of nccl_node_rings and leaves it for the next node's same device (odd nodes run their rings
// backwards, so that a channel leaves and enters by NICs of one rail).
std::vector<std::vector<NcclFlow>> nccl_channel_flows(const Scenario& scenario);

// The share of the ring's bandwidth under Simple that `cost` moves `bytes` at, in NCCL's model
// (1 for the ring under Simple, about 1/2 under LL and 15/16 under LL128, the tree's relative
// bus bandwidth): the simulator runs the ring's flows at this share of their links.
double nccl_efficiency(const NcclMachine& machine, const NcclCost& cost, int64_t bytes);

// Seconds per byte of what each worker sends in the ring, on the busiest link its channels'
// flows cross (nccl_channel_flows: NVLink pairs or NVSwitch ports inside a node, PCIe where no
// NVLink joins a pair, a device's PCIe link, the host link unless GPUDirect, and the NICs between
// nodes), every flow at once: the analytic fidelity's bandwidth term. `nic_factor` scales the
// NICs' bandwidth (the network model's bandwidth factor).
double nccl_seconds_per_byte(const Scenario& scenario, double nic_factor);

}  // namespace ralp
