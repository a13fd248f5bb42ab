// The compute thread's scheduling class: below the threads that move messages, for that thread
// only.
#include "compute_priority.hpp"

#include <gtest/gtest.h>
#include <sched.h>

#include <string>
#include <thread>

namespace ralp::cluster {
namespace {

TEST(ComputePriority, PutsOnlyTheCallingThreadInTheIdleClass) {
  const int before = sched_getscheduler(0);
  int inside = -1;
  std::string why = "not run";
  std::thread compute([&] {
    why = run_below_communication();
    inside = sched_getscheduler(0);  // 0: the calling thread
  });
  compute.join();
  EXPECT_EQ(why, "");
  EXPECT_EQ(inside, SCHED_IDLE);
  EXPECT_EQ(sched_getscheduler(0), before);
}

}  // namespace
}  // namespace ralp::cluster
