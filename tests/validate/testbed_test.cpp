// The namespace testbed: creation, shaping, clean-up of its processes, and removal of namespaces
// left by runs that were killed. Needs root and network namespaces; skipped with the reason
// otherwise.
#include <gtest/gtest.h>

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>

#include "ralp/validate/process.hpp"
#include "ralp/validate/testbed.hpp"

namespace ralp::validate {
namespace {

bool listed(const std::string& ns) {
  const auto names = list_namespaces();
  return std::find(names.begin(), names.end(), ns) != names.end();
}

TEST(Testbed, StaleNamesAreThoseOfDeadProcesses) {
  const pid_t child = fork();
  if (child == 0) _exit(0);
  waitpid(child, nullptr, 0);
  const std::string dead = std::string(kPrefixStem) + std::to_string(child) + "-h0";
  const std::string alive = own_prefix() + "h0";
  EXPECT_EQ(stale_namespaces({alive, dead, "other", "ralpv-x-h0", "ralpv-12"}),
            std::vector<std::string>{dead});
}

class NamespaceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (const auto why = namespaces_unavailable()) GTEST_SKIP() << *why;
  }
};

TEST_F(NamespaceTest, CreatesShapesAndRemovesEverything) {
  std::vector<std::string> made;
  const std::string machine_limit = read_proc_file("/proc/sys/net/ipv4/tcp_limit_output_bytes");
  {
    NamespaceTestbed bed(own_prefix() + "t-", 2);
    made = bed.namespaces();
    ASSERT_EQ(made.size(), 3u);
    for (const auto& ns : made) EXPECT_TRUE(listed(ns)) << ns;
    EXPECT_EQ(bed.address(1), "10.213.7.2");
    const auto addr = run_process({"ip", "-n", bed.host_namespace(1), "-o", "addr", "show", "eth0"});
    EXPECT_NE(addr.output.find("10.213.7.2/24"), std::string::npos) << addr.output;
    bed.shape(*parse_link_rate("100mbit"));
    const auto egress = run_process({"tc", "-n", bed.host_namespace(0), "qdisc", "show", "dev", "eth0"});
    EXPECT_NE(egress.output.find("tbf"), std::string::npos) << egress.output;
    EXPECT_NE(egress.output.find("100Mbit"), std::string::npos) << egress.output;
    const auto ingress = run_process({"tc", "-n", bed.bridge_namespace(), "qdisc", "show", "dev", "h0"});
    EXPECT_NE(ingress.output.find("tbf"), std::string::npos) << ingress.output;
    // Each host lets a TCP connection queue at most 64 KiB below its socket; the machine's own
    // setting is left alone.
    const auto host_limit = run_process({"ip", "netns", "exec", bed.host_namespace(1), "cat",
                                         "/proc/sys/net/ipv4/tcp_limit_output_bytes"});
    EXPECT_EQ(host_limit.output, "65536\n");
    EXPECT_EQ(read_proc_file("/proc/sys/net/ipv4/tcp_limit_output_bytes"), machine_limit);
    // A process left running inside a host goes with the testbed.
    const pid_t runner = fork();
    if (runner == 0) {
      execlp("ip", "ip", "netns", "exec", bed.host_namespace(0).c_str(), "sleep", "60", nullptr);
      _exit(127);
    }
    usleep(300 * 1000);
    const auto pids = run_process({"ip", "netns", "pids", bed.host_namespace(0)});
    EXPECT_NE(pids.output.find(std::to_string(runner)), std::string::npos);
  }
  for (const auto& ns : made) EXPECT_FALSE(listed(ns)) << ns;
  int status = 0;
  // The sleeper was killed by the teardown (reap it; it must not take 60 s).
  const pid_t reaped = waitpid(-1, &status, 0);
  EXPECT_GT(reaped, 0);
  EXPECT_TRUE(WIFSIGNALED(status));
}

TEST_F(NamespaceTest, RemovesWhatAKilledRunLeft) {
  const pid_t child = fork();
  if (child == 0) _exit(0);
  waitpid(child, nullptr, 0);
  const std::string left = std::string(kPrefixStem) + std::to_string(child) + "-h0";
  ASSERT_EQ(run_process({"ip", "netns", "add", left}).status, 0);
  ASSERT_TRUE(listed(left));
  const auto removed = remove_stale_namespaces();
  EXPECT_NE(std::find(removed.begin(), removed.end(), left), removed.end());
  EXPECT_FALSE(listed(left));
}

}  // namespace
}  // namespace ralp::validate
