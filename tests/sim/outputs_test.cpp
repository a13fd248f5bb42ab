// Outputs: results survive JSON, the CLI's JSON/CSV/trace files are well formed and the same
// scenario and seed give the same bytes.
#include <algorithm>
#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

#include "../support/run_command.hpp"
#include "ralp/results/simulation_result.hpp"
#include "ralp/schedule/schedule.hpp"
#include "ralp/sim/simulate.hpp"
#include "ralp/spec/head.hpp"
#include "ralp/spec/strategy_head.hpp"
#include "sim_fixtures.hpp"

namespace ralp {
namespace {

using testing::ralp_binary;
using testing::read_file;
using testing::run_command;
using testing::TempDir;

const std::string kScenario = RALP_TEST_DATA_DIR "/data/scenarios/small-mixed.json";

TEST(Outputs, StrategyResultRoundTripsThroughJson) {
  const Scenario s = load_scenario(kScenario);
  const auto r = sim::simulate_isolated(s, s.strategies[1], s.model.find("fc3"), {true, false});
  ASSERT_FALSE(r.timeline.empty());
  EXPECT_EQ(strategy_result_from_json(to_json(r, true)), r);
}

TEST(Outputs, AutoCutSearchesEveryCut) {
  const Scenario s = load_scenario(kScenario);
  const auto result = sim::simulate_scenario(s, {.jobs = 2});
  const StrategyResult& ralp = result.results[2];
  ASSERT_EQ(ralp.cut_search.size(), s.model.size() - 1);
  for (const auto& trial : ralp.cut_search) EXPECT_GE(trial.step_time_mean_s, ralp.step_time_mean_s);
  // Speedups are against the scenario's ps and allreduce strategies.
  EXPECT_DOUBLE_EQ(*result.results[0].speedup_vs_ps, 1.0);
  EXPECT_DOUBLE_EQ(*ralp.speedup_vs_ps, result.results[0].step_time_mean_s / ralp.step_time_mean_s);
}

TEST(Outputs, SameScenarioSameBytes) {
  const TempDir scratch("outputs-bytes");
  const std::string dir = scratch.path.string();
  std::string previous[3];
  for (int run = 0; run < 2; ++run) {
    const std::string json = dir + "/out" + std::to_string(run) + ".json";
    const std::string csv = dir + "/out" + std::to_string(run) + ".csv";
    const std::string trace = dir + "/out" + std::to_string(run) + ".trace.json";
    const auto result = run_command(ralp_binary() + " simulate --quiet " + kScenario + " --json " +
                                    json + " --csv " + csv + " --trace " + trace);
    ASSERT_EQ(result.status, 0) << result.err;
    const std::string files[3] = {read_file(json), read_file(csv), read_file(trace)};
    for (int i = 0; i < 3; ++i) {
      EXPECT_FALSE(files[i].empty());
      if (run == 1) {
        EXPECT_EQ(files[i], previous[i]) << "output " << i;
      }
      previous[i] = files[i];
    }
  }
}

TEST(Outputs, JsonCsvAndTraceAreWellFormed) {
  const TempDir scratch("outputs-formats");
  const std::string dir = scratch.path.string();
  const auto result = run_command(ralp_binary() + " simulate --quiet " + kScenario + " --json " +
                                  dir + "/r.json --csv " + dir + "/r.csv --trace " + dir +
                                  "/r.trace.json");
  ASSERT_EQ(result.status, 0) << result.err;
  EXPECT_NE(result.out.find("images/s"), std::string::npos);
  const Json json = parse_json_text(read_file(dir + "/r.json"), "r.json");
  ASSERT_EQ(json["results"].size(), 4u);
  // The table and the JSON end with the same verdict.
  ASSERT_TRUE(json["verdict"].is_object());
  for (const auto& line : json["verdict"]["lines"]) {
    EXPECT_NE(result.out.find(line.get<std::string>()), std::string::npos) << line;
  }
  EXPECT_NE(result.out.find("fastest: "), std::string::npos);
  for (const char* key : {"strategy", "cut", "step_time_mean_s", "images_per_s", "speedup_vs_ps",
                          "hosts", "busiest_link", "worker_mean", "compute_times"}) {
    EXPECT_TRUE(json["results"][0].contains(key)) << key;
  }
  const std::string csv = read_file(dir + "/r.csv");
  EXPECT_EQ(std::count(csv.begin(), csv.end(), '\n'), 5);
  const Json trace = parse_json_text(read_file(dir + "/r.trace.json"), "trace");
  ASSERT_TRUE(trace["traceEvents"].is_array());
  size_t complete = 0;
  for (const auto& e : trace["traceEvents"]) {
    if (e["ph"] == "X") {
      ++complete;
      EXPECT_GE(e["dur"].get<double>(), 0.0);
    }
  }
  EXPECT_GT(complete, 100u);
}

TEST(Outputs, JsonToStdoutReplacesTheTable) {
  const auto result = run_command(ralp_binary() + " simulate --quiet " + kScenario + " --json -");
  ASSERT_EQ(result.status, 0) << result.err;
  EXPECT_NO_THROW(parse_json_text(result.out, "stdout"));
}

TEST(Outputs, BadScenarioExitsTwo) {
  const auto result = run_command(ralp_binary() + " simulate " RALP_TEST_DATA_DIR
                                  "/data/bad-scenarios/workers-zero.json");
  EXPECT_EQ(result.status, 2);
  EXPECT_EQ(std::count(result.err.begin(), result.err.end(), '\n'), 1);
}

}  // namespace
}  // namespace ralp

