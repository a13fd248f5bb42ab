// `ralp cluster` under mpirun, ranks on loopback (1 PS + 2 workers): every strategy runs, all of
// them compute the same SGD update, the loss falls, bytes match the messages each strategy must
// send, and faults and bad input end every rank with the right message in bounded time.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>

#include "../support/run_command.hpp"
#include "loopback.hpp"
#include "ralp/cluster/run_cluster.hpp"
#include "ralp/core/json_input.hpp"
#include "ralp/kernels/network.hpp"
#include "ralp/model/model_zoo.hpp"

namespace ralp::cluster {
namespace {

using testing::relative_differences;
using testing::result_of;
using testing::ralp_binary;
using testing::TempDir;
using testing::read_floats;
using testing::run_command;

// Strategies compute the same update; with two workers every sum has two terms and float addition
// is commutative, so they agree bit for bit. The tolerance covers sums of more terms, whose order
// differs between a ring (each chunk starts at another worker) and a PS (worker order), and the
// batched head, whose loss gradient divides by W * B at once.
constexpr double kTolerance = 1e-4;
// A rank that stops answering must end the job well within this (the step timeout is 2 s).
constexpr double kFaultBound = 30.0;
constexpr int64_t kHeaderBytes = 24;  // step, item and posting time, on every message

std::string scenario(const std::string& name) {
  return std::string(RALP_TEST_DATA_DIR) + "/data/scenarios/" + name;
}

std::string mpirun(int ranks, const std::string& args, const std::string& fault = "") {
  return testing::loopback_mpirun(ranks, args, 100, fault);
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

double host_bytes(const Json& result, const std::string& host, const char* direction) {
  for (const Json& h : result["hosts"]) {
    if (h["name"] == host) return h[direction].get<double>();
  }
  ADD_FAILURE() << "no host " << host;
  return -1.0;
}

int64_t param_bytes(const LayerGraph& graph, LayerId first, LayerId last) {
  int64_t bytes = 0;
  for (LayerId id = first; id < last; ++id) bytes += graph.layer(id).params() * 4;
  return bytes;
}

// Every strategy on cifar_alexnet in one mpirun: the table, the JSON, the same final parameters,
// and bytes per step that follow from the messages.
TEST(ClusterRun, AlexNetStrategiesAgreeAndMoveTheExpectedBytes) {
  const TempDir dir("cluster-test");
  const std::string json = (dir.path / "measured.json").string();
  const auto result =
      run_command(mpirun(3, scenario("cluster-cifar-alexnet.json") + " --json " + json +
                                " --dump-parameters " + (dir.path / "params").string()));
  ASSERT_EQ(result.status, 0) << result.out << result.err;
  for (const char* label : {"ps", "ralp@fc3", "allreduce", "hybrid@fc3"}) {
    EXPECT_NE(result.out.find(label), std::string::npos) << label;
    EXPECT_NE(result.err.find(std::string("ralp cluster: ") + label + ": median step"),
              std::string::npos)
        << result.err;
  }
  const Json run = read_json_file(json);
  EXPECT_EQ(run["scenario"]["mode"], "measured");
  EXPECT_EQ(run["scenario"]["workers"], 2);
  ASSERT_EQ(run["results"].size(), 4u);
  for (const Json& r : run["results"]) {
    EXPECT_GT(r["step_time_median_s"].get<double>(), 0.0);
    EXPECT_EQ(r["step_times_s"].size(), 4u);  // one warm-up and three measured steps
    EXPECT_EQ(r["loss"].size(), 4u);
    EXPECT_EQ(r["hosts"].size(), 3u);
    EXPECT_EQ(r["threads"], 1);
  }

  const LayerGraph graph = *zoo_model("cifar_alexnet");
  const LayerId fc3 = *graph.find("fc3");
  const int64_t all = param_bytes(graph, 0, graph.size());  // 19,115,816
  const int64_t tail = param_bytes(graph, 0, fc3);          // conv1 and conv2: 214,784
  const int64_t batch = 8;
  const int64_t activations = batch * 4096 * 4;  // flatten's 64x8x8 per image
  const int64_t labels = batch * 4;

  // ps: each of the 5 layers' variables pulled and pushed as one message.
  const Json& ps = result_of(run, "ps");
  EXPECT_EQ(host_bytes(ps, "worker-0", "bytes_out"), all + 5 * kHeaderBytes);
  EXPECT_EQ(host_bytes(ps, "worker-1", "bytes_in"), all + 5 * kHeaderBytes);
  EXPECT_EQ(host_bytes(ps, "ps-0", "bytes_in"), 2 * (all + 5 * kHeaderBytes));
  // ralp: conv1 and conv2 pulled and pushed; activations and labels out, their gradient back.
  const Json& ralp = result_of(run, "ralp@fc3");
  EXPECT_EQ(ralp["cut"], "fc3");
  EXPECT_EQ(host_bytes(ralp, "worker-1", "bytes_out"),
            tail + 2 * kHeaderBytes + activations + labels + kHeaderBytes);
  EXPECT_EQ(host_bytes(ralp, "worker-1", "bytes_in"),
            tail + 2 * kHeaderBytes + activations + kHeaderBytes);
  EXPECT_EQ(host_bytes(ralp, "ps-0", "bytes_out"), 2 * (tail + activations + 3 * kHeaderBytes));
  // allreduce: the PS idles; a worker sends each gradient once (two phases of half a buffer),
  // plus headers and the fusion negotiation's few small messages.
  const Json& allreduce = result_of(run, "allreduce");
  EXPECT_EQ(allreduce["ring_model"], "message");
  EXPECT_EQ(host_bytes(allreduce, "ps-0", "bytes_in"), 0.0);
  for (const char* worker : {"worker-0", "worker-1"}) {
    EXPECT_GE(host_bytes(allreduce, worker, "bytes_out"), all);
    EXPECT_LE(host_bytes(allreduce, worker, "bytes_out"), all + 4096);
  }
  // hybrid: only the boundary reaches the head PS.
  const Json& hybrid = result_of(run, "hybrid@fc3");
  EXPECT_EQ(host_bytes(hybrid, "ps-0", "bytes_in"), 2 * (activations + labels + kHeaderBytes));
  EXPECT_EQ(host_bytes(hybrid, "ps-0", "bytes_out"), 2 * (activations + kHeaderBytes));

  // The same update everywhere, and not the initial parameters.
  const auto reference = read_floats(dir.path / "params" / "ps.params");
  ASSERT_EQ(reference.size() * 4, static_cast<size_t>(all));
  const auto moved = relative_differences(graph, reference, initial_parameters(graph, 11));
  for (size_t i = 0; i < moved.size(); ++i) EXPECT_GT(moved[i], 0.0) << "tensor " << i;
  for (const char* label : {"ralp@fc3", "allreduce", "hybrid@fc3"}) {
    const auto other = read_floats(dir.path / "params" / (std::string(label) + ".params"));
    const auto differences = relative_differences(graph, reference, other);
    EXPECT_LT(*std::max_element(differences.begin(), differences.end()), kTolerance) << label;
  }
  // The same data, the same maths: the same losses.
  for (const Json& r : run["results"]) EXPECT_EQ(r["loss"], ps["loss"]) << r["strategy"];
}

// cifar_allconv, three steps: MPI's own all-reduce gives the same update as the ring, and the head
// run on all workers' micro-batches at once the same as per worker (up to rounding: its loss
// gradient divides by W * B at once).
TEST(ClusterRun, AllConvStrategiesAgreeWithMpiAllreduceAndBatchedHead) {
  const TempDir dir("cluster-test");
  const auto result = run_command(mpirun(3, scenario("cluster-cifar-allconv.json") +
                                                " --steps 2 --quiet --allreduce mpi"
                                                " --dump-parameters " +
                                                (dir.path / "params").string()));
  ASSERT_EQ(result.status, 0) << result.out << result.err;
  EXPECT_EQ(result.err, "");  // --quiet
  EXPECT_NE(result.out.find("ralp-batched"), std::string::npos);
  const LayerGraph graph = *zoo_model("cifar_allconv");
  const auto reference = read_floats(dir.path / "params" / "ps.params");
  for (const char* label : {"ralp@fc", "allreduce", "hybrid@fc", "ralp-batched"}) {
    const auto other = read_floats(dir.path / "params" / (std::string(label) + ".params"));
    const auto differences = relative_differences(graph, reference, other);
    EXPECT_LT(*std::max_element(differences.begin(), differences.end()), kTolerance) << label;
  }
}

// On 2 nodes of 2 devices, ralp's and hybrid's heads take each node's micro-batch from its first
// device (local aggregation, the default on nodes): one boundary message per node, and the same
// update as ps and as the heads that take every device's micro-batch.
TEST(ClusterRun, HeadsOnNodesTakeANodesMicroBatchAndGiveTheSameUpdate) {
  const TempDir dir("cluster-test");
  const std::string file = (dir.path / "nodes.json").string();
  std::ofstream(file) << R"({"name": "nodes", "model": "cifar_allconv", "batch_per_worker": 4,
      "cluster": {"workers": 4, "parameter_servers": 1, "worker_device": "cpu-core",
                  "devices_per_node": 2,
                  "node_interconnect": {"kind": "pcie", "bandwidth": "16GBps", "host_links": 2},
                  "platform": {"kind": "star", "nic_bandwidth": "10Gbps", "latency": "20us"}},
      "strategies": ["ps", {"name": "ralp", "cut": "fc"}, {"name": "hybrid", "cut": "fc"},
                     {"name": "hybrid", "label": "hybrid-devices", "cut": "fc",
                      "local_aggregation": false}],
      "steps": 1, "warmup_steps": 1, "seed": 7, "training": {"step_timeout": "30s"}})";
  const std::string json = (dir.path / "measured.json").string();
  const auto result = run_command(mpirun(5, file + " --quiet --json " + json +
                                                " --dump-parameters " +
                                                (dir.path / "params").string()));
  ASSERT_EQ(result.status, 0) << result.out << result.err;
  const Json run = read_json_file(json);
  // The same boundaries in two messages instead of four: two headers fewer each way.
  const Json& nodes = result_of(run, "hybrid@fc");
  const Json& devices = result_of(run, "hybrid-devices");
  for (const char* direction : {"bytes_in", "bytes_out"}) {
    EXPECT_EQ(host_bytes(devices, "ps-0", direction) - host_bytes(nodes, "ps-0", direction),
              2 * kHeaderBytes)
        << direction;
  }
  const LayerGraph graph = *zoo_model("cifar_allconv");
  const auto reference = read_floats(dir.path / "params" / "ps.params");
  for (const char* label : {"ralp@fc", "hybrid@fc", "hybrid-devices"}) {
    const auto other = read_floats(dir.path / "params" / (std::string(label) + ".params"));
    const auto differences = relative_differences(graph, reference, other);
    EXPECT_LT(*std::max_element(differences.begin(), differences.end()), kTolerance) << label;
  }
}

// The synthetic classes can be learned: over nine steps the loss falls clearly.
// A pure all-reduce cluster needs no parameter server: two ranks, both workers.
TEST(ClusterRun, AllreduceWithoutAParameterServer) {
  const TempDir dir("cluster-test");
  const std::string file = (dir.path / "workers-only.json").string();
  std::ofstream(file) << R"({"name": "workers-only", "model": "cifar_allconv", "batch_per_worker": 4,
      "cluster": {"workers": 2, "parameter_servers": 0, "worker_device": "cpu-core",
                  "platform": {"kind": "star", "nic_bandwidth": "10Gbps", "latency": "20us"}},
      "strategies": ["allreduce"], "steps": 2, "warmup_steps": 1, "seed": 5,
      "training": {"step_timeout": "20s"}})";
  const std::string json = (dir.path / "measured.json").string();
  const auto result = run_command(mpirun(2, file + " --quiet --json " + json));
  ASSERT_EQ(result.status, 0) << result.out << result.err;
  const Json run = read_json_file(json);
  const Json& r = run["results"][0];
  ASSERT_EQ(r["hosts"].size(), 2u);
  EXPECT_EQ(r["hosts"][0]["name"], "worker-0");
  EXPECT_GT(r["hosts"][0]["bytes_out"].get<double>(), 0.0);
  // A strategy that needs a parameter server is refused on every rank.
  const auto ps = run_command(mpirun(2, file + " --quiet --strategy ps"));
  EXPECT_EQ(ps.status, 2);
  EXPECT_NE(ps.err.find("needs a parameter server"), std::string::npos) << ps.err;
}

