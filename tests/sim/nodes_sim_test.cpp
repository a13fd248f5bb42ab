// The simulator on nodes of several devices: closed forms on the ideal network model, with compute
// that vanishes.
#include <algorithm>
#include <filesystem>
#include <optional>
#include <tuple>

#include <gtest/gtest.h>

#include "../support/run_command.hpp"
#include "ralp/sim/simulate.hpp"
#include "sim_fixtures.hpp"

namespace ralp {
namespace {

using testing::fc_model;
using testing::host;
using testing::kInstantDevice;
using testing::relative_error;
using testing::scenario_from;

constexpr double kTolerance = 0.01;
constexpr double kHeader = 24.0;

const NodeBytes& node(const StrategyResult& r, const std::string& name) {
  for (const auto& n : r.nodes) {
    if (n.name == name) return n;
  }
  throw std::runtime_error("no node " + name);
}

double link_bytes(const StrategyResult& r, const std::string& name) {
  for (const auto& l : r.links) {
    if (l.name == name) return l.bytes;
  }
  return 0.0;
}

// 4 MB of weights on `workers` devices in nodes of `per_node`, NVSwitch at 100 GB/s inside, NICs of
// 1 GB/s (8 Gbps) on a star.
Scenario nodes_scenario(int workers, int per_node, const std::string& cluster_extra,
                        const std::string& strategies, const std::string& platform_extra = "") {
  return scenario_from(
      R"("model": )" + fc_model(1000, 1000) + R"(, "batch_per_worker": 8,
      "cluster": {"workers": )" + std::to_string(workers) + R"(, "devices_per_node": )" +
      std::to_string(per_node) + R"(, "worker_device": )" + kInstantDevice +
      R"(, "node_interconnect": {"kind": "nvswitch", "bandwidth": "800Gbps"}, )" + cluster_extra +
      R"("platform": {"kind": "star", "nic_bandwidth": "8Gbps", "latency": 0)" + platform_extra +
      R"(}}, "network_model": "ideal", "strategies": )" + strategies);
}

TEST(NodesSim, RingOfTwoNodesOfTwoMovesTwiceThreeQuartersOverEachNic) {
  // NCCL's ring worker-0 -> 1 -> 2 -> 3 -> 0 crosses node-0's NIC out once (1 -> 2) and in once
  // (3 -> 0). Each member sends 2 (N - 1) chunks of S / N: 2 x 3/4 x 4 MB = 6 MB, plus a header
  // each; at 1 GB/s the slow edges take 6 ms. Workers 2 and 3 also tell worker-0 the buffer is
  // ready, and it answers each with go: headers only.
  for (const char* ring : {"message", "coalesced"}) {
    const Scenario s = nodes_scenario(
        4, 2, R"("parameter_servers": 0, )",
        std::string(R"([{"name": "allreduce", "cycle_time": 0, "ring_model": ")") + ring + "\"}]");
    const auto r = sim::simulate_isolated(s, s.strategies[0], std::nullopt, {});
    SCOPED_TRACE(ring);
    EXPECT_LT(relative_error(r.step_time_mean_s, 0.006), kTolerance) << r.step_time_mean_s;
    ASSERT_EQ(r.nodes.size(), 2u);
    const double edge = 6e6 + 6 * kHeader;
    EXPECT_DOUBLE_EQ(node(r, "node-0").nic_out, edge + 2 * kHeader);  // + go to 2 and 3
    EXPECT_DOUBLE_EQ(node(r, "node-0").nic_in, edge + 2 * kHeader);   // + ready from 2 and 3
    EXPECT_DOUBLE_EQ(node(r, "node-1").nic_out, edge + 2 * kHeader);
    // Inside node-0: worker-0 -> 1's edge, and worker-1's ready and worker-0's go to it.
    EXPECT_DOUBLE_EQ(node(r, "node-0").interconnect, edge + 2 * kHeader);
    EXPECT_DOUBLE_EQ(link_bytes(r, "node-0-nic_UP"), edge + 2 * kHeader);
    EXPECT_DOUBLE_EQ(link_bytes(r, "worker-0-nvswitch_UP"), edge + kHeader);  // + go to 1
  }
}

TEST(NodesSim, OneNicPerDeviceCarriesItsOwnDeviceOnly) {
  // DGX-style: worker-1's edge to worker-2 leaves by worker-1's NIC; worker-0's NIC carries only
  // what it sends off the node (the go to workers 2 and 3).
  const Scenario s = nodes_scenario(4, 2, R"("parameter_servers": 0, "nics_per_node": 2, )",
                                    R"([{"name": "allreduce", "cycle_time": 0}])");
  const auto r = sim::simulate_isolated(s, s.strategies[0], std::nullopt, {});
  EXPECT_LT(relative_error(r.step_time_mean_s, 0.006), kTolerance) << r.step_time_mean_s;
  EXPECT_DOUBLE_EQ(link_bytes(r, "worker-1-nic_UP"), 6e6 + 6 * kHeader);
  EXPECT_DOUBLE_EQ(link_bytes(r, "worker-0-nic_UP"), 2 * kHeader);
}

TEST(NodesSim, DevicesOfANodeShareItsNicToASeparateServer) {
  // ps without local aggregation: four devices of one node pull 4 MB each through the node's
  // 1 GB/s NIC (16 ms), then push as much (16 ms); the PS's NIC is 100 times faster.
  const Scenario s = nodes_scenario(4, 4, "", R"([{"name": "ps", "local_aggregation": false}])",
                                    R"(, "ps_nic": {"bandwidth": "800Gbps"})");
  const auto r = sim::simulate_isolated(s, s.strategies[0], std::nullopt, {});
  EXPECT_LT(relative_error(r.step_time_mean_s, 0.032), kTolerance) << r.step_time_mean_s;
  EXPECT_DOUBLE_EQ(node(r, "node-0").nic_in, 4 * (4e6 + kHeader));
  EXPECT_DOUBLE_EQ(node(r, "node-0").nic_out, 4 * (4e6 + kHeader));
  EXPECT_DOUBLE_EQ(host(r, "ps-0").bytes_in, 4 * (4e6 + kHeader));
}

TEST(NodesSim, EveryGeneratedTopologyConnectsNodes) {
  // The same ring on 2 nodes of 2 behind a fat tree, a torus, a dragonfly and racks moves the
  // same bytes per node as on the star.
  const std::vector<std::string> platforms = {
      R"("platform": {"kind": "fat_tree", "nic_bandwidth": "8Gbps", "topology": "2;2,2;1,2;1,1"})",
      R"("platform": {"kind": "torus", "nic_bandwidth": "8Gbps", "topology": "2,2"})",
      R"("platform": {"kind": "dragonfly", "nic_bandwidth": "8Gbps", "topology": "1,1;1,1;2,1;1"})",
      R"("platform": {"kind": "racks", "nic_bandwidth": "8Gbps", "hosts_per_rack": 1,
                      "rack_uplink": {"bandwidth": "8Gbps", "latency": 0}})"};
  for (const std::string& platform : platforms) {
    SCOPED_TRACE(platform);
    const Scenario s = scenario_from(
        R"("model": )" + fc_model(1000, 1000) + R"(, "batch_per_worker": 8,
        "cluster": {"workers": 4, "devices_per_node": 2, "parameter_servers": 0,
                    "worker_device": )" + std::string(kInstantDevice) + ", " + platform +
        R"(}, "network_model": "ideal", "strategies": [{"name": "allreduce", "cycle_time": 0}])");
    const auto r = sim::simulate_isolated(s, s.strategies[0], std::nullopt, {});
    ASSERT_EQ(r.nodes.size(), 2u);
    EXPECT_DOUBLE_EQ(node(r, "node-1").nic_out, 6e6 + 8 * kHeader);
    EXPECT_DOUBLE_EQ(link_bytes(r, "node-1-nic_UP"), 6e6 + 8 * kHeader);
    EXPECT_GT(r.step_time_mean_s, 0.0059);
  }
}

}  // namespace
}  // namespace ralp

