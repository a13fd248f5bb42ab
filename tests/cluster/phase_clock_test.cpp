// Phase accounting: every moment of a step goes to exactly one phase.
#include <gtest/gtest.h>

#include "ralp/cluster/phase_clock.hpp"

namespace ralp::cluster {
namespace {

TEST(PhaseClock, ChargesIntervalsToTheCurrentPhase) {
  PhaseClock clock(2);
  clock.switch_to(Phase::compute, 0.5);  // before the first step: not charged
  clock.start_step(0, 1.0);
  clock.switch_to(Phase::waiting, 1.25);  // compute 1.0 .. 1.25
  clock.switch_to(Phase::receive, 1.5);   // waiting 1.25 .. 1.5
  clock.switch_to(Phase::compute, 2.0);   // receive 1.5 .. 2.0
  clock.start_step(1, 3.0);               // compute 2.0 .. 3.0 in step 0
  clock.switch_to(Phase::aggregation, 3.5);
  clock.stop(4.0);
  clock.switch_to(Phase::send, 9.0);  // after stop: not charged

  const auto& steps = clock.per_step();
  EXPECT_DOUBLE_EQ(steps[0][Phase::compute], 1.25);
  EXPECT_DOUBLE_EQ(steps[0][Phase::waiting], 0.25);
  EXPECT_DOUBLE_EQ(steps[0][Phase::receive], 0.5);
  EXPECT_DOUBLE_EQ(steps[0].total(), 2.0);  // 1.0 .. 3.0
  EXPECT_DOUBLE_EQ(steps[1][Phase::compute], 0.5);
  EXPECT_DOUBLE_EQ(steps[1][Phase::aggregation], 0.5);
  EXPECT_DOUBLE_EQ(steps[1][Phase::send], 0.0);
}

TEST(PhaseClock, StepsInOrderOnly) {
  PhaseClock clock(2);
  EXPECT_THROW(clock.start_step(1, 0.0), std::logic_error);
  clock.start_step(0, 0.0);
  clock.start_step(1, 1.0);
  EXPECT_THROW(clock.start_step(2, 2.0), std::logic_error);
}

TEST(PhaseClock, ScopesRestoreThePreviousPhase) {
  PhaseClock clock(1);
  clock.start_step(0, monotonic_seconds());
  clock.switch_to(Phase::waiting, monotonic_seconds());
  {
    PhaseScope computing(clock, Phase::compute);
    EXPECT_EQ(clock.current(), Phase::compute);
  }
  EXPECT_EQ(clock.current(), Phase::waiting);
  EXPECT_EQ(to_string(Phase::aggregation), "aggregation");
}

}  // namespace
}  // namespace ralp::cluster