TEST(ClusterRun, AllConvLossFalls) {
  const TempDir dir("cluster-test");
  const std::string json = (dir.path / "measured.json").string();
  const auto result = run_command(mpirun(
      3, scenario("cluster-cifar-allconv.json") + " --strategy hybrid@fc --quiet --json " + json));
  ASSERT_EQ(result.status, 0) << result.out << result.err;
  const Json run = read_json_file(json);
  ASSERT_EQ(run["results"].size(), 1u);
  const auto loss = run["results"][0]["loss"].get<std::vector<double>>();
  ASSERT_EQ(loss.size(), 9u);
  // Chance is ln 10 = 2.30; the mean of the last three steps must be 0.1 below the first three's.
  const double first = (loss[0] + loss[1] + loss[2]) / 3.0;
  const double last = (loss[6] + loss[7] + loss[8]) / 3.0;
  EXPECT_LT(last, first - 0.1) << run["results"][0]["loss"];
  EXPECT_EQ(run["results"][0]["ring_model"], "message");
}

struct Timed {
  testing::CommandResult result;
  double seconds = 0.0;
};

Timed timed(const std::string& command) {
  const auto start = std::chrono::steady_clock::now();
  Timed t{run_command(command), 0.0};
  t.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return t;
}

const std::string kFaultArgs = " --quiet --step-timeout 2s";

