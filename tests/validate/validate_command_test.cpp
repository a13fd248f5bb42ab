// `ralp validate` end to end: one short run (one net, two strategies, one rate), a killed rank,
// and the message without root. Each needs root and network namespaces (CI runs as root) and is
// skipped with the reason otherwise.
#include <gtest/gtest.h>

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "../support/run_command.hpp"
#include "ralp/core/json_input.hpp"
#include "ralp/validate/process.hpp"
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
    // Processes come and go while the scan runs: read_proc_file tolerates a vanished one.
    const std::string cmdline = ralp::validate::read_proc_file((entry.path() / "cmdline").string());
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
                               "--threads 1 --repetitions 1 --min-time 0.01 --out " +
                               profile_);
    ASSERT_EQ(c.status, 0) << c.err;
  }
  void TearDown() override {
    if (!out_.empty()) fs::remove_all(out_);
  }
  std::string validate(const std::string& extra, int steps = 3) const {
    const std::string n = std::to_string(steps);
    return ralp_binary() + " validate " + kScenario + " --profile " + profile_ + " --out " +
           (out_ / "run").string() + " --shapes 2-node --min-steps " + n + " --max-steps " + n +
           " --warmup-steps 1 " + extra;
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
  EXPECT_EQ(doc["passes"], 2);  // the default: the grid twice
  EXPECT_NE(r.err.find("[4/4] pass 2/2 "), std::string::npos) << r.err;
  ASSERT_EQ(doc["repeatability"].size(), 3u);  // ps, allreduce, all
  // Whether this machine's passes agree closely enough to judge the target: either way, the
  // same verdict in the JSON, on stdout and in the report.
  ASSERT_TRUE(doc["target"]["machine_resolves"].is_boolean()) << doc["target"].dump();
  const std::string verdict =
      doc["target"]["machine_resolves"].get<bool>() ? "This machine can judge it"
                                                    : "This machine cannot judge it";
  EXPECT_NE(r.out.find(verdict), std::string::npos) << r.out;
  EXPECT_NE(ralp::testing::read_file((out_ / "run/report.md").string()).find(verdict),
            std::string::npos);
  EXPECT_TRUE(doc["pass_profiles"].empty());  // --profile: every pass uses it
  for (const auto& p : doc["points"]) {
    ASSERT_EQ(p["pass_step_times_s"].size(), 2u);
    ASSERT_EQ(p["pass_predicted_step_times_s"].size(), 2u);
    EXPECT_TRUE(fs::exists(out_ / "run/points" / p["id"].get<std::string>() / "pass-2/measured.json"));
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
  // The share of a core that a waiting rank's polling takes, as the scenario accepts it.
  EXPECT_GE(doc["links"][0]["waiting_share"].get<double>(), 0.0);
  EXPECT_LE(doc["links"][0]["waiting_share"].get<double>(), 0.5);
  // The kernels measured again after the grid: the one model, before and after.
  ASSERT_EQ(doc["speed_check"]["models"].size(), 1u);
  EXPECT_GT(doc["speed_check"]["models"][0]["end_s"].get<double>(), 0.0);
  EXPECT_TRUE(fs::exists(out_ / "run/validate-cpu-1t-end.json"));
  EXPECT_NE(r.out.find("Machine speed"), std::string::npos) << r.out;
  // Every host's compute per step, and the kernels' speed by how busy their core was: the three
  // workers', and ps-0's in ps only on a machine slow enough for its update to take 1 ms (it
  // computes nothing in allreduce).
  for (const auto& p : doc["points"]) {
    for (const char* figures : {"measured", "predicted", "replayed"}) {
      ASSERT_EQ(p[figures]["hosts"].size(), 2u) << figures;
      EXPECT_GE(p[figures]["hosts"][1]["compute_s"].get<double>(), 0.0);
    }
  }
  size_t ranks = 0;
  for (const auto& b : doc["kernel_speed"]["bins"]) {
    ranks += b["hosts"].get<size_t>();
    EXPECT_GT(b["median_ratio"].get<double>(), 0.0);
  }
  EXPECT_GE(ranks, 3u) << doc["kernel_speed"].dump();
  EXPECT_LE(ranks, 4u) << doc["kernel_speed"].dump();
  EXPECT_NE(r.out.find("Kernel speed in the runs"), std::string::npos) << r.out;
  const std::string report = ralp::testing::read_file((out_ / "run/report.md").string());
  EXPECT_NE(report.find("## Accuracy"), std::string::npos);
  EXPECT_NE(report.find("speed during the run"), std::string::npos);
  EXPECT_NE(report.find("### Kernel speed in the runs"), std::string::npos);
  EXPECT_NE(report.find(doc["profile"]["name"].get<std::string>()), std::string::npos);
  EXPECT_TRUE(fs::exists(out_ / "run/predicted-vs-measured.svg"));
  EXPECT_TRUE(fs::exists(out_ / "run/predicted-vs-measured.png"));
  expect_nothing_left();
}

// The process of rank `rank` of a `ralp cluster` run whose command line mentions `needle`; 0 if
// none (yet).
pid_t cluster_rank(const std::string& needle, int rank) {
  const std::string wanted = "OMPI_COMM_WORLD_RANK=" + std::to_string(rank);
  for (const auto& entry : fs::directory_iterator("/proc")) {
    const std::string name = entry.path().filename().string();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    // Processes come and go while the scan runs: read_proc_file tolerates a vanished one.
    const std::string cmdline = ralp::validate::read_proc_file((entry.path() / "cmdline").string());
    if (cmdline.find(needle) == std::string::npos ||
        cmdline.find(std::string("\0cluster\0", 9)) == std::string::npos) {
      continue;
    }
    std::istringstream vars(ralp::validate::read_proc_file((entry.path() / "environ").string()));
    std::string var;
    while (std::getline(vars, var, '\0')) {
      if (var == wanted) return static_cast<pid_t>(std::stol(name));
    }
  }
  return 0;
}

// A validate run started in the background, up to its cluster run's rank 1.
struct Started {
  pid_t shell = 0;  // 0: the run ended before rank 1 came, or none came within two minutes
  pid_t rank_1 = 0;
  std::chrono::steady_clock::time_point seen;  // when rank 1 was first seen
  int status = 0;  // the shell's, once it ended
};

// Runs `command` (a shell command line) in the background and waits for rank 1 of the ralp
// cluster run whose command line mentions `needle` to start; stops the run if none comes.
Started start_until_rank_1(const std::string& command, const std::string& needle) {
  Started s;
  s.shell = fork();
  if (s.shell == 0) {
    execl("/bin/sh", "sh", "-c", command.c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  using Clock = std::chrono::steady_clock;
  const auto give_up = Clock::now() + std::chrono::seconds(120);
  bool ended = false;
  while (s.rank_1 == 0 && !ended && Clock::now() < give_up) {
    s.rank_1 = cluster_rank(needle, 1);
    if (s.rank_1 == 0) usleep(50 * 1000);
    ended = waitpid(s.shell, &s.status, WNOHANG) == s.shell;
  }
  s.seen = Clock::now();
  if (s.rank_1 == 0) {
    if (!ended) {
      kill(s.shell, SIGTERM);  // validate cleans up on SIGTERM
      waitpid(s.shell, &s.status, 0);
    }
    s.shell = 0;
  }
  return s;
}

// Waits up to two minutes for the shell `run` to end; returns whether it did.
bool wait_for(pid_t run, int* status) {
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(120);
  while (waitpid(run, status, WNOHANG) == 0) {
    if (std::chrono::steady_clock::now() > give_up) return false;
    usleep(50 * 1000);
  }
  return true;
}

TEST_F(ValidateCommand, KilledRankEndsTheRunNamingIt) {
  // Rank 1 (worker-0) dies in the forward pass of step 1, as a crash would: no MPI_Finalize. The
  // time counts from the cluster run's start, which set-up and the link probe precede.
  const std::string log = (out_ / "exited.log").string();
  const std::string command = "RALP_CLUSTER_FAULT=rank=1,step=1,phase=forward,kind=exit " +
                              validate("--strategies ps --rates 1gbit") + " >" + log + " 2>&1";
  Started run = start_until_rank_1(command, (out_ / "run").string());
  ASSERT_NE(run.shell, 0) << ralp::testing::read_file(log);
  ASSERT_TRUE(wait_for(run.shell, &run.status)) << ralp::testing::read_file(log);
  const double took =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - run.seen).count();
  const std::string out = ralp::testing::read_file(log);
  EXPECT_TRUE(WIFEXITED(run.status) && WEXITSTATUS(run.status) == 1) << out;
  EXPECT_NE(out.find("rank 1 (worker-0)"), std::string::npos) << out;
  EXPECT_LT(took, kKilledRankLimitS);
  expect_nothing_left();
}

TEST_F(ValidateCommand, SigkilledRankEndsTheRunNamingIt) {
  const std::string log = (out_ / "killed.log").string();
  const std::string command =
      validate("--strategies ps --rates 100mbit", 50) + " >" + log + " 2>&1";
  Started run = start_until_rank_1(command, (out_ / "run").string());
  ASSERT_NE(run.shell, 0) << ralp::testing::read_file(log);
  usleep(1000 * 1000);  // into set-up or training
  ASSERT_EQ(kill(run.rank_1, SIGKILL), 0);
  const auto killed_at = std::chrono::steady_clock::now();
  ASSERT_TRUE(wait_for(run.shell, &run.status)) << ralp::testing::read_file(log);
  const double took =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - killed_at).count();
  EXPECT_LT(took, kKilledRankLimitS);
  EXPECT_TRUE(WIFEXITED(run.status) && WEXITSTATUS(run.status) == 1);
  const std::string out = ralp::testing::read_file(log);
  // mpirun names the killed rank, or, when the other rank was sending to it and aborted on the
  // reset first, validate does from that rank's report.
  EXPECT_TRUE(out.find("rank 1 (worker-0) was killed by signal 9") != std::string::npos ||
              out.find("rank 1 (worker-0) ended: rank 0 (ps-0) found its connection to it gone") !=
                  std::string::npos)
      << out;
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
