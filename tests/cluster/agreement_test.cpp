// The simulator and the real cluster carry out the same schedule: for every strategy, on both
// CIFAR nets, with 1 PS + 2 workers and 2 PS + 3 workers, cut given and "auto", shards placed
// round-robin, greedily and balanced, every host sends the same messages (peer, kind, item,
// payload bytes) in the same order on each connection, both resolve "auto" to the same cut and
// place the same shards, bytes per host equal the schedule's exactly, headers counted, the
// last step's traces hold the same activities on the same tracks, and the run's device times
// replay onto the simulator's schedule.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <tuple>

#include "../support/run_command.hpp"
#include "loopback.hpp"
#include "ralp/core/json_input.hpp"
#include "ralp/schedule/schedule.hpp"
#include "ralp/spec/scenario.hpp"

namespace ralp {
namespace {

using testing::ralp_binary;
using testing::run_command;
using testing::TempDir;

// On nodes: 2 devices per node, the servers on the nodes; ps, ralp and hybrid with local
// aggregation and without it.
const std::string kNodes = R"("devices_per_node": 2, "ps_placement": "colocated",
    "node_interconnect": {"kind": "pcie", "bandwidth": "16GBps", "host_links": 2},)";

std::string node_strategies(const std::string& cut) {
  return R"(["ps", {"name": "ps", "label": "ps-devices", "local_aggregation": false},
      {"name": "ralp", "label": "ralp-devices", "cut": ")" + cut + R"(",
       "local_aggregation": false},
      {"name": "ralp", "cut": ")" + cut + R"("},
      {"name": "ralp", "label": "ralp-all", "cut": ")" + cut + R"(", "head_mode": "all_workers"},
      {"name": "allreduce", "fusion_threshold": "1MiB", "cycle_time": "1ms"},
      {"name": "allreduce", "label": "allreduce-hierarchical", "algorithm": "hierarchical",
       "fusion_threshold": "1MiB", "cycle_time": "1ms"},
      {"name": "hybrid", "label": "hybrid-devices", "cut": ")" + cut + R"(",
       "local_aggregation": false, "algorithm": "hierarchical"},
      {"name": "hybrid", "cut": ")" + cut + R"("}])";
}

std::string plain_strategies(const std::string& cut) {
  return R"(["ps", {"name": "ps", "label": "ps-greedy", "sharding": "greedy"},
      {"name": "ps", "label": "ps-balanced", "sharding": "balanced"},
      {"name": "ralp", "label": "ralp-balanced", "cut": ")" + cut + R"(", "sharding": "balanced"},
      {"name": "ralp", "label": "ralp-auto"}, {"name": "ralp", "cut": ")" + cut + R"("},
      {"name": "allreduce", "fusion_threshold": "1MiB", "cycle_time": "1ms"},
      {"name": "hybrid", "label": "hybrid-auto"},
      {"name": "hybrid", "cut": ")" + cut + R"(", "head_mode": "all_workers"}])";
}

std::string write_scenario(const std::filesystem::path& dir, const std::string& model,
                           const std::string& cut, int ps, int workers, bool nodes) {
  const std::string file = (dir / "s.json").string();
  std::ofstream(file) << R"({"name": "agreement", "model": ")" << model
                      << R"(", "batch_per_worker": 4,
      "cluster": {"workers": )" << workers << R"(, "parameter_servers": )" << ps
                      << R"(, "worker_device": "cpu-core", )" << (nodes ? kNodes : "") << R"(
                  "platform": {"kind": "star", "nic_bandwidth": "10Gbps", "latency": "20us"}},
      "strategies": )" << (nodes ? node_strategies(cut) : plain_strategies(cut)) << R"(,
      "steps": 1, "warmup_steps": 1, "seed": 3,
      "training": {"step_timeout": "30s", "threads": 1}})";
  return file;
}

// Each connection's messages in order: (sender, peer, kind) -> [(item, payload bytes)].
using Channels = std::map<std::tuple<size_t, std::string, std::string>,
                          std::vector<std::pair<int64_t, int64_t>>>;
