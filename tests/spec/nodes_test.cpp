// Nodes of several devices: the scenario keys, their round trip, and how hosts group into nodes.
#include "ralp/spec/nodes.hpp"

#include <gtest/gtest.h>

#include "../support/run_command.hpp"

namespace ralp {
namespace {

namespace fs = std::filesystem;
const fs::path kData = RALP_TEST_DATA_DIR "/data";

Scenario parse(const std::string& cluster_extra, const std::string& strategies,
               int64_t workers = 8) {
  const std::string text =
      R"({"name": "n", "model": "cifar_alexnet", "batch_per_worker": 8,
          "cluster": {"workers": )" + std::to_string(workers) + R"(, "parameter_servers": 2,
                      "worker_device": "cpu-core", )" + cluster_extra + R"(
                      "platform": {"kind": "star", "nic_bandwidth": "1Gbps"}},
          "strategies": )" + strategies + "}";
  return parse_scenario(parse_json_text(text, "n.json"), "n.json", kData / "scenarios");
}

TEST(Nodes, DefaultsAreOneDevicePerNodeAndSeparateServers) {
  const Scenario s = parse("", R"(["ps", "allreduce"])");
  EXPECT_EQ(s.nodes, NodeSpec{});
  EXPECT_FALSE(s.strategies[0].local_aggregation);
  EXPECT_EQ(s.strategies[1].algorithm, AllreduceAlgorithm::ring);
  // Nothing of nodes is written where the scenario has none.
  const Json j = scenario_to_json(s);
  EXPECT_FALSE(j["cluster"].contains("devices_per_node"));
  EXPECT_FALSE(j["strategies"][0].contains("local_aggregation"));
  EXPECT_FALSE(j["strategies"][1].contains("algorithm"));
}

TEST(Nodes, KeysReadAndSurviveARoundTrip) {
  const Scenario s = parse(
      R"("devices_per_node": 4, "nics_per_node": 4, "ps_placement": "colocated",
         "node_interconnect": {"kind": "pcie", "bandwidth": "16GBps", "latency": "1us",
                               "host_links": 2},)",
      R"(["ps", {"name": "ralp", "cut": "fc4", "local_aggregation": false},
          {"name": "allreduce", "algorithm": "hierarchical"}, "hybrid"])");
  EXPECT_EQ(s.nodes.devices_per_node, 4);
  EXPECT_EQ(s.nodes.nics_per_node, 4);
  EXPECT_EQ(s.nodes.ps_placement, PsPlacement::colocated);
  ASSERT_TRUE(s.nodes.interconnect);
  EXPECT_EQ(s.nodes.interconnect->kind, InterconnectKind::pcie);
  EXPECT_DOUBLE_EQ(s.nodes.interconnect->bandwidth.value(), 16e9);
  EXPECT_DOUBLE_EQ(s.nodes.interconnect->latency.value(), 1e-6);
  EXPECT_EQ(s.nodes.interconnect->host_links, 2);
  // Local aggregation defaults to on with several devices per node.
  EXPECT_TRUE(s.strategies[0].local_aggregation);
  EXPECT_FALSE(s.strategies[1].local_aggregation);
  EXPECT_EQ(s.strategies[2].algorithm, AllreduceAlgorithm::hierarchical);
  EXPECT_TRUE(s.strategies[3].local_aggregation);
  EXPECT_EQ(s.strategies[3].algorithm, AllreduceAlgorithm::ring);

  const Json once = scenario_to_json(s);
  EXPECT_EQ(once["cluster"]["node_interconnect"]["kind"], "pcie");
  EXPECT_EQ(once["strategies"][1]["local_aggregation"], false);
  const Scenario back = parse_scenario(once, "filled", kData / "scenarios");
  EXPECT_EQ(back.nodes, s.nodes);
  for (size_t i = 0; i < s.strategies.size(); ++i) EXPECT_EQ(back.strategies[i], s.strategies[i]);
  EXPECT_EQ(scenario_to_json(back).dump(2), once.dump(2));
}

TEST(Nodes, AGeneratedTopologyHoldsNodesNotDevices) {
  // 16 workers on nodes of 8 and two parameter servers of their own: 4 hosts fill a 2x2 torus.
  const std::string text =
      R"({"name": "t", "model": "cifar_alexnet", "batch_per_worker": 8,
          "cluster": {"workers": 16, "parameter_servers": 2, "devices_per_node": 8,
                      "worker_device": "cpu-core",
                      "platform": {"kind": "torus", "nic_bandwidth": "1Gbps", "topology": "2,2"}},
          "strategies": ["ps"]})";
  EXPECT_NO_THROW(parse_scenario(parse_json_text(text, "t.json"), "t.json", kData / "scenarios"));
}

