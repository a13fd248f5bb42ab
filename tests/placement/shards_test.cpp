// Shard assignment: the balanced assignment against round-robin and greedy on hand-checkable
// models, the exact search against brute force on random instances (fixed seeds), the
// heuristic's gap to it, and balanced never worse than round-robin or greedy on the zoo.
#include <gtest/gtest.h>

#include <algorithm>
#include <iostream>
#include <limits>
#include <random>

#include "ralp/model/model_zoo.hpp"
#include "ralp/placement/shards.hpp"
#include "ralp/schedule/step_plan.hpp"
#include "ralp/spec/scenario.hpp"
#include "ralp/spec/sharding.hpp"

namespace ralp {
namespace {

const char* kInstantDevice =
    R"({"name": "instant", "kind": "cpu", "peak_flops": 1e30, "memory_bandwidth": 1e30})";

// Three fully connected layers without biases, of a, b and c MB of weights (1 MB = 250,000
// floats), then the loss. The input is 1,000 floats; fc1 1000 -> 250a (a MB); fc2 250a -> x with
// 250a x = 250,000 b; fc3 x -> y with x y = 250,000 c.
std::string three_layer_model(int a, int b, int c) {
  const auto fc = [](const std::string& name, int out) {
    return R"({"name": ")" + name + R"(", "type": "fc", "out_features": )" + std::to_string(out) +
           R"(, "bias": false})";
  };
  const int fc1_out = 250 * a;
  const int fc2_out = 1000 * b / a;
  const int fc3_out = 250000 * c / fc2_out;
  return R"({"name": "three", "input": [1000, 1, 1], "layers": [)" + fc("fc1", fc1_out) + ", " +
         fc("fc2", fc2_out) + ", " + fc("fc3", fc3_out) +
         R"(, {"name": "loss", "type": "softmax_cross_entropy"}]})";
}

Scenario scenario_from(const std::string& model, int workers, int shards,
                       const std::string& strategy) {
  const std::string text =
      R"({"name": "shards", "model": )" + model +
      R"(, "batch_per_worker": 8, "cluster": {"workers": )" + std::to_string(workers) +
      R"(, "parameter_servers": )" + std::to_string(shards) + R"(, "worker_device": )" +
      kInstantDevice + R"(, "ps_device": )" + kInstantDevice +
      R"(, "platform": {"kind": "star", "nic_bandwidth": "8Gbps", "latency": "0"}},
      "network_model": "ideal", "strategies": [)" + strategy + "]}";
  return parse_scenario(parse_json_text(text, "shards.json"), "shards.json", RALP_TEST_DATA_DIR);
}

std::vector<int64_t> shard_bytes(const placement::ShardingOption& o) {
  std::vector<int64_t> out;
  for (const ShardShare& s : o.shares) out.push_back(s.bytes);
  return out;
}

TEST(Shards, ScenarioAcceptsBalanced) {
  const Scenario s = scenario_from(three_layer_model(4, 3, 3), 1, 2,
                                   R"({"name": "ps", "sharding": "balanced"})");
  EXPECT_EQ(s.strategies[0].sharding, ShardPlacement::balanced);
  try {
    scenario_from(three_layer_model(4, 3, 3), 1, 2, R"({"name": "ps", "sharding": "even"})");
    FAIL() << "accepted an unknown sharding";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("expected one of: round_robin, greedy, balanced"),
              std::string::npos)
        << e.what();
  }
}

TEST(Shards, FourThreeThreeOnTwoShards) {
  // Groups of 4, 3 and 3 MB on 2 shards, one worker, a 1 GB/s PS link, instant sums: a group of
  // b bytes loads its shard 2 (b + 24) / 1e9 s (its pull and its push, each with a header).
  // Round-robin: fc1 and fc3 on ps-0, 7 MB; greedy: fc2 and fc3 on ps-1 (3 < 4), 6 MB;
  // balanced: 4 | 3 + 3, 6 MB, 12.000096 ms on ps-1.
  const Scenario s = scenario_from(three_layer_model(4, 3, 3), 1, 2, R"("ps")");
  const auto options = placement::compare_shardings(s, s.strategies[0], std::nullopt);
  ASSERT_EQ(options.size(), 3u);
  EXPECT_EQ(shard_bytes(options[0]), (std::vector<int64_t>{7000000, 3000000}));
  EXPECT_EQ(shard_bytes(options[1]), (std::vector<int64_t>{4000000, 6000000}));
  EXPECT_EQ(shard_bytes(options[2]), (std::vector<int64_t>{4000000, 6000000}));
  EXPECT_NEAR(options[0].busiest_s, 2 * (7e6 + 48) / 1e9, 1e-12);
  EXPECT_NEAR(options[2].busiest_s, 2 * (6e6 + 48) / 1e9, 1e-12);
  EXPECT_EQ(options[2].shares[0].layers, (std::vector<std::string>{"fc1"}));
}

