// Platforms: every generated topology and a platform file run every strategy and send what a
// star sends; links carry the bytes of the routes that cross them, never more than their
// bandwidth allows; per-role NICs and a backbone change step times as their bandwidths say;
// oversubscribed rack uplinks show up as the busiest links.
#include <gtest/gtest.h>

#include "ralp/sim/simulate.hpp"
#include "sim_fixtures.hpp"

namespace ralp {
namespace {

using testing::fc_model;
using testing::host;
using testing::kInstantDevice;
using testing::scenario_from;

constexpr double kTolerance = 1e-6;
// The instant device's compute, sums and updates still take a few nanoseconds per step.
constexpr double kClosedFormSeconds = 1e-8;

// Bytes per step a link carried; links no route crossed are absent from the result.
double link_bytes(const StrategyResult& r, const std::string& name) {
  for (const auto& l : r.links) {
    if (l.name == name) return l.bytes;
  }
  return 0.0;
}

const LinkLoad& link(const StrategyResult& r, const std::string& name) {
  for (const auto& l : r.links) {
    if (l.name == name) return l;
  }
  throw std::runtime_error("no link " + name);
}

Scenario on(const std::string& platform, int workers = 6) {
  return scenario_from(R"("model": "cifar_allconv", "batch_per_worker": 8, "cluster": {"workers": )" +
                       std::to_string(workers) +
                       R"(, "worker_device": "gtx1080ti", "platform": )" + platform +
                       R"(}, "strategies": ["ps", {"name": "ralp", "cut": "fc"}, "allreduce",
                       {"name": "hybrid", "cut": "fc"}], "steps": 2, "warmup_steps": 0)");
}

// Every strategy runs; each host sends and receives what it does on a plain star (a topology
// changes how long transfers take, not what the strategy sends); no link carries more than its
// bandwidth times the step time.
void expect_runs_like_a_star(const Scenario& s) {
  const Scenario star = on(R"({"kind": "star", "nic_bandwidth": "10Gbps", "latency": "5us"})",
                           static_cast<int>(s.workers));
  const auto result = sim::simulate_scenario(s, {.jobs = 2});
  const auto reference = sim::simulate_scenario(star, {.jobs = 2});
  ASSERT_EQ(result.results.size(), 4u);
  for (size_t i = 0; i < result.results.size(); ++i) {
    const auto& r = result.results[i];
    SCOPED_TRACE(r.label);
    EXPECT_GT(r.step_time_mean_s, 0.0);
    double out = 0.0;
    for (const auto& h : r.hosts) {
      out += h.bytes_out;
      EXPECT_DOUBLE_EQ(h.bytes_in, host(reference.results[i], h.name).bytes_in) << h.name;
      EXPECT_DOUBLE_EQ(h.bytes_out, host(reference.results[i], h.name).bytes_out) << h.name;
    }
    EXPECT_GT(out, 0.0);
    ASSERT_FALSE(r.links.empty());
    for (const auto& l : r.links) {
      EXPECT_GT(l.bytes, 0.0) << l.name;
      EXPECT_LE(l.utilisation, 1.0 + kTolerance) << l.name;
    }
  }
}

TEST(Platforms, StarLinksCarryTheirRoutesBytes) {
  const Scenario s = on(R"({"kind": "star", "nic_bandwidth": "10Gbps",
      "latency": "5us", "ps_nic": {"bandwidth": "40Gbps"},
      "backbone": {"bandwidth": "100Gbps", "latency": "1us"}})");
  const auto result = sim::simulate_scenario(s, {.jobs = 2});
  ASSERT_EQ(result.results.size(), 4u);
  for (const auto& r : result.results) {
    SCOPED_TRACE(r.label);
    // A route from A to B is A's NIC up, the backbone, B's NIC down: a host's uplink carries
    // what it sends, its downlink what it receives, and the backbone every byte once.
    double sent = 0.0;
    for (const auto& h : r.hosts) {
      EXPECT_DOUBLE_EQ(link_bytes(r, h.name + "-nic_UP"), h.bytes_out) << h.name;
      EXPECT_DOUBLE_EQ(link_bytes(r, h.name + "-nic_DOWN"), h.bytes_in) << h.name;
      sent += h.bytes_out;
    }
    EXPECT_GT(sent, 0.0);
    EXPECT_DOUBLE_EQ(link_bytes(r, "backbone"), sent);
    // No other link carries anything: one per direction of each host that moved bytes, and the
    // backbone.
    size_t directions = 0;
    for (const auto& h : r.hosts) directions += (h.bytes_out > 0.0) + (h.bytes_in > 0.0);
    EXPECT_EQ(r.links.size(), directions + 1);
    for (const auto& l : r.links) EXPECT_LE(l.utilisation, 1.0 + kTolerance) << l.name;
  }
  // ps_nic sets the PS's NIC only: 40 Gbps = 5 GB/s against the workers' 10 Gbps.
  const auto& ps = result.results[0];
  EXPECT_DOUBLE_EQ(link(ps, "ps-0-nic_UP").bandwidth, 5e9);
  EXPECT_DOUBLE_EQ(link(ps, "worker-0-nic_UP").bandwidth, 1.25e9);
  EXPECT_DOUBLE_EQ(link(ps, "backbone").bandwidth, 12.5e9);
}

