// The CLI's model and profile commands: JSON fields, determinism, exit statuses.
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include <gtest/gtest.h>

#include "../support/run_command.hpp"
#include "ralp/core/json_input.hpp"

namespace ralp {
namespace {

using testing::ralp_binary;
using testing::run_command;

TEST(Cli, ModelShowJsonHasTheDocumentedFields) {
  const auto result = run_command(ralp_binary() + " model show vgg16 --batch 2 --json");
  ASSERT_EQ(result.status, 0) << result.err;
  const Json j = parse_json_text(result.out, "stdout");
  EXPECT_EQ(j["name"], "vgg16");
  EXPECT_EQ(j["params"], 138357544);
  ASSERT_EQ(j["layers"].size(), 40u);
  const Json& conv = j["layers"][0];
  for (const char* key :
       {"name", "type", "output_shape", "params", "fwd_flops", "activation_bytes"}) {
    EXPECT_TRUE(conv.contains(key)) << key;
  }
  EXPECT_EQ(conv["output_shape"], Json::array({64, 224, 224}));
  // Batch 2: 2 * 64*224*224 floats of 4 bytes.
  EXPECT_EQ(conv["activation_bytes"].get<double>(), 2.0 * 64 * 224 * 224 * 4);
}

TEST(Cli, SameInputSameBytes) {
  for (const char* args : {" model show googlenet --batch 8 --json --device v100",
                           " model export inception_v3", " profile show gtx1080ti"}) {
    const auto first = run_command(ralp_binary() + args);
    const auto second = run_command(ralp_binary() + args);
    ASSERT_EQ(first.status, 0) << args << first.err;
    EXPECT_EQ(first.out, second.out) << args;
    EXPECT_FALSE(first.out.empty());
  }
}

TEST(Cli, UnknownModelAndUsageErrorsExitTwo) {
  const auto unknown = run_command(ralp_binary() + " model show vgg17");
  EXPECT_EQ(unknown.status, 2);
  EXPECT_EQ(unknown.err.rfind("error: vgg17: neither a zoo model", 0), 0u)
      << unknown.err;
  EXPECT_EQ(run_command(ralp_binary() + " model show vgg16 --batch 0").status, 2);
  EXPECT_EQ(run_command(ralp_binary() + " nosuchcommand").status, 2);
  EXPECT_EQ(run_command(ralp_binary() + " --help").status, 0);
}

TEST(Cli, AMistypedSubcommandSaysWhichWasMeant) {
  const auto top = run_command(ralp_binary() + " simulat x.json");
  EXPECT_EQ(top.status, 2);
  EXPECT_EQ(top.err,
            "error: \"simulat\" is not a subcommand of ralp, expected one of: model, scenario, "
            "profile, transport, simulate, calibrate, cluster, link-probe, validate, place, sweep, "
            "report, "
            "published "
            "(did you mean \"simulate\"?)\n");
  EXPECT_EQ(top.out, "");
  const auto nested = run_command(ralp_binary() + " model shwo vgg16");
  EXPECT_EQ(nested.status, 2);
  EXPECT_EQ(nested.err,
            "error: \"shwo\" is not a subcommand of ralp model, expected one of: list, show, "
            "export, import (did you mean \"show\"?)\n");
  // Nothing close: the list alone.
  const auto far = run_command(ralp_binary() + " frobnicate");
  EXPECT_EQ(far.status, 2);
  EXPECT_EQ(far.err,
            "error: \"frobnicate\" is not a subcommand of ralp, expected one of: model, scenario, "
            "profile, transport, simulate, calibrate, cluster, link-probe, validate, place, sweep, "
            "report, "
            "published\n");
}

// Commands that neither use a GPU nor simulate load neither the CUDA libraries nor SimGrid (each is
// a module opened on first use: kernels/CMakeLists.txt, sim/CMakeLists.txt): the dynamic
// loader's log of every library it loads (LD_DEBUG=libs, on stderr) names none of them.
// libstdc++ in the log shows the log works.
TEST(Cli, CommandsThatNeitherUseAGpuNorSimulateLoadNeitherCudaNorSimgrid) {
  for (const std::string args :
       {" --version", " scenario check " RALP_SOURCE_DIR "/scenarios/paper/vgg16-10gbe-8w-b32.json"}) {
    SCOPED_TRACE(args);
    const auto result = run_command("LD_DEBUG=libs " + ralp_binary() + args);
    ASSERT_EQ(result.status, 0) << result.err;
    EXPECT_NE(result.err.find("libstdc++"), std::string::npos) << "no loader log";
    for (const char* library : {"libcuda", "libcublas", "libcudnn", "libsimgrid", "libns3"}) {
      EXPECT_EQ(result.err.find(library), std::string::npos) << library << " loaded";
    }
  }
}

// A small scenario for `ralp simulate`: cifar_alexnet on 4 workers (tests/data/scenarios).
const std::string kSmall = RALP_TEST_DATA_DIR "/data/scenarios/small-mixed.json";

bool have_simulator() {
  return run_command(ralp_binary() + " simulate --help").out.find("not in this build") ==
         std::string::npos;
}

// The simulator's allocations go to jemalloc (cmake/RalpDependencies.cmake says why): in the
// dynamic loader's log of its symbol bindings (LD_DEBUG=bindings, on stderr), SimGrid's malloc is
// bound to libjemalloc.
TEST(Cli, TheSimulatorAllocatesWithJemalloc) {
#ifndef RALP_HAVE_JEMALLOC
  GTEST_SKIP() << "this build has no jemalloc";
#else
  if (!have_simulator()) GTEST_SKIP() << "this build has no simulator";
  const auto result = run_command("LD_DEBUG=bindings " + ralp_binary() + " simulate --quiet " +
                                  kSmall + " --strategy allreduce");
  ASSERT_EQ(result.status, 0) << result.err.substr(result.err.size() - 2000);
  std::istringstream log(result.err);
  bool simgrid_to_jemalloc = false;
  for (std::string line; std::getline(log, line);) {
    const size_t to = line.find("] to ");
    if (to == std::string::npos || line.find("symbol `malloc'") == std::string::npos) continue;
    if (line.rfind("libsimgrid", to) != std::string::npos &&
        line.find("libjemalloc", to) != std::string::npos) {
      simgrid_to_jemalloc = true;
    }
  }
  EXPECT_TRUE(simgrid_to_jemalloc) << "libsimgrid's malloc is not bound to libjemalloc";
#endif
}

TEST(Cli, EachOutputOnStandardOutputIsAloneThere) {
  if (!have_simulator()) GTEST_SKIP() << "this build has no simulator";
  const std::string run = ralp_binary() + " simulate --quiet " + kSmall + " --strategy allreduce";
  const auto json = run_command(run + " --json -");
  ASSERT_EQ(json.status, 0) << json.err;
  EXPECT_EQ(parse_json_text(json.out, "stdout")["results"].size(), 1u);
  const auto trace = run_command(run + " --trace -");
  ASSERT_EQ(trace.status, 0) << trace.err;
  EXPECT_TRUE(parse_json_text(trace.out, "stdout").contains("traceEvents"));
  const auto csv = run_command(run + " --csv -");
  ASSERT_EQ(csv.status, 0) << csv.err;
  // A header and one row, nothing else.
  EXPECT_EQ(csv.out.rfind("strategy,kind,cut,", 0), 0u) << csv.out;
  EXPECT_EQ(std::count(csv.out.begin(), csv.out.end(), '\n'), 2);
  EXPECT_NE(csv.out.find("\nallreduce,allreduce,"), std::string::npos) << csv.out;
}

TEST(Cli, TwoOutputsOnStandardOutputAreAnError) {
  if (!have_simulator()) GTEST_SKIP() << "this build has no simulator";
  const std::string run = ralp_binary() + " simulate --quiet " + kSmall;
  const auto both = run_command(run + " --json - --csv -");
  EXPECT_EQ(both.status, 2);
  EXPECT_EQ(both.err,
            "error: --csv is \"-\", but --json already writes to standard output; expected at "
            "most one of --json, --csv and --trace on \"-\"\n");
  EXPECT_EQ(both.out, "");
  const auto trace = run_command(run + " --csv - --trace -");
  EXPECT_EQ(trace.status, 2);
  EXPECT_EQ(trace.err,
            "error: --trace is \"-\", but --csv already writes to standard output; expected at "
            "most one of --json, --csv and --trace on \"-\"\n");
  const std::string file = ::testing::TempDir() + "/same.json";
  const auto same = run_command(run + " --json " + file + " --trace " + file);
  EXPECT_EQ(same.status, 2);
  EXPECT_EQ(same.err, "error: --trace is \"" + file + "\", which --json also writes; expected a "
                      "file of its own\n");
}

TEST(Cli, SimulateTakesOverrides) {
  if (!have_simulator()) GTEST_SKIP() << "this build has no simulator";
  const std::string run = ralp_binary() + " simulate --quiet " + kSmall;
  const auto ok = run_command(run + " --workers 2 --parameter-servers 0 --strategy allreduce "
                                    "--bandwidth 10Gbps --latency 1us --batch 4 "
                                    "--network-model ideal --json -");
  ASSERT_EQ(ok.status, 0) << ok.err;
  const Json j = parse_json_text(ok.out, "stdout");
  EXPECT_EQ(j["scenario"]["workers"], 2);
  EXPECT_EQ(j["scenario"]["parameter_servers"], 0);
  EXPECT_EQ(j["scenario"]["batch_per_worker"], 4);
  EXPECT_EQ(j["scenario"]["network_model"], "ideal");
  ASSERT_EQ(j["results"].size(), 1u);
  EXPECT_EQ(j["results"][0]["strategy"], "allreduce");
  const auto cut = run_command(run + " --strategy ralp --cut fc4 --json -");
  ASSERT_EQ(cut.status, 0) << cut.err;
  EXPECT_EQ(parse_json_text(cut.out, "stdout")["results"][0]["cut"], "fc4");
  for (const auto& [args, message] : std::vector<std::pair<std::string, std::string>>{
           {" --workers 0", "--workers is 0, expected an integer in [1, 65536]"},
           {" --strategy horovod",
            "--strategy is \"horovod\", expected a strategy of " + kSmall +
                " (ps, ralp@fc3, ralp-auto, allreduce) or a kind (ps, ralp, allreduce, hybrid)"},
           {" --network-model fast", "--network-model is \"fast\", expected one of: tcp, ideal"},
           {" --parameter-servers 0",
            "--parameter-servers is 0, but the strategy \"ps\" needs a parameter server; "
            "expected an integer in [1, 1024], or only allreduce strategies"}}) {
    SCOPED_TRACE(args);
    const auto bad = run_command(run + args);
    EXPECT_EQ(bad.status, 2);
    EXPECT_EQ(bad.err, "error: " + message + "\n");
    EXPECT_EQ(bad.out, "");
  }
}

// The analytic model prices no platform file: --fidelity analytic refuses one in one line, and
// ralp place simulates every cut instead of ranking them, with no analytic time to show.
TEST(Cli, APlatformFileHasNoAnalyticPrice) {
  if (!have_simulator()) GTEST_SKIP() << "this build has no simulator";
  const std::string file = std::string(RALP_SOURCE_DIR) + "/scenarios/examples/platform-file.json";
  const auto analytic = run_command(ralp_binary() + " simulate --quiet " + file +
                                    " --fidelity analytic --strategy ps");
  EXPECT_EQ(analytic.status, 2);
  EXPECT_EQ(analytic.err, "error: " + file + ": /cluster/platform/kind is \"file\", whose links "
                          "and routes only the event simulation models; expected a generated "
                          "platform with --fidelity analytic\n");
  // ralp with cut "auto" on the same platform: resnet18's every cut simulated, none ranked.
  const testing::TempDir dir("cli-test");
  const std::string searched = (dir.path / "platform-file-auto.json").string();
  std::ofstream(searched) << R"({"name": "file-auto", "model": "resnet18", "batch_per_worker": 8,
      "cluster": {"workers": 2, "parameter_servers": 1, "worker_device": "v100",
                  "platform": {"kind": "file", "file": ")"
                          << RALP_SOURCE_DIR << R"(/platforms/two-racks.xml"}},
      "strategies": [{"name": "ralp", "cut": "auto"}], "steps": 1, "warmup_steps": 1})";
  const auto place = run_command(ralp_binary() + " place --quiet " + searched);
  ASSERT_EQ(place.status, 0) << place.err;
  EXPECT_EQ(place.out.find("inf"), std::string::npos) << place.out;
  EXPECT_EQ(place.out.find("nan"), std::string::npos) << place.out;
  const auto json = run_command(ralp_binary() + " place --quiet " + searched + " --json -");
  ASSERT_EQ(json.status, 0) << json.err;
  const Json ranking = parse_json_text(json.out, "stdout")["strategies"][0]["ranking"];
  ASSERT_GT(ranking.size(), 3u);  // more than --top's default
  for (const Json& r : ranking) {
    EXPECT_TRUE(r["analytic_step_time_s"].is_null());
    EXPECT_TRUE(r["simulated_step_time_s"].is_number()) << r;
  }
}