namespace ralp {
namespace {

TEST(Outputs, UnwritableOutputStopsBeforeSimulating) {
  const auto result = testing::run_command(testing::ralp_binary() + " simulate " + kScenario +
                                           " --json /nonexistent-folder/r.json");
  EXPECT_EQ(result.status, 2);
  EXPECT_EQ(result.err,
            "error: --json: names /nonexistent-folder/r.json, whose folder /nonexistent-folder "
            "does not exist\n");
  EXPECT_EQ(result.out, "");
}

}  // namespace
}  // namespace ralp

namespace ralp {
namespace {

TEST(Outputs, MoreWorkersThanTheSimulatorRunsAreRefusedUpFront) {
  // One worker past the limit: refused in one line, exit 2, before any simulation starts.
  const auto file = std::filesystem::temp_directory_path() / "ralp-too-many-workers.json";
  {
    std::ofstream out(file);
    out << R"({"name": "big", "model": )" << testing::fc_model(10, 10)
        << R"(, "batch_per_worker": 1, "cluster": {"workers": 16385, "worker_device": "v100",
        "platform": {"kind": "star", "nic_bandwidth": "10Gbps", "latency": "5us"}},
        "strategies": ["ps"]})";
  }
  const std::string expected =
      "error: " + file.string() +
      ": /cluster/workers is 16385, expected at most 16384 (the simulator's limit: each worker "
      "costs SimGrid actors and their stacks)\n";
  for (const char* command : {" simulate ", " scenario check "}) {
    const auto result = testing::run_command(testing::ralp_binary() + command + file.string());
    EXPECT_EQ(result.status, 2) << command;
    EXPECT_EQ(result.err, expected) << command;
    EXPECT_EQ(result.out, "") << command;
  }
  std::filesystem::remove(file);
}

// A measured run's file as ralp cluster --json writes it, whose device times are the schedule's
// own times of each strategy, times `factor`.
Json device_times_document(const Scenario& sc, double factor) {
  Json results = Json::array();
  for (const StrategySpec& spec : sc.strategies) {
    std::optional<LayerId> cut;
    if (const auto head = strategy_head(sc.model, spec)) cut = head->cut();
    const schedule::Schedule s =
        schedule::build_schedule(schedule::make_step_plan(sc, spec, cut), sc.parameter_servers);
    Json times = Json::array();
    for (const schedule::RoleSchedule& role : s.roles) {
      for (size_t i = 0; i < role.ops.size(); ++i) {
        if (role.ops[i].stream() != schedule::Stream::device) continue;
        times.push_back({{"host", role.name},
                         {"op", i},
                         {"label", schedule::op_label(s, sc.model, role.host, role.ops[i])},
                         {"seconds", role.ops[i].seconds * factor}});
      }
    }
    results.push_back({{"strategy", spec.label}, {"device_times", times}});
  }
  return {{"results", results}};
}

// cifar_alexnet on 1 PS + 2 workers with these strategies (a JSON array), written into `dir`.
std::string replay_scenario(const TempDir& dir, const std::string& strategies) {
  const std::string file = dir / "s.json";
  std::ofstream(file) << R"({"name": "replay", "model": "cifar_alexnet", "batch_per_worker": 16,
      "cluster": {"workers": 2, "parameter_servers": 1, "worker_device": "gtx1080ti",
                  "platform": {"kind": "star", "nic_bandwidth": "1Gbps", "latency": "50us"}},
      "strategies": )" << strategies << R"(, "steps": 2, "warmup_steps": 1, "seed": 7})";
  return file;
}