// 4 workers on the ideal network model with zero latency and instant compute, ps with one
// variable of 1 MB (250,000 weights); `platform` is the star's keys after "kind". Every message
// is that megabyte and its 24-byte header.
constexpr double kMessage = 1e6 + 24;
StrategyResult one_megabyte_ps(const std::string& platform) {
  const Scenario s = scenario_from(
      R"("model": )" + fc_model(1000, 250) + R"(, "batch_per_worker": 8, "cluster": {"workers": 4,
      "worker_device": )" + kInstantDevice + R"(, "platform": {"kind": "star", "latency": 0, )" +
      platform + R"(}}, "network_model": "ideal", "strategies": ["ps"])");
  return sim::simulate_isolated(s, s.strategies[0], std::nullopt, {});
}

TEST(Platforms, PsNicSetsThePsBandwidthOnly) {
  // Every NIC 1 GB/s (8 Gbps): the PS uplink carries 4 x 1 MB of pulls in 4 ms, then its
  // downlink 4 x 1 MB of pushes in 4 ms: 8 ms.
  const auto plain = one_megabyte_ps(R"("nic_bandwidth": "8Gbps")");
  EXPECT_NEAR(plain.step_time_mean_s, 8 * kMessage / 1e9, kClosedFormSeconds) << plain.step_time_mean_s;
  // A 4 GB/s PS NIC moves the 4 MB in 1 ms, as fast as each worker's 1 GB/s NIC moves its 1 MB:
  // 1 ms each way, 2 ms.
  const auto fast_ps = one_megabyte_ps(R"("nic_bandwidth": "8Gbps",
      "ps_nic": {"bandwidth": "32Gbps"})");
  EXPECT_NEAR(fast_ps.step_time_mean_s, 2 * kMessage / 1e9, kClosedFormSeconds) << fast_ps.step_time_mean_s;
  EXPECT_DOUBLE_EQ(host(fast_ps, "ps-0").bytes_out, 4 * kMessage);
  EXPECT_DOUBLE_EQ(link(fast_ps, "ps-0-nic_UP").bandwidth, 4e9);
  EXPECT_DOUBLE_EQ(link(fast_ps, "worker-3-nic_DOWN").bandwidth, 1e9);
  // worker_nic sets the workers' instead: 4 GB/s workers behind a 1 GB/s PS change nothing.
  const auto fast_workers = one_megabyte_ps(R"("nic_bandwidth": "8Gbps",
      "worker_nic": {"bandwidth": "32Gbps"})");
  EXPECT_NEAR(fast_workers.step_time_mean_s, 8 * kMessage / 1e9, kClosedFormSeconds) << fast_workers.step_time_mean_s;
}

TEST(Platforms, BackboneCarriesEveryFlow) {
  // 80 GB/s NICs: without a backbone the PS uplink moves the 4 MB of pulls in 0.05 ms and its
  // downlink the pushes in 0.05 ms: 0.1 ms.
  const auto fast = one_megabyte_ps(R"("nic_bandwidth": "640Gbps")");
  EXPECT_NEAR(fast.step_time_mean_s, 8 * kMessage / 80e9, kClosedFormSeconds) << fast.step_time_mean_s;
  // A 1 GB/s backbone carries all 8 MB, pulls and pushes, in turn: 8 ms.
  const auto narrow = one_megabyte_ps(R"("nic_bandwidth": "640Gbps",
      "backbone": {"bandwidth": "8Gbps", "latency": 0})");
  EXPECT_NEAR(narrow.step_time_mean_s, 8 * kMessage / 1e9, kClosedFormSeconds) << narrow.step_time_mean_s;
  EXPECT_DOUBLE_EQ(link_bytes(narrow, "backbone"), 8 * kMessage);
  EXPECT_EQ(narrow.links.front().name, "backbone");
  EXPECT_NEAR(narrow.links.front().utilisation, 1.0, 1e-6);
}

