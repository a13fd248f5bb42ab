// `ralp sweep` end to end: the same bytes whatever --jobs (and under mpirun -np 2), every point
// equal to `ralp simulate` with the same overrides, --resume, and refusals in one line.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <regex>

#include "../support/run_command.hpp"
#include "ralp/core/json_input.hpp"

namespace ralp {
namespace {

using ralp::testing::ralp_binary;
using ralp::testing::read_file;
using ralp::testing::run_command;
using ralp::testing::TempDir;

// cifar_alexnet on 4 workers under ps, ralp at fc3, ralp "auto" and allreduce.
const std::string kSmall = RALP_TEST_DATA_DIR "/data/scenarios/small-mixed.json";

std::string sweep(const std::string& args) {
  return ralp_binary() + " sweep " + kSmall + " --quiet " + args;
}

size_t lines(const std::string& text) { return static_cast<size_t>(std::count(text.begin(), text.end(), '\n')); }

// 6 worker counts x 2 bandwidths = 12 points, 4 strategies each.
const std::string kAnalytic = "--workers 1-6 --bandwidth 1Gbps,10Gbps --fidelity analytic";

TEST(SweepCli, AnalyticGivesTheSameBytesWhateverJobs) {
  TempDir dir("sweep-cli");
  const auto one = run_command(sweep(kAnalytic + " --jobs 1 --out " + (dir / "one")));
  ASSERT_EQ(one.status, 0) << one.err;
  EXPECT_EQ(one.err, "");
  const std::string first_line = "sweep: 12 points (0 resumed), 48 rows, analytic fidelity: wrote " +
                                 (dir / "one") + "/sweep.csv and " + (dir / "one") +
                                 "/sweep.json\n";
  EXPECT_EQ(one.out.substr(0, first_line.size()), first_line);
  // Then the ranking: ten of the 48 rows by time to train; the scenario has no price.
  EXPECT_NE(one.out.find("\nfastest to train (10 of 48 rows; every row in sweep.csv):\n"),
            std::string::npos)
      << one.out;
  EXPECT_NE(one.out.find("\ncost: no cluster.price_per_hour in the scenario"), std::string::npos);
  const auto three = run_command(sweep(kAnalytic + " --jobs 3 --out " + (dir / "three")));
  ASSERT_EQ(three.status, 0) << three.err;
  // The same ranking whatever the jobs (the first line names the folder).
  EXPECT_EQ(one.out.substr(one.out.find('\n')), three.out.substr(three.out.find('\n')));
  const std::string csv = read_file(dir / "one/sweep.csv");
  EXPECT_EQ(lines(csv), 1u + 48u);
  EXPECT_EQ(csv, read_file(dir / "three/sweep.csv"));
  EXPECT_EQ(read_file(dir / "one/sweep.json"), read_file(dir / "three/sweep.json"));
  // Point 7 is the second bandwidth of the fourth worker count: 4 workers at 10 Gbps.
  const Json document = Json::parse(read_file(dir / "one/sweep.json"));
  const Json& point = document["points"][7];
  EXPECT_EQ(point["values"], (Json{{"bandwidth", "10Gbps"}, {"workers", 4}}));
  EXPECT_EQ(document["sweep"]["fidelity"], "analytic");
  EXPECT_EQ(document["sweep"]["base"], kSmall);
  // ... and equal to `ralp simulate --fidelity analytic` with the same overrides.
  const auto simulate = run_command(ralp_binary() + " simulate " + kSmall +
                                    " --fidelity analytic --workers 4 --bandwidth 10Gbps --json -");
  ASSERT_EQ(simulate.status, 0) << simulate.err;
  const Json expected = Json::parse(simulate.out);
  EXPECT_EQ(point["results"], expected["results"]);
  EXPECT_EQ(point["verdict"], expected["verdict"]);
}

TEST(SweepCli, EventPointsEqualSimulateAndDoNotDependOnJobs) {
  TempDir dir("sweep-cli");
  const std::string args = "--workers 2,4 --bandwidth 10Gbps";
  const auto one = run_command(sweep(args + " --jobs 1 --out " + (dir / "one")));
  ASSERT_EQ(one.status, 0) << one.err;
  const auto two = run_command(sweep(args + " --jobs 2 --out " + (dir / "two")));
  ASSERT_EQ(two.status, 0) << two.err;
  EXPECT_EQ(read_file(dir / "one/sweep.csv"), read_file(dir / "two/sweep.csv"));
  EXPECT_EQ(read_file(dir / "one/sweep.json"), read_file(dir / "two/sweep.json"));
  const Json document = Json::parse(read_file(dir / "one/sweep.json"));
  EXPECT_EQ(document["sweep"]["fidelity"], "event");
  const auto simulate = run_command(ralp_binary() + " simulate " + kSmall +
                                    " --workers 4 --bandwidth 10Gbps --json -");
  ASSERT_EQ(simulate.status, 0) << simulate.err;
  const Json expected = Json::parse(simulate.out);
  EXPECT_EQ(document["points"][1]["results"], expected["results"]);
  EXPECT_EQ(document["points"][1]["verdict"], expected["verdict"]);
}

TEST(SweepCli, ResumeRunsOnlyTheMissingPointsAndGivesTheSameBytes) {
  TempDir dir("sweep-cli");
  const std::string out = dir / "out";
  ASSERT_EQ(run_command(sweep(kAnalytic + " --out " + out)).status, 0);
  const std::string csv = read_file(out + "/sweep.csv");
  const std::string json = read_file(out + "/sweep.json");
  // Stop it after three points and half a row: the header, 3 x 4 rows, part of the next.
  size_t cut = 0;
  for (int i = 0; i < 1 + 12; ++i) cut = csv.find('\n', cut) + 1;
  std::ofstream(out + "/sweep.csv", std::ios::binary | std::ios::trunc)
      << csv.substr(0, cut + 5);
  std::filesystem::remove(out + "/sweep.json");
  const auto resumed = run_command(sweep(kAnalytic + " --resume --out " + out));
  ASSERT_EQ(resumed.status, 0) << resumed.err;
  EXPECT_NE(resumed.out.find("12 points (3 resumed)"), std::string::npos) << resumed.out;
  EXPECT_EQ(read_file(out + "/sweep.csv"), csv);
  EXPECT_EQ(read_file(out + "/sweep.json"), json);
  // Another sweep into the same folder is refused in one line.
  const auto other = run_command(sweep("--workers 1-6 --fidelity analytic --resume --out " + out));
  EXPECT_EQ(other.status, 2);
  EXPECT_EQ(other.err,
            "error: " + out + "/sweep.csv: has header \"point,workers,bandwidth,strategy,kind,cut,"
            "step_time_mean_s,step_time_median_s,images_per_s,speedup_vs_ps,"
            "speedup_vs_allreduce,images_per_s_per_gpu,scaling_efficiency,time_to_train_s,"
            "billed_hosts,cost,currency\", but this sweep's is \"point,workers,strategy,kind,cut,"
            "step_time_mean_s,step_time_median_s,images_per_s,speedup_vs_ps,"
            "speedup_vs_allreduce,images_per_s_per_gpu,scaling_efficiency,time_to_train_s,"
            "billed_hosts,cost,currency\"; expected the same sweep, or run without --resume\n");
  EXPECT_EQ(read_file(out + "/sweep.csv"), csv);
}

TEST(SweepCli, AnInvalidPointIsRefusedBeforeAnyRuns) {
  TempDir dir("sweep-cli");
  const auto r = run_command(sweep("--workers 2,4 --parameter-servers 1,0 --out " + (dir / "out")));
  EXPECT_EQ(r.status, 2);
  EXPECT_EQ(r.err.substr(0, r.err.find(':', 20)),
            "error: point 1 (workers=2, parameter_servers=0) is refused");
  EXPECT_EQ(lines(r.err), 1u);
  EXPECT_FALSE(std::filesystem::exists(dir / "out"));
  const auto range = run_command(sweep("--workers 3..10 --out " + (dir / "out")));
  EXPECT_EQ(range.status, 2);
  EXPECT_EQ(range.err,
            "error: --workers is \"3..10\", whose series misses its end 10, expected an integer, "
            "A..B (doubling: A, 2A, 4A, .. B), A-B (every integer) or A-B:S (every S-th "
            "integer)\n");
}

TEST(SweepCli, TransportAxisEqualsSimulateWithThatTransport) {
  TempDir dir("sweep-cli");
  const auto r = run_command(sweep("--workers 4 --bandwidth 100Gbps --transport ideal,tf-grpc "
                                   "--strategies ps --out " + (dir / "out")));
  ASSERT_EQ(r.status, 0) << r.err;
  const Json document = Json::parse(read_file(dir / "out/sweep.json"));
  ASSERT_EQ(document["points"].size(), 2u);
  EXPECT_EQ(document["points"][1]["values"]["transport"], "tf-grpc");
  const auto simulate = run_command(ralp_binary() + " simulate " + kSmall +
                                    " --workers 4 --bandwidth 100Gbps --strategy ps "
                                    "--transport tf-grpc --json -");
  ASSERT_EQ(simulate.status, 0) << simulate.err;
  EXPECT_EQ(document["points"][1]["results"], Json::parse(simulate.out)["results"]);
  // gRPC's CPU time bounds each connection (0.6 ns per byte at each end: about 1.6 GB/s), below
  // what 100 Gbps NICs give 4 workers: the step is longer than at wire speed.
  EXPECT_GT(document["points"][1]["results"][0]["step_time_mean_s"].get<double>(),
            document["points"][0]["results"][0]["step_time_mean_s"].get<double>());
  // The analytic fidelity prices no transport: refused in one line.
  const auto analytic = run_command(sweep("--workers 4 --transport tf-grpc --fidelity analytic "
                                          "--out " + (dir / "analytic")));
  EXPECT_EQ(analytic.status, 2);
  EXPECT_EQ(lines(analytic.err), 1u) << analytic.err;
  EXPECT_NE(analytic.err.find("expected \"ideal\" with --fidelity analytic"), std::string::npos)
      << analytic.err;
}

TEST(SweepCli, SweepFileGivesTheSameAsTheCommandLine) {
  TempDir dir("sweep-cli");
  {
    std::ofstream(dir / "s.sweep.json")
        << R"({"base": ")" << kSmall << R"(", "fidelity": "analytic",
              "axes": {"workers": "1-6", "bandwidth": ["1Gbps", "10Gbps"]}})";
  }
  const auto file = run_command(ralp_binary() + " sweep " + (dir / "s.sweep.json") +
                                " --quiet --out " + (dir / "file"));
  ASSERT_EQ(file.status, 0) << file.err;
  ASSERT_EQ(run_command(sweep(kAnalytic + " --out " + (dir / "cli"))).status, 0);
  EXPECT_EQ(read_file(dir / "file/sweep.csv"), read_file(dir / "cli/sweep.csv"));
  {
    std::ofstream(dir / "bad.sweep.json") << R"({"base": "x.json", "axis": {}})";
  }
  const auto bad = run_command(ralp_binary() + " sweep " + (dir / "bad.sweep.json"));
  EXPECT_EQ(bad.status, 2);
  EXPECT_EQ(lines(bad.err), 1u);
  EXPECT_EQ(bad.err.rfind("error: " + (dir / "bad.sweep.json") + ": /axis ", 0), 0u) << bad.err;
}

