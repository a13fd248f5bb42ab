// NCCL 2.30.7's AllReduce tuning model and a simplified version of its ring-channel search.
// The model works in NCCL's units, microseconds and GB/s (1e9 bytes/s), and converts at the API.
#include "ralp/devices/nccl_tuning.hpp"

#include <algorithm>
#include <array>
#include <cctype>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>

namespace ralp {
namespace {

constexpr int kProtocols = 3;
constexpr double kUs = 1e-6;
constexpr double kGBps = 1e9;

using ProtoRow = std::array<double, kProtocols>;  // LL, LL128, Simple

// baseLatencies (us), src/graph/tuning.cc ncclTunerConstantsDefaults, NCCL 2.30.7.
constexpr ProtoRow kBaseLatTree{6.8, 14.0, 8.4};
constexpr ProtoRow kBaseLatRing{6.6, 14.0, 8.4};

// hwLatencies (us) per hop, src/graph/tuning.cc ncclTunerConstantsDefaults, NCCL 2.30.7.
constexpr ProtoRow kNvlinkLatTree{0.6, 1.25, 4.0};
constexpr ProtoRow kNvlinkLatRing{0.6, 1.9, 3.4};
constexpr ProtoRow kPciLatTree{1.0, 1.9, 4.0};
constexpr ProtoRow kPciLatRing{1.0, 2.5, 5.7};
constexpr ProtoRow kNetLatTree{5.0, 8.5, 14.0};
constexpr ProtoRow kNetLatRing{2.7, 4.0, 14.0};

// Ceilings in GB/s, src/graph/tuning.cc ncclTunerConstantsDefaults, NCCL 2.30.7. Columns are
// 1 node, 2 nodes, more than 2 nodes.
using NodeRow = std::array<double, 3>;
// llMaxBws: rows Volta (single node) / Intel CPU (multi-node), Ampere / AMD CPU, Hopper, Blackwell.
constexpr std::array<NodeRow, 4> kLlMaxBws{
    {{39.0, 39.0, 20.4}, {87.7, 22.5, 19.0}, {141.0, 45.0, 35.0}, {282.0, 90.0, 70.0}}};
// perChMaxRingLL128Bws, perChMaxTreeLL128Bws, perChMaxTreeBws: rows Volta, Ampere, Hopper,
// Blackwell.
constexpr std::array<NodeRow, 4> kPerChMaxRingLl128{
    {{20.0, 20.0, 20.0}, {20.0, 20.0, 20.0}, {36.7, 36.7, 36.7}, {40.0, 40.0, 40.0}}};
constexpr std::array<NodeRow, 4> kPerChMaxTreeLl128{
    {{20.0, 20.0, 20.0}, {20.0, 20.0, 20.0}, {36.7, 36.7, 29.0}, {55.6, 31.67, 20.0}}};
constexpr std::array<NodeRow, 4> kPerChMaxTree{
    {{26.5, 18.5, 10.0}, {24.0, 23.6, 17.8}, {38.7, 41.4, 36.0}, {70.0, 42.8, 24.0}}};

// Bus-bandwidth refinements, src/graph/tuning.cc ncclTopoTuneModel, NCCL 2.30.7.
constexpr double kRingLlFactor = 0.5;
constexpr double kRingLl128Factor = 0.92;
constexpr double kTreeFactor = 0.92;
constexpr double kTreeLlDivisor = 3.8;
constexpr double kTreeLl128OneNode = 7.0 / 9.0;
constexpr double kTreeLl128MultiNode = 120.0 / 128.0;
constexpr double kTreePatternFactor = 0.85;
constexpr double kTreeBusToAlg = 0.5;
// getNetOverhead (us): Intel and other CPUs 1, AMD x86 2; Simple pays it 3 times.
constexpr double kNetOverheadIntel = 1.0;
constexpr double kNetOverheadAmd = 2.0;
constexpr double kNetOverheadSimpleTimes = 3.0;

// ncclTopoGetAlgoTime, src/graph/tuning.cc, NCCL 2.30.7: the tree's bandwidth correction for
// sizes 64 B x 2^i (i = log2(bytes / 64), 0 <= i < 23), rows LL, LL128, Simple.
constexpr int kTreeCorrectionSizes = 23;
// clang-format off
constexpr std::array<std::array<double, 24>, kProtocols> kTreeCorrection{{
    {1.0, 1.0, 1.0, 1.0,  .9,  .8,  .7,  .7,  .7,  .7,  .6,  .5,
      .4,  .4,  .5,  .6,  .7,  .8,  .9, 1.0, 1.0, 1.0, 1.0, 1.0},
    {1.0, 1.0, 1.0, 1.0, 1.0,  .9,  .8,  .8,  .8,  .7,  .6,  .6,
      .6,  .6,  .6,  .6,  .8,  .9,  .9,  .9,  .9, 1.0, 1.0, 1.0},
    { .9,  .9,  .9,  .9,  .9,  .9,  .9,  .8,  .7,  .6,  .6,  .5,
      .5,  .5,  .5,  .6,  .7,  .8,  .7,  .7,  .8,  .9,  .9,  .9}}};
// clang-format on
// Ring/Simple across nodes: latency x1.4 (x1.9 before SM80) once bytes / (channels x ranks) >= 64.
constexpr double kRingPlateauSm80 = 1.4;
constexpr double kRingPlateauOlder = 1.9;
constexpr int64_t kRingPlateauBytesPerChannelRank = 64;
// src/include/device.h MAXCHANNELS and src/graph/connect.cc ncclTopoPostset: the communicator runs
// twice the search's channels (x2 again on Hopper+ across nodes with bwIntra > 45 and < 16).
constexpr int64_t kMaxChannels = 64;
constexpr double kHopperDoubleAbove = 45.0;
constexpr int64_t kHopperDoubleBelow = 16;

int proto_index(NcclProtocol p) { return static_cast<int>(p); }

// compCapIndex in tuning.cc: Volta's rows serve everything below SM80.
int arch_row(NcclArch a) {
  switch (a) {
    case NcclArch::pascal:
    case NcclArch::volta:
      return 0;
    case NcclArch::ampere:
      return 1;
    case NcclArch::hopper:
      return 2;
    case NcclArch::blackwell:
      return 3;
  }
  return 0;
}

int64_t floor_log2(int64_t n) {  // log2i in NCCL: -1 for 0
  int64_t r = -1;
  while (n > 0) {
    n >>= 1;
    ++r;
  }
  return r;
}

void check_machine(const NcclMachine& m) {
  if (m.ranks < 1 || m.nodes < 1 || m.nodes > m.ranks) {
    throw std::invalid_argument("NCCL machine: expected 1 <= nodes <= ranks");
  }
  if (m.ranks == 1) return;
  if (m.channels < 1) throw std::invalid_argument("NCCL machine: expected channels >= 1");
  if (!(m.bw_intra.value() > 0.0) || !(m.bw_inter.value() > 0.0)) {
    throw std::invalid_argument("NCCL machine: expected per-channel bandwidths > 0");
  }
}

// LL128's default enable rule in ncclTopoTuneModel: SM70 or newer, typeIntra <= NVB (NVLink, or
// one GPU per node), and typeInter <= PXB (<= PXN from SM90 on, NCCL_LL128_C2C's default).
bool ll128_enabled(const NcclMachine& m) {
  if (m.arch == NcclArch::pascal) return false;
  const bool one_gpu_per_node = m.ranks == m.nodes;
  if (m.intra != NcclIntraLink::nvlink && !one_gpu_per_node) return false;
  if (m.nodes == 1) return true;
  if (m.arch >= NcclArch::hopper) return m.nic_path != NcclNicPath::cpu;
  return m.nic_path == NcclNicPath::pcie_switch;
}

// Bus bandwidth (GB/s) after tuning.cc's refinements, then converted to algorithm bandwidth.
double algorithm_bw(const NcclMachine& m, NcclAlgorithm a, NcclProtocol p) {
  const int node_col = m.nodes <= 2 ? static_cast<int>(m.nodes) - 1 : 2;
  const int ll_row = m.nodes == 1 ? arch_row(m.arch) : (m.amd_cpu ? 1 : 0);
  const int row = arch_row(m.arch);
  const double ll_max = kLlMaxBws[ll_row][node_col];
  const double ch = static_cast<double>(m.channels);
  const double per_channel = (m.nodes <= 2 ? m.bw_intra : m.bw_inter).value() / kGBps;
  double bus = ch * per_channel;
  if (a == NcclAlgorithm::ring) {
    if (p == NcclProtocol::ll) bus = std::min(ll_max, bus * kRingLlFactor);
    if (p == NcclProtocol::ll128)
      bus = std::min(bus * kRingLl128Factor, ch * kPerChMaxRingLl128[row][node_col]);
    const double nsteps = 2.0 * static_cast<double>(m.ranks - 1);
    return bus * static_cast<double>(m.ranks) / nsteps;
  }
  bus = std::min(bus * kTreeFactor, ch * kPerChMaxTree[row][node_col]);
  if (p == NcclProtocol::ll) bus = std::min(bus / kTreeLlDivisor, ll_max);
  if (p == NcclProtocol::ll128) {
    const double f = m.nodes == 1 ? kTreeLl128OneNode : kTreeLl128MultiNode;
    bus = std::min(bus * f, ch * kPerChMaxTreeLl128[row][node_col]);
  }
  if (m.tree_pattern) bus *= kTreePatternFactor;
  return bus * kTreeBusToAlg;
}

// Latency (us) as ncclTopoTuneModel composes it for AllReduce.
double latency_us(const NcclMachine& m, NcclAlgorithm a, NcclProtocol p) {
  const int pi = proto_index(p);
  const bool ring = a == NcclAlgorithm::ring;
  const bool nvlink = m.intra == NcclIntraLink::nvlink && m.ranks > m.nodes;
  const ProtoRow& intra_row =
      nvlink ? (ring ? kNvlinkLatRing : kNvlinkLatTree) : (ring ? kPciLatRing : kPciLatTree);
  double intra = intra_row[pi];
  // With one rank per node every hop is a network hop: NCCL then takes the tree's NET latency.
  double inter = (m.ranks == m.nodes ? kNetLatTree : (ring ? kNetLatRing : kNetLatTree))[pi];
  const double net_device_us = m.latency_inter.value() / kUs;
  inter += net_device_us;
  if (p == NcclProtocol::simple) inter += net_device_us;  // the flush
  if (!ring) {
    const double ppn_hops = static_cast<double>(m.ranks / m.nodes - 1);
    return kBaseLatTree[pi] +
           2.0 * (ppn_hops * intra + static_cast<double>(floor_log2(m.nodes)) * inter);
  }
  double overhead = 0.0;
  if (m.nodes > 1) {
    overhead = m.amd_cpu ? kNetOverheadAmd : kNetOverheadIntel;
    if (p == NcclProtocol::simple) overhead *= kNetOverheadSimpleTimes;
  }
  intra = std::max(intra, overhead);
  const int64_t nsteps = 2 * (m.ranks - 1);
  const int64_t inter_steps = m.nodes == 1 ? 0 : 2 * (m.nodes - 1);
  return kBaseLatRing[pi] + static_cast<double>(nsteps - inter_steps) * intra +
         static_cast<double>(inter_steps) * inter;
}

// comm->nChannels after ncclTopoPostset: what the ring plateau rule divides by.
int64_t communicator_channels(const NcclMachine& m) {
  int64_t c = std::min(kMaxChannels, 2 * m.channels);
  if (m.arch >= NcclArch::hopper && m.nodes > 1 &&
      m.bw_intra.value() / kGBps > kHopperDoubleAbove && c < kHopperDoubleBelow) {
    c *= 2;
  }
  return c;
}

// --- The ring search (src/graph/search.cc ncclTopoCompute, NCCL 2.30.7), simplified. ---

// Speeds (GB/s per channel) the search steps through, search.cc, NCCL 2.30.7: within one node
// (speedArrayIntra / sm90SpeedArrayIntra / sm100SpeedArrayIntra) and across nodes (...Inter).
constexpr std::array kSpeedsIntra{40.0, 30.0, 20.0, 18.0, 15.0, 12.0, 10.0,
                                  9.0,  7.0,  6.0,  5.0,  4.0,  3.0};
constexpr std::array kSpeedsInter{48.0, 30.0, 28.0, 24.0, 20.0, 18.0, 15.0, 12.0, 10.0, 9.0,
                                  7.0,  6.0,  5.0,  4.0,  3.0,  2.4,  1.2,  0.24, 0.12};
constexpr std::array kSpeedsIntraSm90{60.0, 50.0, 40.0, 30.0, 24.0, 20.0,
                                      15.0, 12.0, 11.0, 6.0,  3.0};
constexpr std::array kSpeedsInterSm90{48.0, 45.0, 42.0, 40.0, 30.0, 24.0, 22.0, 20.0, 17.5,
                                      15.0, 12.0, 6.0,  3.0,  2.4,  1.2,  0.24, 0.12};
constexpr std::array kSpeedsIntraSm100{90.0, 80.0, 70.0, 60.0, 50.0, 45.0,
                                       40.0, 30.0, 24.0, 20.0, 19.0, 18.0};
constexpr std::array kSpeedsInterSm100{96.0, 86.0, 80.0, 48.0, 45.1, 42.0, 40.0, 30.0, 24.0, 22.0,
                                       20.0, 17.5, 15.0, 12.0, 6.0,  3.0,  2.4,  1.2,  0.24, 0.12};
// NVLink GB/s per link, src/graph/topo.h SM60/SM70/SM80/SM90/SM100_NVLINK_BW, NCCL 2.30.7.
constexpr double kNvlinkSm60 = 18.0;
constexpr double kNvlinkSm70 = 20.0;
constexpr double kNvlinkSm80 = 20.0;
constexpr double kNvlinkSm90 = 20.6;
constexpr double kNvlinkSm100 = 40.1;
// init.cc: the ring graph's maxChannels is MAXCHANNELS / 2.
constexpr int64_t kRingMaxChannels = kMaxChannels / 2;
// search.cc: lower speeds are tried only down to 0.49 of a solution's; ncclTopoDupChannels
// doubles channels at >= 25 GB/s, except from SM90 on below 50 GB/s with more than 4 channels.
constexpr double kLowerSpeedRatio = 0.49;
constexpr double kDupMinSpeed = 25.0;
constexpr double kDupSm90MinSpeed = 50.0;
constexpr int64_t kDupSm90MaxChannels = 4;
constexpr double kRoundSlack = 1e-9;

std::vector<double> search_speeds(NcclArch a, bool inter) {
  auto v = [](const auto& arr) { return std::vector<double>(arr.begin(), arr.end()); };
  if (a == NcclArch::blackwell) return inter ? v(kSpeedsInterSm100) : v(kSpeedsIntraSm100);
  if (a == NcclArch::hopper) return inter ? v(kSpeedsInterSm90) : v(kSpeedsIntraSm90);
  return inter ? v(kSpeedsInter) : v(kSpeedsIntra);
}

double nvlink_per_link(NcclArch a) {
  switch (a) {
    case NcclArch::pascal:
      return kNvlinkSm60;
    case NcclArch::volta:
      return kNvlinkSm70;
    case NcclArch::ampere:
      return kNvlinkSm80;
    case NcclArch::hopper:
      return kNvlinkSm90;
    case NcclArch::blackwell:
      return kNvlinkSm100;
  }
  return kNvlinkSm80;
}

// What one node offers a ring channel, GB/s: each ring leaves every GPU once (gpu_total), and
// across nodes enters and leaves the node through one NIC (nic_path: min of PCIe and NIC).
struct NodeBandwidth {
  double gpu_total = 0;  // getTotalBw: max(NVLink sum, PCIe)
  double max_path = 0;   // getMaxBw: the best GPU-GPU path in a node, or GPU-NIC path across nodes
  double nic_path = 0;
  int64_t nics = 0;
  int64_t gpus = 1;
};

// Ring channels that fit at `speed`: every link a channel crosses loses `speed` of its bandwidth.
int64_t channels_at(const NodeBandwidth& b, double speed) {
  auto fit = [speed](double bw) {
    // At most NCCL's channel count, so that a path of any bandwidth stays an integer.
    return static_cast<int64_t>(
        std::floor(std::min(bw / speed + kRoundSlack, static_cast<double>(kRingMaxChannels))));
  };
  int64_t n = kRingMaxChannels;
  if (b.gpus > 1 || b.nics == 0) n = std::min(n, fit(b.gpu_total));
  if (b.nics > 0) n = std::min({n, b.nics * fit(b.nic_path), fit(b.gpu_total)});
  return n;
}

struct Found {
  int64_t channels = 0;
  double speed = 0;
};

// Pass 1: the highest speed the paths allow, then lower ones while they may give more in total.
Found search_first_pass(const NodeBandwidth& b, const std::vector<double>& speeds) {
  size_t i = 0;
  while (i + 1 < speeds.size() && (speeds[i] > b.max_path || speeds[i] > b.gpu_total)) ++i;
  Found best;
  for (; i < speeds.size(); ++i) {
    if (best.channels > 0 && speeds[i] / best.speed <= kLowerSpeedRatio) break;
    const int64_t n = channels_at(b, speeds[i]);
    if (static_cast<double>(n) * speeds[i] > static_cast<double>(best.channels) * best.speed)
      best = {n, speeds[i]};
    if (best.channels == kRingMaxChannels) break;
    if (best.channels > 0 && static_cast<double>(best.channels) * best.speed >= b.gpu_total) break;
  }
  return best;
}

}  // namespace

Seconds NcclCost::time(int64_t bytes) const {
  double bw = bandwidth.value();
  const int64_t log_size = floor_log2(bytes >> 6);
  if (algorithm == NcclAlgorithm::tree && log_size >= 0 && log_size < kTreeCorrectionSizes) {
    bw *=
        kTreeCorrection[static_cast<size_t>(proto_index(protocol))][static_cast<size_t>(log_size)];
  }
  const double lat = latency.value() * (bytes >= plateau_bytes ? plateau_factor : 1.0);
  return Seconds(lat + static_cast<double>(bytes) / bw);
}

std::vector<NcclCost> nccl_allreduce_costs(const NcclMachine& m) {
  check_machine(m);
  if (m.ranks == 1) {
    return {NcclCost{NcclAlgorithm::ring, NcclProtocol::simple, Seconds(0.0),
                     BytesPerSecond(std::numeric_limits<double>::infinity())}};
  }
  std::vector<NcclCost> out;
  const bool ll128 = ll128_enabled(m);
  for (NcclAlgorithm a : {NcclAlgorithm::tree, NcclAlgorithm::ring}) {
    for (NcclProtocol p : {NcclProtocol::ll, NcclProtocol::ll128, NcclProtocol::simple}) {
      if (p == NcclProtocol::ll128 && !ll128) continue;
      NcclCost c{a, p, Seconds(latency_us(m, a, p) * kUs),
                 BytesPerSecond(algorithm_bw(m, a, p) * kGBps)};
      if (a == NcclAlgorithm::ring && p == NcclProtocol::simple && m.nodes > 1) {
        c.plateau_bytes = kRingPlateauBytesPerChannelRank * communicator_channels(m) * m.ranks;
        c.plateau_factor = m.arch >= NcclArch::ampere ? kRingPlateauSm80 : kRingPlateauOlder;
      }
      out.push_back(c);
    }
  }
  return out;
}

NcclCost nccl_allreduce_choice(const NcclMachine& m, int64_t bytes,
                               std::optional<NcclAlgorithm> forced) {
  if (bytes < 0) throw std::invalid_argument("NCCL AllReduce: expected bytes >= 0");
  const std::vector<NcclCost> costs = nccl_allreduce_costs(m);
  const NcclCost* best = nullptr;
  double best_time = std::numeric_limits<double>::infinity();
  for (const NcclCost& c : costs) {
    if (forced && c.algorithm != *forced && m.ranks > 1) continue;
    const double t = c.time(bytes).value();
    if (best == nullptr || t < best_time) {  // strict: the first in NCCL's order keeps a tie
      best = &c;
      best_time = t;
    }
  }
  if (best == nullptr)
    throw std::invalid_argument("NCCL AllReduce: no enabled protocol for the forced algorithm");
  return *best;
}

NcclMachine nccl_machine(const NcclTopology& t) {
  if (t.nodes < 1 || t.gpus_per_node < 1)
    throw std::invalid_argument("NCCL topology: expected nodes, gpus_per_node >= 1");
  const bool inter = t.nodes > 1;
  const bool nvlink = t.intra == NcclIntraLink::nvlink && t.gpus_per_node > 1;
  if (nvlink && t.nvlinks_per_gpu < 1)
    throw std::invalid_argument("NCCL topology: expected nvlinks_per_gpu >= 1");
  if (!(t.pcie_bandwidth.value() > 0.0))
    throw std::invalid_argument("NCCL topology: expected pcie_bandwidth > 0");
  if (inter && (t.nics_per_node < 1 || !(t.nic_bandwidth.value() > 0.0))) {
    throw std::invalid_argument(
        "NCCL topology: expected nics_per_node >= 1 and nic_bandwidth > 0 across nodes");
  }
  NodeBandwidth b;
  b.gpus = t.gpus_per_node;
  const double pcie = t.pcie_bandwidth.value() / kGBps;
  const double nvl =
      nvlink ? static_cast<double>(t.nvlinks_per_gpu) * nvlink_per_link(t.arch) : 0.0;
  b.gpu_total = std::max(pcie, nvl);
  if (inter) {
    b.nics = t.nics_per_node;
    b.nic_path = std::min(pcie, t.nic_bandwidth.value() / kGBps);
    b.max_path = b.nic_path;
  } else {
    b.max_path = nvlink ? nvl : pcie;
  }
  const std::vector<double> speeds = search_speeds(t.arch, inter);
  Found f = search_first_pass(b, speeds);
  // ncclTopoDupChannels.
  const bool sm90_keep =
      t.arch >= NcclArch::hopper && f.speed < kDupSm90MinSpeed && f.channels > kDupSm90MaxChannels;
  if (f.speed >= kDupMinSpeed && !sm90_keep) {
    const int64_t dup = std::min(2 * f.channels, kRingMaxChannels);
    f.speed /= static_cast<double>((dup + f.channels - 1) / f.channels);
    f.channels = dup;
  }
  // Pass 2: every faster speed, kept where the links carry at least as many channels.
  size_t i = 0;
  while (i + 1 < speeds.size() && speeds[i] > f.speed) ++i;
  const int64_t min_channels = f.channels;
  for (; i > 0; --i) {
    const int64_t n = channels_at(b, speeds[i - 1]);
    if (n >= min_channels &&
        static_cast<double>(n) * speeds[i - 1] > static_cast<double>(f.channels) * f.speed) {
      f = {n, speeds[i - 1]};
    }
  }
  NcclMachine m;
  m.ranks = t.nodes * t.gpus_per_node;
  m.nodes = t.nodes;
  m.intra = t.intra;
  m.arch = t.arch;
  m.amd_cpu = t.amd_cpu;
  m.nic_path = t.nic_path;
  m.channels = f.channels;
  m.bw_intra = m.bw_inter = BytesPerSecond(f.speed * kGBps);
  m.latency_inter = inter ? t.nic_latency : Seconds(0.0);
  m.tree_pattern = t.gpus_per_node == 1;
  return m;
}

std::string_view to_string(NcclAlgorithm a) { return a == NcclAlgorithm::ring ? "ring" : "tree"; }

std::string_view to_string(NcclProtocol p) {
  switch (p) {
    case NcclProtocol::ll:
      return "LL";
    case NcclProtocol::ll128:
      return "LL128";
    case NcclProtocol::simple:
      return "Simple";
  }
  return "Simple";
}

std::optional<NcclAlgorithm> nccl_algorithm_from_string(std::string_view name) {
  std::string lower(name);
  std::transform(lower.begin(), lower.end(), lower.begin(),
                 [](unsigned char ch) { return static_cast<char>(std::tolower(ch)); });
  if (lower == "ring") return NcclAlgorithm::ring;
  if (lower == "tree") return NcclAlgorithm::tree;
  return std::nullopt;
}

NcclArch nccl_arch_for(int major, int minor) {
  const int cc = major * 10 + minor;
  if (cc < 60) throw std::invalid_argument("NCCL: compute capability below 6.0 is not modelled");
  if (cc >= 100) return NcclArch::blackwell;
  if (cc >= 90) return NcclArch::hopper;
  if (cc >= 80) return NcclArch::ampere;
  if (cc >= 70) return NcclArch::volta;
  return NcclArch::pascal;
}

}  // namespace ralp