namespace ralp {
namespace {

TEST(NodesSim, ACoLocatedServersOwnNodeSendsItNothingOverTheNic) {
  // Two layers of 4 MB each: a's weights on ps-0 (on node-0), b's on ps-1 (on node-1). Each
  // device pulls and pushes both; its own node's server's share stays inside the node.
  const std::string model = R"({"name": "two", "input": [1000, 1, 1], "layers": [
      {"name": "a", "type": "fc", "out_features": 1000, "bias": false},
      {"name": "b", "type": "fc", "out_features": 1000, "bias": false},
      {"name": "loss", "type": "softmax_cross_entropy"}]})";
  const Scenario s = testing::scenario_from(
      R"("model": )" + model + R"(, "batch_per_worker": 8,
      "cluster": {"workers": 4, "devices_per_node": 2, "parameter_servers": 2,
                  "ps_placement": "colocated", "worker_device": )" +
      std::string(testing::kInstantDevice) + R"(,
                  "node_interconnect": {"kind": "pcie", "bandwidth": "800Gbps"},
                  "platform": {"kind": "star", "nic_bandwidth": "8Gbps", "latency": 0}},
      "network_model": "ideal", "strategies": [{"name": "ps", "local_aggregation": false}])");
  const auto r = sim::simulate_isolated(s, s.strategies[0], std::nullopt, {});
  const double group = 4e6 + 24.0;
  // Out of node-0: ps-0's pulls to workers 2 and 3, workers 0 and 1's pushes to ps-1, and ps-1's
  // step-done header... which goes the other way: ps-0's step-complete header to ps-1.
  EXPECT_DOUBLE_EQ(node(r, "node-0").nic_out, 4 * group + 24.0);
  EXPECT_DOUBLE_EQ(node(r, "node-0").nic_in, 4 * group + 24.0);
  // Inside node-0: ps-0's pulls to workers 0 and 1 and their pushes back.
  EXPECT_DOUBLE_EQ(node(r, "node-0").interconnect, 4 * group);
  // ps-0 gets four pushes and a header, the two of its own node through no NIC.
  EXPECT_DOUBLE_EQ(testing::host(r, "ps-0").bytes_in, 4 * group + 24.0);
  EXPECT_DOUBLE_EQ(link_bytes(r, "ps-0-pcie_DOWN"), 4 * group + 24.0);
}

}  // namespace
}  // namespace ralp

