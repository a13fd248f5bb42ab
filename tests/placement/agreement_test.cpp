// The analytic model against the event simulation on every shipped paper and modern scenario,
// strategy by strategy, at the scenario's fixed cuts (its cut "auto" entries are the search's,
// checked in optimality_test.cpp).
#include <cstdio>
#include <filesystem>

#include <gtest/gtest.h>

#include "ralp/placement/analytic.hpp"
#include "ralp/sim/simulate.hpp"

namespace ralp {
namespace {

// Agreement reached (docs/placement.md quotes the measured errors): ps, allreduce and hybrid
// agree to 0.01% on every shipped scenario; ralp, whose workers the head releases one after
// another so that their replies and pushes overlap only in part (the fluid model), to 1.9%.
constexpr double kTolerance = 0.02;

std::vector<std::filesystem::path> shipped() {
  std::vector<std::filesystem::path> out;
  for (const char* folder : {"scenarios/paper", "scenarios/modern"}) {
    for (const auto& e : std::filesystem::directory_iterator(std::filesystem::path(RALP_SOURCE_DIR) / folder)) {
      out.push_back(e.path());
    }
  }
  std::sort(out.begin(), out.end());
  return out;
}

TEST(Agreement, AnalyticWithinTwoPercentOfTheEventSimulation) {
  for (const auto& file : shipped()) {
    const Scenario s = load_scenario(file);
    for (const StrategySpec& spec : s.strategies) {
      const bool has_cut = spec.kind == StrategyKind::ralp || spec.kind == StrategyKind::hybrid;
      if (has_cut && !spec.cut) continue;
      const std::optional<LayerId> cut = has_cut ? s.model.find(*spec.cut) : std::nullopt;
      const double analytic = placement::estimate_strategy(s, spec, cut).step_time_s;
      const double simulated = sim::simulate_isolated(s, spec, cut, {}).step_time_mean_s;
      const double error = (analytic - simulated) / simulated;
      std::printf("%-36s %-12s analytic %9.3f ms  simulated %9.3f ms  %+6.2f%%\n",
                  file.stem().c_str(), spec.label.c_str(), 1e3 * analytic, 1e3 * simulated,
                  100 * error);
      EXPECT_LT(std::abs(error), kTolerance) << file.stem() << " " << spec.label;
    }
  }
}

}  // namespace
}  // namespace ralp