TEST(Cli, VersionIsTheNewestReleaseOfTheReleaseNotes) {
  std::ifstream notes(RALP_SOURCE_DIR "/CHANGELOG.md");
  std::string line;
  std::string newest;
  while (std::getline(notes, line)) {
    if (line.starts_with("## ")) {
      newest = line.substr(3, line.find(' ', 3) - 3);
      break;
    }
  }
  ASSERT_FALSE(newest.empty()) << "CHANGELOG.md has no \"## VERSION (DATE)\" heading";
  const auto version = run_command(ralp_binary() + " --version");
  EXPECT_EQ(version.status, 0);
  EXPECT_EQ(version.out, "ralp " + newest + "\n");
}

TEST(Cli, AMistypedOptionOrModelSaysWhichWasMeant) {
  const std::string scenario = RALP_SOURCE_DIR "/scenarios/paper/vgg16-1gbe-8w-b32.json";
  const auto option = run_command(ralp_binary() + " simulate " + scenario + " --workrs 8");
  EXPECT_EQ(option.status, 2);
  EXPECT_EQ(option.err,
            "error: --workrs is not an option of ralp simulate (did you mean \"--workers\"?); "
            "expected one that ralp simulate --help lists\n");
  const auto valued = run_command(ralp_binary() + " sweep " + scenario + " --fidelty=analytic");
  EXPECT_EQ(valued.status, 2);
  EXPECT_NE(valued.err.find("--fidelty is not an option of ralp sweep (did you mean "
                            "\"--fidelity\"?)"),
            std::string::npos)
      << valued.err;
  const auto model = run_command(ralp_binary() + " model show resnet-18");
  EXPECT_EQ(model.status, 2);
  EXPECT_NE(model.err.find("nor a readable model file (did you mean \"resnet18\"?)"),
            std::string::npos)
      << model.err;
}

