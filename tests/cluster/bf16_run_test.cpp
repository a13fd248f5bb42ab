// `ralp cluster` in BF16 mixed precision under mpirun, ranks on loopback (1 PS + 2 workers,
// cifar_alexnet on this machine's measured profile, whose bf16 section lets a scenario ask for
// bf16): every strategy gives the same update within BF16's tolerance, boundary activations
// travel in 2 bytes a value while gradients stay FP32, and 20 steps of BF16 training follow
// FP32's loss.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <fstream>

#include "../support/run_command.hpp"
#include "loopback.hpp"
#include "ralp/cluster/parameter_layout.hpp"
#include "ralp/core/json_input.hpp"
#include "ralp/kernels/network.hpp"
#include "ralp/model/model_zoo.hpp"

namespace ralp::cluster {
namespace {

using testing::read_floats;
using testing::result_of;
using testing::run_command;
using testing::TempDir;

constexpr int64_t kHeaderBytes = 24;
const char* const kStrategies[] = {"ps", "ralp@fc3", "allreduce", "hybrid@fc3"};

// Strategies against ps, compared on the update (final minus initial parameters), per tensor:
// max |update_a - update_b| / max |update_a|. In FP32 they agree to 1e-4 (cluster_run_test). In
// BF16 the strategies run the same BF16 kernels on the same BF16 values: the boundary crosses the
// network exactly (BF16 on the wire), and gradients are FP32 sums in the same order with two
// workers. What may differ is where a layer runs (a worker's tail or the PS's head) and so the
// oneDNN kernel variant chosen and its FP32 accumulation order: each BF16 activation may then
// round to the neighbouring value, 2^-8 relative, and the gradients and updates follow by about
// that much. Three steps of momentum compound it at most threefold: 3 * 2^-8 = 1.2e-2; the
// tolerance is 2e-2. Measured: with two workers the four strategies agree bit for bit (the head
// runs each worker's micro-batch at the worker's batch size, so oneDNN picks the same kernels).
constexpr double kBf16UpdateTolerance = 2e-2;
// 20 steps of BF16 against FP32, per step: |loss_bf16 - loss_fp32| <= this * loss_fp32. The
// forward rounds every activation to BF16 (2^-9 relative each), which moves the loss by about
// 2^-8 of itself at the first step; the trajectories then part as the BF16 updates differ by
// about 2^-8 relative per step, by at most 20 * 2^-8 = 0.08 of the loss after 20 steps. The
// tolerance is 0.1.
constexpr double kBf16LossTolerance = 0.1;

std::string write_scenario(const TempDir& dir, int steps, const std::string& precision) {
  const std::string file = dir / (precision + ".json");
  std::ofstream(file) << R"({"name": "cluster-cifar-alexnet-bf16", "model": "cifar_alexnet",
 "batch_per_worker": 8, "precision": ")" << precision << R"(",
 "cluster": {"workers": 2, "parameter_servers": 1,
             "worker_device": "amd-epyc-family-26-model-2-1-thread",
             "platform": {"kind": "star", "nic_bandwidth": "10Gbps", "latency": "20us"}},
 "strategies": ["ps", {"name": "ralp", "cut": "fc3"},
                {"name": "allreduce", "fusion_threshold": "1MiB", "cycle_time": "1ms"},
                {"name": "hybrid", "cut": "fc3"}],
 "steps": )" << steps << R"(, "warmup_steps": 1, "seed": 11,
 "training": {"learning_rate": 0.01, "momentum": 0.9, "step_timeout": "30s", "threads": 1}})";
  return file;
}

std::vector<float> initial_parameters(const LayerGraph& graph, uint64_t seed) {
  std::vector<float> out;
  for (const ParameterEntry& e : dump_layout(graph)) {
    for (int64_t i = 0; i < e.elements; ++i) {
      out.push_back(kernels::initial_parameter(seed, graph.layer(e.layer), e.bias, i));
    }
  }
  return out;
}

std::vector<float> minus(std::vector<float> a, const std::vector<float>& b) {
  for (size_t i = 0; i < a.size(); ++i) a[i] -= b.at(i);
  return a;
}

double host_bytes(const Json& result, const std::string& host, const char* direction) {
  for (const Json& h : result["hosts"]) {
    if (h["name"] == host) return h[direction].get<double>();
  }
  ADD_FAILURE() << "no host " << host;
  return -1.0;
}

