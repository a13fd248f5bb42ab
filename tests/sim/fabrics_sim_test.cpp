// The simulator on today's fabrics against closed forms (docs/fabrics.md): NCCL's all-reduce over
// InfiniBand between nodes and NVSwitch inside them, its latency from NCCL's tuning model and its
// bytes at the links' rates.
#include <gtest/gtest.h>

#include "ralp/sim/simulate.hpp"
#include "ralp/spec/nccl_plan.hpp"
#include "sim_fixtures.hpp"

namespace ralp {
namespace {

using testing::fc_model;
using testing::kInstantDevice;
using testing::relative_error;
using testing::scenario_from;

// Devices that compute nothing on nodes of `per_node`, `nics` NICs of `nic` each, InfiniBand,
// one buffer for the whole model (no fusion cycles), NCCL with `algorithm`.
Scenario nccl_cluster(const std::string& model, int workers, int per_node, int nics,
                      const std::string& nic, const std::string& algorithm) {
  const std::string nodes =
      per_node > 1 ? R"("devices_per_node": )" + std::to_string(per_node) +
                         R"(, "nics_per_node": )" + std::to_string(nics) +
                         R"(, "node_interconnect": {"kind": "nvswitch", "bandwidth": "300GBps"}, )"
                   : "";
  return scenario_from(R"("model": )" + model + R"(, "batch_per_worker": 8, "cluster": {"workers": )" +
                       std::to_string(workers) + R"(, "parameter_servers": 0, "worker_device": )" +
                       kInstantDevice + ", " + nodes + R"("platform": {"kind": "star",
                       "nic_bandwidth": ")" + nic + R"(", "latency": 0, "fabric": "infiniband"}},
                       "strategies": [{"name": "allreduce", "transport": "nccl", "cycle_time": 0,
                       "fusion_threshold": "4GB", "nccl_algorithm": ")" + algorithm + R"("}])");
}

// NCCL's latency for the scenario's one buffer, and its protocol's share of the ring's rate.
struct Expected {
  double latency = 0.0;
  double efficiency = 1.0;
};
Expected nccl_expected(const Scenario& s, int64_t bytes) {
  const NcclMachine m = nccl_machine_of(s);
  const NcclCost cost = nccl_allreduce_choice(m, bytes, forced_nccl_algorithm(s.strategies[0]));
  return {cost.time(0).value(), nccl_efficiency(m, cost, bytes)};
}

TEST(FabricsSim, VggGradientsBetweenTwoNodesOverInfinibandTakeTheirBytesOverTheNic) {
  // 138,357,544 parameters = 553,430,176 bytes; 2 members: each sends the whole buffer once
  // (2 (W - 1) / W = 1), over 100 Gb/s = 12.5 GB/s: 44.27 ms, plus NCCL's latency.
  const Scenario s = nccl_cluster(R"("vgg16")", 2, 1, 1, "100Gbps", "auto");
  const auto r = sim::simulate_isolated(s, s.strategies[0], std::nullopt, {});
  const int64_t bytes = 553430176;
  const Expected e = nccl_expected(s, bytes);
  EXPECT_NEAR(e.efficiency, 1.0, 1e-9);  // ring, Simple at this size
  const double bound = (bytes + 24.0) / 12.5e9 + e.latency;
  EXPECT_LT(relative_error(r.step_time_mean_s, bound), 0.10) << r.step_time_mean_s << " vs " << bound;
  EXPECT_LT(relative_error(r.step_time_mean_s, bound), 0.01) << r.step_time_mean_s << " vs " << bound;
}

TEST(FabricsSim, RingAndTreeOnTwoNodesOfTwoDevicesPayNcclsLatencyAndTheNicsBytes) {
  // 4 MB over 4 members: each sends 2 x 3/4 x 4 MB = 6 MB (+ 6 headers), half to its node's
  // other device over NVSwitch and half to the next node: the node's one NIC carries 6 MB each
  // way at 12.5 GB/s (0.48 ms), at the chosen protocol's share.
  for (const std::string algorithm : {"ring", "tree"}) {
    const Scenario s = nccl_cluster(fc_model(1000, 1000), 4, 2, 1, "100Gbps", algorithm);
    const auto r = sim::simulate_isolated(s, s.strategies[0], std::nullopt, {});
    const Expected e = nccl_expected(s, 4000000);
    const double expected = e.latency + (6e6 + 6 * 24) / 12.5e9 / e.efficiency;
    EXPECT_LT(relative_error(r.step_time_mean_s, expected), 0.02)
        << algorithm << ": " << r.step_time_mean_s << " vs " << expected;
  }
}

TEST(FabricsSim, DgxA100RingRunsAtItsBandwidthBoundWithNoHostLinkShared) {
  // 8 nodes of 8 on NVSwitch, a 200 Gb/s NIC per device, GPUDirect (the default): each member
  // sends 2 x 63/64 of the buffer, 1/8 of it through its own NIC (25 GB/s) and 7/8 through its
  // NVSwitch port (300 GB/s): the NICs bound the ring.
  const Scenario s = nccl_cluster(fc_model(5000, 5000), 64, 8, 8, "200Gbps", "ring");
  const auto r = sim::simulate_isolated(s, s.strategies[0], std::nullopt, {});
  const double wire = 2.0 * 63.0 / 64.0 * 1e8 + 126 * 24;
  const Expected e = nccl_expected(s, 100000000);
  const double bound = e.latency + std::max(wire / 8 / 25e9, wire * 7 / 8 / 300e9) / e.efficiency;
  EXPECT_LT(relative_error(r.step_time_mean_s, bound), 0.10) << r.step_time_mean_s << " vs " << bound;
  for (const LinkLoad& l : r.links) {
    EXPECT_EQ(l.name.find("-root-"), std::string::npos) << l.name << " carries NIC traffic";
  }
}

}  // namespace
}  // namespace ralp
