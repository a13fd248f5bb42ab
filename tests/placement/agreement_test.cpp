// The analytic model against the event simulation on every shipped paper and modern scenario,
// strategy by strategy (the modern machines' nodes at nodes_agreement_test.cpp's tolerances), at
// the scenario's fixed cuts (its cut "auto" entries are the search's,
// checked in optimality_test.cpp).
#include <cstdio>
#include <filesystem>

#include <gtest/gtest.h>

#include "ralp/placement/analytic.hpp"
#include "ralp/sim/simulate.hpp"
#include "ralp/spec/head.hpp"
#include "ralp/spec/nccl_plan.hpp"
#include "ralp/spec/strategy_head.hpp"

namespace ralp {
namespace {

// Agreement reached (docs/placement.md quotes the measured errors): every strategy agrees to
// 0.01% on every shipped scenario, ralp included, whose workers the head releases one after
// another so that their replies and pushes overlap in part (the fluid model, with SimGrid's
// cross-traffic: without it ralp was up to 1.9% off here, and 4% at some heads below).
constexpr double kTolerance = 0.001;

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

// The shipped machines of several GPUs per node (scenarios/modern). Measured: ps, the ring, ralp
// and hybrid within 3% on NVLink and NVSwitch machines (ps 4.0% on DGX-2's 16 devices behind one
// NIC) and 2.4% on p2.8xlarge's PCIe, where a node's first device's PCIe link carries both what
// it passes on inside the node and its traffic to the servers, which the analytic does not share;
// NCCL's tuning model within 0.2%; the hierarchical all-reduce within 5.8% on NVSwitch and 15.2%
// on the cube-mesh and PCIe (optimistic).
constexpr double kNodesTolerance = 0.05;
constexpr double kHierarchicalTolerance = 0.17;
// On the DGX-1 cube-mesh (docs/fabrics.md), devices 5-7 reach the node's first device over PCIe,
// through the link that also carries the first device's traffic to the servers: the analytic
// shares neither, ps and ralp with local aggregation are up to 11.8% off (p3.16xlarge,
// dgx1-v100), the ring and NCCL within 0.2%.
constexpr double kCubeMeshTolerance = 0.13;

double tolerance_for(const Scenario& s, const StrategySpec& spec) {
  if (s.nodes.devices_per_node == 1) return kTolerance;
  if (spec.algorithm == AllreduceAlgorithm::hierarchical) return kHierarchicalTolerance;
  const bool mesh = s.nodes.interconnect && s.nodes.interconnect->kind == InterconnectKind::nvlink;
  return mesh && spec.kind != StrategyKind::allreduce ? kCubeMeshTolerance : kNodesTolerance;
}

TEST(Agreement, AnalyticWithinATenthOfAPercentOfTheEventSimulation) {
  for (const auto& file : shipped()) {
    const Scenario s = load_scenario(file);
    for (StrategySpec spec : s.strategies) {
      // The analytic fidelity prices no transport but NCCL's tuning model: both run at wire speed.
      if (!uses_nccl_model(s, spec)) spec.transport = ideal_transport();
      const bool has_cut = spec.kind == StrategyKind::ralp || spec.kind == StrategyKind::hybrid;
      if (has_cut && !spec.cut) continue;
      const std::optional<LayerId> cut = has_cut ? s.model.find(*spec.cut) : std::nullopt;
      const double analytic = placement::estimate_strategy(s, spec, cut).step_time_s;
      const double simulated = sim::simulate_isolated(s, spec, cut, {}).step_time_mean_s;
      const double error = (analytic - simulated) / simulated;
      std::printf("%-36s %-12s analytic %9.3f ms  simulated %9.3f ms  %+6.2f%%\n",
                  file.stem().c_str(), spec.label.c_str(), 1e3 * analytic, 1e3 * simulated,
                  100 * error);
      EXPECT_LT(std::abs(error), tolerance_for(s, spec)) << file.stem() << " " << spec.label;
    }
  }
}

// Heads of Inception-v3 on 1 GbE, 8 workers: while the head's replies fill the PS's uplink, the
// first workers' pushes cross it too as cross-traffic, and SimGrid gives them the replies' share.
// The heads differ in boundary size, so in how much the replies and pushes overlap.
TEST(Agreement, AnalyticWithinATenthOfAPercentWhereRepliesAndPushesShareTheLinks) {
  const Scenario s = load_scenario(std::filesystem::path(RALP_SOURCE_DIR) /
                                   "scenarios/paper/inception_v3-1gbe-8w-b64.json");
  StrategySpec spec;
  spec.kind = StrategyKind::ralp;
  spec.label = "ralp";
  for (const char* name : {"Mixed_7a.branch3x3_2.bn+", "Mixed_7a.branch7x7x3_2.conv+",
                           "Mixed_6b.branch7x7dbl_2.conv+", "Mixed_5b.branch1x1.conv", "fc"}) {
    const Head head = parse_head(s.model, name);
    const Scenario headed = scenario_for_head(s, head);
    const double analytic = placement::estimate_strategy(headed, spec, head.cut()).step_time_s;
    const double simulated = sim::simulate_isolated(headed, spec, head.cut(), {}).step_time_mean_s;
    const double error = (analytic - simulated) / simulated;
    std::printf("%-30s analytic %9.3f ms  simulated %9.3f ms  %+6.2f%%\n", name, 1e3 * analytic,
                1e3 * simulated, 100 * error);
    EXPECT_LT(std::abs(error), kTolerance) << name;
  }
}

}  // namespace
}  // namespace ralp
