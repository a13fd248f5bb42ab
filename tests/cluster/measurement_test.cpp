// Summaries of measured runs: step boundaries from the ranks' parts, medians and spreads, bytes
// and splits over the measured steps, sent messages, and JSON with the simulator's field names.
#include <gtest/gtest.h>

#include "ralp/cluster/measurement.hpp"
#include "ralp/reports/result_io.hpp"

namespace ralp::cluster {
namespace {

// One PS and two workers, three steps of which the first is warm-up. Steps end at 1.2, 2.2 and
// 3.7 (ps-0's parts); the last rank starts at 0.2.
std::vector<RankRecord> records() {
  RankRecord ps{"ps-0", 0.0, {}, {10, 20, 30}, {1, 2, 3}, {1.2, 2.2, 3.7}, {}, {}};
  ps.intervals = {{0.3, 1.0, 0, true}, {1.2, 1.7, 1, true}, {2.2, 2.7, 2, true}};
  RankRecord w0{"worker-0", 0.1, {}, {5, 6, 8}, {100, 200, 400}, {}, {}, {}};
  // Step 1: computing 0.5, then a transfer of 0.3; step 2: computing 0.8 and a transfer of 0.3
  // that overlaps it by 0.1.
  w0.intervals = {{0.2, 1.0, 0, true},
                  {1.2, 1.7, 1, true},
                  {1.7, 2.0, 1, false},
                  {2.2, 3.0, 2, true},
                  {2.9, 3.2, 2, false}};
  w0.part_done.assign(3, std::nullopt);
  w0.losses = {{0, 0, 2.3}, {1, 0, 2.0}, {2, 0, 1.0}};
  w0.sent = {{"push", "ps-0", 3, 100}};
  w0.device_ops = {{4, "conv1"}, {9, "grad conv1"}};
  w0.device_seconds = {{9.0, 9.0}, {1.0, 4.0}, {3.0, 2.0}};
  RankRecord w1 = w0;
  w1.name = "worker-1";
  w1.start = 0.2;
  w1.losses = {{0, 1, 2.1}, {1, 1, 2.2}, {2, 1, 1.2}};
  return {ps, w0, w1};
}

TEST(Measurement, MedianAndInterquartileRange) {
  EXPECT_DOUBLE_EQ(median({3.0, 1.0, 2.0}), 2.0);
  EXPECT_DOUBLE_EQ(median({4.0, 1.0, 2.0, 3.0}), 2.5);
  // Sorted 1, 2, 3, 4: the quartiles sit at positions 0.75 and 2.25: 1.75 and 3.25.
  EXPECT_DOUBLE_EQ(interquartile_range({4.0, 1.0, 3.0, 2.0}), 1.5);
  EXPECT_DOUBLE_EQ(interquartile_range({5.0}), 0.0);
  EXPECT_THROW(median({}), std::invalid_argument);
}

TEST(Measurement, MiddleHalfLeavesOutTheLowestAndHighestQuarters) {
  EXPECT_EQ(middle_half({5.0, 1.0, 9.0, 3.0}), (std::vector<size_t>{0, 3}));
  // Seven values: one left out at each end (a quarter of 7, rounded down).
  EXPECT_EQ(middle_half({7.0, 0.5, 4.0, 2.0, 6.0, 3.0, 99.0}), (std::vector<size_t>{0, 2, 3, 4, 5}));
  EXPECT_EQ(middle_half({2.0, 1.0, 3.0}), (std::vector<size_t>{0, 1, 2}));
  EXPECT_EQ(middle_half({4.0}), (std::vector<size_t>{0}));
  EXPECT_TRUE(middle_half({}).empty());
}

TEST(Measurement, StepsEndWhenTheirLastPartIsDone) {
  const MeasuredResult r = summarise(records(), 1, 1, 8);
  // The last rank started at 0.2; ps-0 finished its parts at 1.2, 2.2 and 3.7.
  EXPECT_EQ(r.step_times.size(), 3u);
  EXPECT_DOUBLE_EQ(r.step_times[0], 1.0);
  EXPECT_DOUBLE_EQ(r.step_times[1], 1.0);
  EXPECT_DOUBLE_EQ(r.step_times[2], 1.5);
  // Measured steps 1.0 and 1.5: median 1.25, quartiles 1.125 and 1.375.
  EXPECT_DOUBLE_EQ(r.step_time_median_s, 1.25);
  EXPECT_DOUBLE_EQ(r.step_time_mean_s, 1.25);
  EXPECT_NEAR(r.step_time_spread_s, 0.25, 1e-12);
  EXPECT_DOUBLE_EQ(r.images_per_s, 2 * 8 / 1.25);  // from the mean
}

TEST(Measurement, BytesSplitsAndLossOverTheMeasuredSteps) {
  const MeasuredResult r = summarise(records(), 1, 1, 8);
  ASSERT_EQ(r.hosts.size(), 3u);
  EXPECT_EQ(r.hosts[1].name, "worker-0");
  EXPECT_DOUBLE_EQ(r.hosts[1].bytes_out, 300.0);  // (200 + 400) / 2
  EXPECT_DOUBLE_EQ(r.hosts[1].bytes_in, 7.0);
  EXPECT_DOUBLE_EQ(r.hosts[0].bytes_in, 25.0);
  // worker-0, steps 1 and 2: computing (0.5 + 0.8) / 2, communicating (0.3 + 0.2) / 2, waiting
  // the rest of the 1.0 s and 1.5 s steps: (0.2 + 0.5) / 2.
  ASSERT_EQ(r.splits.size(), 3u);
  EXPECT_NEAR(r.splits[1].compute, 0.65, 1e-12);
  EXPECT_NEAR(r.splits[1].communication, 0.25, 1e-12);
  EXPECT_NEAR(r.splits[1].waiting, 0.35, 1e-12);
  EXPECT_NEAR(r.worker_mean.compute, 0.65, 1e-12);
  EXPECT_NEAR(r.ps_busy_s, 0.5, 1e-12);
  // Sent messages, by rank.
  ASSERT_EQ(r.messages.size(), 3u);
  EXPECT_EQ(r.messages[1], (std::vector<SentMessage>{{"push", "ps-0", 3, 100}}));
  // Per step, the mean of the two workers' micro-batch losses.
  ASSERT_EQ(r.loss.size(), 3u);
  EXPECT_DOUBLE_EQ(r.loss[0], 2.2);
  EXPECT_DOUBLE_EQ(r.loss[1], 2.1);
  EXPECT_DOUBLE_EQ(r.loss[2], 1.1);
}

TEST(Measurement, DeviceTimesAreMeansOverTheTypicalMeasuredSteps) {
  std::vector<RankRecord> in = records();
  in[2].device_seconds = {{9.0, 9.0}, {5.0, 6.0}, {7.0, 6.0}};
  const MeasuredResult r = summarise(in, 1, 1, 8);
  // ps-0 has no device operations; each worker's two, over steps 1 and 2 (step 0 is warm-up):
  // with two steps, both are typical.
  EXPECT_EQ(r.device_times, (std::vector<DeviceOpTime>{{"worker-0", 4, "conv1", 2.0},
                                                      {"worker-0", 9, "grad conv1", 3.0},
                                                      {"worker-1", 4, "conv1", 6.0},
                                                      {"worker-1", 9, "grad conv1", 6.0}}));
  // Four measured steps, each slowed in one operation: the fastest and the slowest step (totals
  // 4 and 9) are left out, and the means of the other two sum to their totals' mean, where the
  // operations' medians (3 and 2.5) would sum to less than any step but the fastest.
  RankRecord w = records()[1];
  w.device_seconds = {{9.0, 9.0}, {2.0, 2.0}, {4.0, 2.0}, {2.0, 4.5}, {6.0, 3.0}};
  EXPECT_EQ(typical_device_times(w, 1),
            (std::vector<DeviceOpTime>{{"worker-0", 4, "conv1", 3.0},
                                       {"worker-0", 9, "grad conv1", 3.25}}));
  in[1].device_seconds.pop_back();
  EXPECT_THROW(summarise(in, 1, 1, 8), std::invalid_argument);
  Json j = to_json(records()[1]);
  j["device_seconds"][1] = Json::array({1.0});
  EXPECT_THROW(rank_record_from_json(j), std::runtime_error);
}

TEST(Measurement, RejectsRecordsWithoutMeasuredStepsOrParts) {
  EXPECT_THROW(summarise(records(), 1, 3, 8), std::invalid_argument);
  auto no_parts = records();
  no_parts[0].part_done[1].reset();
  EXPECT_THROW(summarise(no_parts, 1, 1, 8), std::invalid_argument);
  auto short_record = records();
  short_record[2].bytes_in.pop_back();
  EXPECT_THROW(summarise(short_record, 1, 1, 8), std::invalid_argument);
}

TEST(Measurement, RecordsSurviveJson) {
  for (const RankRecord& r : records()) EXPECT_EQ(rank_record_from_json(to_json(r)), r);
  EXPECT_THROW(rank_record_from_json(Json::object()), std::runtime_error);
}

TEST(Measurement, JsonUsesTheSimulatorsNames) {
  MeasuredRun run{"s", "s.json", "cifar_alexnet", 2, 1, 8, {}};
  MeasuredResult r = summarise(records(), 1, 1, 8);
  r.label = "ralp@fc3";
  r.kind = StrategyKind::ralp;
  r.cut = "fc3";
  run.results.push_back(r);
  const Json j = reports::to_json(run);
  EXPECT_EQ(j["scenario"]["mode"], "measured");
  for (const char* key :
       {"name", "file", "model", "workers", "parameter_servers", "batch_per_worker"}) {
    EXPECT_TRUE(j["scenario"].contains(key)) << key;
  }
  const Json& result = j["results"][0];
  // The fields `ralp simulate --json` has too, with the same meaning.
  for (const char* key :
       {"strategy", "kind", "cut", "step_time_mean_s", "step_time_median_s", "step_time_spread_s",
        "images_per_s", "step_times_s", "warmup_steps", "hosts", "worker_mean", "ps_busy_s",
        "ring_model"}) {
    EXPECT_TRUE(result.contains(key)) << key;
  }
  for (const char* key : {"loss", "backend", "threads"}) {
    EXPECT_TRUE(result.contains(key)) << key;
  }
  EXPECT_EQ(result["strategy"], "ralp@fc3");
  EXPECT_EQ(result["kind"], "ralp");
  EXPECT_EQ(result["hosts"][1]["name"], "worker-0");
  EXPECT_EQ(result["hosts"][1]["bytes_in"], 7.0);
  EXPECT_EQ(result["hosts"][1]["bytes_out"], 300.0);
  EXPECT_TRUE(result["hosts"][1]["split"].contains("waiting_s"));
  EXPECT_EQ(result["worker_mean"].size(), 3u);
  EXPECT_TRUE(result["worker_mean"].contains("communication_s"));
  EXPECT_TRUE(result["ring_model"].is_null());
}

}  // namespace
}  // namespace ralp::cluster
