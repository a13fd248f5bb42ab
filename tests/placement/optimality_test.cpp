// The search against brute force (every candidate simulated): on every zoo model on a small
// star and on every shipped scenario, the cut the search picks simulates within 0.5% of the best.
#include <algorithm>
#include <cstdio>
#include <filesystem>

#include <gtest/gtest.h>

#include "ralp/core/model_zoo.hpp"
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
    const auto brute = sim::resolve_cuts(s, options).front();
    double best = brute.search.front().step_time_mean_s;
    for (const auto& t : brute.search) best = std::min(best, t.step_time_mean_s);
    const auto searched = placement::resolve_cuts(s, options).front();
    double chosen = 0.0;
    for (const auto& t : searched.search) {
      if (t.cut == s.model.layer(*searched.cut).name()) chosen = t.step_time_mean_s;
    }
    std::printf("%-14s brute-force best %9.3f ms, search %9.3f ms (cut %s)\n", model.c_str(),
                1e3 * best, 1e3 * chosen, s.model.layer(*searched.cut).name().c_str());
    EXPECT_LE(chosen, best * (1.0 + kWithin)) << model;
  }
}

// Every shipped paper and modern scenario: each strategy with cut "auto".
TEST(Optimality, SearchMatchesBruteForceOnEveryShippedScenario) {
  std::vector<std::filesystem::path> files;
  for (const char* folder : {"scenarios/paper", "scenarios/modern"}) {
    for (const auto& e :
         std::filesystem::directory_iterator(std::filesystem::path(RALP_SOURCE_DIR) / folder)) {
      files.push_back(e.path());
    }
  }
  std::sort(files.begin(), files.end());
  for (const auto& file : files) {
    Scenario s = load_scenario(file);
    std::erase_if(s.strategies, [](const StrategySpec& spec) {
      return !(spec.kind == StrategyKind::ralp || spec.kind == StrategyKind::hybrid) || spec.cut;
    });
    if (s.strategies.empty()) continue;
    const sim::SimulateOptions options{.jobs = 2};
    const auto brute = sim::resolve_cuts(s, options);
    const auto searched = placement::resolve_cuts(s, options);
    for (size_t i = 0; i < brute.size(); ++i) {
      double best = brute[i].search.front().step_time_mean_s;
      for (const auto& t : brute[i].search) best = std::min(best, t.step_time_mean_s);
      double chosen = 0.0;
      for (const auto& t : searched[i].search) {
        if (t.cut == s.model.layer(*searched[i].cut).name()) chosen = t.step_time_mean_s;
      }
      std::printf("%-30s %-8s brute-force best %10.3f ms, search %10.3f ms (cut %s)\n",
                  file.stem().c_str(), s.strategies[i].label.c_str(), 1e3 * best, 1e3 * chosen,
                  s.model.layer(*searched[i].cut).name().c_str());
      EXPECT_LE(chosen, best * (1.0 + kWithin)) << file.stem();
    }
  }
}

}  // namespace
}  // namespace ralp