TEST(ClusterBf16, StrategiesGiveTheSameUpdateAndSendBf16Boundaries) {
  const TempDir dir("cluster-bf16");
  const std::string json = dir / "measured.json";
  const auto result = run_command(testing::loopback_mpirun(
      3, write_scenario(dir, 3, "bf16") + " --quiet --json " + json +
             " --dump-parameters " + (dir / "params")));
  ASSERT_EQ(result.status, 0) << result.out << result.err;
  const LayerGraph graph = *zoo_model("cifar_alexnet");
  const auto initial = initial_parameters(graph, 11);
  const auto reference = minus(read_floats(dir.path / "params" / "ps.params"), initial);
  for (const char* label : {"ralp@fc3", "allreduce", "hybrid@fc3"}) {
    const auto update =
        minus(read_floats(dir.path / "params" / (std::string(label) + ".params")), initial);
    const auto differences = testing::relative_differences(graph, reference, update);
    EXPECT_LT(*std::max_element(differences.begin(), differences.end()), kBf16UpdateTolerance)
        << label;
  }
  // Boundary activations and their gradients in 2 bytes a value, labels in 4; the tail's
  // variables (conv1, conv2) pulled and pushed in FP32.
  const Json run = read_json_file(json);
  int64_t tail = 0;
  for (LayerId id = 0; id < *graph.find("fc3"); ++id) tail += graph.layer(id).params() * 4;
  const int64_t activations = 8 * 4096 * 2;
  const Json& ralp = result_of(run, "ralp@fc3");
  EXPECT_EQ(host_bytes(ralp, "worker-1", "bytes_out"),
            tail + 2 * kHeaderBytes + activations + 8 * 4 + kHeaderBytes);
  EXPECT_EQ(host_bytes(ralp, "worker-1", "bytes_in"), tail + 2 * kHeaderBytes + activations + kHeaderBytes);
  const Json& hybrid = result_of(run, "hybrid@fc3");
  EXPECT_EQ(host_bytes(hybrid, "ps-0", "bytes_out"), 2 * (activations + kHeaderBytes));
}

TEST(ClusterBf16, TwentyStepsFollowFp32sLoss) {
  const TempDir dir("cluster-bf16");
  const auto run_in = [&](const std::string& precision) {
    const std::string json = dir / (precision + "-measured.json");
    const auto result = run_command(testing::loopback_mpirun(
        3, write_scenario(dir, 20, precision) + " --quiet --json " + json, 110));
    EXPECT_EQ(result.status, 0) << result.out << result.err;
    return result.status == 0 ? read_json_file(json) : Json();
  };
  const Json bf16 = run_in("bf16");
  const Json fp32 = run_in("fp32");
  ASSERT_FALSE(bf16.is_null());
  ASSERT_FALSE(fp32.is_null());
  for (const char* label : kStrategies) {
    const auto a = result_of(bf16, label)["loss"].get<std::vector<double>>();
    const auto b = result_of(fp32, label)["loss"].get<std::vector<double>>();
    ASSERT_EQ(a.size(), 21u) << label;
    ASSERT_EQ(b.size(), a.size()) << label;
    double worst = 0.0;
    for (size_t i = 0; i < a.size(); ++i) worst = std::max(worst, std::abs(a[i] - b[i]) / b[i]);
    EXPECT_LT(worst, kBf16LossTolerance) << label;
    EXPECT_GT(worst, 0.0) << label << ": BF16 computed exactly FP32's losses";
    std::cout << label << ": largest relative loss difference over 21 steps " << worst << '\n';
  }
}

// A precision the profile cannot run (tf32 on a CPU profile: the scenario's check), and one the
// profile can but this machine's CPU kernels cannot (fp16 on a V100 profile, run on the CPU).
TEST(ClusterBf16, APrecisionTheKernelsCannotRunStopsEveryRank) {
  const TempDir dir("cluster-bf16");
  const auto result = run_command(testing::loopback_mpirun(
      3, write_scenario(dir, 1, "tf32") + " --quiet", 60));
  EXPECT_EQ(result.status, 2) << result.out << result.err;
  EXPECT_NE(result.err.find("tf32"), std::string::npos) << result.err;
  // The same through the command line's override, which names its option.
  const auto overridden = run_command(testing::loopback_mpirun(
      3, write_scenario(dir, 1, "bf16") + " --precision fp16 --quiet", 60));
  EXPECT_EQ(overridden.status, 2) << overridden.out << overridden.err;
  EXPECT_NE(overridden.err.find("--precision"), std::string::npos) << overridden.err;

  const std::string gpu = dir / "v100-fp16.json";
  Json scenario = read_json_file(write_scenario(dir, 1, "fp16"));
  scenario["cluster"]["worker_device"] = "v100";
  std::ofstream(gpu) << scenario.dump();
  const auto on_cpu = run_command(testing::loopback_mpirun(3, gpu + " --quiet --device cpu", 60));
  EXPECT_EQ(on_cpu.status, 2) << on_cpu.out << on_cpu.err;
  EXPECT_NE(on_cpu.err.find("/precision is \"fp16\", but this machine's kernels cannot compute"),
            std::string::npos)
      << on_cpu.err;
}

}  // namespace
}  // namespace ralp::cluster