TEST(ClusterFaults, HangingWorkerIsNamedByThePs) {
  const Timed t =
      timed(mpirun(3, scenario("cluster-cifar-allconv.json") + " --strategy ps" + kFaultArgs,
                   "rank=2,step=1,phase=push,kind=hang"));
  EXPECT_NE(t.result.status, 0);
  EXPECT_LT(t.seconds, kFaultBound);
  EXPECT_NE(t.result.err.find("injected fault: rank 2 (worker-1) during push of step 1"),
            std::string::npos)
      << t.result.err;
  EXPECT_NE(t.result.err.find("error: rank 0 (ps-0): no message from rank 2 (worker-1) during "
                              "push of step 1 within 2 s"),
            std::string::npos)
      << t.result.err;
}

TEST(ClusterFaults, HangingPsIsNamedByTheWorkers) {
  // Workers wait 1.5 times the step timeout for a PS, which waits on them directly.
  const Timed t =
      timed(mpirun(3, scenario("cluster-cifar-allconv.json") + " --strategy ralp@fc" + kFaultArgs,
                   "rank=0,step=2,phase=pull,kind=hang"));
  EXPECT_NE(t.result.status, 0);
  EXPECT_LT(t.seconds, kFaultBound);
  EXPECT_NE(t.result.err.find("no message from rank 0 (ps-0) during pull of step 2 within 3 s"),
            std::string::npos)
      << t.result.err;
}

