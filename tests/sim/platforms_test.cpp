// Platforms: every generated topology and a platform file run every strategy; bytes sent equal
// bytes received; oversubscribed rack uplinks show up as the busiest links.
#include <gtest/gtest.h>

#include "ralp/sim/simulate.hpp"
#include "sim_fixtures.hpp"

namespace ralp {
namespace {

using testing::scenario_from;

Scenario on(const std::string& platform, int workers = 6) {
  return scenario_from(R"("model": "cifar_allconv", "batch_per_worker": 8, "cluster": {"workers": )" +
                       std::to_string(workers) +
                       R"(, "worker_device": "gtx1080ti", "platform": )" + platform +
                       R"(}, "strategies": ["ps", {"name": "ralp", "cut": "fc"}, "allreduce",
                       {"name": "hybrid", "cut": "fc"}], "steps": 2, "warmup_steps": 0)");
}

void expect_runs_and_conserves_bytes(const Scenario& s) {
  const auto result = sim::simulate_scenario(s, {.jobs = 2});
  ASSERT_EQ(result.results.size(), 4u);
  for (const auto& r : result.results) {
    double in = 0.0;
    double out = 0.0;
    for (const auto& h : r.hosts) {
      in += h.bytes_in;
      out += h.bytes_out;
    }
    EXPECT_GT(r.step_time_mean_s, 0.0) << r.label;
    EXPECT_GT(out, 0.0) << r.label;
    EXPECT_DOUBLE_EQ(in, out) << r.label;
  }
}

TEST(Platforms, Star) {
  expect_runs_and_conserves_bytes(on(R"({"kind": "star", "nic_bandwidth": "10Gbps",
      "latency": "5us", "ps_nic": {"bandwidth": "40Gbps"},
      "backbone": {"bandwidth": "100Gbps", "latency": "1us"}})"));
}

TEST(Platforms, RacksWithOversubscribedUplinks) {
  const Scenario s = on(R"({"kind": "racks", "nic_bandwidth": "10Gbps", "latency": "5us",
      "hosts_per_rack": 3, "rack_uplink": {"bandwidth": "5Gbps", "latency": "2us"}})");
  expect_runs_and_conserves_bytes(s);
  // ps: every worker in racks 1 and 2 reaches ps-0 through its rack's 5 Gbps uplink.
  const auto r = sim::simulate_isolated(s, s.strategies[0], std::nullopt, {});
  EXPECT_NE(r.links.front().name.find("uplink"), std::string::npos) << r.links.front().name;
}

TEST(Platforms, FatTreeTorusDragonfly) {
  expect_runs_and_conserves_bytes(on(R"({"kind": "fat_tree", "nic_bandwidth": "10Gbps",
      "latency": "5us", "topology": "2;4,4;1,2;1,2"})"));
  expect_runs_and_conserves_bytes(on(R"({"kind": "torus", "nic_bandwidth": "10Gbps",
      "latency": "5us", "topology": "2,2,2"})"));
  expect_runs_and_conserves_bytes(on(R"({"kind": "dragonfly", "nic_bandwidth": "10Gbps",
      "latency": "5us", "topology": "2,1;2,1;2,1;1"})"));
}

TEST(Platforms, PlatformFileWithRoles) {
  const Scenario s = on(R"({"kind": "file", "file": ")" RALP_SOURCE_DIR
                        R"(/platforms/two-racks.xml", "roles": {"ps-0": "node-0"}})");
  expect_runs_and_conserves_bytes(s);
}

TEST(Platforms, FatTreePlatformFile) {
  expect_runs_and_conserves_bytes(on(R"({"kind": "file", "file": ")" RALP_SOURCE_DIR
                                     R"(/platforms/fat-tree-16.xml"})"));
}

TEST(Platforms, TopologyTooSmallIsABadScenario) {
  EXPECT_THROW(on(R"({"kind": "torus", "nic_bandwidth": "10Gbps", "topology": "2,2"})"),
               InputError);
}

TEST(Platforms, RoleNamingAMissingHostIsABadScenario) {
  const Scenario s = on(R"({"kind": "file", "file": ")" RALP_SOURCE_DIR
                        R"(/platforms/two-racks.xml", "roles": {"ps-0": "nowhere"}})");
  try {
    sim::simulate_isolated(s, s.strategies[0], std::nullopt, {});
    FAIL();
  } catch (const InputError& e) {
    EXPECT_EQ(e.path(), "/cluster/platform/roles/ps-0");
  }
}

}  // namespace
}  // namespace ralp