namespace ralp {
namespace {

TEST(NodesSim, LocalAggregationDividesTheServersTrafficByTheDevicesPerNode) {
  // 2 nodes of 2 devices, 4 MB of weights, a separate PS whose NIC moves 1 GB/s, every other link
  // 100 times faster. Without local aggregation the PS sends 4 pulls and takes 4 pushes: 16 ms
  // each way. With it, each node's first device pulls once, passes the values on over NVLink,
  // sums its partner's gradients and pushes once: 2 of each, 8 ms each way.
  for (const bool local : {false, true}) {
    SCOPED_TRACE(local ? "local aggregation" : "every device a worker");
    const Scenario s = nodes_scenario(
        4, 2, "",
        std::string(R"([{"name": "ps", "local_aggregation": )") + (local ? "true" : "false") + "}]",
        R"(, "worker_nic": {"bandwidth": "800Gbps"}, "ps_nic": {"bandwidth": "8Gbps"})");
    const auto r = sim::simulate_isolated(s, s.strategies[0], std::nullopt, {});
    const double group = 4e6 + kHeader;
    const double pushes = local ? 2 : 4;
    EXPECT_DOUBLE_EQ(host(r, "ps-0").bytes_in, pushes * group);
    EXPECT_DOUBLE_EQ(host(r, "ps-0").bytes_out, pushes * group);
    EXPECT_LT(relative_error(r.step_time_mean_s, pushes * 8e-3), kTolerance) << r.step_time_mean_s;
    // Each node's NIC carries one pull in and one push out per device, or per node.
    EXPECT_DOUBLE_EQ(node(r, "node-1").nic_in, pushes / 2 * group);
    EXPECT_DOUBLE_EQ(node(r, "node-1").nic_out, pushes / 2 * group);
    // Inside: the passed-on pull and the partner's push.
    EXPECT_DOUBLE_EQ(node(r, "node-1").interconnect, local ? 2 * group : 0.0);
  }
}

TEST(NodesSim, LocalAggregationSendsTheHeadOneMicroBatchPerNode) {
  // ralp cut at fc2 on 2 nodes of 2 devices: fc1's 4 MB on the shard; a worker's boundary is fc1's
  // output (8 x 1000 floats) and its 8 labels, and its gradient comes back. With local
  // aggregation each node's first device gathers its partner's boundary over NVLink and sends the
  // head one micro-batch of both, then passes the partner its half of the gradient.
  const std::string model = R"({"name": "fc2", "input": [1000, 1, 1], "layers": [
      {"name": "fc1", "type": "fc", "out_features": 1000, "bias": false},
      {"name": "fc2", "type": "fc", "out_features": 1000, "bias": false},
      {"name": "loss", "type": "softmax_cross_entropy"}]})";
  const double boundary = 8 * 1000 * 4 + 8 * 4;
  const double gradient = 8 * 1000 * 4;
  const double group = 4e6 + kHeader;
  for (const bool local : {false, true}) {
    SCOPED_TRACE(local ? "local aggregation" : "every device a worker");
    const Scenario s = scenario_from(
        R"("model": )" + model + R"(, "batch_per_worker": 8, "cluster": {"workers": 4,
        "devices_per_node": 2, "worker_device": )" + kInstantDevice + R"(,
        "node_interconnect": {"kind": "nvswitch", "bandwidth": "800Gbps"},
        "platform": {"kind": "star", "nic_bandwidth": "8Gbps", "latency": 0}},
        "network_model": "ideal", "strategies": [{"name": "ralp", "cut": "fc2",
        "local_aggregation": )" + (local ? "true" : "false") + "}]");
    const auto r = sim::simulate_isolated(s, s.strategies[0], s.model.find("fc2"), {});
    const double senders = local ? 2 : 4;
    const double per_sender = local ? 2 : 1;
    EXPECT_DOUBLE_EQ(host(r, "ps-0").bytes_in,
                     senders * (group + per_sender * boundary + kHeader));
    EXPECT_DOUBLE_EQ(host(r, "ps-0").bytes_out,
                     senders * (group + per_sender * gradient + kHeader));
    // Inside node-1: nothing without it; with it, the pull passed on, the partner's push and
    // boundary, and the partner's half of the gradient.
    const double inside = 2 * group + boundary + gradient + 2 * kHeader;
    EXPECT_DOUBLE_EQ(node(r, "node-1").interconnect, local ? inside : 0.0);
    EXPECT_DOUBLE_EQ(node(r, "node-1").nic_out,
                     senders / 2 * (group + per_sender * boundary + kHeader));
  }
}

}  // namespace
}  // namespace ralp

