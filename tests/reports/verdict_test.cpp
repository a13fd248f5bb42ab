// The verdict: the fastest strategy and its margin, whether a cut pays against the best uncut
// strategy, the best cuts, and the bottleneck, from hand-made results.
#include <gtest/gtest.h>

#include "ralp/reports/verdict.hpp"

namespace ralp::reports {
namespace {

StrategyResult result(const std::string& label, StrategyKind kind, double step,
                      std::optional<std::string> cut = std::nullopt) {
  StrategyResult r;
  r.label = label;
  r.kind = kind;
  r.cut = std::move(cut);
  r.step_time_mean_s = step;
  r.worker_mean = {0.1 * step, 0.8 * step, 0.1 * step};
  r.links = {{"ps-0-nic_DOWN", 4.4e9, 125e6, 0.48}};
  return r;
}

TEST(Verdict, FastestAndMargin) {
  ScenarioResult s;
  s.results = {result("ps", StrategyKind::ps, 10.0), result("allreduce", StrategyKind::allreduce, 4.0)};
  const Verdict v = make_verdict(s);
  EXPECT_EQ(v.fastest, "allreduce");
  EXPECT_EQ(v.runner_up, "ps");
  EXPECT_DOUBLE_EQ(v.margin, 1.5);  // 10 s / 4 s - 1
  EXPECT_EQ(verdict_lines(v).front(), "fastest: allreduce, 2.50x faster than ps");
  EXPECT_TRUE(v.splits.empty());
}

TEST(Verdict, ACutPaysOnlyAboveTheThreshold) {
  ScenarioResult s;
  // Against the best uncut strategy (allreduce, 4 s): 3 s saves 25% of its time (1.33x faster),
  // 3.9 s only 2.5% (1.03x).
  auto good = result("ralp", StrategyKind::ralp, 3.0, "conv4_1");
  good.cut_search = {{"fc6", 8.0}, {"conv4_1", 3.0}, {"conv5_1", 5.0}, {"pool5", 6.0}};
  s.results = {result("ps", StrategyKind::ps, 10.0), result("allreduce", StrategyKind::allreduce, 4.0),
               good, result("hybrid-fc6", StrategyKind::hybrid, 3.9, "fc6"),
               result("ralp-late", StrategyKind::ralp, 8.0, "fc8")};
  const Verdict v = make_verdict(s, 0.05);
  ASSERT_EQ(v.splits.size(), 3u);
  EXPECT_TRUE(v.splits[0].pays);
  EXPECT_EQ(v.splits[0].compared_with, "allreduce");
  EXPECT_NEAR(v.splits[0].gain, 0.25, 1e-12);
  // The three best cuts of the search, fastest first.
  ASSERT_EQ(v.splits[0].best_cuts.size(), 3u);
  EXPECT_EQ(v.splits[0].best_cuts[0].cut, "conv4_1");
  EXPECT_EQ(v.splits[0].best_cuts[2].cut, "pool5");
  EXPECT_FALSE(v.splits[1].pays);
  EXPECT_FALSE(v.splits[2].pays);
  const auto lines = verdict_lines(v);
  EXPECT_EQ(lines[1],
            "ralp (cut conv4_1): split: 1.33x faster than allreduce (25% less time), over the 5% "
            "less time a split must gain");
  EXPECT_EQ(lines[2], "  best cuts searched: conv4_1 3 s, conv5_1 5 s, pool5 6 s");
  EXPECT_EQ(lines[3],
            "hybrid-fc6: do not split: 1.03x faster than allreduce (2.5% less time), under the 5% "
            "less time a split must gain");
  EXPECT_EQ(lines[4],
            "ralp-late (cut fc8): do not split: allreduce is 2.00x faster (50% less time)");
  // With a 1% threshold the hybrid's 2.5% pays.
  EXPECT_TRUE(make_verdict(s, 0.01).splits[1].pays);
  EXPECT_THROW(make_verdict(s, -0.1), std::invalid_argument);
}

TEST(Verdict, TheBottleneckInWords) {
  ScenarioResult s;
  s.results = {result("ps", StrategyKind::ps, 10.0)};
  EXPECT_EQ(make_verdict(s).bottleneck,
            "the network: workers communicate 80% of the step; the busiest link, ps-0-nic_DOWN, "
            "carries 4.4 GB per step at 48% of its bandwidth");
  s.results[0].worker_mean = {7.0, 1.0, 2.0};
  s.results[0].links[0].utilisation = 0.1;
  EXPECT_EQ(make_verdict(s).bottleneck, "the workers' compute: 7 s of the 10 s step");
  // Without a cutting strategy there is nothing to compare.
  EXPECT_TRUE(make_verdict(s).splits.empty());
  // A step time alone (the analytic fidelity's) names no bottleneck rather than "0% of the step".
  s.results[0].worker_mean = {};
  s.results[0].links.clear();
  EXPECT_EQ(make_verdict(s).bottleneck,
            "not known: the result has no worker time split and no link loads (the analytic "
            "fidelity gives step times only; --fidelity event says what limits the step)");
}

TEST(Verdict, EqualTimesAreCalledEqual) {
  ScenarioResult s;
  // 233 ms and 233.4 ms print as 1.00x: equal, neither "1.00x faster".
  s.results = {result("ring-ideal", StrategyKind::allreduce, 0.2334),
               result("nccl-ring", StrategyKind::allreduce, 0.233),
               result("hybrid-fc", StrategyKind::hybrid, 0.2332, "fc")};
  const Verdict v = make_verdict(s, 0.0);
  EXPECT_TRUE(v.equal);
  const auto lines = verdict_lines(v);
  EXPECT_EQ(lines[0], "fastest: nccl-ring, equal to hybrid-fc");
  // A cut that saves 0.09% does not pay, even over a threshold of 0: it prints as equal.
  EXPECT_FALSE(v.splits[0].pays);
  EXPECT_EQ(lines[1], "hybrid-fc: do not split: equal to nccl-ring");
}

}  // namespace
}  // namespace ralp::reports
