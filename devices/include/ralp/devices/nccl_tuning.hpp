// NCCL's tuning model for AllReduce: the latency and bandwidth of each algorithm and protocol, the
// one NCCL picks for a message size, and the channels its topology search builds for a cluster.
// Follows NVIDIA/nccl release 2.30.7 (commit 5067397c): src/graph/tuning.cc (ncclTopoTuneModel,
// ncclTopoGetAlgoTime), src/enqueue.cc (topoGetAlgoInfo), src/graph/search.cc and src/graph/topo.h.
// docs/nccl.md lists every constant with its source and what this model simplifies.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

#include "ralp/core/units.hpp"

namespace ralp {

// The NCCL release whose constants this model follows.
inline constexpr const char* kNcclRelease = "2.30.7";

// In NCCL's order (NCCL_ALGO_TREE is 0, NCCL_ALGO_RING 1): the order breaks ties in the choice.
enum class NcclAlgorithm { tree, ring };
// In NCCL's order (NCCL_PROTO_LL 0, LL128 1, SIMPLE 2).
enum class NcclProtocol { ll, ll128, simple };
// NCCL's compute-capability classes: pascal is SM60-69 (tuned with Volta's rows, no LL128),
// volta SM70-79, ampere SM80-89, hopper SM90-99, blackwell SM100 and up.
enum class NcclArch { pascal, volta, ampere, hopper, blackwell };
// How the GPUs of a node reach each other (NCCL's graph typeIntra: NVL or a PCI path).
enum class NcclIntraLink { nvlink, pcie };
// How a GPU reaches its NIC (NCCL's graph typeInter): through PCIe switches only (PIX/PXB),
// through another GPU over NVLink (PXN), or through the CPU (PHB/SYS).
enum class NcclNicPath { pcie_switch, pxn, cpu };

// What NCCL's tuning sees of a communicator: its size, link kinds, and the ring graph's channels.
struct NcclMachine {
  int64_t ranks = 2;  // GPUs in the communicator, >= 1
  int64_t nodes = 1;  // >= 1, <= ranks
  NcclIntraLink intra = NcclIntraLink::nvlink;
  NcclArch arch = NcclArch::ampere;
  bool amd_cpu = false;  // AMD x86 hosts: other LL ceilings, 2 us network overhead
  NcclNicPath nic_path = NcclNicPath::pcie_switch;
  int64_t channels = 1;          // the search's nChannels after duplication, >= 1
  BytesPerSecond bw_intra{0.0};  // per channel (NCCL's graph bwIntra, GB/s there)
  BytesPerSecond bw_inter{0.0};  // per channel (bwInter)
  Seconds latency_inter{0.0};    // the network device's latency (graph latencyInter)
  bool tree_pattern = false;     // maxTreePattern == NCCL_TOPO_PATTERN_TREE (one GPU per node)
  friend bool operator==(const NcclMachine&, const NcclMachine&) = default;
};

// One (algorithm, protocol) for AllReduce. time(bytes) is NCCL's ncclTopoGetAlgoTime for one
// operation: latency + bytes / bandwidth, with the tree's per-size bandwidth correction and the
// multi-node ring/Simple latency plateau (latency x plateau_factor from plateau_bytes on).
struct NcclCost {
  NcclAlgorithm algorithm = NcclAlgorithm::ring;
  NcclProtocol protocol = NcclProtocol::simple;
  Seconds latency{0.0};
  BytesPerSecond bandwidth{0.0};  // algorithm bandwidth: the buffer's bytes per second
  int64_t plateau_bytes = INT64_MAX;
  double plateau_factor = 1.0;
  // Seconds for an AllReduce of `bytes` (>= 0) bytes per rank.
  [[nodiscard]] Seconds time(int64_t bytes) const;
  friend bool operator==(const NcclCost&, const NcclCost&) = default;
};

// Every enabled (algorithm, protocol) for AllReduce on `m`, in NCCL's order (tree then ring; LL,
// LL128, Simple). A communicator of one rank has only ring/Simple, at zero cost. Throws
// std::invalid_argument when m's counts are out of range or a bandwidth is not positive.
std::vector<NcclCost> nccl_allreduce_costs(const NcclMachine& m);

// The cost NCCL picks for an AllReduce of `bytes` per rank: the least time, the first in NCCL's
// order on a tie. `forced` restricts the choice to one algorithm (NCCL_ALGO).
NcclCost nccl_allreduce_choice(const NcclMachine& m, int64_t bytes,
                               std::optional<NcclAlgorithm> forced = std::nullopt);

// A cluster as NCCL's topology detection sees it: identical nodes, each with its GPUs and NICs.
struct NcclTopology {
  int64_t nodes = 1;
  int64_t gpus_per_node = 1;
  NcclIntraLink intra = NcclIntraLink::nvlink;
  int64_t nvlinks_per_gpu = 0;          // NVLink links of each GPU (to a switch or its peers)
  BytesPerSecond pcie_bandwidth{12e9};  // NCCL's figure: lanes x GT/s x 60/80 (Gen3 x16 is 12 GB/s)
  int64_t nics_per_node = 0;            // >= 1 when nodes > 1
  BytesPerSecond nic_bandwidth{0.0};    // each NIC's line rate (NCCL: Mbit/s / 8000 GB/s)
  Seconds nic_latency{0.0};
  NcclArch arch = NcclArch::ampere;
  bool amd_cpu = false;
  NcclNicPath nic_path = NcclNicPath::pcie_switch;
};

// The ring channels NCCL's search (search.cc ncclTopoCompute) finds for `t`, simplified as
// docs/nccl.md says. Throws std::invalid_argument on counts < 1 or bandwidths <= 0 that are used.
NcclMachine nccl_machine(const NcclTopology& t);

std::string_view to_string(NcclAlgorithm a);
std::string_view to_string(NcclProtocol p);
// "ring" or "tree" in any case (NCCL_ALGO's names); nullopt otherwise.
std::optional<NcclAlgorithm> nccl_algorithm_from_string(std::string_view name);
// The class of compute capability major.minor (7.0 is volta); throws std::invalid_argument
// below 6.0.
NcclArch nccl_arch_for(int major, int minor);

}  // namespace ralp
