// The sweep's files: the CSV header and rows, in-order streaming (always a prefix of the final
// file), sweep.json, and what --resume reads back.
#include <gtest/gtest.h>

#include <charconv>
#include <filesystem>
#include <fstream>

#include "../support/run_command.hpp"
#include "ralp/sweep/output.hpp"

namespace ralp::sweep {
namespace {

using ralp::testing::read_file;
using ralp::testing::TempDir;

const std::string kSmall = RALP_TEST_DATA_DIR "/data/scenarios/small-mixed.json";

SweepSpec spec_of(std::vector<std::string> workers) {
  SweepSpec spec;
  spec.base = kSmall;
  spec.base_path = kSmall;
  set_axis(spec, {"workers", std::move(workers)});
  set_axis(spec, {"strategies", {"ps", "ralp"}});
  return spec;
}

// A made-up outcome whose numbers are easy to check: step time 0.1 s * (index + 1).
Json outcome(size_t index) {
  const double t = 0.1 * static_cast<double>(index + 1);
  Json results = Json::array();
  // Training figures: 4 GPUs, one alone does 100 images/s, 1,000 images to train, 2 USD a host.
  const auto figures = [t](Json r, double images_per_s, int64_t hosts) {
    r["images_per_s_per_gpu"] = images_per_s / 4;
    r["scaling_efficiency"] = images_per_s / 400;
    r["time_to_train_s"] = 1000 / images_per_s;
    r["billed_hosts"] = hosts;
    r["cost"] = static_cast<double>(hosts) * 2.0 * (1000 / images_per_s) / 3600;
    (void)t;
    return r;
  };
  results.push_back(figures({{"strategy", "ps"}, {"kind", "ps"}, {"cut", nullptr},
                             {"step_time_mean_s", t}, {"step_time_median_s", t},
                             {"images_per_s", 64 / t}, {"speedup_vs_ps", 1.0},
                             {"speedup_vs_allreduce", nullptr}},
                            64 / t, 5));
  results.push_back(figures({{"strategy", "ralp"}, {"kind", "ralp"}, {"cut", "fc3"},
                             {"step_time_mean_s", t / 2}, {"step_time_median_s", t / 2},
                             {"images_per_s", 128 / t}, {"speedup_vs_ps", 2.0},
                             {"speedup_vs_allreduce", nullptr}},
                            128 / t, 5));
  return {{"results", results},
          {"baseline", {{"device", "cpu-core"}, {"batch", 16}, {"step_time_s", 0.16},
                        {"images_per_s", 100.0}}},
          {"training", {{"epochs", 1}, {"dataset_images", 1000}, {"price_per_hour", "2.00 USD"},
                        {"worker_hosts", 4}, {"ps_hosts", 1}}},
          {"verdict", {{"fastest", "ralp"}}}};
}

TEST(SweepOutput, HeaderNamesThePointAxesInOrder) {
  EXPECT_EQ(csv_header(spec_of({"2"})),
            "point,workers,strategy,kind,cut,step_time_mean_s,step_time_median_s,images_per_s,"
            "speedup_vs_ps,speedup_vs_allreduce,images_per_s_per_gpu,scaling_efficiency,"
            "time_to_train_s,billed_hosts,cost,currency");
}

TEST(SweepOutput, RowsRoundTripTheirNumbers) {
  const SweepSpec spec = spec_of({"2", "4", "8"});
  const auto points = make_points(spec);
  const std::string rows = csv_rows(points[2], outcome(2));
  // 0.1 * 3 is 0.30000000000000004 in binary; shortest round-trip keeps every digit needed.
  EXPECT_EQ(rows,
            "2,8,ps,ps,,0.30000000000000004,0.30000000000000004,213.33333333333331,1,,"
            "53.33333333333333,0.5333333333333333,4.6875,5,0.013020833333333334,USD\n"
            "2,8,ralp,ralp,fc3,0.15000000000000002,0.15000000000000002,426.66666666666663,2,,"
            "106.66666666666666,1.0666666666666667,2.34375,5,0.006510416666666667,USD\n");
  double back = 0;
  const std::string field = "0.30000000000000004";
  std::from_chars(field.data(), field.data() + field.size(), back);
  EXPECT_EQ(back, 0.1 * 3);
}

TEST(SweepOutput, PointsAreWrittenInOrderAndTheCsvIsAlwaysAPrefix) {
  TempDir dir("sweep-output");
  const SweepSpec spec = spec_of({"2", "4", "8"});
  const auto points = make_points(spec);
  SweepWriter writer(dir.path, spec, points, {});
  const std::string csv = (dir.path / "sweep.csv").string();
  const std::string header = csv_header(spec) + "\n";
  EXPECT_EQ(read_file(csv), header);
  // Point 2 first: held until 0 and 1 are written.
  writer.add(2, outcome(2));
  EXPECT_EQ(read_file(csv), header);
  EXPECT_EQ(writer.written(), 0u);
  writer.add(0, outcome(0));
  EXPECT_EQ(read_file(csv), header + csv_rows(points[0], outcome(0)));
  writer.add(1, outcome(1));
  EXPECT_EQ(read_file(csv), header + csv_rows(points[0], outcome(0)) +
                                csv_rows(points[1], outcome(1)) + csv_rows(points[2], outcome(2)));
  writer.finish();
  const Json document = Json::parse(read_file((dir.path / "sweep.json").string()));
  EXPECT_EQ(document["sweep"]["base"], kSmall);
  EXPECT_EQ(document["sweep"]["axes"][0], (Json{{"name", "workers"}, {"values", {2, 4, 8}}}));
  EXPECT_EQ(document["sweep"]["axes"][1],
            (Json{{"name", "strategies"}, {"values", {"ps", "ralp"}}}));
  ASSERT_EQ(document["points"].size(), 3u);
  EXPECT_EQ(document["points"][1]["values"], (Json{{"workers", 4}}));
  EXPECT_EQ(document["points"][1]["scenario"], "small-mixed");
  EXPECT_EQ(document["points"][1]["results"], outcome(1)["results"]);
  EXPECT_EQ(document["points"][1]["verdict"], outcome(1)["verdict"]);
}

TEST(SweepOutput, ResumeKeepsTheCompletePrefixAndRefusesAnotherSweep) {
  TempDir dir("sweep-output");
  const SweepSpec spec = spec_of({"2", "4", "8"});
  const auto points = make_points(spec);
  {
    SweepWriter writer(dir.path, spec, points, {});
    writer.add(0, outcome(0));
    writer.add(1, outcome(1));
  }
  // A run stopped in the middle of point 2's rows: one row and half a line.
  const std::string csv = (dir.path / "sweep.csv").string();
  std::ofstream(csv, std::ios::app) << "2,8,ps,ps,,0.3,0.3,213,1,\n2,8,ra";
  const std::vector<Json> finished = read_finished_points(dir.path, spec, points);
  ASSERT_EQ(finished.size(), 2u);
  EXPECT_EQ(finished[1]["index"], 1);
  SweepWriter writer(dir.path, spec, points, finished);
  EXPECT_EQ(writer.written(), 2u);
  writer.add(2, outcome(2));
  EXPECT_EQ(read_file(csv), csv_header(spec) + "\n" + csv_rows(points[0], outcome(0)) +
                                csv_rows(points[1], outcome(1)) + csv_rows(points[2], outcome(2)));
  // The same header with other worker counts: point 1 differs.
  const SweepSpec other = spec_of({"2", "16", "8"});
  try {
    read_finished_points(dir.path, other, make_points(other));
    ADD_FAILURE() << "no error";
  } catch (const InputError& e) {
    EXPECT_EQ(std::string(e.what()),
              csv + ": line 4 starts \"1,4\", but this sweep's point 1 is \"workers=16\"; "
                    "expected the same sweep, or run without --resume");
  }
  // Another axis: the header differs.
  SweepSpec bandwidth = spec_of({"2"});
  set_axis(bandwidth, {"bandwidth", {"1Gbps"}});
  try {
    read_finished_points(dir.path, bandwidth, make_points(bandwidth));
    ADD_FAILURE() << "no error";
  } catch (const InputError& e) {
    EXPECT_EQ(std::string(e.what()),
              csv + ": has header \"" + csv_header(spec) + "\", but this sweep's is \"" +
                  csv_header(bandwidth) + "\"; expected the same sweep, or run without --resume");
  }
}

}  // namespace
}  // namespace ralp::sweep
