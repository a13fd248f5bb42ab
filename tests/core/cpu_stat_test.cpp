// Steal time from /proc/stat's per-CPU lines.
#include <gtest/gtest.h>

#include "ralp/core/cpu_stat.hpp"

namespace ralp {
namespace {

TEST(CpuStat, StealIsTheShareOfTheTimeTheNamedCpusWantedToRun) {
  // user nice system idle iowait irq softirq steal guest guest_nice
  const auto before = parse_cpu_times(
      "cpu  30 0 10 60 2 0 0 10 5 0\n"
      "cpu0 10 0 5 30 1 0 0 5 5 0\n"
      "cpu1 20 0 5 30 1 0 0 5 0 0\n"
      "intr 1 2 3\n");
  ASSERT_EQ(before.size(), 2u);  // not the line of all CPUs
  // Not idle or iowait; guest time is in user time already.
  EXPECT_EQ(before.at(0).wanted, 20);
  EXPECT_EQ(before.at(0).steal, 5);
  auto after = before;
  after[0] = {25, 120};  // 20 of the 100 ticks it wanted to run stolen
  after[1] = {5, 130};   // none of 100
  EXPECT_NEAR(*steal_pct(before, after, {0}), 20.0, 1e-12);
  EXPECT_NEAR(*steal_pct(before, after, {0, 1}), 10.0, 1e-12);
  EXPECT_NEAR(*steal_pct(before, after, {}), 10.0, 1e-12);  // every CPU
  EXPECT_FALSE(steal_pct(before, after, {2}));             // no such CPU
  EXPECT_FALSE(steal_pct(before, before, {0, 1}));         // they never wanted to run
  EXPECT_EQ(parse_cpu_times("cpu0 1 2\n").at(0).steal, 0);  // too short for steal
  // A line whose counters do not read counts none; a name without a CPU number is not a CPU.
  const auto odd = parse_cpu_times("cpu0 x\ncpuX 1\n");
  ASSERT_EQ(odd.size(), 1u);
  EXPECT_EQ(odd.at(0).wanted, 0);
}

}  // namespace
}  // namespace ralp