TEST(Nodes, WorkersGroupInOrderAndServersGoRoundTheNodes) {
  const Scenario s = parse(R"("devices_per_node": 4, "ps_placement": "colocated",
                              "node_interconnect": {"kind": "pcie", "bandwidth": "16GBps",
                                                    "host_links": 2},)",
                           R"(["ps"])", 12);
  const NodeLayout layout = node_layout(s);
  EXPECT_EQ(layout.nodes, 3);
  EXPECT_EQ(layout.node_of_worker(0), 0);
  EXPECT_EQ(layout.node_of_worker(3), 0);
  EXPECT_EQ(layout.node_of_worker(4), 1);
  EXPECT_EQ(layout.device_in_node(6), 2);
  EXPECT_EQ(layout.first_worker(2), 8);
  // Two PCIe roots: devices 0-1 behind the first, 2-3 behind the second.
  EXPECT_EQ(layout.host_link_of_worker(5), 0);
  EXPECT_EQ(layout.host_link_of_worker(6), 1);
  EXPECT_EQ(layout.nic_of_worker(7), 0);
  // Hosts: ps-0, ps-1, then the workers. Shard i on node i mod 3.
  EXPECT_EQ(layout.node_of_host(0), 0);
  EXPECT_EQ(layout.node_of_host(1), 1);
  EXPECT_EQ(layout.node_of_host(2 + 5), 1);
  EXPECT_TRUE(layout.same_node(1, 2 + 4));
  EXPECT_FALSE(layout.same_node(0, 2 + 4));
  EXPECT_EQ(node_name(2), "node-2");
}

TEST(Nodes, TrafficInsideANodeStaysOffItsNics) {
  NodeLayout layout;
  layout.nodes = 2;
  layout.devices_per_node = 2;
  layout.workers = 4;
  layout.parameter_servers = 1;  // of its own
  std::vector<NodeTraffic> traffic(2);
  count_node_traffic(layout, 1, 2, 100.0, traffic);  // worker-0 -> worker-1: inside node-0
  count_node_traffic(layout, 2, 3, 10.0, traffic);   // worker-1 -> worker-2: node-0 -> node-1
  count_node_traffic(layout, 4, 0, 1.0, traffic);    // worker-3 -> ps-0: out of node-1
  EXPECT_EQ(traffic[0], (NodeTraffic{0.0, 10.0, 100.0}));
  EXPECT_EQ(traffic[1], (NodeTraffic{10.0, 1.0, 0.0}));
  // A co-located ps-0 sits on node-0: worker-1's push to it stays inside.
  layout.colocated = true;
  std::vector<NodeTraffic> colocated(2);
  count_node_traffic(layout, 2, 0, 5.0, colocated);
  count_node_traffic(layout, 3, 0, 7.0, colocated);
  EXPECT_EQ(colocated[0], (NodeTraffic{7.0, 0.0, 5.0}));
  EXPECT_EQ(colocated[1], (NodeTraffic{0.0, 7.0, 0.0}));
}

TEST(Nodes, ModesRefuseWhatTheyDoNotYetModelInOneLine) {
  // Every strategy takes nodes and local aggregation, on any platform.
  EXPECT_NO_THROW(require_modelled_nodes(parse(R"("devices_per_node": 4,)", R"(["ps"])")));
  EXPECT_NO_THROW(require_modelled_nodes(parse(R"("devices_per_node": 4,)", R"(["ralp"])")));
  EXPECT_NO_THROW(require_modelled_nodes(parse(R"("devices_per_node": 4,)", R"(["hybrid"])")));
  EXPECT_NO_THROW(require_modelled_nodes(parse("", R"(["ps"])")));
  EXPECT_NO_THROW(require_modelled_nodes(parse(R"("devices_per_node": 4,)", R"(["allreduce"])")));
  Scenario s = parse(R"("devices_per_node": 4,)", R"(["ps"])");
  s.platform.kind = PlatformKind::file;
  EXPECT_NO_THROW(require_modelled_nodes(s));
  // A platform file's routes carry every message: it has no NICs per node to choose.
  s.nodes.nics_per_node = 4;
  try {
    require_modelled_nodes(s);
    FAIL();
  } catch (const InputError& e) {
    EXPECT_EQ(e.path(), "/cluster/nics_per_node");
  }
}

}  // namespace
}  // namespace ralp

namespace ralp {
namespace {

TEST(Nodes, BothFidelitiesRunNodes) {
  const std::string file = (kData / "scenarios/nodes-2x2.json").string();
  for (const char* fidelity : {"event", "analytic"}) {
    SCOPED_TRACE(fidelity);
    const auto result = testing::run_command(testing::ralp_binary() + " simulate --fidelity " +
                                             fidelity + " " + file);
    EXPECT_EQ(result.status, 0) << result.err;
    EXPECT_NE(result.out.find("nodes: 2 of 2 devices"), std::string::npos) << result.out;
  }
}

}  // namespace
}  // namespace ralp

namespace ralp {
namespace {

TEST(Nodes, DevicesPerNodeIsAnOverrideAndASweepAxis) {
  const std::string file = (kData / "scenarios/nodes-2x2.json").string();
  // Four workers as one node of four: allreduce never leaves it.
  const auto one_node = testing::run_command(testing::ralp_binary() +
                                             " simulate --devices-per-node 4 " + file);
  EXPECT_EQ(one_node.status, 0) << one_node.err;
  EXPECT_NE(one_node.out.find("nodes: 1 of 4 devices"), std::string::npos) << one_node.out;
  // Three does not divide the file's four workers: one line naming them.
  const auto bad = testing::run_command(testing::ralp_binary() +
                                        " simulate --devices-per-node 3 " + file);
  EXPECT_EQ(bad.status, 2);
  EXPECT_EQ(bad.err, "error: " + file +
                         ": /cluster/workers is 4, expected a multiple of devices_per_node (3)\n");
}

}  // namespace
}  // namespace ralp