namespace ralp {
namespace {

namespace fs = std::filesystem;

TEST(NodesSim, EveryPublishedMultiGpuScenarioRuns) {
  // One scenario per multi-GPU synthetic TCP row of published/, written by
  // scripts/published-scenarios from the two CSVs.
  const fs::path folder = fs::path(RALP_SOURCE_DIR) / "scenarios/published/multi-gpu";
  std::vector<fs::path> files;
  for (const auto& entry : fs::directory_iterator(folder)) {
    if (entry.path().extension() == ".json") files.push_back(entry.path());  // and points.csv
  }
  std::sort(files.begin(), files.end());
  EXPECT_GE(files.size(), 80u);
  for (const fs::path& file : files) {
    SCOPED_TRACE(file.filename().string());
    const auto result =
        testing::run_command(testing::ralp_binary() + " simulate --quiet " + file.string());
    EXPECT_EQ(result.status, 0) << result.err;
  }
  // The committed files are what the script writes (where Python runs it).
  const auto check = testing::run_command("command -v python3 >/dev/null && python3 " +
                                          std::string(RALP_SOURCE_DIR) +
                                          "/scripts/published-scenarios --check");
  if (check.status == 0 || check.out.find("differs") != std::string::npos ||
      check.out.find("comes from") != std::string::npos) {
    EXPECT_EQ(check.status, 0) << check.out;
  }
}

}  // namespace
}  // namespace ralp

