// Fabrics (docs/fabrics.md): NVSwitch, the DGX-1 cube-mesh, RDMA fabrics, GPUDirect, rails, and
// NCCL's channels over them.
#include <map>
#include <numeric>
#include <set>

#include <gtest/gtest.h>

#include "ralp/spec/nccl_plan.hpp"
#include "ralp/spec/nodes.hpp"

namespace ralp {
namespace {

const std::filesystem::path kData = RALP_TEST_DATA_DIR "/data";

Scenario parse(const std::string& cluster, const std::string& platform_extra = "",
               const std::string& top = "", const std::string& strategies = R"(["allreduce"])",
               int64_t workers = 16) {
  const std::string text =
      R"({"name": "f", "model": "cifar_alexnet", "batch_per_worker": 8, )" + top +
      R"("cluster": {"workers": )" + std::to_string(workers) + R"(, "parameter_servers": 1,
          "worker_device": "v100", "devices_per_node": 8, )" + cluster + R"(
          "platform": {"kind": "star", "nic_bandwidth": "100Gbps")" + platform_extra + R"(}},
        "strategies": )" + strategies + "}";
  return parse_scenario(parse_json_text(text, "f.json"), "f.json", kData / "scenarios");
}

std::string problem(const std::string& cluster, const std::string& platform_extra = "",
                    const std::string& top = "", const std::string& strategies = R"(["allreduce"])") {
  try {
    parse(cluster, platform_extra, top, strategies);
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

TEST(Fabrics, KeysReadWithTheirDefaultsAndSurviveARoundTrip) {
  const Scenario s = parse(R"("node_interconnect": {"kind": "nvswitch", "bandwidth": "300GBps"},
                              "nics_per_node": 8,)", R"(, "fabric": "infiniband")", "",
                           R"([{"name": "allreduce", "transport": "nccl", "nccl_algorithm": "tree"}])");
  EXPECT_EQ(s.nodes.interconnect->kind, InterconnectKind::nvswitch);
  EXPECT_EQ(s.platform.fabric, Fabric::infiniband);
  EXPECT_TRUE(s.nodes.gpu_direct);  // one NIC per device
  EXPECT_EQ(s.strategies[0].nccl_algorithm, NcclAlgorithmChoice::tree);
  // RDMA: a route's latency once, no TCP slow start.
  EXPECT_EQ(s.network_model.kind, NetworkModelKind::factors);
  EXPECT_EQ(s.network_model.latency_factor, 1.0);
  const Json j = scenario_to_json(s);
  EXPECT_EQ(j["cluster"]["platform"]["fabric"], "infiniband");
  EXPECT_EQ(j["cluster"]["gpu_direct"], true);
  EXPECT_EQ(j["strategies"][0]["nccl_algorithm"], "tree");
  const Scenario again = parse_scenario(j, "f.json", kData / "scenarios");
  EXPECT_EQ(again.nodes, s.nodes);
  EXPECT_EQ(again.platform, s.platform);
  EXPECT_EQ(again.strategies, s.strategies);
  // One NIC per node: no GPUDirect unless asked.
  EXPECT_FALSE(parse(R"("node_interconnect": {"kind": "nvlink", "bandwidth": "150GBps"},)")
                   .nodes.gpu_direct);
  EXPECT_EQ(parse("").platform.fabric, Fabric::ethernet);
  EXPECT_EQ(parse("").network_model.kind, NetworkModelKind::tcp);
}

TEST(Fabrics, BadKeysAreOneLineNamingThem) {
  EXPECT_NE(problem(R"("node_interconnect": {"kind": "nvlink", "bandwidth": "1GBps", "links_per_device": 5},)")
                .find("links_per_device"), std::string::npos);
  EXPECT_NE(problem("", R"(, "fabric": "myrinet")").find("/cluster/platform/fabric"), std::string::npos);
  EXPECT_NE(problem("", R"(, "fabric": "roce")", R"("network_model": "tcp", )").find("slow start"),
            std::string::npos);
  EXPECT_NE(problem("", "", "", R"([{"name": "ps", "nccl_algorithm": "ring"}])").find("nccl_algorithm"),
            std::string::npos);
  EXPECT_NE(problem("", "", "", R"([{"name": "allreduce", "nccl_algorithm": "collnet"}])")
                .find("nccl_algorithm"), std::string::npos);
  EXPECT_NE(problem(R"("gpu_direct": "yes",)").find("/cluster/gpu_direct"), std::string::npos);
}

TEST(Fabrics, TheCubeMeshGivesEachV100SixLinksAndEachP100Four) {
  for (const int64_t links : {6, 4}) {
    for (int64_t a = 0; a < 8; ++a) {
      int64_t sum = 0;
      for (int64_t b = 0; b < 8; ++b) {
        EXPECT_EQ(cube_mesh_links(links, a, b), cube_mesh_links(links, b, a));
        sum += cube_mesh_links(links, a, b);
      }
      EXPECT_EQ(sum, links) << "GPU " << a;
    }
  }
  // GPUs 0-3 are fully joined; 0 and 5 are not (their traffic crosses PCIe).
  const Scenario s = parse(R"("node_interconnect": {"kind": "nvlink", "bandwidth": "150GBps"},)");
  EXPECT_DOUBLE_EQ(direct_peer_bandwidth(s, 0, 3)->value(), 50e9);
  EXPECT_DOUBLE_EQ(direct_peer_bandwidth(s, 0, 1)->value(), 25e9);
  EXPECT_FALSE(direct_peer_bandwidth(s, 0, 5));
}

// Every ring is a cycle through the node's devices over pairs with links left.
TEST(Fabrics, NcclRingsOnTheCubeMeshFollowItsLinks) {
  const Scenario s = parse(R"("node_interconnect": {"kind": "nvlink", "bandwidth": "150GBps"},)");
  const auto rings = nccl_node_rings(s);
  ASSERT_GE(rings.size(), 3u);
  std::map<std::pair<int64_t, int64_t>, int64_t> used;
  for (const auto& ring : rings) {
    ASSERT_EQ(ring.size(), 8u);
    EXPECT_EQ(std::set<int64_t>(ring.begin(), ring.end()).size(), 8u);
    for (size_t i = 0; i < ring.size(); ++i) ++used[{ring[i], ring[(i + 1) % ring.size()]}];
  }
  for (const auto& [pair, n] : used) {
    EXPECT_LE(n, cube_mesh_links(6, pair.first, pair.second)) << pair.first << "->" << pair.second;
  }
  // NVSwitch: one rotation of node order per device.
  const auto rotations =
      nccl_node_rings(parse(R"("node_interconnect": {"kind": "nvswitch", "bandwidth": "300GBps"},)"));
  ASSERT_EQ(rotations.size(), 8u);
  EXPECT_EQ(rotations[3].front(), 3);
  EXPECT_EQ(rotations[3].back(), 2);
}

TEST(Fabrics, NcclChannelsSplitEveryWorkersBytesAndKeepToOneRailAcrossNodes) {
  const Scenario s = parse(R"("node_interconnect": {"kind": "nvswitch", "bandwidth": "300GBps"},
                              "nics_per_node": 8,)", R"(, "fabric": "infiniband")", "",
                           R"([{"name": "allreduce", "transport": "nccl"}])", 32);
  const auto flows = nccl_channel_flows(s);
  ASSERT_EQ(flows.size(), 32u);
  std::vector<double> into(32, 0.0);
  for (size_t w = 0; w < flows.size(); ++w) {
    double sum = 0.0;
    for (const NcclFlow& f : flows[w]) {
      sum += f.share;
      into[static_cast<size_t>(f.to)] += f.share;
      // Between nodes, a channel leaves and enters by the same device index: one rail.
      if (f.to / 8 != static_cast<int64_t>(w) / 8) EXPECT_EQ(f.to % 8, static_cast<int64_t>(w) % 8);
    }
    EXPECT_NEAR(sum, 1.0, 1e-12) << w;
    // Each device sends 1/8 of its bytes to the next node (its NIC) and 7/8 inside its node.
    ASSERT_EQ(flows[w].size(), 2u) << w;
  }
  for (const double in : into) EXPECT_NEAR(in, 1.0, 1e-12);
  EXPECT_TRUE(uses_nccl_model(s, s.strategies[0]));
  // Over Ethernet without RDMA, NCCL is its socket transport: the fitted costs apply.
  const Scenario tcp = parse(R"("node_interconnect": {"kind": "nvswitch", "bandwidth": "300GBps"},)",
                             "", "", R"([{"name": "allreduce", "transport": "nccl"}])");
  EXPECT_FALSE(uses_nccl_model(tcp, tcp.strategies[0]));
}

TEST(Fabrics, NcclSeesTheMachineTheScenarioDescribes) {
  const Scenario s = parse(R"("node_interconnect": {"kind": "nvswitch", "bandwidth": "300GBps"},
                              "nics_per_node": 8,)", R"(, "fabric": "infiniband")");
  const NcclTopology t = nccl_topology_of(s);
  EXPECT_EQ(t.nodes, 2);
  EXPECT_EQ(t.gpus_per_node, 8);
  EXPECT_EQ(t.nvlinks_per_gpu, 12);  // 300 GB/s over 25 GB/s links
  EXPECT_EQ(t.arch, NcclArch::volta);
  EXPECT_EQ(t.nic_path, NcclNicPath::pcie_switch);
  EXPECT_EQ(t.nics_per_node, 8);
}

}  // namespace
}  // namespace ralp
