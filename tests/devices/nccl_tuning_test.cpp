// NCCL's AllReduce tuning model (NCCL 2.30.7): closed forms by hand, the choice just below and
// just above the sizes where it switches, a forced algorithm, names, and the ring search.
#include "ralp/devices/nccl_tuning.hpp"

#include <gtest/gtest.h>

#include <stdexcept>

namespace ralp {
namespace {

constexpr double kUs = 1e-6;
constexpr double kGBps = 1e9;
constexpr double kRelTol = 1e-9;
constexpr double kBelow = 0.99;  // a size 1% below a crossover
constexpr double kAbove = 1.01;

// A DGX A100: 8 GPUs x 12 NVLinks, PCIe Gen4 (24 GB/s in NCCL's figure), 8 x 200 Gb/s NICs.
NcclTopology dgx_a100(int64_t nodes) {
  NcclTopology t;
  t.nodes = nodes;
  t.gpus_per_node = 8;
  t.nvlinks_per_gpu = 12;
  t.pcie_bandwidth = BytesPerSecond(24e9);
  t.nics_per_node = 8;
  t.nic_bandwidth = BytesPerSecond(200e9 / 8);
  t.arch = NcclArch::ampere;
  return t;
}

NcclCost cost_of(const NcclMachine& m, NcclAlgorithm a, NcclProtocol p) {
  for (const auto& c : nccl_allreduce_costs(m)) {
    if (c.algorithm == a && c.protocol == p) return c;
  }
  throw std::logic_error("no such cost");
}

void expect_choice(const NcclMachine& m, double bytes, NcclAlgorithm a, NcclProtocol p) {
  const NcclCost c = nccl_allreduce_choice(m, static_cast<int64_t>(bytes));
  EXPECT_EQ(c.algorithm, a) << static_cast<int64_t>(bytes) << " bytes";
  EXPECT_EQ(c.protocol, p) << static_cast<int64_t>(bytes) << " bytes";
}

// Where latency a + S / bw_a meets latency b + S / bw_b (us, GB/s): S in bytes.
double crossover_bytes(double lat_a_us, double bw_a_gbps, double lat_b_us, double bw_b_gbps) {
  return (lat_b_us - lat_a_us) / (1.0 / bw_a_gbps - 1.0 / bw_b_gbps) * 1e3;
}

TEST(NcclTuning, SearchGivesDgxA100Channels) {
  // One node: 12 links x 20 GB/s = 240 GB/s per GPU; 6 rings at 40 GB/s fill it, and duplication
  // makes them 12 at 20 GB/s.
  const NcclMachine one = nccl_machine(dgx_a100(1));
  EXPECT_EQ(one.channels, 12);
  EXPECT_DOUBLE_EQ(one.bw_intra.value(), 20e9);
  // Across nodes each ring enters and leaves through one NIC: GPU-NIC path min(24 PCIe, 25 NIC)
  // = 24 GB/s, one ring per NIC at 24 GB/s (12 GB/s rings give 16 x 12, no more in total).
  const NcclMachine four = nccl_machine(dgx_a100(4));
  EXPECT_EQ(four.channels, 8);
  EXPECT_DOUBLE_EQ(four.bw_inter.value(), 24e9);
  EXPECT_EQ(four.ranks, 32);
  EXPECT_FALSE(four.tree_pattern);
}

TEST(NcclTuning, RingLatencyTwoNodesOfTwo) {
  NcclMachine m;
  m.ranks = 4;
  m.nodes = 2;
  m.channels = 2;
  m.bw_intra = m.bw_inter = BytesPerSecond(20e9);
  // nsteps 2(4-1) = 6, of which 2(2-1) = 2 cross the network. Simple: base 8.4 + 4 x max(NVLink
  // 3.4, net overhead 1 x 3) + 2 x NET 14.0 = 50.0 us. LL: 6.6 + 4 x max(0.6, 1) + 2 x 2.7 = 16.0.
  EXPECT_NEAR(cost_of(m, NcclAlgorithm::ring, NcclProtocol::simple).latency.value(), 50.0 * kUs,
              1e-12);
  EXPECT_NEAR(cost_of(m, NcclAlgorithm::ring, NcclProtocol::ll).latency.value(), 16.0 * kUs, 1e-12);
  // AMD hosts pay 2 us per step, x3 for Simple: 8.4 + 4 x 6 + 28 = 60.4 us.
  m.amd_cpu = true;
  EXPECT_NEAR(cost_of(m, NcclAlgorithm::ring, NcclProtocol::simple).latency.value(), 60.4 * kUs,
              1e-12);
  // A network device latency of 2 us is paid per network step, twice for Simple (the flush):
  // 8.4 + 24 + 2 x (14 + 2 + 2) = 68.4 us.
  m.latency_inter = Seconds(2e-6);
  EXPECT_NEAR(cost_of(m, NcclAlgorithm::ring, NcclProtocol::simple).latency.value(), 68.4 * kUs,
              1e-12);
}

TEST(NcclTuning, TreeLatencyGrowsWithLogOfNodes) {
  // Tree Simple: 8.4 + 2((8-1) x NVLink 4.0 + log2(nodes) x NET 14.0).
  // 4 nodes: 8.4 + 2(28 + 28) = 120.4 us; 16 nodes: 8.4 + 2(28 + 56) = 176.4 us.
  const NcclMachine four = nccl_machine(dgx_a100(4));
  const NcclMachine sixteen = nccl_machine(dgx_a100(16));
  EXPECT_NEAR(cost_of(four, NcclAlgorithm::tree, NcclProtocol::simple).latency.value(), 120.4 * kUs,
              1e-12);
  EXPECT_NEAR(cost_of(sixteen, NcclAlgorithm::tree, NcclProtocol::simple).latency.value(),
              176.4 * kUs, 1e-12);
  // Tree LL on 16 nodes: 6.8 + 2(7 x 0.6 + 4 x 5.0) = 55.2 us.
  EXPECT_NEAR(cost_of(sixteen, NcclAlgorithm::tree, NcclProtocol::ll).latency.value(), 55.2 * kUs,
              1e-12);
}

TEST(NcclTuning, BandwidthRefinementsOnFourNodes) {
  const NcclMachine m = nccl_machine(dgx_a100(4));
  // Bus bandwidth 8 x 24 = 192 GB/s; ring algorithm bandwidth is bus x 32/62.
  const double ring_ratio = 32.0 / 62.0;
  EXPECT_NEAR(cost_of(m, NcclAlgorithm::ring, NcclProtocol::simple).bandwidth.value(),
              192.0 * ring_ratio * kGBps, kRelTol * 1e11);
  // LL: min(llMaxBw Intel 4+ nodes 20.4, 192 x 0.5); LL128: min(192 x 0.92, 8 x 20).
  EXPECT_NEAR(cost_of(m, NcclAlgorithm::ring, NcclProtocol::ll).bandwidth.value(),
              20.4 * ring_ratio * kGBps, 1.0);
  EXPECT_NEAR(cost_of(m, NcclAlgorithm::ring, NcclProtocol::ll128).bandwidth.value(),
              160.0 * ring_ratio * kGBps, 1.0);
  // Tree: min(192 x 0.92, 8 x perChMaxTreeBw 17.8) = 142.4, halved; LL128 x 120/128.
  EXPECT_NEAR(cost_of(m, NcclAlgorithm::tree, NcclProtocol::simple).bandwidth.value(), 71.2 * kGBps,
              1.0);
  EXPECT_NEAR(cost_of(m, NcclAlgorithm::tree, NcclProtocol::ll128).bandwidth.value(), 66.75 * kGBps,
              1.0);
  // The tree's correction: LL at 64 KiB is log2(65536 / 64) = 10, factor 0.6:
  // 35.2 us + 65536 B / (10.2 GB/s x 0.6) = 45.908 us.
  const NcclCost tree_ll = cost_of(m, NcclAlgorithm::tree, NcclProtocol::ll);
  EXPECT_NEAR(tree_ll.time(65536).value(), 35.2e-6 + 65536.0 / (10.2e9 * 0.6), 1e-12);
}

TEST(NcclTuning, OneNodeSwitchesLlToLl128ToSimple) {
  const NcclMachine m = nccl_machine(dgx_a100(1));
  // 12 x 20 = 240 GB/s of bus bandwidth; ring ratio 8/14.
  //   ring LL      15.0 us  min(87.7, 120) x 8/14 = 50.11 GB/s
  //   ring LL128   40.6 us  220.8 x 8/14          = 126.17 GB/s
  //   ring Simple  56.0 us  240 x 8/14            = 137.14 GB/s
  // Tree never wins here: its latencies are no lower and its bandwidths are lower.
  const double ll = 87.7 * 8 / 14, ll128 = 220.8 * 8 / 14, simple = 240.0 * 8 / 14;
  const double to_ll128 = crossover_bytes(15.0, ll, 40.6, ll128);       // about 2.13 MB
  const double to_simple = crossover_bytes(40.6, ll128, 56.0, simple);  // about 24.3 MB
  EXPECT_NEAR(to_ll128, 2.128e6, 0.01e6);
  EXPECT_NEAR(to_simple, 24.29e6, 0.05e6);
  expect_choice(m, 1024, NcclAlgorithm::ring, NcclProtocol::ll);
  expect_choice(m, to_ll128 * kBelow, NcclAlgorithm::ring, NcclProtocol::ll);
  expect_choice(m, to_ll128 * kAbove, NcclAlgorithm::ring, NcclProtocol::ll128);
  expect_choice(m, to_simple * kBelow, NcclAlgorithm::ring, NcclProtocol::ll128);
  expect_choice(m, to_simple * kAbove, NcclAlgorithm::ring, NcclProtocol::simple);
}

TEST(NcclTuning, FourNodesSwitchTreeToRing) {
  const NcclMachine m = nccl_machine(dgx_a100(4));
  // Tree LL128 65.5 us at 66.75 GB/s x 0.9 (the correction for 2^18..2^20 x 64 B) against ring
  // LL128 144.4 us at 160 x 32/62 GB/s: they meet near 17.4 MB.
  const double tree_to_ring = crossover_bytes(65.5, 66.75 * 0.9, 144.4, 160.0 * 32 / 62);
  EXPECT_NEAR(tree_to_ring, 17.39e6, 0.02e6);
  expect_choice(m, tree_to_ring * kBelow, NcclAlgorithm::tree, NcclProtocol::ll128);
  expect_choice(m, tree_to_ring * kAbove, NcclAlgorithm::ring, NcclProtocol::ll128);
  // Ring LL128 against ring Simple, whose 282.8 us latency is x1.4 (the plateau) at these sizes:
  // 395.92 us at 192 x 32/62 GB/s; they meet near 124.6 MB.
  const double to_simple = crossover_bytes(144.4, 160.0 * 32 / 62, 282.8 * 1.4, 192.0 * 32 / 62);
  EXPECT_NEAR(to_simple, 124.6e6, 0.1e6);
  expect_choice(m, to_simple * kBelow, NcclAlgorithm::ring, NcclProtocol::ll128);
  expect_choice(m, to_simple * kAbove, NcclAlgorithm::ring, NcclProtocol::simple);
  // Small messages go by tree LL (35.2 us).
  expect_choice(m, 1024, NcclAlgorithm::tree, NcclProtocol::ll);
}

TEST(NcclTuning, SixteenNodesSwitchTreeToRingLater) {
  const NcclMachine m = nccl_machine(dgx_a100(16));
  // Tree LL128: 14 + 2(7 x 1.25 + 4 x 8.5) = 99.5 us at 66.75 GB/s (no correction from 2^21 x 64 B
  // on); ring LL128: 14 + 224 x 1.9 + 30 x 4.0 = 559.6 us at 160 x 128/254 GB/s. About 178 MB.
  const double tree_to_ring = crossover_bytes(99.5, 66.75, 559.6, 160.0 * 128 / 254);
  EXPECT_NEAR(tree_to_ring, 178.4e6, 0.2e6);
  expect_choice(m, tree_to_ring * kBelow, NcclAlgorithm::tree, NcclProtocol::ll128);
  expect_choice(m, tree_to_ring * kAbove, NcclAlgorithm::ring, NcclProtocol::ll128);
}

TEST(NcclTuning, ForcedAlgorithm) {
  const NcclMachine m = nccl_machine(dgx_a100(4));
  // 1 GiB: ring Simple unforced; tree forced gives tree Simple (71.2 > 66.75 GB/s).
  const int64_t gib = int64_t{1} << 30;
  EXPECT_EQ(nccl_allreduce_choice(m, gib).algorithm, NcclAlgorithm::ring);
  const NcclCost tree = nccl_allreduce_choice(m, gib, NcclAlgorithm::tree);
  EXPECT_EQ(tree.algorithm, NcclAlgorithm::tree);
  EXPECT_EQ(tree.protocol, NcclProtocol::simple);
  // 1 KiB: tree LL unforced; ring forced gives ring LL.
  const NcclCost ring = nccl_allreduce_choice(m, 1024, NcclAlgorithm::ring);
  EXPECT_EQ(ring.algorithm, NcclAlgorithm::ring);
  EXPECT_EQ(ring.protocol, NcclProtocol::ll);
}

TEST(NcclTuning, Vgg16GradientsBetweenTwoSingleGpuNodes) {
  // 138,357,544 fp32 parameters; 2 nodes x 1 GPU, one 100 Gb/s NIC each, PCIe Gen3.
  const int64_t bytes = 138357544LL * 4;
  NcclTopology t;
  t.nodes = 2;
  t.gpus_per_node = 1;
  t.intra = NcclIntraLink::pcie;
  t.nics_per_node = 1;
  t.nic_bandwidth = BytesPerSecond(100e9 / 8);
  const NcclMachine m = nccl_machine(t);
  // The search's steps below 12.5 GB/s: one ring at 12 GB/s. The tree pattern is a plain tree.
  EXPECT_EQ(m.channels, 1);
  EXPECT_DOUBLE_EQ(m.bw_inter.value(), 12e9);
  EXPECT_TRUE(m.tree_pattern);
  // Ring Simple: 8.4 + 2 x NET 14 = 36.4 us, x1.4 past 64 x 2 channels x 2 ranks bytes;
  // algorithm bandwidth 12 x 2/2 = 12 GB/s. Time = 50.96 us + 553,430,176 / 12e9 = 46.170 ms.
  const NcclCost c = nccl_allreduce_choice(m, bytes);
  EXPECT_EQ(c.algorithm, NcclAlgorithm::ring);
  EXPECT_EQ(c.protocol, NcclProtocol::simple);
  const double expected = 36.4e-6 * 1.4 + static_cast<double>(bytes) / 12e9;
  EXPECT_NEAR(c.time(bytes).value(), expected, 1e-12);
  // The wire's time, S / B_nic x 2(W - 1)/W = 44.27 ms: NCCL's model is 4.3% above it because
  // its search rounds the NIC's 12.5 GB/s down to the 12 GB/s step.
  const double wire = static_cast<double>(bytes) / 12.5e9 * (2.0 * (2 - 1) / 2);
  EXPECT_NEAR(c.time(bytes).value() / wire, 1.0428, 0.0005);
}

TEST(NcclTuning, Ll128EnableRule) {
  NcclMachine m = nccl_machine(dgx_a100(2));
  auto has_ll128 = [](const NcclMachine& mm) {
    for (const auto& c : nccl_allreduce_costs(mm)) {
      if (c.protocol == NcclProtocol::ll128) return true;
    }
    return false;
  };
  EXPECT_TRUE(has_ll128(m));
  m.nic_path = NcclNicPath::cpu;  // NIC behind the CPU: no LL128 across nodes
  EXPECT_FALSE(has_ll128(m));
  m.nic_path = NcclNicPath::pxn;  // through another GPU: only from Hopper on
  EXPECT_FALSE(has_ll128(m));
  m.arch = NcclArch::hopper;
  EXPECT_TRUE(has_ll128(m));
  m.intra = NcclIntraLink::pcie;  // PCIe between the node's GPUs: none
  EXPECT_FALSE(has_ll128(m));
  NcclMachine pascal = nccl_machine(dgx_a100(1));
  pascal.arch = NcclArch::pascal;
  EXPECT_FALSE(has_ll128(pascal));
  EXPECT_EQ(nccl_allreduce_costs(pascal).size(), 4U);
}

TEST(NcclTuning, OneRankCostsNothing) {
  NcclMachine m;
  m.ranks = 1;
  const NcclCost c = nccl_allreduce_choice(m, 1 << 20, NcclAlgorithm::tree);
  EXPECT_EQ(c.time(1 << 20).value(), 0.0);
}

TEST(NcclTuning, NamesAndBadInput) {
  EXPECT_EQ(nccl_algorithm_from_string("Ring"), NcclAlgorithm::ring);
  EXPECT_EQ(nccl_algorithm_from_string("TREE"), NcclAlgorithm::tree);
  EXPECT_EQ(nccl_algorithm_from_string("collnet"), std::nullopt);
  EXPECT_EQ(nccl_algorithm_from_string(""), std::nullopt);
  EXPECT_EQ(to_string(NcclAlgorithm::ring), "ring");
  EXPECT_EQ(to_string(NcclProtocol::ll128), "LL128");
  EXPECT_EQ(nccl_arch_for(6, 1), NcclArch::pascal);
  EXPECT_EQ(nccl_arch_for(7, 0), NcclArch::volta);
  EXPECT_EQ(nccl_arch_for(8, 6), NcclArch::ampere);
  EXPECT_EQ(nccl_arch_for(9, 0), NcclArch::hopper);
  EXPECT_EQ(nccl_arch_for(10, 0), NcclArch::blackwell);
  EXPECT_THROW(nccl_arch_for(5, 2), std::invalid_argument);
  NcclMachine bad;
  bad.nodes = 3;
  EXPECT_THROW(nccl_allreduce_costs(bad), std::invalid_argument);
  NcclTopology no_nic = dgx_a100(2);
  no_nic.nics_per_node = 0;
  EXPECT_THROW(nccl_machine(no_nic), std::invalid_argument);
  EXPECT_THROW(nccl_allreduce_choice(nccl_machine(dgx_a100(1)), -1), std::invalid_argument);
}

}  // namespace
}  // namespace ralp
