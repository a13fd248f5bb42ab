// The cut ranking's shortcut against estimating every candidate: each candidate's lower bound
// never exceeds its analytic estimate, and the first K of the ranking are exactly the K best
// estimates, on shipped scenarios whose best heads lie far down the bounds' order and on random
// DAGs with staggered heads (several workers, several shards, hybrid).
#include <algorithm>
#include <filesystem>

#include <gtest/gtest.h>

#include "random_dags.hpp"
#include "ralp/placement/analytic.hpp"
#include "ralp/placement/plans.hpp"
#include "ralp/placement/search.hpp"
#include "ralp/spec/scenario.hpp"

namespace ralp {
namespace {

struct Estimated {
  std::string name;
  double estimate_s = 0.0;
  double bound_s = 0.0;
};

// Every candidate's estimate and bound, sorted as the ranking sorts estimates.
std::vector<Estimated> estimate_every_candidate(const Scenario& s, const StrategySpec& spec) {
  const placement::CutPlans plans(s, spec);
  std::vector<Estimated> out;
  for (const placement::Candidate& c : placement::candidates(s, spec)) {
    const schedule::StepPlan plan = plans.plan_at(c.head);
    const auto bound = placement::estimate_step(s, plan, placement::AnalyticDetail::lower_bound);
    out.push_back({c.name, placement::estimate_step(s, plan).step_time_s, bound.step_time_s});
  }
  std::stable_sort(out.begin(), out.end(), [](const Estimated& a, const Estimated& b) {
    return a.estimate_s < b.estimate_s;
  });
  return out;
}

// Returns how many candidates the ranking did not estimate.
size_t expect_ranking_exact(const Scenario& s, const StrategySpec& spec, size_t k) {
  const std::vector<Estimated> all = estimate_every_candidate(s, spec);
  for (const Estimated& e : all) {
    EXPECT_LE(e.bound_s, e.estimate_s * (1.0 + 1e-12)) << e.name;
  }
  const std::vector<placement::RankedCut> ranked = placement::rank_cuts(s, spec, k);
  EXPECT_EQ(ranked.size(), all.size());
  if (ranked.size() != all.size()) return 0;
  for (size_t i = 0; i < std::min(k, all.size()); ++i) {
    SCOPED_TRACE("rank " + std::to_string(i + 1));
    EXPECT_TRUE(ranked[i].estimated);
    // Equal estimates may come in either order; the times must be the best ones.
    EXPECT_DOUBLE_EQ(ranked[i].analytic_s, all[i].estimate_s) << ranked[i].candidate.name;
  }
  size_t skipped = 0;
  for (const placement::RankedCut& r : ranked) {
    if (r.estimated) continue;
    ++skipped;
    EXPECT_GE(r.analytic_s, all[std::min(k, all.size()) - 1].estimate_s) << r.candidate.name;
  }
  return skipped;
}

size_t half_of(const Scenario& s, const StrategySpec& spec) {
  return placement::candidates(s, spec).size() / 2;
}

TEST(Ranking, BoundsAndTheBestKOnShippedScenarios) {
  for (const char* file : {"inception_v3-1gbe-8w-b64.json", "inception_v3-10gbe-8w-b32.json",
                           "resnet50-10gbe-8w-b64.json", "vgg16-10gbe-16w-b32.json"}) {
    SCOPED_TRACE(file);
    const Scenario s =
        load_scenario(std::filesystem::path(RALP_SOURCE_DIR) / "scenarios/paper" / file);
    for (const StrategySpec& spec : s.strategies) {
      if (spec.kind != StrategyKind::ralp || spec.cut) continue;
      // The shortcut skips more than half the candidates here.
      EXPECT_GT(expect_ranking_exact(s, spec, 3), half_of(s, spec));
      expect_ranking_exact(s, spec, 1);
    }
  }
}

TEST(Ranking, BoundsAndTheBestKOnRandomDags) {
  const char* strategies[] = {R"({"name": "ralp", "cut": "auto"})",
                              R"({"name": "hybrid", "cut": "auto"})"};
  size_t skipped = 0;
  for (uint64_t seed = 1; seed <= 24; ++seed) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    const int64_t workers = 2 + static_cast<int64_t>(seed % 7);
    const int64_t shards = 1 + static_cast<int64_t>(seed % 3);
    const size_t layers = 6 + static_cast<size_t>(seed % 9);
    const Scenario s =
        testing::random_dag_scenario(seed, layers, workers, strategies[seed % 2], shards);
    skipped += expect_ranking_exact(s, s.strategies[0], 1 + seed % 4);
  }
  EXPECT_GT(skipped, 0u);
}

}  // namespace
}  // namespace ralp
