// The search against brute force (every candidate head simulated): on every zoo model on a small
// star, the head the search picks simulates within 0.5% of the best. (The shipped scenarios take
// 10 minutes of brute force on two cores: `build/bench/place --shipped` measures them.)
#include <algorithm>
#include <cstdio>

#include <gtest/gtest.h>

#include "ralp/model/model_zoo.hpp"
#include "ralp/placement/sim_evaluator.hpp"

namespace ralp {
namespace {

constexpr double kWithin = 0.005;

Scenario zoo_scenario(const std::string& model) {
  const std::string text = R"({"name": "t", "model": ")" + model + R"(", "batch_per_worker": 32,
      "cluster": {"workers": 4, "worker_device": "gtx1080ti", "platform": {"kind": "star",
      "nic_bandwidth": "10Gbps", "latency": "50us"}}, "network_model": "tcp", "steps": 2,
      "strategies": [{"name": "ralp", "cut": "auto"}]})";
  return parse_scenario(parse_json_text(text, "t.json"), "t.json", RALP_TEST_DATA_DIR);
}

TEST(Optimality, SearchMatchesBruteForceOnEveryZooModel) {
  for (const ZooEntry& entry : zoo_entries()) {
    const std::string& model = entry.name;
    const Scenario s = zoo_scenario(model);
    const sim::SimulateOptions options{.jobs = 2};
    const auto candidates = placement::candidates(s, s.strategies[0]);
    std::vector<std::optional<Head>> heads;
    for (const auto& c : candidates) heads.emplace_back(c.head);
    placement::SimulatedEvaluator evaluator(options);
    const std::vector<double> times = evaluator.step_times(s, s.strategies[0], heads);
    const double best = *std::min_element(times.begin(), times.end());
    const auto searched = placement::resolve_cuts(s, options).front();
    double chosen = 0.0;
    for (size_t i = 0; i < candidates.size(); ++i) {
      if (candidates[i].name == head_name(s.model, *searched.cut)) chosen = times[i];
    }
    ASSERT_GT(chosen, 0.0) << model;
    std::printf("%-14s %4zu heads: brute-force best %9.3f ms, search %9.3f ms (cut %s)\n",
                model.c_str(), candidates.size(), 1e3 * best, 1e3 * chosen,
                head_name(s.model, *searched.cut).c_str());
    EXPECT_LE(chosen, best * (1.0 + kWithin)) << model;
  }
}

}  // namespace
}  // namespace ralp
