// Markdown building, the gnuplot script and data, and the validation report from a run's JSON.
#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>

#include "ralp/reports/gnuplot.hpp"
#include "ralp/reports/markdown.hpp"
#include "ralp/reports/validation_report.hpp"

namespace ralp::reports {
namespace {

TEST(Markdown, BuildsBlocksInOrder) {
  MarkdownDocument d;
  d.heading(2, "Title");
  d.paragraph("Text.");
  d.table({"a", "b"}, {{"x|y", "1"}, {"z"}}, {MarkdownDocument::Align::left});
  d.image("plot", "p.svg");
  EXPECT_EQ(d.text(),
            "## Title\n\nText.\n\n| a | b |\n|---|---:|\n| x\\|y | 1 |\n| z |  |\n\n![plot](p.svg)\n");
  EXPECT_THROW(d.heading(7, "x"), std::invalid_argument);
}

ScatterPlot two_series() {
  return {.title = "t", .x_label = "x", .y_label = "y", .log_scale = true, .band_pct = 8.0,
          .series = {{"ps", {{10.0, 11.0}, {20.0, 19.0}}}, {"allreduce", {{40.0, 40.0}}}}};
}

TEST(Gnuplot, DataHasOneBlockPerSeries) {
  EXPECT_EQ(scatter_data(two_series()), "# ps\n10 11\n20 19\n\n\n# allreduce\n40 40\n");
}

TEST(Gnuplot, ScriptDrawsSvgAndPng) {
  const std::string s = scatter_script(two_series(), "d.dat", "p.svg", "p.png");
  EXPECT_NE(s.find("set logscale xy"), std::string::npos);
  // The axes span the data with 15% to spare: 10 / 1.15 to 40 x 1.15.
  EXPECT_NE(s.find("set xrange [8.69565217:46]"), std::string::npos) << s;
  EXPECT_NE(s.find("\"d.dat\" index 1 using 1:2 title \"allreduce\""), std::string::npos);
  EXPECT_NE(s.find("x*1.08"), std::string::npos);
  EXPECT_NE(s.find("set terminal svg"), std::string::npos);
  EXPECT_NE(s.find("set output \"p.png\""), std::string::npos);
  EXPECT_EQ(s, scatter_script(two_series(), "d.dat", "p.svg", "p.png"));
}

TEST(Gnuplot, FigureScriptSetsTheDataThenDrawsSvgThenPng) {
  const GnuplotFigure f{.data = "1 2\n",
                        .settings = "set title \"t\"\n",
                        .plot = "data using 1:2 with points",
                        .width_px = 900,
                        .height_px = 500,
                        .enhanced = false};
  EXPECT_EQ(figure_script(f, "p.dat", "p.svg", "p.png"),
            "data = \"p.dat\"\nset title \"t\"\n"
            "set terminal svg size 900,500 dynamic noenhanced\nset output \"p.svg\"\n"
            "plot data using 1:2 with points\n"
            "set terminal pngcairo size 900,500 noenhanced\nset output \"p.png\"\nreplot\n"
            "set output\n");
}

Json run_document() {
  auto figures = [](double step) {
    return Json{{"step_time_s", step},
                {"spread_s", 0.001},
                {"worker", {{"compute_s", 0.02}, {"communication_s", 0.01}, {"waiting_s", 0.0}}},
                {"ps_busy_s", 0.003},
                {"ps-0", {{"bytes_in", 2e6}, {"bytes_out", 2e6}}},
                {"worker-0", {{"bytes_in", 1e6}, {"bytes_out", 1e6}}}};
  };
  Json point = {{"id", "n_ps_1gbit_2-node"}, {"scenario", "n"}, {"model", "cifar_allconv"},
                {"strategy", "ps"}, {"kind", "ps"}, {"rate", "1gbit"}, {"shape", "2-node"},
                {"parameter_servers", 1}, {"workers", 1}, {"pinned", true}, {"steps", 5},
                {"warmup_steps", 2}, {"measured", figures(0.050)}, {"predicted", figures(0.051)},
                {"error_pct", 2.0}};
  return {{"mode", "namespaces"}, {"cores", 2}, {"command", "ralp validate x.json"},
          {"profile", {{"name", "validate-cpu-1t"}, {"file", "validate-cpu-1t.json"},
                       {"reused", false}, {"provenance", {{"cpu_model", "AMD EPYC"}}}}},
          {"links", {{{"rate", "1gbit"}, {"rtt_s", 3e-4}, {"latency_s", 1.5e-4},
                      {"goodput_bytes_per_s", 1.18e8}, {"fixed_cost_s", 2e-4},
                      {"bandwidth_factor", 0.944}, {"latency_factor", 0.667},
                      {"residual_max", 0.01}}}},
          {"points", {point}},
          {"summary", {{{"group", "ps"}, {"points", 1}, {"median_abs_error_pct", 2.0},
                        {"max_abs_error_pct", 2.0}},
                       {{"group", "all"}, {"points", 1}, {"median_abs_error_pct", 2.0},
                        {"max_abs_error_pct", 2.0}}}},
          {"target", {{"median_abs_error_pct", 3.0}, {"max_abs_error_pct", 8.0}}},
          {"loadavg_start", "1.00 1.00 1.00"}, {"loadavg_end", "1.10 1.00 1.00"},
          {"calibration_s", 20.0}, {"wall_s", 60.0}};
}

TEST(ValidationReport, SummaryPlotCalibrationAndPoints) {
  const std::string md = validation_markdown(run_document(), "pvm", std::nullopt);
  EXPECT_NE(md.find("| ps | 1 | 2.0% | 2.0% | met |"), std::string::npos) << md;
  EXPECT_NE(md.find("| **all** | 1 | 2.0% | 2.0% | met |"), std::string::npos);
  EXPECT_NE(md.find("over the grid: **met**"), std::string::npos);
  EXPECT_NE(md.find("![predicted against measured step time](pvm.svg)"), std::string::npos);
  EXPECT_NE(md.find("`validate-cpu-1t`"), std::string::npos);
  EXPECT_NE(md.find("| 1gbit | 300.0 us | 150.0 us | 944.0 Mbit/s |"), std::string::npos) << md;
  EXPECT_NE(md.find("| cifar_allconv | ps | 2-node | 1gbit | 5 + 2 | 50.0 +- 1.00 | 51.0 | +2.0% |"),
            std::string::npos)
      << md;
  EXPECT_NE(md.find("1 points pinned"), std::string::npos);
  EXPECT_NE(validation_markdown(run_document(), "pvm", "gnuplot not found").find("(No plot: gnuplot not found.)"),
            std::string::npos);
  Json broken = run_document();
  broken["points"][0].erase("measured");
  EXPECT_THROW(validation_markdown(broken, "pvm", std::nullopt), InputError);
}

TEST(ValidationReport, KernelSpeedByHowBusyTheCoreWas) {
  // Older results, and runs with no pinned rank that computed, have no section.
  EXPECT_EQ(validation_markdown(run_document(), "pvm", std::nullopt).find("Kernel speed"),
            std::string::npos);
  Json doc = run_document();
  doc["kernel_speed"] = {{"min_compute_s", 0.001}, {"bins", Json::array()}};
  EXPECT_EQ(validation_markdown(doc, "pvm", std::nullopt).find("Kernel speed"), std::string::npos);
  doc["kernel_speed"]["bins"] = {{{"busy_from", 0.75}, {"busy_to", 1.0}, {"hosts", 3},
                                  {"median_ratio", 1.01}, {"min_ratio", 0.93}, {"max_ratio", 1.04}},
                                 {{"busy_from", 0.0}, {"busy_to", 0.1}, {"hosts", 2},
                                  {"median_ratio", 1.7}, {"min_ratio", 1.6}, {"max_ratio", 1.84}}};
  const std::string md = validation_markdown(doc, "pvm", std::nullopt);
  EXPECT_NE(md.find("### Kernel speed in the runs"), std::string::npos) << md;
  EXPECT_NE(md.find("| 75% or more | 3 | 1.01 | 0.93 - 1.04 |\n"), std::string::npos) << md;
  EXPECT_NE(md.find("| 0-10% | 2 | 1.70 | 1.60 - 1.84 |\n"), std::string::npos) << md;
  EXPECT_NE(md.find("at least 1.00 ms of predicted compute"), std::string::npos) << md;
  // Each point's ranks, in the points table.
  EXPECT_NE(md.find("| 2.00 / 2.00 | 1.00 / 1.00 | - |"), std::string::npos) << md;  // none
  doc["points"][0]["kernel_speeds"] = {
      {{"host", "worker-0"}, {"busy_share", 0.4}, {"ratio", 1.2}},
      {{"host", "worker-1"}, {"busy_share", 0.4}, {"ratio", 1.1}}};
  EXPECT_NE(validation_markdown(doc, "pvm", std::nullopt).find("| worker-0 1.20, worker-1 1.10 |"),
            std::string::npos);
  doc["points"][0]["kernel_speeds"] = Json::array();  // ranks that shared cores have none
  EXPECT_NE(validation_markdown(doc, "pvm", std::nullopt).find("| 2.00 / 2.00 | 1.00 / 1.00 | - |"),
            std::string::npos);
  doc["kernel_speed"]["bins"][1].erase("median_ratio");
  try {
    validation_markdown(doc, "pvm", std::nullopt);
    FAIL() << "no error";
  } catch (const InputError& e) {
    EXPECT_EQ(e.path(), "/kernel_speed/bins/1/median_ratio");
  }
}

TEST(ValidationReport, PassesGiveEachPassAndTheirSpread) {
  EXPECT_EQ(validation_markdown(run_document(), "pvm", std::nullopt).find("measured again"),
            std::string::npos);
  Json doc = run_document();
  doc["passes"] = 2;
  doc["points"][0]["pass_step_times_s"] = {0.052, 0.048};
  doc["points"][0]["pass_predicted_step_times_s"] = {0.050, 0.052};
  doc["pass_profiles"] = {{{"name", "validate-cpu-1t-pass-2"}, {"file", "validate-cpu-1t-pass-2.json"},
                           {"reused", false}, {"provenance", {{"steal_pct", "3.5"}}}}};
  doc["repeatability"] = {{{"group", "ps"}, {"points", 1}, {"median_abs_error_pct", 8.0},
                           {"max_abs_error_pct", 8.0}},
                          {{"group", "all"}, {"points", 1}, {"median_abs_error_pct", 8.0},
                           {"max_abs_error_pct", 8.0}}};
  const std::string md = validation_markdown(doc, "pvm", std::nullopt);
  EXPECT_NE(md.find("### The same point, measured again"), std::string::npos) << md;
  EXPECT_NE(md.find("| **all** | 1 | 8.0% | 8.0% |\n"), std::string::npos) << md;
  EXPECT_NE(md.find("in each of 2 passes"), std::string::npos) << md;
  EXPECT_NE(md.find("| 5 + 2 | 50.0 +- 1.00 | 52.0 (50.0) / 48.0 (52.0) | 51.0 | +2.0% |"),
            std::string::npos)
      << md;
  EXPECT_NE(md.find("Pass 2: `validate-cpu-1t-pass-2` (`validate-cpu-1t-pass-2.json`)"),
            std::string::npos)
      << md;
  EXPECT_NE(md.find("steal_pct: `3.5`"), std::string::npos) << md;
  doc["points"][0]["pass_step_times_s"] = {0.052, "slow"};
  EXPECT_THROW(validation_markdown(doc, "pvm", std::nullopt), InputError);
}

TEST(ValidationReport, SaysWhetherThisMachineCanJudgeTheTarget) {
  // One pass and older results say nothing.
  EXPECT_EQ(validation_markdown(run_document(), "pvm", std::nullopt).find("judge it"),
            std::string::npos);
  Json doc = run_document();
  doc["passes"] = 2;
  doc["points"][0]["pass_step_times_s"] = {0.052, 0.048};
  doc["points"][0]["pass_predicted_step_times_s"] = {0.050, 0.052};
  const auto spread = [&](double median, double max) {
    doc["repeatability"] = {{{"group", "all"}, {"points", 1}, {"median_abs_error_pct", median},
                             {"max_abs_error_pct", max}}};
  };
  spread(2.5, 7.9);
  doc["target"]["machine_resolves"] = true;
  EXPECT_NE(validation_markdown(doc, "pvm", std::nullopt)
                .find("This machine can judge it: the same point, measured again a pass later, "
                      "moved by 2.5% at the median and up to 7.9%, within the target."),
            std::string::npos);
  doc["target"]["machine_resolves"] = false;
  spread(2.5, 26.4);
  EXPECT_NE(validation_markdown(doc, "pvm", std::nullopt)
                .find("This machine cannot judge it: the same point, measured again a pass "
                      "later, moved by 2.5% at the median and up to 26.4%, beyond the max's 8% "),
            std::string::npos);
  spread(3.6, 26.4);
  EXPECT_NE(validation_markdown(doc, "pvm", std::nullopt)
                .find("beyond the median's 3% and the max's 8% "),
            std::string::npos);
  // A verdict the spread does not bear out, or of the wrong type, is bad input.
  spread(2.5, 7.9);
  EXPECT_THROW(validation_markdown(doc, "pvm", std::nullopt), InputError);
  doc["target"]["machine_resolves"] = "no";
  try {
    validation_markdown(doc, "pvm", std::nullopt);
    FAIL() << "no error";
  } catch (const InputError& e) {
    EXPECT_EQ(e.path(), "/target/machine_resolves");
  }
}

TEST(ValidationReport, SharedCoresGiveTheTimeSharingSlowdownUsed) {
  Json doc = run_document();
  EXPECT_EQ(validation_markdown(doc, "pvm", std::nullopt).find("time_sharing_slowdown"),
            std::string::npos);
  doc["profile"]["time_sharing_slowdown"] = 1.0625;
  const std::string md = validation_markdown(doc, "pvm", std::nullopt);
  EXPECT_NE(md.find("each of two progressing at 1 / (2 x 1.062) of the core's speed"),
            std::string::npos)
      << md;
  doc["profile"]["time_sharing_slowdown"] = "fast";
  EXPECT_THROW(validation_markdown(doc, "pvm", std::nullopt), InputError);
}

TEST(ValidationReport, MachineSpeedWhenValidateMeasuredItAgain) {
  EXPECT_EQ(validation_markdown(run_document(), "pvm", std::nullopt).find("speed during the run"),
            std::string::npos);
  Json doc = run_document();
  doc["speed_check"] = nullptr;  // the run's profile had nothing to compare with
  EXPECT_EQ(validation_markdown(doc, "pvm", std::nullopt).find("speed during the run"),
            std::string::npos);
  doc["speed_check"] = {{"profile", "validate-cpu-1t-end.json"},
                        {"models", {{{"model", "cifar_allconv"}, {"batch", 32}, {"start_s", 0.0212},
                                     {"end_s", 0.0244}, {"change_pct", 15.09}}}}};
  const std::string md = validation_markdown(doc, "pvm", std::nullopt);
  EXPECT_NE(md.find("`validate-cpu-1t-end.json`"), std::string::npos) << md;
  EXPECT_NE(md.find("| cifar_allconv | 32 | 21.2 | 24.4 | +15.1% |"), std::string::npos) << md;
  doc["speed_check"]["models"][0].erase("end_s");
  EXPECT_THROW(validation_markdown(doc, "pvm", std::nullopt), InputError);
}

TEST(ValidationReport, ReplayedErrorsWhenThePointsWereReplayed) {
  EXPECT_EQ(validation_markdown(run_document(), "pvm", std::nullopt).find("each run measured"),
            std::string::npos);
  Json doc = run_document();
  Json& point = doc["points"][0];
  point["replayed"] = point["predicted"];
  point["replayed"]["step_time_s"] = 0.0502;
  point["replay_error_pct"] = 0.4;
  doc["replay_summary"] = {{{"group", "ps"}, {"points", 1}, {"median_abs_error_pct", 0.4},
                            {"max_abs_error_pct", 0.4}},
                           {{"group", "all"}, {"points", 1}, {"median_abs_error_pct", 0.4},
                            {"max_abs_error_pct", 9.5}}};
  const std::string md = validation_markdown(doc, "pvm", std::nullopt);
  EXPECT_NE(md.find("### With the kernel times each run measured"), std::string::npos) << md;
  EXPECT_NE(md.find("| ps | 1 | 0.4% | 0.4% | met |"), std::string::npos) << md;
  EXPECT_NE(md.find("| **all** | 1 | 0.4% | 9.5% | not met |"), std::string::npos) << md;
  EXPECT_NE(md.find("| 51.0 | +2.0% | 50.2 (+0.4%) |"), std::string::npos) << md;
  doc["replay_summary"][0].erase("max_abs_error_pct");
  EXPECT_THROW(validation_markdown(doc, "pvm", std::nullopt), InputError);
}

TEST(ValidationReport, WritesReportAndPlots) {
  const auto dir = std::filesystem::temp_directory_path() / ("ralp-report-test-" + std::to_string(getpid()));
  std::filesystem::create_directories(dir);
  const auto problem = write_validation_report(run_document(), dir);
  EXPECT_TRUE(std::filesystem::exists(dir / "report.md"));
  EXPECT_TRUE(std::filesystem::exists(dir / "predicted-vs-measured.gp"));
  if (problem) {
    std::filesystem::remove_all(dir);
    GTEST_SKIP() << *problem;
  }
  EXPECT_GT(std::filesystem::file_size(dir / "predicted-vs-measured.svg"), 0u);
  EXPECT_GT(std::filesystem::file_size(dir / "predicted-vs-measured.png"), 0u);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace ralp::reports
