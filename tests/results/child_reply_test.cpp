// Child processes' replies: what a forked child returns reaches its parent, outcome or error.
#include "ralp/results/child_reply.hpp"

#include <gtest/gtest.h>

#include <stdexcept>

namespace ralp {
namespace {

TEST(ChildReply, ACollectedChildGivesItsOutcome) {
  const ForkedChild c = fork_child([] { return child_reply([] { return Json{{"steps", 7}}; }); });
  const auto [text, status] = collect_child(c);
  EXPECT_EQ(parse_child_reply(text, status, "work").at("steps").get<int>(), 7);
}

TEST(ChildReply, ACollectedChildsFailureIsRaisedAgain) {
  const ForkedChild failed = fork_child(
      [] { return child_reply([]() -> Json { throw std::runtime_error("no step ended"); }); });
  const auto [text, status] = collect_child(failed);
  try {
    parse_child_reply(text, status, "time sharing");
    FAIL() << text;
  } catch (const std::runtime_error& e) {
    EXPECT_STREQ(e.what(), "time sharing failed: no step ended");
  }
  const ForkedChild input = fork_child([] {
    return child_reply([]() -> Json { throw InputError("s.json", "/steps", "is -1, expected >= 1"); });
  });
  const auto [input_text, input_status] = collect_child(input);
  EXPECT_THROW(parse_child_reply(input_text, input_status, "work"), InputError);
}

}  // namespace
}  // namespace ralp