TEST(Outputs, ReplayPlaysTheDeviceTimesARunMeasured) {
  TempDir dir("replay");
  const std::string scenario =
      replay_scenario(dir, R"(["ps", {"name": "ralp", "cut": "fc3"}, "allreduce"])");
  const Scenario sc = load_scenario(scenario);
  const auto simulate = [&](const std::string& replay, const std::string& json) {
    const auto r = run_command(ralp_binary() + " simulate --quiet " + scenario + " --json " + json +
                               (replay.empty() ? "" : " --replay " + replay));
    EXPECT_EQ(r.status, 0) << r.err;
    return read_json_file(json).at("results");
  };
  const Json predicted = simulate("", dir / "predicted.json");
  // The schedule's own times replay to the same steps, to the bit.
  std::ofstream(dir / "same.json") << device_times_document(sc, 1.0).dump();
  const Json same = simulate(dir / "same.json", dir / "same-out.json");
  // Twice the times: each worker computes twice as long.
  std::ofstream(dir / "twice.json") << device_times_document(sc, 2.0).dump();
  const Json twice = simulate(dir / "twice.json", dir / "twice-out.json");
  ASSERT_EQ(predicted.size(), 3u);
  for (size_t i = 0; i < predicted.size(); ++i) {
    EXPECT_EQ(same[i].at("step_times_s"), predicted[i].at("step_times_s")) << i;
    const double compute = predicted[i].at("worker_mean").at("compute_s").get<double>();
    EXPECT_NEAR(twice[i].at("worker_mean").at("compute_s").get<double>(), 2.0 * compute,
                1e-9 * compute) << i;
    EXPECT_GT(twice[i].at("step_time_mean_s").get<double>(),
              predicted[i].at("step_time_mean_s").get<double>()) << i;
  }
  EXPECT_EQ(read_json_file(dir / "same-out.json").at("scenario").at("replay"), dir / "same.json");
}

TEST(Outputs, ReplayDoesNotChargeTimeSharingTwice) {
  // Two all-reduce workers share a 1 GFLOP/s device whose time sharing costs 25%: predicted,
  // each one's 32 ms of compute takes 2 x 1.25 x 32 = 80 ms while both compute. A run's times
  // (each operation's CPU time) already hold what sharing cost it, so a replay of the schedule's
  // own times divides the device evenly: 64 ms.
  TempDir dir("replay-shared");
  const std::string scenario = dir / "s.json";
  std::ofstream(scenario) << R"({"name": "shared", "model": )" << testing::fc_model(1000, 1000)
                          << R"(, "batch_per_worker": 8, "cluster": {"workers": 2,
      "parameter_servers": 0, "worker_device": {"name": "gflop", "kind": "cpu",
      "peak_flops": 1e9, "memory_bandwidth": 1e30, "launch_overhead": 0,
      "efficiency": {"default": 1.0}, "time_sharing_slowdown": 1.25}, "shared_devices": [0, 0],
      "platform": {"kind": "star", "nic_bandwidth": "8000000Gbps", "latency": 0}},
      "network_model": "ideal", "strategies": [{"name": "allreduce", "cycle_time": 0}],
      "steps": 2, "warmup_steps": 1})";
  const Scenario sc = load_scenario(scenario);
  std::ofstream(dir / "times.json") << device_times_document(sc, 1.0).dump();
  const auto compute = [&](const std::string& replay) {
    const auto r = run_command(ralp_binary() + " simulate --quiet " + scenario + " --json " +
                               (dir / "out.json") + replay);
    EXPECT_EQ(r.status, 0) << r.err;
    return read_json_file(dir / "out.json").at("results")[0].at("worker_mean").at("compute_s").get<double>();
  };
  const double predicted = compute("");
  const double replayed = compute(" --replay " + (dir / "times.json"));
  EXPECT_NEAR(predicted, 0.080, 5e-4);
  EXPECT_NEAR(replayed, 0.064, 5e-4);
  EXPECT_NEAR(predicted / replayed, 1.25, 1e-3);
}

TEST(Outputs, ReplayRefusesTimesOfAnotherRunInOneLine) {
  TempDir dir("replay-bad");
  const std::string scenario = replay_scenario(dir, R"(["ps", "allreduce"])");
  const Scenario sc = load_scenario(scenario);
  const auto refused = [&](const Json& document, const std::string& expected) {
    std::ofstream(dir / "m.json") << document.dump();
    const auto r = run_command(ralp_binary() + " simulate --quiet " + scenario + " --replay " +
                               (dir / "m.json"));
    EXPECT_EQ(r.status, 2) << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
    EXPECT_NE(r.err.find(expected), std::string::npos) << r.err;
  };
  Json document = device_times_document(sc, 1.0);
  document["results"][1]["device_times"][3]["label"] = "conv9";
  refused(document, "m.json: /results/1/device_times/3 names operation");
  document = device_times_document(sc, 1.0);
  document["results"][0]["device_times"].erase(0);
  refused(document, "m.json: /results/0/device_times has no time for");
  document = device_times_document(sc, 1.0);
  document["results"].erase(1);
  refused(document, "has no strategy \"allreduce\"");
  document = device_times_document(sc, 1.0);
  document["results"][0]["device_times"][0]["seconds"] = -1;
  refused(document, "/results/0/device_times/0/seconds");
}

}  // namespace
}  // namespace ralp