TEST(Shards, ThreeThreeFourBeatsGreedy) {
  // 3, 3 then 4 MB: round-robin puts 3 + 4 on ps-0 (7 MB), and so does greedy (3 -> ps-0,
  // 3 -> ps-1, 4 -> ps-0, the first of two equal shards); balanced puts 4 alone: 6 MB.
  const Scenario s = scenario_from(three_layer_model(3, 3, 4), 1, 2, R"("ps")");
  const auto options = placement::compare_shardings(s, s.strategies[0], std::nullopt);
  EXPECT_EQ(shard_bytes(options[0]), (std::vector<int64_t>{7000000, 3000000}));
  EXPECT_EQ(shard_bytes(options[1]), (std::vector<int64_t>{7000000, 3000000}));
  const std::vector<int64_t> balanced = shard_bytes(options[2]);
  EXPECT_EQ(*std::max_element(balanced.begin(), balanced.end()), 6000000);
  EXPECT_LT(options[2].busiest_s, options[1].busiest_s);
  EXPECT_LE(options[2].analytic_s, options[1].analytic_s);
}

TEST(Shards, TheHeadWeighsOnPsZero) {
  // ralp cut at fc3: the tail is fc1 (4 MB) and fc2 (3 MB). ps-0 also takes each step's
  // boundary (fc2's 750 floats x batch 8 = 24 kB, labels 32 B) and returns its gradient
  // (24 kB): (24032 + 24 + 24000 + 24) / 1e9 = 48.08 us on its link. Round-robin and greedy put
  // fc1 on ps-0: 8.000048 ms + 48.08 us = 8.048128 ms; balanced moves fc1 to ps-1: 8.000048 ms,
  // and ps-0 holds fc2: 6.000048 ms + 48.08 us.
  const Scenario s = scenario_from(three_layer_model(4, 3, 3), 1, 2, R"({"name": "ralp", "cut": "fc3"})");
  const auto options = placement::compare_shardings(s, s.strategies[0], s.model.find("fc3"));
  EXPECT_NEAR(options[0].busiest_s, 8.048128e-3, 1e-12);
  EXPECT_NEAR(options[1].busiest_s, 8.048128e-3, 1e-12);
  EXPECT_NEAR(options[2].busiest_s, 8.000048e-3, 1e-12);
  EXPECT_EQ(options[2].shares[1].layers, (std::vector<std::string>{"fc1"}));
  EXPECT_NEAR(options[2].loads_s[0], 6.000048e-3 + 48.08e-6, 1e-12);
}

// Every assignment of n items to m machines: the true optimum.
double brute_force(const std::vector<double>& items, const std::vector<double>& base) {
  const size_t m = base.size();
  std::vector<int64_t> machine_of(items.size(), 0);
  double best = std::numeric_limits<double>::infinity();
  while (true) {
    best = std::min(best, busiest_load(items, base, machine_of));
    size_t k = 0;
    while (k < items.size() && ++machine_of[k] == static_cast<int64_t>(m)) machine_of[k++] = 0;
    if (k == items.size()) return best;
  }
}

TEST(Shards, ExactSearchMatchesBruteForce) {
  // 300 random instances per seed: 1 to 9 items, 1 to 3 machines, loads 1..100 (integers, so
  // that ties are common), base loads of 0 or up to 50.
  for (const unsigned seed : {1u, 2u, 3u}) {
    std::mt19937 rng(seed);
    for (int t = 0; t < 300; ++t) {
      std::uniform_int_distribution<int> count(1, 9), machines(1, 3), load(1, 100), base(0, 50);
      std::vector<double> items(static_cast<size_t>(count(rng)));
      for (double& x : items) x = load(rng);
      std::vector<double> bases(static_cast<size_t>(machines(rng)), 0.0);
      if (t % 2 == 1) {
        for (double& b : bases) b = base(rng);
      }
      const ItemAssignment exact = balance_exact(items, bases, kExactShardNodes);
      ASSERT_TRUE(exact.optimal);
      ASSERT_EQ(exact.machine_of.size(), items.size());
      EXPECT_DOUBLE_EQ(exact.busiest_s, brute_force(items, bases)) << "seed " << seed << " #" << t;
      EXPECT_DOUBLE_EQ(exact.busiest_s, busiest_load(items, bases, exact.machine_of));
      EXPECT_LE(exact.busiest_s, balance_heuristic(items, bases).busiest_s);
    }
  }
}

