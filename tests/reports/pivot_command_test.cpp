// `ralp report pivot` and `ralp report summary` through the real binary: tables and figures from a
// hand-made table and sweep, the same bytes twice, one-line errors with exit status 2, and help.
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>

#include "../support/run_command.hpp"
#include "ralp/reports/results_report.hpp"

namespace ralp::reports {
namespace {

using testing::ralp_binary;
using testing::run_command;
using testing::TempDir;

void write_text(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary);
  out << text;
}

// Bytes into ps-0 of two strategies at two head widths, and a loss column with text in it.
constexpr const char* kTraffic =
    "width\tstrategy\tps0_in\tstep_s\n"
    "512\tps\t900000000\t1.5\n"
    "512\tralp@fc6\t500000000\t0.85\n"
    "1024\tps\t1400000000\t2.25\n"
    "1024\tralp@fc6\t500000000\t0.85\n";

// A sweep over workers 1 and 2 of ps and ralp, ralp 3x and 5x faster than ps.
std::string sweep_json() {
  SweepDocument sweep;
  sweep.base = "s.json";
  sweep.fidelity = "analytic";
  sweep.axes = {{"workers", {1, 2}}};
  for (const int w : {1, 2}) {
    SweepPoint p;
    p.index = w - 1;
    p.values = {{"workers", w}};
    p.scenario = "s";
    p.verdict = Json::object();
    for (const char* label : {"ps", "ralp"}) {
      StrategyResult r;
      r.label = label;
      r.kind = label == std::string("ps") ? StrategyKind::ps : StrategyKind::ralp;
      r.step_times = {1.0, 1.0};
      r.warmup_steps = 1;
      r.step_time_mean_s = 1.0;
      r.step_time_median_s = 1.0;
      r.images_per_s = 10.0 * (r.kind == StrategyKind::ps ? 1 : w == 1 ? 3 : 5);
      r.speedup_vs_ps = r.images_per_s / 10.0;
      r.worker_sources = {"gtx1080ti", "datasheet", "datasheet", 0, 0, 8};
      p.results.push_back(r);
    }
    sweep.points.push_back(p);
  }
  return to_json(sweep).dump();
}

class PivotCommand : public ::testing::Test {
 protected:
  void SetUp() override {
    write_text(dir_ / "traffic.tsv", kTraffic);
    write_text(dir_ / "sweep.json", sweep_json());
  }
  testing::CommandResult report(const std::string& args) {
    return run_command(ralp_binary() + " report " + args);
  }
  TempDir dir_{"pivot-cli"};
};

TEST_F(PivotCommand, PivotsATableAndASweep) {
  // Bytes into ps-0 in MB by width and strategy: 900, 500; 1400, 500.
  const auto table = report("pivot " + (dir_ / "traffic.tsv") +
                            " --rows width --columns strategy --field ps0_in --divide ps0_in=1e6 "
                            "--format '{:.0f} MB'");
  EXPECT_EQ(table.status, 0) << table.err;
  EXPECT_EQ(table.out,
            "| width | ps | ralp@fc6 |\n"
            "|---:|---:|---:|\n"
            "| 512 | 900 MB | 500 MB |\n"
            "| 1024 | 1400 MB | 500 MB |\n");
  // ralp's speedup over ps by workers, the file labelled m1 on a model axis.
  const auto sweep = report("pivot --file-axis model m1=" + (dir_ / "sweep.json") +
                            " --rows model --columns workers --field speedup_vs_ps "
                            "--where kind=ralp --format '{:.1f}x' --as csv");
  EXPECT_EQ(sweep.status, 0) << sweep.err;
  EXPECT_EQ(sweep.out, "model,1 w,2 w\nm1,3.0x,5.0x\n");
}

TEST_F(PivotCommand, SummaryGivesTablesAndSingleFigures) {
  // ps's step grows 1.5 x from width 512 to 1024 (2.25 / 1.5).
  const auto growth = report("summary " + (dir_ / "traffic.tsv") +
                             " --where strategy=ps --field step_s --along width "
                             "--relative-to width=512 --stat last --format '{:.2f}x' --as value");
  EXPECT_EQ(growth.status, 0) << growth.err;
  EXPECT_EQ(growth.out, "1.50x\n");
  const auto reach = report("summary " + (dir_ / "sweep.json") +
                            " --where kind=ralp --field speedup_vs_ps --rows kind --along workers "
                            "--stat max,argmax,'first>=4' --as tsv");
  EXPECT_EQ(reach.status, 0) << reach.err;
  EXPECT_EQ(reach.out,
            "kind\tlargest speedup_vs_ps\tat workers\tfirst workers >= 4\nralp\t5\t2\t2\n");
}

TEST_F(PivotCommand, SameInputsGiveTheSameBytes) {
  const std::string args =
      "pivot " + (dir_ / "sweep.json") + " " + (dir_ / "traffic.tsv") +
      " --rows file,workers,width,strategy --field images_per_s --field ps0_in";
  const auto a = report(args);
  const auto b = report(args);
  EXPECT_EQ(a.status, 0) << a.err;
  EXPECT_EQ(a.out, b.out);
}

TEST_F(PivotCommand, BadInputIsOneLineAndExitTwo) {
  const std::string tsv = dir_ / "traffic.tsv";
  write_text(dir_ / "short.tsv", "a\tb\n1\n");
  const auto expect_error = [&](const std::string& args, const std::string& message) {
    const auto run = report(args);
    EXPECT_EQ(run.status, 2) << args;
    EXPECT_EQ(run.err, "error: " + message + "\n") << args;
    EXPECT_EQ(run.out, "") << args;
  };
  expect_error("pivot " + tsv + " --rows width --columns strategy --field ps0_inn",
               "--field names \"ps0_inn\", which is not a field of these inputs; the fields are: "
               "width, strategy, ps0_in, step_s (did you mean \"ps0_in\"?)");
  expect_error("pivot " + tsv + " --rows widht --field ps0_in",
               "--rows names \"widht\", which is not an axis of these inputs; the axes are: file, "
               "width, strategy, ps0_in, step_s (did you mean \"width\"?)");
  expect_error("pivot " + tsv + " --rows width --field ps0_in",
               "--rows and --columns leave 2 records in the cell at width 512, which differ in "
               "strategy (ps, ralp@fc6); step_s (1.5, 0.85); add an axis to --rows or --columns, "
               "or pick one with --where");
  expect_error("pivot " + (dir_ / "short.tsv") + " --field a",
               dir_ / "short.tsv" + ": line 2 has 1 values, expected 2 as the header names");
  const std::string validation =
      RALP_SOURCE_DIR "/reports/examples/validate-default/validation.json";
  expect_error("pivot " + validation + " --field x",
               validation +
                   ": is the JSON of `ralp validate`, expected a sweep's sweep.json "
                   "(ralp sweep) or a table (.csv, .tsv)");
  expect_error("summary " + tsv + " --field step_s --stat argmax",
               "--stat argmax needs --along, the axis its answer is a value of");
  expect_error("summary " + tsv + " --field step_s --rows width --stat max --as value",
               "--as is value, which needs one --stat and no --rows");
}

TEST_F(PivotCommand, HelpExplainsRecordsStatisticsAndFormats) {
  const auto pivot = report("pivot --help");
  EXPECT_EQ(pivot.status, 0);
  for (const char* word : {"--field", "--rows", "--columns", "--where", "--relative-to",
                           "--file-axis", "LABEL=PATH", "speedup_vs_ps", "FORMAT", "Example"}) {
    EXPECT_NE(pivot.out.find(word), std::string::npos) << word;
  }
  const auto summary = report("summary --help");
  EXPECT_EQ(summary.status, 0);
  for (const char* word : {"--along", "--stat", "argmax", "first OP T", "--as", "value"}) {
    EXPECT_NE(summary.out.find(word), std::string::npos) << word;
  }
  // Each line of the help fits in 100 columns.
  for (const std::string& text : {pivot.out, summary.out}) {
    size_t start = 0;
    while (start < text.size()) {
      const size_t end = std::min(text.find('\n', start), text.size());
      EXPECT_LE(end - start, 100u) << text.substr(start, end - start);
      start = end + 1;
    }
  }
}

}  // namespace
}  // namespace ralp::reports