TEST(ClusterFaults, HangInTheRingIsNamedByTheOtherWorker) {
  const Timed t =
      timed(mpirun(3, scenario("cluster-cifar-allconv.json") + " --strategy allreduce" + kFaultArgs,
                   "rank=1,step=1,phase=ring,kind=hang"));
  EXPECT_NE(t.result.status, 0);
  EXPECT_LT(t.seconds, kFaultBound);
  EXPECT_NE(
      t.result.err.find("error: rank 2 (worker-1): no message from rank 1 (worker-0) during "),
      std::string::npos)
      << t.result.err;
  EXPECT_NE(t.result.err.find(" of step 1 within 2 s"), std::string::npos) << t.result.err;
}

TEST(ClusterFaults, DeadWorkerEndsTheJob) {
  const Timed t =
      timed(mpirun(3, scenario("cluster-cifar-allconv.json") + " --strategy hybrid" + kFaultArgs,
                   "rank=1,step=1,phase=activations,kind=exit"));
  // mpirun ends the job with the dead rank's status and names it.
  EXPECT_EQ(t.result.status, kFaultExitStatus);
  EXPECT_LT(t.seconds, kFaultBound);
  EXPECT_NE(t.result.err.find("injected fault: rank 1 (worker-0) during activations of step 1"),
            std::string::npos)
      << t.result.err;
  EXPECT_NE(t.result.err.find(",1],1]"), std::string::npos) << t.result.err;  // process [[job,1],1]
}

TEST(ClusterInput, WrongRankCountStopsEveryRank) {
  const auto result = run_command(mpirun(2, scenario("cluster-cifar-alexnet.json")));
  EXPECT_EQ(result.status, 2);
  const std::string message =
      "error: " + scenario("cluster-cifar-alexnet.json") +
      ": /cluster has 1 parameter server and 2 workers, so it needs 3 MPI ranks, but mpirun "
      "started 2 (use mpirun -np 3)\n";
  // Both ranks say it.
  const size_t first = result.err.find(message);
  ASSERT_NE(first, std::string::npos) << result.err;
  EXPECT_NE(result.err.find(message, first + 1), std::string::npos) << result.err;
}