TEST(Cli, OneWorkerAndNoServerReadRight) {
  const auto one = run_command(ralp_binary() + " simulate --fidelity analytic " RALP_SOURCE_DIR
                               "/scenarios/paper/vgg16-1gbe-8w-b32.json --workers 1 "
                               "--parameter-servers 0 --strategy allreduce");
  ASSERT_EQ(one.status, 0) << one.err;
  EXPECT_NE(one.out.find("vgg16, 1 worker x batch 32 in fp32, no PS; gtx1080ti worker; star platform"),
            std::string::npos)
      << one.out;
  // One device alone is the baseline: its efficiency is 100% by construction.
  EXPECT_NE(one.out.find("allreduce             150.1                100%"), std::string::npos)
      << one.out;
}

TEST(Cli, ScenarioCheckSaysNoPsForAllreduceAlone) {
  const std::string file = std::string(RALP_BINARY_DIR) + "/cli-no-ps.json";
  std::ofstream(file) << R"({"name": "ring", "model": "resnet50", "batch_per_worker": 64,
    "cluster": {"workers": 1, "parameter_servers": 0, "worker_device": "v100",
                "platform": {"kind": "star", "nic_bandwidth": "10Gbps", "latency": "5us"}},
    "strategies": ["allreduce"]})";
  const auto check = run_command(ralp_binary() + " scenario check " + file);
  ASSERT_EQ(check.status, 0) << check.err;
  EXPECT_EQ(check.out, "ok: " + file +
                           ": ring: resnet50, 1 worker x batch 64, no PS, v100 worker, star "
                           "platform; strategies: allreduce\n");
  std::filesystem::remove(file);
}