Channels channels(const Json& result) {
  Channels out;
  const Json& hosts = result.at("messages");
  for (size_t h = 0; h < hosts.size(); ++h) {
    for (const Json& m : hosts[h]) {
      out[{h, m[1].get<std::string>(), m[0].get<std::string>()}].emplace_back(
          m[2].get<int64_t>(), m[3].get<int64_t>());
    }
  }
  return out;
}

// A Chrome trace's activities: (process, thread) names -> the activities' names, sorted.
std::map<std::pair<std::string, std::string>, std::vector<std::string>> tracks(const Json& trace) {
  std::map<int64_t, std::string> processes;
  std::map<std::pair<int64_t, int64_t>, std::string> threads;
  for (const Json& e : trace.at("traceEvents")) {
    if (e.at("ph") != "M") continue;
    const std::string name = e.at("args").value("name", "");
    if (e.at("name") == "process_name") processes[e.at("pid").get<int64_t>()] = name;
    if (e.at("name") == "thread_name") {
      threads[{e.at("pid").get<int64_t>(), e.at("tid").get<int64_t>()}] = name;
    }
  }
  std::map<std::pair<std::string, std::string>, std::vector<std::string>> out;
  for (const Json& e : trace.at("traceEvents")) {
    if (e.at("ph") != "X") continue;
    const int64_t pid = e.at("pid").get<int64_t>();
    out[{processes.at(pid), threads.at({pid, e.at("tid").get<int64_t>()})}].push_back(
        e.at("name").get<std::string>());
  }
  for (auto& [track, names] : out) std::sort(names.begin(), names.end());
  return out;
}

// The traces agree: every simulated activity is on the same track of the real run, and every
// transfer track carries the same labels. The real run has more where the simulator leaves out
// what takes no predicted time (a free update) or plays a ring's phases as one flow
// (ring_model "coalesced").
void check_traces(const Json& predicted, const Json& measured) {
  const auto p = tracks(predicted);
  const auto m = tracks(measured);
  for (const auto& [track, names] : p) {
    SCOPED_TRACE(track.first + ", " + track.second);
    ASSERT_TRUE(m.contains(track));
    const std::vector<std::string>& real = m.at(track);
    EXPECT_TRUE(std::includes(real.begin(), real.end(), names.begin(), names.end()));
  }
  for (const auto& [track, names] : m) {
    SCOPED_TRACE(track.first + ", " + track.second);
    const bool transfers = track.second.starts_with("send to") ||
                           track.second.starts_with("receive from");
    if (!transfers) continue;
    ASSERT_TRUE(p.contains(track));
    const std::set<std::string> real(names.begin(), names.end());
    const std::set<std::string> simulated(p.at(track).begin(), p.at(track).end());
    EXPECT_EQ(real, simulated);
  }
}