#ifdef RALP_MPIEXEC
std::string mpirun(int ranks, const std::string& args) {
  return "OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 timeout -k 5 200 " RALP_MPIEXEC
         " --oversubscribe --mca btl self,tcp --mca btl_tcp_if_include lo"
         " --mca oob_tcp_if_include lo --mca mpi_yield_when_idle 1 -np " +
         std::to_string(ranks) + " " + sweep(args);
}

TEST(SweepCli, TwoMpiRanksWriteTheSameBytesAsOneProcess) {
  TempDir dir("sweep-cli");
  for (const std::string& args : {kAnalytic, std::string("--workers 2,4,8 --bandwidth 10Gbps")}) {
    const auto alone = run_command(sweep(args + " --jobs 1 --out " + (dir / "alone")));
    ASSERT_EQ(alone.status, 0) << alone.err;
    const auto ranks = run_command(mpirun(2, args + " --jobs 1 --out " + (dir / "ranks")));
    ASSERT_EQ(ranks.status, 0) << ranks.err;
    const std::string alone_out = alone.out;
    EXPECT_EQ(ranks.out, std::regex_replace(alone_out, std::regex("/alone/"), "/ranks/"));
    EXPECT_EQ(read_file(dir / "ranks/sweep.csv"), read_file(dir / "alone/sweep.csv"));
    EXPECT_EQ(read_file(dir / "ranks/sweep.json"), read_file(dir / "alone/sweep.json"));
  }
  // Bad input: one line, from rank 0 alone.
  const auto bad = run_command(mpirun(2, "--workers 2,0 --out " + (dir / "bad")));
  EXPECT_NE(bad.status, 0);
  EXPECT_EQ(std::count(bad.err.begin(), bad.err.end(), '\n') >= 1, true);
  EXPECT_EQ(bad.err.rfind("error: point 1 (workers=0) is refused", 0), 0u) << bad.err;
  size_t refusals = 0;
  for (size_t at = bad.err.find("is refused"); at != std::string::npos;
       at = bad.err.find("is refused", at + 1)) {
    ++refusals;
  }
  EXPECT_EQ(refusals, 1u);
}
#endif

}  // namespace
}  // namespace ralp
