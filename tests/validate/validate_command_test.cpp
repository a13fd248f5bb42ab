// `ralp validate` end to end: one short run (one net, two strategies, one rate), a killed rank,
// and the message without root. Each needs root and network namespaces (CI runs as root) and is
// skipped with the reason otherwise.
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <fstream>

#include "../support/run_command.hpp"
#include "ralp/core/json_input.hpp"
#include "ralp/validate/testbed.hpp"

namespace ralp::validate {
namespace {

namespace fs = std::filesystem;
using ralp::testing::ralp_binary;
using ralp::testing::run_command;

const std::string kScenario =
    std::string(RALP_SOURCE_DIR) + "/scenarios/cluster/cifar-allconv-1ps-2w.json";
constexpr double kKilledRankLimitS = 30.0;

// Processes whose command line mentions `needle` (this test's output folder).
int processes_mentioning(const std::string& needle) {
  int count = 0;
  for (const auto& entry : fs::directory_iterator("/proc")) {
    const std::string name = entry.path().filename().string();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::ifstream in(entry.path() / "cmdline", std::ios::binary);
    std::string cmdline((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    if (cmdline.find(needle) != std::string::npos) ++count;
  }
  return count;
}

class ValidateCommand : public ::testing::Test {
 protected:
  void SetUp() override {
    if (const auto why = namespaces_unavailable()) GTEST_SKIP() << *why;
    out_ = fs::temp_directory_path() / ("ralp-validate-test-" + std::to_string(getpid()));
    fs::remove_all(out_);
    fs::create_directories(out_);
    // A quick profile of this host, outside the timed part.
    profile_ = (out_ / "profile.json").string();
    const auto c = run_command(ralp_binary() + " calibrate --model cifar_allconv:32 --device cpu "
                               "--threads 1 --repetitions 1 --min-time 0.01 --no-end-to-end --out " +
                               profile_);
    ASSERT_EQ(c.status, 0) << c.err;
  }
  void TearDown() override {
    if (!out_.empty()) fs::remove_all(out_);
  }
  std::string validate(const std::string& extra) const {
    return ralp_binary() + " validate " + kScenario + " --profile " + profile_ + " --out " +
           (out_ / "run").string() + " --shapes 2-node --min-steps 3 --max-steps 3 " +
           "--warmup-steps 1 " + extra;
  }
  void expect_nothing_left() const {
    EXPECT_TRUE(stale_namespaces(list_namespaces()).empty());
    EXPECT_EQ(processes_mentioning((out_ / "run").string()), 0);
  }
  fs::path out_;
  std::string profile_;
};

TEST_F(ValidateCommand, ShortRunWritesTableJsonAndReport) {
  const auto r = run_command(validate("--strategies ps,allreduce --rates 1gbit --json " +
                                      (out_ / "v.json").string()));
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("median |error|"), std::string::npos) << r.out;
  EXPECT_NE(r.err.find("ETA"), std::string::npos);
  const Json doc = read_json_file(out_ / "v.json");
  ASSERT_EQ(doc["points"].size(), 2u);
  for (const auto& p : doc["points"]) {
    EXPECT_GT(p["measured"]["step_time_s"].get<double>(), 0.0);
    EXPECT_GT(p["predicted"]["step_time_s"].get<double>(), 0.0);
    EXPECT_EQ(p["steps"], 3);
    EXPECT_TRUE(p["pinned"].get<bool>());
  }
  // ps moves the same bytes measured and predicted (headers aside: within 1%).
  const auto& ps = doc["points"][0];
  const double m = ps["measured"]["ps-0"]["bytes_in"], q = ps["predicted"]["ps-0"]["bytes_in"];
  EXPECT_NEAR(m / q, 1.0, 0.01);
  EXPECT_EQ(doc["links"][0]["rate"], "1gbit");
  EXPECT_GT(doc["links"][0]["bandwidth_factor"].get<double>(), 0.5);
  EXPECT_LT(doc["links"][0]["bandwidth_factor"].get<double>(), 1.0);
  const std::string report = ralp::testing::read_file((out_ / "run/report.md").string());
  EXPECT_NE(report.find("## Accuracy"), std::string::npos);
  EXPECT_NE(report.find(doc["profile"]["name"].get<std::string>()), std::string::npos);
  EXPECT_TRUE(fs::exists(out_ / "run/predicted-vs-measured.svg"));
  EXPECT_TRUE(fs::exists(out_ / "run/predicted-vs-measured.png"));
  expect_nothing_left();
}

TEST_F(ValidateCommand, KilledRankEndsTheRunNamingIt) {
  const auto start = std::chrono::steady_clock::now();
  // Rank 1 (worker-0) dies in the forward pass of step 1, as a crash would: no MPI_Finalize.
  const auto r = run_command("RALP_CLUSTER_FAULT=rank=1,step=1,phase=forward,kind=exit " +
                             validate("--strategies ps --rates 1gbit"));
  const double took =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_EQ(r.status, 1) << r.err;
  EXPECT_NE(r.err.find("rank 1 (worker-0)"), std::string::npos) << r.err;
  EXPECT_LT(took, kKilledRankLimitS);
  expect_nothing_left();
}

TEST(ValidateWithoutRoot, SaysSoInOneLine) {
  if (geteuid() != 0) GTEST_SKIP() << "runs as root to drop to another user";
  const auto r = run_command("setpriv --reuid=65534 --regid=65534 --clear-groups " + ralp_binary() +
                             " validate " + kScenario + " --out /tmp");
  EXPECT_EQ(r.status, 2);
  EXPECT_EQ(r.err, "error: ralp validate: needs root to create network namespaces (run it with sudo)\n");
}

}  // namespace
}  // namespace ralp::validate