void check_agreement(const std::string& model, const std::string& cut, int ps, int workers,
                     bool nodes = false) {
  SCOPED_TRACE(model + ", " + std::to_string(ps) + " PS + " + std::to_string(workers) + " workers" +
               (nodes ? " on nodes of 2" : ""));
  const TempDir dir("agreement-test");
  const std::string file = write_scenario(dir.path, model, cut, ps, workers, nodes);
  const std::string predicted = (dir.path / "predicted.json").string();
  const std::string measured = (dir.path / "measured.json").string();
  const std::string predicted_trace = (dir.path / "predicted-trace.json").string();
  const std::string measured_trace = (dir.path / "measured-trace.json").string();
  const auto sim = run_command(ralp_binary() + " simulate --quiet --messages " + file +
                               " --json " + predicted + " --trace " + predicted_trace);
  if (sim.status != 0 && sim.err.find("not built") != std::string::npos) {
    GTEST_SKIP() << "this build has no simulator: " << sim.err;
  }
  ASSERT_EQ(sim.status, 0) << sim.err;
  const auto real = run_command(testing::loopback_mpirun(
      ps + workers,
      "--quiet --messages " + file + " --json " + measured + " --trace " + measured_trace, 200));
  ASSERT_EQ(real.status, 0) << real.out << real.err;
  check_traces(parse_json_text(testing::read_file(predicted_trace), predicted_trace),
               parse_json_text(testing::read_file(measured_trace), measured_trace));

  const Json p = parse_json_text(testing::read_file(predicted), predicted);
  const Json m = parse_json_text(testing::read_file(measured), measured);
  const Scenario scenario = load_scenario(file);
  ASSERT_EQ(p["results"].size(), scenario.strategies.size());
  ASSERT_EQ(m["results"].size(), scenario.strategies.size());
  for (size_t i = 0; i < scenario.strategies.size(); ++i) {
    const Json& a = p["results"][i];
    const Json& b = m["results"][i];
    SCOPED_TRACE(a["strategy"].get<std::string>());
    EXPECT_EQ(a["strategy"], b["strategy"]);
    EXPECT_EQ(a["cut"], b["cut"]);
    // The same shard assignment (written with several shards only).
    const bool sharded = a["kind"] == "ps" || a["kind"] == "ralp";
    EXPECT_EQ(a.contains("shards"), ps > 1 && sharded);
    EXPECT_EQ(a.value("shards", Json()), b.value("shards", Json()));
    EXPECT_EQ(channels(a), channels(b));
    // Bytes per node, in and out of its NICs and over its interconnect, in both modes.
    EXPECT_EQ(a.contains("nodes"), nodes);
    EXPECT_EQ(a.value("nodes", Json()), b.value("nodes", Json()));
    // Bytes per host: the simulator's, the real run's and the schedule's, exactly.
    std::optional<LayerId> resolved;
    if (!a["cut"].is_null()) resolved = scenario.model.find(a["cut"].get<std::string>());
    const schedule::Schedule s = schedule::build_schedule(
        schedule::make_step_plan(scenario, scenario.strategies[i], resolved), ps);
    const auto expected = schedule::bytes_per_host(s);
    ASSERT_EQ(a["hosts"].size(), expected.size());
    ASSERT_EQ(b["hosts"].size(), expected.size());
    for (size_t h = 0; h < expected.size(); ++h) {
      SCOPED_TRACE(a["hosts"][h]["name"].get<std::string>());
      EXPECT_EQ(a["hosts"][h]["bytes_in"].get<double>(), static_cast<double>(expected[h].in));
      EXPECT_EQ(a["hosts"][h]["bytes_out"].get<double>(), static_cast<double>(expected[h].out));
      EXPECT_EQ(b["hosts"][h]["bytes_in"].get<double>(), static_cast<double>(expected[h].in));
      EXPECT_EQ(b["hosts"][h]["bytes_out"].get<double>(), static_cast<double>(expected[h].out));
    }
  }
  // The run's device times fit the simulator's schedule of every strategy one to one (replay
  // refuses a missing, extra or differently labelled operation): both ran the same device
  // operations under the same names.
  const auto replayed = run_command(ralp_binary() + " simulate --quiet " + file + " --replay " +
                                    measured + " --json " + (dir.path / "replayed.json").string());
  EXPECT_EQ(replayed.status, 0) << replayed.err;
}

TEST(Agreement, AlexNetOnePsTwoWorkers) { check_agreement("cifar_alexnet", "fc3", 1, 2); }
TEST(Agreement, AlexNetTwoPsThreeWorkers) { check_agreement("cifar_alexnet", "fc3", 2, 3); }
TEST(Agreement, AllConvOnePsTwoWorkers) { check_agreement("cifar_allconv", "fc", 1, 2); }
TEST(Agreement, AllConvTwoPsThreeWorkers) { check_agreement("cifar_allconv", "fc", 2, 3); }
// 2 nodes of 2 devices, a server on each node: ps, ralp and hybrid with local aggregation and
// without, and allreduce; the same messages, bytes per host and bytes per node in both modes.
TEST(Agreement, AlexNetOnNodesWithCoLocatedServers) {
  check_agreement("cifar_alexnet", "fc3", 2, 4, true);
}

}  // namespace
}  // namespace ralp