namespace ralp {
namespace {

TEST(NodesSim, HierarchicalAllReduceMovesTheBufferOnceOverEachNic) {
  // Horovod's hierarchical all-reduce on 2 nodes of 2: worker-1 sends its 4 MB to worker-0 and
  // worker-3 to worker-2 over NVLink (100 GB/s: 0.04 ms), the two first devices ring all-reduce
  // it, 2 (2 - 1) / 2 x 4 MB = 4 MB over each NIC each way (4 ms at 1 GB/s), and send the sum
  // back (0.04 ms). NCCL's ring moves 6 MB over each NIC.
  const Scenario s = nodes_scenario(
      4, 2, R"("parameter_servers": 0, )",
      R"([{"name": "allreduce", "cycle_time": 0, "algorithm": "hierarchical"}])");
  const auto r = sim::simulate_isolated(s, s.strategies[0], std::nullopt, {});
  EXPECT_LT(relative_error(r.step_time_mean_s, 0.004 + 2 * 4e6 / 1e11), kTolerance)
      << r.step_time_mean_s;
  const double edge = 4e6 + 2 * kHeader;
  EXPECT_DOUBLE_EQ(node(r, "node-0").nic_out, edge + kHeader);  // + the go to worker-2
  EXPECT_DOUBLE_EQ(node(r, "node-1").nic_out, edge + kHeader);  // + its ready
  // Inside each node: the buffer to the first device and the sum back.
  EXPECT_DOUBLE_EQ(node(r, "node-0").interconnect, 2 * (4e6 + kHeader));
  EXPECT_DOUBLE_EQ(host(r, "worker-1").bytes_out, 4e6 + kHeader);
  EXPECT_DOUBLE_EQ(host(r, "worker-1").bytes_in, 4e6 + kHeader);
}

}  // namespace
}  // namespace ralp

