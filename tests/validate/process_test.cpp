// Child processes: exit statuses, captured output, deadlines that stop the whole process group.
#include <gtest/gtest.h>

#include <chrono>

#include "ralp/validate/process.hpp"

namespace ralp::validate {
namespace {

TEST(Process, CapturesOutputAndStatus) {
  std::vector<std::string> lines;
  const auto r = run_process({"sh", "-c", "echo one; echo two >&2; exit 3"},
                             {.on_line = [&](const std::string& l) { lines.push_back(l); }});
  EXPECT_EQ(r.status, 3);
  EXPECT_FALSE(r.timed_out);
  EXPECT_EQ(lines, (std::vector<std::string>{"one", "two"}));
  EXPECT_EQ(run_process({"sh", "-c", "echo $RALP_TEST_VALUE"}, {.env = {{"RALP_TEST_VALUE", "7"}}})
                .output,
            "7\n");
  EXPECT_EQ(run_process({"ralp-no-such-program"}).status, 127);
}

TEST(Process, DeadlineStopsTheGroup) {
  const auto start = std::chrono::steady_clock::now();
  // A child that forks a grandchild: both go at the deadline.
  const auto r = run_process({"sh", "-c", "sleep 30 & sleep 30"}, {.timeout_s = 0.3});
  const double took =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_TRUE(r.timed_out);
  EXPECT_LT(took, 10.0);
}

TEST(Process, Text) {
  EXPECT_EQ(shell_quote({"ip", "netns", "exec", "a b", "it's"}), "ip netns exec 'a b' 'it'\\''s'");
  EXPECT_EQ(last_lines("a\nb\nc\n", 2), "b\nc");
  EXPECT_EQ(last_lines("a\nb\nc", 5), "a\nb\nc");
  EXPECT_EQ(last_lines("", 2), "");
}

}  // namespace
}  // namespace ralp::validate
