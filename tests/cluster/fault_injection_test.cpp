// RALP_CLUSTER_FAULT: what parses, and the exact message for what does not. Firing a fault ends
// the process, so the run tests (cluster_run_test.cpp) cover that.
#include <gtest/gtest.h>

#include "ralp/cluster/fault_injection.hpp"
#include "ralp/core/json_input.hpp"


namespace ralp::cluster {
namespace {

std::string error_of(const std::string& text) {
  try {
    (void)parse_fault_spec(text);
  } catch (const InputError& e) {
    return e.what();
  }
  return "no error";
}

TEST(FaultSpec, ParsesEveryKey) {
  EXPECT_EQ(parse_fault_spec("rank=2,step=1,phase=push,kind=hang"),
            (FaultSpec{2, 1, "push", FaultKind::hang, ""}));
  EXPECT_EQ(parse_fault_spec("kind=exit,phase=ring,step=0,rank=1,strategy=hybrid@fc3"),
            (FaultSpec{1, 0, "ring", FaultKind::exit, "hybrid@fc3"}));
}

TEST(FaultSpec, BadSpecsSayWhatIsExpected) {
  EXPECT_EQ(error_of("rank=2,step=1,phase=sleep,kind=hang"),
            "RALP_CLUSTER_FAULT: phase is 'sleep', expected one of pull, forward, activations, "
            "head, backward, push, aggregate, ring, update");
  EXPECT_EQ(error_of("rank=2,step=1,phase=push,kind=crash"),
            "RALP_CLUSTER_FAULT: kind is 'crash', expected exit or hang");
  EXPECT_EQ(error_of("rank=-1,step=1,phase=push,kind=hang"),
            "RALP_CLUSTER_FAULT: rank is '-1', expected an integer >= 0");
  EXPECT_EQ(error_of("rank=2,step=1,phase=push"),
            "RALP_CLUSTER_FAULT: needs rank=R,step=K,phase=P,kind=exit|hang");
  EXPECT_EQ(error_of("rank=2,when=1"),
            "RALP_CLUSTER_FAULT: unknown key 'when' (expected rank, step, phase, kind, strategy)");
  EXPECT_EQ(error_of("rank"),
            "RALP_CLUSTER_FAULT: 'rank' is not KEY=VALUE (expected rank=R,step=K,phase=P,kind=K)");
}

TEST(FaultSpec, OtherRanksStepsPhasesAndStrategiesPass) {
  FaultInjector injector(FaultSpec{2, 1, "push", FaultKind::exit, "ps"}, 1, "worker-0");
  injector.set_strategy("ps");
  injector.at("push", 1);  // another rank: returns
  FaultInjector same_rank(FaultSpec{2, 1, "push", FaultKind::exit, "ps"}, 2, "worker-1");
  same_rank.set_strategy("ralp");
  same_rank.at("push", 1);  // another strategy
  same_rank.set_strategy("ps");
  same_rank.at("push", 0);  // another step
  same_rank.at("pull", 1);  // another phase
  FaultInjector none(std::nullopt, 2, "worker-1");
  none.at("push", 1);
  SUCCEED();
}

}  // namespace
}  // namespace ralp::cluster
