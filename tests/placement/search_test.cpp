// The placement search with a fake evaluator: which candidates it simulates, which it picks, and
// the split-or-not rule.
#include <map>

#include <gtest/gtest.h>

#include "ralp/model/model_zoo.hpp"
#include "ralp/placement/analytic.hpp"
#include "ralp/placement/search.hpp"
#include "ralp/spec/scenario.hpp"

namespace ralp {
namespace {

// Step times from a table: by cut (the head's first layer: a chain's heads are suffixes) for
// strategies with one, by kind otherwise; records each call.
class FakeEvaluator final : public placement::StepEvaluator {
 public:
  std::map<LayerId, double> by_cut;
  std::map<StrategyKind, double> by_kind;
  std::vector<std::optional<Head>> asked;
  double otherwise = 10.0;

  std::vector<double> step_times(const Scenario&, const StrategySpec& strategy,
                                 const std::vector<std::optional<Head>>& heads) override {
    std::vector<double> out;
    for (const auto& head : heads) {
      asked.push_back(head);
      if (head) {
        const LayerId cut = head->cut();
        out.push_back(by_cut.contains(cut) ? by_cut.at(cut) : otherwise);
      } else {
        out.push_back(by_kind.at(strategy.kind));
      }
    }
    return out;
  }
};

Scenario vgg_scenario(const std::string& extra = "") {
  const std::string text = R"({"name": "t", "model": "vgg16", "batch_per_worker": 32,
      "cluster": {"workers": 8, "worker_device": "v100", "platform": {"kind": "star",
      "nic_bandwidth": "10Gbps", "latency": "50us"}}, "network_model": "tcp",
      "strategies": ["ps", {"name": "ralp", "cut": "auto"}])" + extra + "}";
  return parse_scenario(parse_json_text(text, "t.json"), "t.json", RALP_TEST_DATA_DIR);
}

TEST(Candidates, EverySuffixOnceInLayerOrder) {
  const Scenario s = vgg_scenario();
  const auto all = placement::candidates(s, s.strategies[1]);
  // Every cut but the last, whose head (the loss alone) holds no parameters.
  ASSERT_EQ(all.size(), s.model.size() - 2);
  for (size_t i = 0; i < all.size(); ++i) {
    EXPECT_TRUE(all[i].head.is_suffix());
    EXPECT_EQ(all[i].head.cut(), i + 1);
  }
  // Cutting before fc6 keeps 89% of VGG-16's parameters in the head.
  const auto fc6 = *s.model.find("fc6");
  const auto& c = all[fc6 - 1];
  EXPECT_GT(c.head_param_bytes, 8 * c.tail_param_bytes);
}

TEST(Search, SimulatesTheTopKAnalyticAndPicksTheFastestSimulated) {
  const Scenario s = vgg_scenario();
  // Rank as the analytic model does, then make the simulator prefer the third.
  std::vector<std::pair<double, LayerId>> ranked;
  for (const auto& c : placement::candidates(s, s.strategies[1])) {
    ranked.emplace_back(placement::estimate_strategy(s, s.strategies[1], c.head.cut()).step_time_s,
                        c.head.cut());
  }
  std::stable_sort(ranked.begin(), ranked.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  FakeEvaluator fake;
  fake.by_kind[StrategyKind::ps] = 5.0;
  fake.by_kind[StrategyKind::allreduce] = 4.0;
  fake.by_cut[ranked[0].second] = 3.0;
  fake.by_cut[ranked[1].second] = 2.0;
  fake.by_cut[ranked[2].second] = 1.0;
  fake.by_cut[ranked[3].second] = 0.5;  // not in the top 3: never simulated
  const auto answer = placement::place(s, fake, {.top_k = 3});
  const auto& ralp = answer.strategies[1];
  EXPECT_TRUE(ralp.searched);
  ASSERT_TRUE(ralp.cut.has_value());
  EXPECT_EQ(ralp.cut->cut(), ranked[2].second);
  EXPECT_DOUBLE_EQ(ralp.simulated_s, 1.0);
  EXPECT_EQ(ralp.ranking.size(), s.model.size() - 2);  // no cut before the loss alone
  EXPECT_TRUE(ralp.ranking[2].simulated_s.has_value());
  EXPECT_FALSE(ralp.ranking[3].simulated_s.has_value());
  // ps (given), the three candidates, then the allreduce baseline the scenario lacks.
  ASSERT_EQ(fake.asked.size(), 5u);
  // 1 s against allreduce's 4 s: 75% faster, so split.
  ASSERT_TRUE(answer.verdict.has_value());
  EXPECT_TRUE(answer.verdict->split);
  EXPECT_EQ(answer.verdict->best_uncut_label, "allreduce");
  EXPECT_DOUBLE_EQ(answer.verdict->gain, 0.75);
}

TEST(Search, BelowTheThresholdItSaysDoNotSplitAndWhy) {
  const Scenario s = vgg_scenario(R"(, "placement": {"split_threshold": 0.1})");
  FakeEvaluator fake;
  fake.by_kind[StrategyKind::ps] = 1.0;
  fake.by_kind[StrategyKind::allreduce] = 2.0;
  fake.otherwise = 0.95;  // every cut 5% faster than ps: under the 10% threshold
  const auto answer = placement::place(s, fake, {.top_k = 1});
  ASSERT_TRUE(answer.verdict.has_value());
  EXPECT_FALSE(answer.verdict->split);
  EXPECT_NEAR(answer.verdict->gain, 0.05, 1e-12);
  EXPECT_EQ(answer.verdict->threshold, 0.1);
  EXPECT_EQ(answer.verdict->reason.rfind("do not split: ", 0), 0u) << answer.verdict->reason;
  EXPECT_NE(answer.verdict->reason.find("of the parameters"), std::string::npos);
  // The words simulate's verdict uses: a ratio of step times and the share of time saved.
  EXPECT_NE(answer.verdict->reason.find(" is 1.05x faster than ps (5% less time), under the 10% "
                                        "less time a split must gain; "),
            std::string::npos)
      << answer.verdict->reason;
}

TEST(Search, TopKBelowOneIsBadInput) {
  const Scenario s = vgg_scenario();
  FakeEvaluator fake;
  EXPECT_THROW(placement::place(s, fake, {.top_k = 0}), InputError);
}

TEST(Search, AModelWithoutACutIsBadInputBeforeAnySimulation) {
  const std::string text = R"({"name": "t", "model": {"name": "m", "input": [10, 1, 1], "layers":
      [{"name": "loss", "type": "softmax_cross_entropy"}]}, "batch_per_worker": 4,
      "cluster": {"workers": 2, "worker_device": "v100", "platform": {"kind": "star",
      "nic_bandwidth": "10Gbps", "latency": "50us"}}, "strategies": ["ps", {"name": "ralp", "cut": "auto"}]})";
  const Scenario s = parse_scenario(parse_json_text(text, "t.json"), "t.json", RALP_TEST_DATA_DIR);
  FakeEvaluator fake;
  EXPECT_THROW(placement::place(s, fake, {}), InputError);
  EXPECT_TRUE(fake.asked.empty());
}

TEST(Search, ThresholdOutOfRangeIsBadInput) {
  EXPECT_THROW(vgg_scenario(R"(, "placement": {"split_threshold": 1.5})"), InputError);
}

}  // namespace
}  // namespace ralp