namespace ralp {
namespace {

// `r` with what orders messages of one instant on different streams taken out: each host's sent
// messages by peer and kind (in order on each stream), and the timeline sorted.
StrategyResult by_connection(StrategyResult r) {
  for (auto& sent : r.messages) {
    std::stable_sort(sent.begin(), sent.end(),
                     [](const SentMessage& a, const SentMessage& b) {
                       return std::tie(a.peer, a.kind) < std::tie(b.peer, b.kind);
                     });
  }
  const auto key = [](const Activity& a) {
    return std::tie(a.host, a.start, a.end, a.peer, a.kind, a.label, a.step, a.bytes);
  };
  std::sort(r.timeline.begin(), r.timeline.end(),
            [&](const Activity& a, const Activity& b) { return key(a) < key(b); });
  return r;
}

// Simulates `spec` with connections at wire speed played (the default) and with actors on every
// connection, expects the same result, and returns the played one.
StrategyResult expect_played_as_actors(const Scenario& s, const StrategySpec& spec,
                                       std::optional<LayerId> cut, sim::RunOptions options) {
  options.messages = true;
  const auto played = sim::simulate_isolated(s, spec, cut, options);
  options.played_flows = false;
  const auto actors = sim::simulate_isolated(s, spec, cut, options);
  EXPECT_GT(played.step_time_mean_s, 0.0);
  EXPECT_FALSE(played.messages.empty());
  EXPECT_EQ(by_connection(played), by_connection(actors))
      << played.step_time_mean_s << " s against " << actors.step_time_mean_s << " s";
  return played;
}

TEST(NodesSim, PlayedFlowsGiveTheSameStepsAsActors) {
  // Connections at wire speed are flows the kernel starts, without actors (step_model.cpp); with
  // actors on every connection instead, each strategy makes the same messages at the same times
  // (those of one instant on different connections may leave in another order):
  // AlexNet on 2 nodes of 2 V100s with a co-located and a separate server, where compute,
  // NVLink, the NICs and the servers' links all overlap.
  const std::string strategies = R"([{"name": "ps", "label": "ps-local"},
      {"name": "ps", "label": "ps-devices", "local_aggregation": false},
      {"name": "ralp", "cut": "fc6"}, {"name": "hybrid", "cut": "fc6"},
      {"name": "allreduce", "algorithm": "hierarchical"}])";
  for (const char* placement : {"separate", "colocated"}) {
    SCOPED_TRACE(placement);
    const Scenario s = scenario_from(
        R"("model": "alexnet", "batch_per_worker": 16, "cluster": {"workers": 4,
        "devices_per_node": 2, "parameter_servers": 2, "ps_placement": ")" +
        std::string(placement) + R"(", "worker_device": "v100", "ps_device": "v100",
        "node_interconnect": {"kind": "nvlink", "bandwidth": "25GBps", "latency": "2us"},
        "platform": {"kind": "star", "nic_bandwidth": "10Gbps", "latency": "20us"}},
        "network_model": "tcp", "steps": 2, "strategies": )" + strategies);
    for (const StrategySpec& spec : s.strategies) {
      SCOPED_TRACE(spec.label);
      const auto cut = spec.kind == StrategyKind::ralp || spec.kind == StrategyKind::hybrid
                           ? s.model.find("fc6")
                           : std::nullopt;
      sim::RunOptions options;
      options.timeline = true;
      EXPECT_FALSE(expect_played_as_actors(s, spec, cut, options).timeline.empty());
    }
  }
}

}  // namespace
}  // namespace ralp

namespace ralp {
namespace {

TEST(NodesSim, PlayedFlowsKeepTheirTimesBesideSharedDevices) {
  // Two workers and the server on one CPU that SimGrid divides among them (its operations are
  // actors), their messages played without actors: ps and ralp the same both ways.
  const std::string device = R"({"name": "gflop", "kind": "cpu", "peak_flops": 1e9,
      "memory_bandwidth": 1e10, "launch_overhead": 0, "efficiency": {"default": 1.0}})";
  const std::string model = R"({"name": "fc2", "input": [1000, 1, 1], "layers": [
      {"name": "fc1", "type": "fc", "out_features": 1000},
      {"name": "fc2", "type": "fc", "out_features": 1000},
      {"name": "loss", "type": "softmax_cross_entropy"}]})";
  const Scenario s = scenario_from(
      R"("model": )" + model + R"(, "batch_per_worker": 8, "cluster": {"workers": 2,
      "worker_device": )" + device + R"(, "ps_device": )" + device + R"(,
      "shared_devices": [0, 0, 0],
      "platform": {"kind": "star", "nic_bandwidth": "1Gbps", "latency": "50us"}},
      "network_model": "tcp", "steps": 2,
      "strategies": ["ps", {"name": "ralp", "cut": "fc2"}])");
  for (const StrategySpec& spec : s.strategies) {
    SCOPED_TRACE(spec.label);
    const auto cut = spec.kind == StrategyKind::ralp ? s.model.find("fc2") : std::nullopt;
    expect_played_as_actors(s, spec, cut, {});
  }
}

}  // namespace
}  // namespace ralp
