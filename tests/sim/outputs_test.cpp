// Outputs: results survive JSON, the CLI's JSON/CSV/trace files are well formed and the same
// scenario and seed give the same bytes.
#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

#include "../support/run_command.hpp"
#include "ralp/core/simulation_result.hpp"
#include "ralp/sim/simulate.hpp"
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

}  // namespace
}  // namespace ralp