TEST(Cli, SweepRanksByTimeAndCostAndNamesTheCheapestWithinADeadline) {
  const std::string out = std::string(RALP_BINARY_DIR) + "/cli-sweep-deadline";
  const auto sweep = run_command(
      ralp_binary() + " sweep " RALP_SOURCE_DIR "/scenarios/modern/resnet50-dgx-a100-8x8.json "
      "--workers 1,8,64 --strategies allreduce --fidelity analytic --deadline 8h --quiet --out " +
      out);
  ASSERT_EQ(sweep.status, 0) << sweep.err;
  EXPECT_NE(sweep.out.find("fastest to train (3 of 3 rows"), std::string::npos) << sweep.out;
  EXPECT_NE(sweep.out.find("cheapest to train (3 of 3 rows"), std::string::npos) << sweep.out;
  EXPECT_NE(sweep.out.find("cheapest within 8 h: point 2 (workers=64) allreduce, 64 GPUs"),
            std::string::npos)
      << sweep.out;
  const auto bad = run_command(ralp_binary() + " sweep " RALP_SOURCE_DIR
                               "/scenarios/modern/resnet50-dgx-a100-8x8.json --deadline soon");
  EXPECT_EQ(bad.status, 2);
  EXPECT_EQ(bad.err, "error: --deadline is \"soon\", expected a duration such as \"8h\", "
                     "\"90min\" or \"3d\"\n");
  std::filesystem::remove_all(out);
}

}  // namespace
}  // namespace ralp
