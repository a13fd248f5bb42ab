// The results report from hand-made documents: telling the four kinds apart, reading them back
// as they were written, the sweep's speedups, and the one-line errors of bad documents.
#include <gtest/gtest.h>

#include "ralp/reports/result_io.hpp"
#include "ralp/reports/results_report.hpp"

namespace ralp::reports {
namespace {

StrategyResult result(const std::string& label, double images_per_s) {
  StrategyResult r;
  r.label = label;
  r.kind = label == "allreduce" ? StrategyKind::allreduce : StrategyKind::ps;
  r.step_times = {1.0, 1.0};
  r.warmup_steps = 1;
  r.step_time_mean_s = 1.0;
  r.step_time_median_s = 1.0;
  r.images_per_s = images_per_s;
  r.hosts = {{"ps-0", 4e6, 4e6}, {"worker-0", 1e6, 1e6}};
  r.splits = {{0.1, 0.8, 0.1}, {0.2, 0.7, 0.1}};
  r.worker_mean = {0.2, 0.7, 0.1};
  r.worker_sources = {"gtx1080ti", "datasheet", "datasheet", 0, 0, 8};
  return r;
}

// A sweep over workers 1, 2, 4 and two bandwidths with ps at 100, 180, 320 images/s on 1Gbps
// and 100, 200, 400 on 10Gbps.
Json sweep_document() {
  Json points = Json::array();
  const double ps_1g[] = {100.0, 180.0, 320.0};
  const double ps_10g[] = {100.0, 200.0, 400.0};
  const int workers[] = {1, 2, 4};
  int index = 0;
  for (const char* bandwidth : {"1Gbps", "10Gbps"}) {
    for (int i = 0; i < 3; ++i) {
      const double images = std::string(bandwidth) == "1Gbps" ? ps_1g[i] : ps_10g[i];
      points.push_back({{"index", index++},
                        {"values", {{"workers", workers[i]}, {"bandwidth", bandwidth}}},
                        {"scenario", "s"},
                        {"results", {to_json(result("ps", images), false)}},
                        {"verdict", nullptr}});
    }
  }
  return {{"sweep",
           {{"base", "s.json"},
            {"fidelity", "analytic"},
            {"axes",
             {{{"name", "workers"}, {"values", {1, 2, 4}}},
              {{"name", "bandwidth"}, {"values", {"1Gbps", "10Gbps"}}}}}}},
          {"points", points}};
}

Json place_document() {
  Json ranking = {{{"rank", 1},
                   {"cut", "fc1"},
                   {"boundary_bytes", 1024},
                   {"activation_gradient_bytes", 1024},
                   {"head_param_bytes", 4096},
                   {"analytic_step_time_s", 0.5},
                   {"analytic_is_lower_bound", false},
                   {"simulated_step_time_s", 0.52},
                   {"gap", 0.04}},
                  {{"rank", 2},
                   {"cut", "conv5"},
                   {"boundary_bytes", 2048},
                   {"activation_gradient_bytes", 2048},
                   {"head_param_bytes", 8192},
                   {"analytic_step_time_s", 0.6},
                   {"analytic_is_lower_bound", true},
                   {"simulated_step_time_s", nullptr},
                   {"gap", nullptr}}};
  Json ralp = {{"label", "ralp"},   {"strategy", "ralp"},          {"searched", true},
               {"cut", "fc1"},      {"analytic_step_time_s", 0.5}, {"simulated_step_time_s", 0.52},
               {"ranking", ranking}};
  Json ps = {{"label", "ps"},
             {"strategy", "ps"},
             {"searched", false},
             {"cut", nullptr},
             {"analytic_step_time_s", 1.0},
             {"simulated_step_time_s", 1.0}};
  return {{"scenario", "s"},
          {"file", "s.json"},
          {"model", "m"},
          {"workers", 4},
          {"parameter_servers", 1},
          {"precision", "bf16"},
          {"top_k", 1},
          {"strategies", {ralp}},
          {"baselines", {ps}},
          {"verdict",
           {{"split", true},
            {"best_cut", "ralp"},
            {"best_cut_step_time_s", 0.52},
            {"best_uncut", "ps"},
            {"best_uncut_step_time_s", 1.0},
            {"gain", 0.92},
            {"threshold", 0.05},
            {"reason", "ralp beats ps by 92%"}}}};
}

std::string message_of(const Json& doc) {
  try {
    (void)parse_result_document(doc, "r.json");
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

TEST(ResultsReport, TellsTheKindsApart) {
  ScenarioResult s;
  s.scenario = "s";
  s.results = {result("ps", 100.0)};
  EXPECT_EQ(detect_result_kind(to_json(s), "r.json"), ResultKind::simulate);
  EXPECT_EQ(detect_result_kind(sweep_document(), "r.json"), ResultKind::sweep);
  EXPECT_EQ(detect_result_kind(place_document(), "r.json"), ResultKind::place);
  EXPECT_EQ(detect_result_kind(
                {{"mode", "namespaces"}, {"points", Json::array()}, {"summary", Json::array()}},
                "r.json"),
            ResultKind::validate);
  EXPECT_EQ(message_of({{"a", 1}}),
            "r.json: is a JSON object of no known kind, expected the JSON of `ralp simulate "
            "--json`, `ralp sweep` (sweep.json), `ralp place --json` or `ralp validate` "
            "(validation.json)");
  EXPECT_EQ(message_of(Json::array()).rfind("r.json: is an array, expected the JSON of", 0), 0u)
      << message_of(Json::array());
  MeasuredRun measured{"s", "s.json", "m", 2, 1, 8, {}};
  EXPECT_EQ(
      message_of(to_json(measured))
          .rfind("r.json: /scenario/mode is \"measured\": a real run of `ralp cluster --json`", 0),
      0u)
      << message_of(to_json(measured));
}

TEST(ResultsReport, SweepAndPlaceReadBackAsWritten) {
  const Json sweep = sweep_document();
  const ResultDocument d = parse_result_document(sweep, "sweep.json");
  ASSERT_EQ(d.kind, ResultKind::sweep);
  ASSERT_EQ(d.sweep.points.size(), 6u);
  EXPECT_EQ(d.sweep.points[4].results[0].images_per_s, 200.0);
  EXPECT_EQ(to_json(d.sweep), sweep);
  const Json place = place_document();
  const ResultDocument p = parse_result_document(place, "place.json");
  ASSERT_EQ(p.kind, ResultKind::place);
  ASSERT_EQ(p.placement.strategies.at(0).ranking.size(), 2u);
  EXPECT_FALSE(p.placement.strategies[0].ranking[1].simulated_s);
  EXPECT_TRUE(p.placement.strategies[0].ranking[1].analytic_is_lower_bound);
  EXPECT_EQ(to_json(p.placement), place);
}

TEST(ResultsReport, SimulationReadsBackAsWritten) {
  ScenarioResult s;
  s.scenario = "s";
  s.file = "s.json";
  s.model = "m";
  s.workers = 1;
  s.parameter_servers = 1;
  s.batch_per_worker = 32;
  s.network_model = "tcp";
  s.results = {result("ps", 100.0), result("allreduce", 250.0)};
  s.results[1].cut_search = {{"fc1", 0.4}, {"fc2", 0.5}};
  const Json doc = to_json(s);
  const ResultDocument d = parse_result_document(doc, "sim.json");
  ASSERT_EQ(d.kind, ResultKind::simulate);
  EXPECT_EQ(d.simulation.results, s.results);
  EXPECT_EQ(to_json(d.simulation), doc);
}

TEST(ResultsReport, SpeedupIsAgainstTheSmallestWorkerCountAtTheSameBandwidth) {
  const auto series = sweep_speedups(parse_result_document(sweep_document(), "s").sweep);
  ASSERT_EQ(series.size(), 2u);
  EXPECT_EQ(series[0].title, "ps, bandwidth 1Gbps");
  EXPECT_EQ(series[0].strategy, "ps");
  EXPECT_EQ(series[0].group, ", bandwidth 1Gbps");
  // 180 / 100 and 320 / 100.
  const std::vector<std::pair<double, double>> one_gbps = {{1, 1.0}, {2, 1.8}, {4, 3.2}};
  EXPECT_EQ(series[0].points, one_gbps);
  EXPECT_EQ(series[1].title, "ps, bandwidth 10Gbps");
  const std::vector<std::pair<double, double>> ten_gbps = {{1, 1.0}, {2, 2.0}, {4, 4.0}};
  EXPECT_EQ(series[1].points, ten_gbps);
  // Without its point at one worker a series has no baseline and is left out.
  Json sweep = sweep_document();
  sweep["points"].erase(0);
  EXPECT_EQ(sweep_speedups(parse_result_document(sweep, "s").sweep).size(), 1u);
}

// `ralp sweep --strategies` lists the strategies as the last axis, which no point's values name.
TEST(ResultsReport, TheStrategiesAxisIsNotAPointValue) {
  Json sweep = sweep_document();
  sweep["sweep"]["axes"].push_back({{"name", "strategies"}, {"values", {"ps", "ralp"}}});
  const ResultDocument d = parse_result_document(sweep, "sweep.json");
  ASSERT_EQ(d.sweep.axes.size(), 3u);
  EXPECT_EQ(to_json(d.sweep), sweep);
  const auto series = sweep_speedups(d.sweep);
  ASSERT_EQ(series.size(), 2u);
  EXPECT_EQ(series[0].title, "ps, bandwidth 1Gbps");
  EXPECT_EQ(series[1].title, "ps, bandwidth 10Gbps");
}

TEST(ResultsReport, MalformedDocumentsNameTheFileAndPath) {
  Json sweep = sweep_document();
  sweep["points"][2]["results"][0].erase("images_per_s");
  EXPECT_EQ(message_of(sweep).rfind("r.json: /points/2/results/0/images_per_s is missing", 0), 0u)
      << message_of(sweep);
  sweep = sweep_document();
  sweep["points"][1]["values"].erase("bandwidth");
  EXPECT_EQ(message_of(sweep),
            "r.json: /points/1/values/bandwidth is missing, expected the point's value of the "
            "sweep's axis");
  sweep = sweep_document();
  sweep["sweep"]["fidelity"] = "exact";
  EXPECT_EQ(message_of(sweep).rfind("r.json: /sweep/fidelity is \"exact\", expected one of", 0), 0u)
      << message_of(sweep);
  Json place = place_document();
  place["strategies"][0]["ranking"][1]["analytic_step_time_s"] = "fast";
  EXPECT_EQ(message_of(place).rfind(
                "r.json: /strategies/0/ranking/1/analytic_step_time_s is \"fast\", expected", 0),
            0u)
      << message_of(place);
  ScenarioResult s;
  s.scenario = "s";
  s.model = "m";
  s.workers = 1;
  s.batch_per_worker = 1;
  s.network_model = "tcp";
  s.results = {result("ps", 100.0)};
  Json sim = to_json(s);
  sim["results"][0]["hosts"][1]["bytes_in"] = -1;
  EXPECT_EQ(message_of(sim).rfind("r.json: /results/0/hosts/1/bytes_in is -1, expected", 0), 0u)
      << message_of(sim);
  sim = to_json(s);
  sim["results"][0].erase("links");
  EXPECT_EQ(message_of(sim).rfind("r.json: /results/0 is not a strategy's result as `ralp "
                                  "simulate --json` writes it",
                                  0),
            0u)
      << message_of(sim);
  Json validation = {{"mode", "namespaces"},
                     {"points", {{{"kind", "ps"}, {"measured", {{"step_time_s", 0.1}}}}}},
                     {"summary", Json::array()}};
  EXPECT_EQ(message_of(validation), "r.json: /points/0/predicted is missing");
}

}  // namespace
}  // namespace ralp::reports