TEST(Platforms, RacksWithOversubscribedUplinks) {
  const Scenario s = on(R"({"kind": "racks", "nic_bandwidth": "10Gbps", "latency": "5us",
      "hosts_per_rack": 3, "rack_uplink": {"bandwidth": "5Gbps", "latency": "2us"}})");
  expect_runs_like_a_star(s);
  // ps: every worker in racks 1 and 2 reaches ps-0 through its rack's 5 Gbps uplink.
  const auto r = sim::simulate_isolated(s, s.strategies[0], std::nullopt, {});
  EXPECT_NE(r.links.front().name.find("uplink"), std::string::npos) << r.links.front().name;
  // Racks: {ps-0, worker-0, worker-1}, {worker-2..4}, {worker-5}. Under ps every byte goes
  // between ps-0 and a worker, so rack 0's uplink carries up what ps-0 sends to workers 2-5 and
  // down what they push; rack 1's carries workers 2-4's share, rack 2's worker 5's.
  const auto in_of = [&](int w) { return host(r, "worker-" + std::to_string(w)).bytes_in; };
  const auto out_of = [&](int w) { return host(r, "worker-" + std::to_string(w)).bytes_out; };
  EXPECT_DOUBLE_EQ(link_bytes(r, "rack-0-uplink_UP"), in_of(2) + in_of(3) + in_of(4) + in_of(5));
  EXPECT_DOUBLE_EQ(link_bytes(r, "rack-0-uplink_DOWN"),
                   out_of(2) + out_of(3) + out_of(4) + out_of(5));
  EXPECT_DOUBLE_EQ(link_bytes(r, "rack-1-uplink_DOWN"), in_of(2) + in_of(3) + in_of(4));
  EXPECT_DOUBLE_EQ(link_bytes(r, "rack-1-uplink_UP"), out_of(2) + out_of(3) + out_of(4));
  EXPECT_DOUBLE_EQ(link_bytes(r, "rack-2-uplink_DOWN"), in_of(5));
  EXPECT_DOUBLE_EQ(link_bytes(r, "rack-2-uplink_UP"), out_of(5));
  EXPECT_GT(in_of(5), 0.0);
}

TEST(Platforms, FatTreeTorusDragonfly) {
  expect_runs_like_a_star(on(R"({"kind": "fat_tree", "nic_bandwidth": "10Gbps",
      "latency": "5us", "topology": "2;4,4;1,2;1,2"})"));
  expect_runs_like_a_star(on(R"({"kind": "torus", "nic_bandwidth": "10Gbps",
      "latency": "5us", "topology": "2,2,2"})"));
  expect_runs_like_a_star(on(R"({"kind": "dragonfly", "nic_bandwidth": "10Gbps",
      "latency": "5us", "topology": "2,1;2,1;2,1;1"})"));
}

TEST(Platforms, PlatformFileWithRoles) {
  const Scenario s = on(R"({"kind": "file", "file": ")" RALP_SOURCE_DIR
                        R"(/platforms/two-racks.xml", "roles": {"ps-0": "node-0"}})");
  expect_runs_like_a_star(s);
}

TEST(Platforms, FatTreePlatformFile) {
  expect_runs_like_a_star(on(R"({"kind": "file", "file": ")" RALP_SOURCE_DIR
                                     R"(/platforms/fat-tree-16.xml"})"));
}

// Nodes on a platform file: its hosts stand for the devices, grouped in order, and its routes
// carry every message. two-racks.xml puts node-0..3 in one rack, node-4..7 in the other: with 2
// devices per node, ps with local aggregation sends the same messages as on a star, and each
// node's bytes are counted by their ends.
TEST(Platforms, PlatformFileWithNodes) {
  const std::string nodes = R"("devices_per_node": 2, )";
  const std::string file = R"({"kind": "file", "file": ")" RALP_SOURCE_DIR
                           R"(/platforms/two-racks.xml", "roles": {"ps-0": "node-7"}})";
  const Scenario s = scenario_from(R"("model": )" + fc_model(1000, 1000) + R"(,
      "batch_per_worker": 8, "cluster": {"workers": 4, "worker_device": )" + kInstantDevice +
      ", " + nodes + R"("platform": )" + file + R"(}, "strategies": ["ps"])");
  sim::RunOptions options;
  options.messages = true;
  const auto r = sim::simulate_isolated(s, s.strategies[0], std::nullopt, options);
  ASSERT_EQ(r.nodes.size(), 2u);
  // node-1 (worker-2, worker-3): one pull in and one push out over its NIC, and inside the
  // pull passed on and worker-3's push.
  const double group = 4e6 + 24;
  EXPECT_DOUBLE_EQ(r.nodes[1].nic_in, group);
  EXPECT_DOUBLE_EQ(r.nodes[1].nic_out, group);
  EXPECT_DOUBLE_EQ(r.nodes[1].interconnect, 2 * group);
  const Scenario star = scenario_from(R"("model": )" + fc_model(1000, 1000) + R"(,
      "batch_per_worker": 8, "cluster": {"workers": 4, "worker_device": )" + kInstantDevice +
      ", " + nodes + R"("platform": {"kind": "star", "nic_bandwidth": "10Gbps"}},
      "strategies": ["ps"])");
  const auto on_star = sim::simulate_isolated(star, star.strategies[0], std::nullopt, options);
  EXPECT_EQ(r.messages, on_star.messages);
  // Several NICs per node describe a generated platform only.
  Scenario nics = s;
  nics.nodes.nics_per_node = 2;
  try {
    sim::simulate_isolated(nics, nics.strategies[0], std::nullopt, {});
    FAIL();
  } catch (const InputError& e) {
    EXPECT_EQ(e.path(), "/cluster/nics_per_node");
  }
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