TEST(Shards, HeuristicGapToTheOptimum) {
  // LPT alone is within 4/3 - 1/(3m) of the optimum without base loads (Graham); local
  // improvement keeps it there. Up to 16 items on 2 to 4 machines, printed for the record.
  std::mt19937 rng(7);
  double worst = 0.0;
  double total = 0.0;
  int optimal = 0;
  constexpr int kInstances = 200;
  for (int t = 0; t < kInstances; ++t) {
    std::uniform_int_distribution<int> count(2, 16), machines(2, 4), load(1, 1000);
    std::vector<double> items(static_cast<size_t>(count(rng)));
    for (double& x : items) x = load(rng);
    const std::vector<double> bases(static_cast<size_t>(machines(rng)), 0.0);
    const ItemAssignment exact = balance_exact(items, bases, kExactShardNodes);
    const ItemAssignment heuristic = balance_heuristic(items, bases);
    ASSERT_TRUE(exact.optimal) << t;
    const double m = static_cast<double>(bases.size());
    EXPECT_LE(heuristic.busiest_s, (4.0 / 3.0 - 1.0 / (3.0 * m)) * exact.busiest_s) << t;
    const double gap = heuristic.busiest_s / exact.busiest_s - 1.0;
    worst = std::max(worst, gap);
    total += gap;
    optimal += gap == 0.0 ? 1 : 0;
  }
  std::cout << "heuristic against exact on " << kInstances << " instances: optimal on " << optimal
            << ", mean gap " << 100.0 * total / kInstances << "%, worst " << 100.0 * worst << "%\n";
}

TEST(Shards, BalancedNeverWorseOnTheZoo) {
  // Every zoo model, ps and ralp (cut at the last cut point), 2 to 4 shards, 8 workers: the
  // balanced assignment's busiest shard is never above round-robin's or greedy's.
  for (const ZooEntry& entry : zoo_entries()) {
    const std::string& name = entry.name;
    for (int shards : {2, 3, 4}) {
      const std::string model = R"(")" + name + R"(")";
      const std::string text =
          R"({"name": "zoo", "model": )" + model + R"(, "batch_per_worker": 32,
          "cluster": {"workers": 8, "parameter_servers": )" + std::to_string(shards) +
          R"(, "worker_device": "gtx1080ti", "ps_device": "gtx1080ti",
          "platform": {"kind": "star", "nic_bandwidth": "10Gbps", "latency": "20us"}},
          "strategies": ["ps", "ralp"]})";
      const Scenario s =
          parse_scenario(parse_json_text(text, "zoo.json"), "zoo.json", RALP_TEST_DATA_DIR);
      for (const StrategySpec& spec : s.strategies) {
        std::optional<LayerId> cut;
        if (spec.kind == StrategyKind::ralp) cut = s.model.cut_points().back();
        const auto o = placement::compare_shardings(s, spec, cut);
        SCOPED_TRACE(name + " " + spec.label + " on " + std::to_string(shards));
        EXPECT_LE(o[2].busiest_s, o[0].busiest_s * (1 + 1e-12));
        EXPECT_LE(o[2].busiest_s, o[1].busiest_s * (1 + 1e-12));
        // The same input gives the same plan.
        EXPECT_EQ(placement::compare_shardings(s, spec, cut)[2].shares, o[2].shares);
      }
    }
  }
}

TEST(Shards, CutPlansPlaceBalancedPerCut) {
  // The search's plans at each cut carry the balanced assignment of that cut's tail.
  const Scenario s = scenario_from(three_layer_model(4, 3, 3), 2, 2,
                                   R"({"name": "ralp", "sharding": "balanced"})");
  for (const LayerId cut : s.model.cut_points()) {
    const schedule::StepPlan direct = schedule::make_step_plan(s, s.strategies[0], cut);
    const auto options = placement::compare_shardings(s, s.strategies[0], cut);
    EXPECT_EQ(shard_shares(direct.shard_plan, s.model, 2), options[2].shares) << cut;
  }
}

}  // namespace
}  // namespace ralp