TEST(ClusterInput, BadScenarioStopsEveryRank) {
  const std::string file =
      std::string(RALP_TEST_DATA_DIR) + "/data/bad-scenarios/workers-zero.json";
  const auto result = run_command(mpirun(3, file));
  EXPECT_EQ(result.status, 2);
  const std::string message =
      "error: " + file + ": /cluster/workers is 0, expected an integer in [1, 65536]\n";
  size_t count = 0;
  for (size_t at = result.err.find(message); at != std::string::npos;
       at = result.err.find(message, at + 1)) {
    ++count;
  }
  EXPECT_EQ(count, 3u) << result.err;
}

TEST(LinkProbe, TimesEachSizeAndMeasuresTheCpuItTakes) {
  // Two ranks on loopback: the timed series and the CPU series each have one entry per size,
  // the waiting series one share per rank, and --no-cpu leaves the CPU series out. How much CPU
  // a transfer takes is this machine's; only that each loss is finite is asserted.
  const std::string probe = "link-probe --round-trips 5 --repetitions 2 --sizes 65536 1048576";
  const auto result = run_command(testing::loopback_mpirun_ralp(2, probe, 100));
  ASSERT_EQ(result.status, 0) << result.out << result.err;
  const Json j = Json::parse(result.out);
  ASSERT_EQ(j.at("transfers").size(), 2U);
  ASSERT_EQ(j.at("cpu").size(), 2U);
  for (const Json& c : j.at("cpu")) {
    EXPECT_TRUE(std::isfinite(c.at("sender_s").get<double>())) << c;
    EXPECT_TRUE(std::isfinite(c.at("receiver_s").get<double>())) << c;
  }
  EXPECT_EQ(j.at("cpu")[1].at("bytes"), 1048576);
  // Each size's cost is a message's in a train of them, up to 4 MiB and 8 messages in all.
  EXPECT_EQ(j.at("cpu")[0].at("messages"), 8);
  EXPECT_EQ(j.at("cpu")[1].at("messages"), 4);
  // Each rank's share of its core that waiting took from the computing thread: a share.
  ASSERT_EQ(j.at("waiting_shares").size(), 2U);
  for (const Json& share : j.at("waiting_shares")) {
    EXPECT_GE(share.get<double>(), 0.0) << share;
    EXPECT_LE(share.get<double>(), 1.0) << share;
  }
  const auto without = run_command(testing::loopback_mpirun_ralp(2, probe + " --no-cpu", 100));
  ASSERT_EQ(without.status, 0) << without.err;
  EXPECT_FALSE(Json::parse(without.out).contains("cpu"));
  EXPECT_FALSE(Json::parse(without.out).contains("waiting_shares"));
}

TEST(ClusterInput, WithoutMpirunOneRankIsTooFew) {
  const auto result =
      run_command(ralp_binary() + " cluster " + scenario("cluster-cifar-alexnet.json"));
  EXPECT_EQ(result.status, 2);
  EXPECT_NE(result.err.find("it needs 3 MPI ranks, but mpirun started 1"), std::string::npos)
      << result.err;
}

TEST(ClusterInput, UnknownStrategyOrCut) {
  const std::string alexnet = scenario("cluster-cifar-alexnet.json");
  const auto strategy = run_command(ralp_binary() + " cluster " + alexnet + " --strategy ring");
  EXPECT_EQ(strategy.status, 2);
  EXPECT_EQ(strategy.err, "error: --strategy: 'ring' is neither a strategy of " + alexnet +
                              " (ps, ralp@fc3, allreduce, hybrid@fc3) nor a kind (ps, ralp, "
                              "allreduce, hybrid)\n");
  const auto cut = run_command(ralp_binary() + " cluster " + alexnet + " --cut fc9");
  EXPECT_EQ(cut.status, 2);
  EXPECT_EQ(cut.err,
            "error: --cut: 'fc9' is not a layer of cifar_alexnet after its first (a head "
            "needs a tail before it)\n");
}

}  // namespace
}  // namespace ralp::cluster
