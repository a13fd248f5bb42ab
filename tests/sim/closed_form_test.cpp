// The simulator against closed forms on the ideal network model, with compute that vanishes.
#include <cmath>

#include <gtest/gtest.h>

#include "ralp/sim/simulate.hpp"
#include "sim_fixtures.hpp"

namespace ralp {
namespace {

using testing::fc_model;
using testing::host;
using testing::kInstantDevice;
using testing::relative_error;
using testing::scenario_from;

constexpr double kTolerance = 0.01;  // most cases match to 1e-9

// 4 workers, one PS whose NIC moves 1 GB/s (8 Gbps) each way; workers' NICs 100x faster.
std::string star_cluster(int workers, const std::string& extra = "") {
  return R"("cluster": {"workers": )" + std::to_string(workers) + R"(, "worker_device": )" +
         kInstantDevice + R"(, "platform": {"kind": "star", "nic_bandwidth": "800Gbps",
         "ps_nic": {"bandwidth": "8Gbps"}, "latency": 0)" + extra + "}}";
}

TEST(ClosedForm, FourWorkersPullAndPushThroughOnePsLink) {
  // 1,000,000 weights = 4 MB, plus each message's 24-byte header. Pulls: 4 x 4 MB through the
  // PS's 1 GB/s uplink = 16 ms; pushes: 16 ms through its downlink; pushes start after the pulls:
  // 32 ms per step.
  const Scenario s = scenario_from(R"("model": )" + fc_model(1000, 1000) +
                                   R"(, "batch_per_worker": 8, )" + star_cluster(4) +
                                   R"(, "network_model": "ideal", "strategies": ["ps"])");
  const auto r = sim::simulate_isolated(s, s.strategies[0], std::nullopt, {});
  EXPECT_LT(relative_error(r.step_time_mean_s, 0.032), kTolerance) << r.step_time_mean_s;
  EXPECT_DOUBLE_EQ(host(r, "ps-0").bytes_out, 4 * (4e6 + 24));
  EXPECT_DOUBLE_EQ(host(r, "ps-0").bytes_in, 4 * (4e6 + 24));
  // The PS uplink is busy half of the step and the downlink the other half.
  ASSERT_FALSE(r.links.empty());
  EXPECT_NEAR(r.links[0].utilisation, 0.5, 1e-6);
  // Workers only communicate or wait for the others' transfers.
  EXPECT_NEAR(r.worker_mean.compute, 0.0, 1e-9);
  EXPECT_NEAR(r.worker_mean.communication + r.worker_mean.waiting, r.step_time_mean_s, 1e-9);
}

TEST(ClosedForm, ParameterServerTimeIsLinearInWorkersOnTcp) {
  // SimGrid's TCP model (LV08): W * S / (0.97 * B) + 13.01 * L per direction; here pulls and
  // pushes of 4 MB at 1 GB/s over routes of 2 x 10 us.
  for (int workers : {2, 8}) {
    const Scenario s = scenario_from(
        R"("model": )" + fc_model(1000, 1000) + R"(, "batch_per_worker": 8, "cluster": {"workers": )" +
        std::to_string(workers) + R"(, "worker_device": )" + kInstantDevice +
        R"(, "platform": {"kind": "star", "nic_bandwidth": "800Gbps", "latency": "10us",
        "ps_nic": {"bandwidth": "8Gbps"}}}, "network_model": "tcp", "strategies": ["ps"])");
    const auto r = sim::simulate_isolated(s, s.strategies[0], std::nullopt, {});
    const double one_way = workers * 4e6 / (0.97 * 1e9) + 13.01 * 20e-6;
    EXPECT_LT(relative_error(r.step_time_mean_s, 2 * one_way), kTolerance)
        << workers << " workers: " << r.step_time_mean_s;
  }
}

TEST(ClosedForm, RingAllReduceMovesTwiceTheBufferOverWorkers) {
  // 2 (W - 1) / W x S / B = 2 * 3/4 * 4 MB / 1 GB/s = 6 ms, whichever ring form runs.
  for (const char* ring : {"message", "coalesced"}) {
    const Scenario s = scenario_from(
        R"("model": )" + fc_model(1000, 1000) + R"(, "batch_per_worker": 8, "cluster": {"workers": 4,
        "worker_device": )" + kInstantDevice + R"(, "platform": {"kind": "star",
        "nic_bandwidth": "8Gbps", "latency": 0}}, "network_model": "ideal",
        "strategies": [{"name": "allreduce", "cycle_time": 0, "ring_model": ")" + ring + R"("}])");
    const auto r = sim::simulate_isolated(s, s.strategies[0], std::nullopt, {});
    EXPECT_EQ(r.ring_model, ring);
    EXPECT_LT(relative_error(r.step_time_mean_s, 0.006), kTolerance) << ring << ": " << r.step_time_mean_s;
    // Each worker sends 2 (W - 1) chunks of S / W: 6 MB, plus a header each, and tells the
    // coordinator (worker-0) that the buffer is ready: one header more.
    EXPECT_DOUBLE_EQ(host(r, "worker-1").bytes_out, 6e6 + 6 * 24 + 24);
  }
}

TEST(ClosedForm, RalpTrafficIsActivationsAndLabelsOnly) {
  // Cut before the FC head of input -> relu -> fc -> loss: the head PS receives W x B x (1000
  // floats + one label). Nothing before the cut has parameters, so no gradient needs to flow back:
  // each worker gets a reply of just its header.
  const std::string model = R"({"name": "m", "input": [1000, 1, 1], "layers": [
      {"name": "relu", "type": "relu"}, {"name": "fc", "type": "fc", "out_features": 10},
      {"name": "loss", "type": "softmax_cross_entropy"}]})";
  const Scenario s = scenario_from(R"("model": )" + model + R"(, "batch_per_worker": 8, )" +
                                   star_cluster(4) +
                                   R"(, "network_model": "ideal",
                                   "strategies": [{"name": "ralp", "cut": "fc"}])");
  const auto r = sim::simulate_isolated(s, s.strategies[0], s.model.find("fc"), {});
  EXPECT_DOUBLE_EQ(host(r, "ps-0").bytes_in, 4.0 * (8 * (1000 * 4 + 4) + 24));
  EXPECT_DOUBLE_EQ(host(r, "ps-0").bytes_out, 4.0 * 24);
  EXPECT_EQ(r.cut, "fc");
}

TEST(ClosedForm, RalpTrafficIgnoresTheHeadsSizeButPsTrafficDoesNot) {
  const auto run = [](int hidden, const char* strategy) {
    const std::string model = R"({"name": "m", "input": [64, 4, 4], "layers": [
        {"name": "conv", "type": "conv2d", "out_channels": 8, "kernel": 3, "padding": 1},
        {"name": "flat", "type": "flatten"},
        {"name": "fc1", "type": "fc", "out_features": )" + std::to_string(hidden) + R"(},
        {"name": "fc2", "type": "fc", "out_features": 10},
        {"name": "loss", "type": "softmax_cross_entropy"}]})";
    const std::string entry = std::string(strategy) == "ps"
                                  ? std::string(R"("ps")")
                                  : std::string(R"({"name": "ralp", "cut": "flat"})");
    const Scenario s = scenario_from(R"("model": )" + model + R"(, "batch_per_worker": 8, )" +
                                     star_cluster(4) + R"(, "network_model": "ideal",
                                     "strategies": [)" + entry + "]");
    const auto cut = s.strategies[0].kind == StrategyKind::ralp ? s.model.find("flat") : std::nullopt;
    return host(sim::simulate_isolated(s, s.strategies[0], cut, {}), "ps-0").bytes_in;
  };
  EXPECT_DOUBLE_EQ(run(100, "ralp"), run(4000, "ralp"));
  EXPECT_GT(run(4000, "ps"), 10 * run(100, "ps"));
}

// Three shards placed greedily: fc1's 4 MB weight on ps-0, fc2's and fc3's 2 MB on ps-1 and
// ps-2; 4 workers; every NIC has 60 us latency, so a route costs L = 120 us. ps-0 is the
// bottleneck both ways: pulls 4 x (4 MB + 24 B) / 1 GB/s + L, pushes the same, then ps-0 tells
// the other shards the step is complete (one header, + L): 2 x 16.120096 + 0.120024 ms.
StrategyResult three_shards(bool lazy_network_update) {
  const std::string model = R"({"name": "m", "input": [1000, 1, 1], "layers": [
      {"name": "fc1", "type": "fc", "out_features": 1000, "bias": false},
      {"name": "fc2", "type": "fc", "out_features": 500, "bias": false},
      {"name": "fc3", "type": "fc", "out_features": 1000, "bias": false},
      {"name": "loss", "type": "softmax_cross_entropy"}]})";
  const Scenario s = scenario_from(
      R"("model": )" + model + R"(, "batch_per_worker": 8, "cluster": {"workers": 4,
      "parameter_servers": 3, "worker_device": )" + kInstantDevice + R"(, "ps_device": )" +
      kInstantDevice + R"(, "platform": {"kind": "star", "nic_bandwidth": "800Gbps",
      "ps_nic": {"bandwidth": "8Gbps"}, "latency": "60us"}}, "network_model": "ideal",
      "strategies": [{"name": "ps", "sharding": "greedy"}])");
  sim::RunOptions options;
  options.lazy_network_update = lazy_network_update;
  return sim::simulate_isolated(s, s.strategies[0], std::nullopt, options);
}
constexpr double kThreeShardsStep = 2 * (4 * (4e6 + 24) / 1e9 + 120e-6) + (24 / 1e9 + 120e-6);

TEST(ClosedForm, SeveralShardsWithLatencyShareEachNicExactly) {
  const auto r = three_shards(false);
  EXPECT_DOUBLE_EQ(host(r, "ps-0").bytes_in, 4 * (4e6 + 24) + 2 * 24);
  EXPECT_LT(relative_error(r.step_time_mean_s, kThreeShardsStep), 1e-9) << r.step_time_mean_s;
}

TEST(ClosedForm, SimGridsLazyUpdateGetsSeveralShardsWrong) {
  // Why the simulator uses SimGrid's full max-min update: with the lazy one (SimGrid's default),
  // the twelve pushes that start together get shares their NICs cannot carry, and the step comes
  // out about 24% short. Should a SimGrid release fix this, the full update is no longer needed.
  const auto r = three_shards(true);
  EXPECT_GT(relative_error(r.step_time_mean_s, kThreeShardsStep), 0.01) << r.step_time_mean_s;
}

// Ring all-reduce of one 4 MB buffer among 4 workers at 1 GB/s, compressed: the buffer is
// encoded once before the ring and decoded once after, each 4 MB / 1 GB/s = 4 ms, and the ring
// sends 2 (W - 1) = 6 compressed chunks of 1 MB raw each.
double compressed_ring_step(const std::string& compression, const char* ring) {
  const Scenario s = scenario_from(
      R"("model": )" + fc_model(1000, 1000) + R"(, "batch_per_worker": 8, "cluster": {"workers": 4,
      "worker_device": )" + kInstantDevice + R"(, "platform": {"kind": "star",
      "nic_bandwidth": "8Gbps", "latency": 0}}, "network_model": "ideal",
      "compression": )" + compression + R"(, "strategies": [{"name": "allreduce", "cycle_time": 0,
      "ring_model": ")" + ring + R"("}])");
  return sim::simulate_isolated(s, s.strategies[0], std::nullopt, {}).step_time_mean_s;
}

TEST(ClosedForm, CompressedRingEncodesOnceAndDecodesOnce) {
  struct Case {
    const char* compression;
    double chunk_bytes;  // one 1 MB chunk on the wire, header included
  };
  const Case cases[] = {
      {R"({"kind": "fp16", "encode_rate": "1GB/s"})", 500000 + 24},  // half
      {R"({"kind": "int8", "encode_rate": "1GB/s"})", 250000 + 4 + 24},  // a quarter + scale
      // 1% of 250,000 values, each with a 4-byte index: 2,500 x 8 bytes.
      {R"({"kind": "topk", "ratio": 0.01, "encode_rate": "1GB/s"})", 20000 + 24},
  };
  for (const Case& c : cases) {
    for (const char* ring : {"message", "coalesced"}) {
      const double expected = 4e-3 + 6 * c.chunk_bytes / 1e9 + 4e-3;
      const double step = compressed_ring_step(c.compression, ring);
      EXPECT_LT(relative_error(step, expected), 1e-4) << c.compression << ", " << ring << ": " << step;
    }
  }
}

TEST(ClosedForm, GpuParameterServerCopiesShareItsPcieLink) {
  // A GPU PS with 1 GB/s PCIe, 4 CPU workers, NICs of 1 TB/s. Per step the PS copies the 4 MB
  // group to the host once for the 4 pulls (4 ms), the pulls and then the pushes cross its NIC
  // (4 x 4 MB / 1 TB/s = 16 us each way), and the 4 pushed gradients cross the one PCIe link
  // one after another: 4 x 4 MB / 1 GB/s = 16 ms. 20.032 ms in all; 8.032 if copies overlapped.
  const std::string gpu = R"({"name": "instant-gpu", "kind": "gpu", "peak_flops": 1e30,
      "memory_bandwidth": 1e30, "pcie_bandwidth": "1GB/s"})";
  const Scenario s = scenario_from(
      R"("model": )" + fc_model(1000, 1000) + R"(, "batch_per_worker": 8, "cluster": {"workers": 4,
      "worker_device": )" + kInstantDevice + R"(, "ps_device": )" + gpu + R"(,
      "platform": {"kind": "star", "nic_bandwidth": "8000Gbps", "latency": 0}},
      "network_model": "ideal", "strategies": ["ps"])");
  const auto r = sim::simulate_isolated(s, s.strategies[0], std::nullopt, {});
  const double expected = 4e6 / 1e9 + 2 * 4 * (4e6 + 24) / 1e12 + 4 * 4e6 / 1e9;
  EXPECT_LT(relative_error(r.step_time_mean_s, expected), 1e-6) << r.step_time_mean_s;
}

// Two all-reduce workers on `device`, fc 1000 -> 1000 at batch 8, a network too fast to matter,
// with `sharing` appended to the cluster object.
StrategyResult allreduce_pair_step(const std::string& device, const std::string& sharing) {
  const Scenario s = scenario_from(
      R"("model": )" + fc_model(1000, 1000) + R"(, "batch_per_worker": 8, "cluster": {"workers": 2,
      "parameter_servers": 0, "worker_device": )" + device + sharing + R"(,
      "platform": {"kind": "star", "nic_bandwidth": "8000000Gbps", "latency": 0}},
      "network_model": "ideal", "strategies": [{"name": "allreduce", "cycle_time": 0}])");
  return sim::simulate_isolated(s, s.strategies[0], std::nullopt, {});
}

TEST(ClosedForm, HostsSharingADeviceDivideIt) {
  // A 1 GFLOP/s device and a network too fast to matter. fc 1000 -> 1000 at batch 8: 16 MFLOP
  // forward and 16 MFLOP backward (weights only: nothing needs the input's gradient), so 32 ms
  // of compute per worker and step. Two all-reduce workers that share one device compute at the
  // same time at half speed: 64 ms, and every other time (the update, the ring) doubles with it.
  // Distinct numbers are distinct devices.
  const std::string device = R"({"name": "gflop", "kind": "cpu", "peak_flops": 1e9,
      "memory_bandwidth": 1e30, "launch_overhead": 0, "efficiency": {"default": 1.0}})";
  const auto own = allreduce_pair_step(device, "");
  const auto distinct = allreduce_pair_step(device, R"(, "shared_devices": [1, 0])");
  const auto shared = allreduce_pair_step(device, R"(, "shared_devices": [0, 0])");
  EXPECT_NEAR(own.worker_mean.compute, 0.032, 1e-4) << own.worker_mean.compute;
  EXPECT_DOUBLE_EQ(distinct.step_time_mean_s, own.step_time_mean_s);
  EXPECT_LT(relative_error(shared.step_time_mean_s, 2 * own.step_time_mean_s), 1e-6)
      << shared.step_time_mean_s << " against " << own.step_time_mean_s;
  EXPECT_LT(relative_error(shared.worker_mean.compute, 2 * own.worker_mean.compute), 1e-6);
}

// ralp, 1 PS + 1 worker, input -> fc1 -> fc2 -> loss cut at fc2, on `device`, with `sharing`
// appended to the cluster object: the worker computes fc1, then waits while the head computes fc2,
// then computes fc1's backward.
StrategyResult ralp_fc2_step(const std::string& device, const std::string& sharing) {
  const std::string model = R"({"name": "fc2", "input": [1000, 1, 1], "layers": [
      {"name": "fc1", "type": "fc", "out_features": 1000, "bias": false},
      {"name": "fc2", "type": "fc", "out_features": 1000, "bias": false},
      {"name": "loss", "type": "softmax_cross_entropy"}]})";
  const Scenario s = scenario_from(
      R"("model": )" + model + R"(, "batch_per_worker": 8, "cluster": {"workers": 1,
      "worker_device": )" + device + sharing + R"(, "platform": {"kind": "star",
      "nic_bandwidth": "8000000Gbps", "latency": 0}}, "network_model": "ideal",
      "strategies": [{"name": "ralp", "cut": "fc2"}])");
  return sim::simulate_isolated(s, s.strategies[0], s.model.find("fc2"), {});
}

TEST(ClosedForm, AHeadSharingAWorkersDeviceSlowsOnlyWhileBothCompute) {
  // The worker and the head never compute at once, so sharing one device changes nothing.
  const std::string device = R"({"name": "gflop", "kind": "cpu", "peak_flops": 1e9,
      "memory_bandwidth": 1e30, "launch_overhead": 0, "efficiency": {"default": 1.0}})";
  const auto own = ralp_fc2_step(device, "");
  const auto shared = ralp_fc2_step(device, R"(, "shared_devices": [0, 0])");
  // fc1: 16 MFLOP forward, 16 backward; the head's fc2: 16 forward, 32 backward.
  EXPECT_NEAR(own.step_time_mean_s, 0.080, 1e-3) << own.step_time_mean_s;
  EXPECT_LT(relative_error(shared.step_time_mean_s, own.step_time_mean_s), 1e-9)
      << shared.step_time_mean_s << " against " << own.step_time_mean_s;
}

TEST(ClosedForm, TimeSharingSlowsADeviceOnlyWhileTwoComputeOnIt) {
  // As HostsSharingADeviceDivideIt, with a device whose time sharing costs 25%: while the two
  // all-reduce workers compute at once each progresses at 1 / (2 x 1.25) of its speed, so their
  // 32 ms of compute each take 80 ms. A worker with its own device, and the ralp worker and head
  // that never compute at once on a shared device, lose nothing.
  const std::string device = R"({"name": "gflop", "kind": "cpu", "peak_flops": 1e9,
      "memory_bandwidth": 1e30, "launch_overhead": 0, "efficiency": {"default": 1.0},
      "time_sharing_slowdown": 1.25})";
  const auto own = allreduce_pair_step(device, "");
  const auto shared = allreduce_pair_step(device, R"(, "shared_devices": [0, 0])");
  EXPECT_NEAR(own.worker_mean.compute, 0.032, 1e-4) << own.worker_mean.compute;
  EXPECT_LT(relative_error(shared.worker_mean.compute, 2 * 1.25 * own.worker_mean.compute), 1e-6)
      << shared.worker_mean.compute << " against " << own.worker_mean.compute;

  EXPECT_LT(relative_error(ralp_fc2_step(device, R"(, "shared_devices": [0, 0])").step_time_mean_s,
                           ralp_fc2_step(device, "").step_time_mean_s),
            1e-9);
}

TEST(ClosedForm, AWaitingMemberTakesItsShareOfASharedDeviceFromTheOneComputing) {
  // As AHeadSharingAWorkersDeviceSlowsOnlyWhileBothCompute, with each member that waits for a
  // message taking 25% of the shared device (message_cpu.waiting_share): the worker and the head
  // never compute at once, so every one of the step's 80 ms of compute runs beside a waiting
  // member, at 75% of the device's speed: 106.7 ms. On distinct devices nothing changes, nor for
  // two all-reduce workers, which compute at once.
  const std::string device = R"({"name": "gflop", "kind": "cpu", "peak_flops": 1e9,
      "memory_bandwidth": 1e30, "launch_overhead": 0, "efficiency": {"default": 1.0}})";
  const std::string waiting = R"(, "message_cpu": {"waiting_share": 0.25})";
  const auto own = ralp_fc2_step(device, "");
  EXPECT_NEAR(own.step_time_mean_s, 0.080, 1e-3) << own.step_time_mean_s;
  const auto shared = ralp_fc2_step(device, R"(, "shared_devices": [0, 0])" + waiting);
  EXPECT_LT(relative_error(shared.step_time_mean_s, own.step_time_mean_s / 0.75), 1e-6)
      << shared.step_time_mean_s << " against " << own.step_time_mean_s;
  EXPECT_LT(relative_error(ralp_fc2_step(device, R"(, "shared_devices": [1, 0])" + waiting)
                               .step_time_mean_s,
                           own.step_time_mean_s),
            1e-9);
  const auto pair = allreduce_pair_step(device, R"(, "shared_devices": [0, 0])");
  const auto pair_waiting = allreduce_pair_step(device, R"(, "shared_devices": [0, 0])" + waiting);
  EXPECT_LT(relative_error(pair_waiting.step_time_mean_s, pair.step_time_mean_s), 1e-9)
      << pair_waiting.step_time_mean_s << " against " << pair.step_time_mean_s;
}

// Messages that cost CPU time (cluster.message_cpu). Workers compute on a 1 GFLOP/s CPU; the PS
// is an instant GPU, which is never charged. fc 1000 -> 1000 at batch 8: 16 MFLOP forward, and
// 16 MFLOP for each of the weights' and the input's gradient; each layer's parameters and
// gradient are 4 MB, plus a 24-byte header per message.
const char* kGflopCpu = R"({"name": "gflop", "kind": "cpu", "peak_flops": 1e9,
    "memory_bandwidth": 1e30, "launch_overhead": 0, "efficiency": {"default": 1.0}})";
const char* kInstantGpu = R"({"name": "instant-gpu", "kind": "gpu", "peak_flops": 1e30,
    "memory_bandwidth": 1e30})";
constexpr double kLayerMessageBytes = 4e6 + 24;

double charged_step(const std::string& model, const std::string& worker_device,
                    const std::string& bandwidth, const std::string& message_cpu) {
  const Scenario s = scenario_from(
      R"("model": )" + model + R"(, "batch_per_worker": 8, "pcie_copies": false,
      "cluster": {"workers": 1, "worker_device": )" + worker_device + R"(, "ps_device": )" +
      kInstantGpu + message_cpu + R"(, "platform": {"kind": "star", "nic_bandwidth": ")" +
      bandwidth + R"(", "latency": 0}}, "network_model": "ideal", "strategies": ["ps"])");
  return sim::simulate_isolated(s, s.strategies[0], std::nullopt, {}).step_time_mean_s;
}

std::string two_fc_model() {
  return R"({"name": "fc2", "input": [1000, 1, 1], "layers": [
      {"name": "fc1", "type": "fc", "out_features": 1000, "bias": false},
      {"name": "fc2", "type": "fc", "out_features": 1000, "bias": false},
      {"name": "loss", "type": "softmax_cross_entropy"}]})";
}

TEST(ClosedForm, AMessagesCpuTimeSharesTheCoreWithTheComputeItOverlaps) {
  // A network too fast to matter and 1 ns per byte sent. fc2's push (4 ms of CPU) starts with
  // fc1's backward (16 ms): the two share the core, so fc1 ends 4 ms late, and fc1's own push
  // takes its 4 ms after it: 8 ms per step more than free messages.
  const std::string fast = "8000000Gbps";
  const double free = charged_step(two_fc_model(), kGflopCpu, fast, "");
  const double charged =
      charged_step(two_fc_model(), kGflopCpu, fast, R"(, "message_cpu": {"send_ns_per_byte": 1})");
  EXPECT_NEAR(free, 0.080, 1e-3) << free;
  EXPECT_LT(relative_error(charged - free, 2 * kLayerMessageBytes * 1e-9), 1e-6)
      << charged << " against " << free;
}

TEST(ClosedForm, AMessagesCpuTimeBoundsItsTransferWhereTheLinkIsFaster) {
  // One layer, 10 ns per byte sent and received: the worker takes 40 ms to receive the pulled
  // parameters and 40 ms to push the gradient, on a link that would move each in no time.
  const std::string fast = "8000000Gbps";
  const double free = charged_step(fc_model(1000, 1000), kGflopCpu, fast, "");
  const double charged =
      charged_step(fc_model(1000, 1000), kGflopCpu, fast,
                   R"(, "message_cpu": {"send_ns_per_byte": 10, "receive_ns_per_byte": 10})");
  EXPECT_LT(relative_error(charged - free, 2 * kLayerMessageBytes * 10e-9), 1e-6)
      << charged << " against " << free;
}

TEST(ClosedForm, AMessagesCpuTimeHidesInASlowerTransfer) {
  // One layer on a 100 MB/s link: each 4 MB message flows for 40 ms, and its 4 ms of CPU time
  // at each end is spread over them while nothing computes: the step is that of free messages.
  // A GPU worker is not charged at all.
  const std::string slow = "800Mbps";
  const std::string both = R"(, "message_cpu": {"send_ns_per_byte": 1, "receive_ns_per_byte": 1})";
  const double free = charged_step(fc_model(1000, 1000), kGflopCpu, slow, "");
  EXPECT_NEAR(free, 0.032 + 2 * kLayerMessageBytes / 1e8, 1e-4) << free;
  EXPECT_LT(relative_error(charged_step(fc_model(1000, 1000), kGflopCpu, slow, both), free), 1e-9);
  EXPECT_DOUBLE_EQ(charged_step(fc_model(1000, 1000), kInstantGpu, slow, both),
                   charged_step(fc_model(1000, 1000), kInstantGpu, slow, ""));
}

TEST(ClosedForm, AMessagesCpuTimePerMessageAddsLikeItsTimePerByte) {
  // 4,000 us per message sent costs what 1 ns per byte of fc2's two 4 MB pushes does (8 ms per
  // step, as above, where fc2's push shares the core with fc1's backward); the pulls' and the
  // step's header-only messages cost nothing.
  const std::string fast = "8000000Gbps";
  const double free = charged_step(two_fc_model(), kGflopCpu, fast, "");
  const double charged = charged_step(two_fc_model(), kGflopCpu, fast,
                                      R"(, "message_cpu": {"send_us_per_message": 4000})");
  EXPECT_LT(relative_error(charged - free, 0.008), 1e-6) << charged << " against " << free;
}

TEST(ClosedForm, AMessagesCpuTimePerMessageDelaysItButNotItsBytes) {
  // 40 ms per message received: the worker's pull arrives 40 ms later on a link that moves it in
  // no time. On a 100 MB/s link (40 ms per 4 MB message) the same time is spent while the pull
  // flows, and neither the pull nor the push flows slower than free messages.
  const std::string fast = "8000000Gbps";
  const std::string per_message = R"(, "message_cpu": {"receive_us_per_message": 40000})";
  const double free = charged_step(fc_model(1000, 1000), kGflopCpu, fast, "");
  EXPECT_LT(relative_error(charged_step(fc_model(1000, 1000), kGflopCpu, fast, per_message) - free,
                           0.040),
            1e-6);
  const std::string slow = "800Mbps";
  EXPECT_LT(relative_error(charged_step(fc_model(1000, 1000), kGflopCpu, slow, per_message),
                           charged_step(fc_model(1000, 1000), kGflopCpu, slow, "")),
            1e-9);
}

TEST(ClosedForm, ARingMembersMessagesCostTheirCpuTimePerMessage) {
  // Two CPU workers all-reduce fc's 4 MB gradient once its backward ends: each member sends two
  // chunk messages and receives two, on a link that moves them in no time. 1 ms per message
  // sent and 0.5 ms per message received add 3 ms to the step, in either ring form.
  for (const char* ring : {"message", "coalesced"}) {
    const auto step = [&](const std::string& message_cpu) {
      const Scenario s = scenario_from(
          R"("model": )" + fc_model(1000, 1000) + R"(, "batch_per_worker": 8, "pcie_copies": false,
          "cluster": {"workers": 2, "parameter_servers": 0, "worker_device": )" + kGflopCpu +
          message_cpu + R"(, "platform": {"kind": "star", "nic_bandwidth": "8000000Gbps",
          "latency": 0}}, "network_model": "ideal",
          "strategies": [{"name": "allreduce", "cycle_time": 0, "ring_model": ")" + ring + R"("}])");
      return sim::simulate_isolated(s, s.strategies[0], std::nullopt, {}).step_time_mean_s;
    };
    const double free = step("");
    const double charged =
        step(R"(, "message_cpu": {"send_us_per_message": 1000, "receive_us_per_message": 500})");
    EXPECT_LT(relative_error(charged - free, 0.003), 1e-5)
        << ring << ": " << charged << " against " << free;
  }
}

// NICs shaped by token buckets (platform.nic_burst, a tc tbf's burst): one PS and one worker,
// every NIC 1 GB/s, no latency, a step that pulls and then pushes S = 4,000,024 bytes, and
// `steps` steps with no warm-up.
StrategyResult bucket_steps(const std::string& burst, int steps, const std::string& strategy) {
  const Scenario s = scenario_from(
      R"("model": )" + fc_model(1000, 1000) + R"(, "batch_per_worker": 8, "cluster": {"workers": 1,
      "worker_device": )" + kInstantDevice + R"(, "platform": {"kind": "star",
      "nic_bandwidth": "8Gbps", "latency": 0, "nic_burst": )" + burst + R"(}},
      "network_model": "ideal", "steps": )" + std::to_string(steps) +
      R"(, "warmup_steps": 0, "strategies": [")" + strategy + R"("])");
  return sim::simulate_isolated(s, s.strategies[0], std::nullopt, {});
}

constexpr double kBucketMessage = 4e6 + 24;

TEST(ClosedForm, TokenBucketNicsPassTheirBurstAtOnce) {
  // With 1 MB buckets every message starts on full ones (each direction idles for the other's
  // 3 ms): 2 x (S - 1 MB) / 1 GB/s = 6.000048 ms per step. Without buckets: 2 S / 1 GB/s.
  const StrategyResult plain = bucket_steps("0", 3, "ps");
  EXPECT_LT(relative_error(plain.step_time_mean_s, 2 * kBucketMessage / 1e9), 1e-6)
      << plain.step_time_mean_s;
  const StrategyResult burst = bucket_steps("1e6", 3, "ps");
  for (const double t : burst.step_times) {
    EXPECT_LT(relative_error(t, 2 * (kBucketMessage - 1e6) / 1e9), 1e-6) << t;
  }
  // The burst changes times, not bytes.
  EXPECT_DOUBLE_EQ(host(burst, "ps-0").bytes_out, kBucketMessage);
  EXPECT_DOUBLE_EQ(host(burst, "ps-0").bytes_in, kBucketMessage);
}

TEST(ClosedForm, TokenBucketsRefillOnlyWhileTheirLinkIdles) {
  // 3 MB buckets. Step 1 finds them full: 2 x (S - 3 MB) = 2.000048 ms. From then on a pull
  // finds the PS's uplink refilled during the last push only (1.000024 ms: 1,000,024 bytes), so
  // it takes 3 ms, and the push that follows finds the worker's uplink refilled for 3 ms (full):
  // (S - 3 MB) / 1 GB/s = 1.000024 ms; 4.000024 ms per step.
  const StrategyResult r = bucket_steps("3e6", 4, "ps");
  ASSERT_EQ(r.step_times.size(), 4U);
  EXPECT_LT(relative_error(r.step_times[0], 2 * (kBucketMessage - 3e6) / 1e9), 1e-6)
      << r.step_times[0];
  for (size_t k = 1; k < r.step_times.size(); ++k) {
    EXPECT_LT(relative_error(r.step_times[k], kBucketMessage / 1e9), 1e-6) << k << ": "
                                                                           << r.step_times[k];
  }
}

TEST(ClosedForm, AFlowThatJoinsALinkTakesWhatItsBucketHasLeft) {
  // One PS pulls S = 1,000,024 bytes to each of two workers at once through its 1.5 MB uplink
  // bucket: one pull passes whole, the other the 499,976 bytes left and the rest, 500,048 bytes,
  // at 1 GB/s (as a tc tbf lets any packet through while it holds tokens). The pushes find the
  // PS's downlink bucket with 499,976 bytes and, when the second arrives 0.5 ms later, refilled
  // by 500,048 bytes: both pass at once. One step: 0.500048 ms (a bucket that gave a joining
  // flow nothing would make it 1.000024 ms). Within 5 ns: SimGrid's timing precision is 1 ns.
  const Scenario s = scenario_from(
      R"("model": )" + fc_model(500, 500) + R"(, "batch_per_worker": 8, "cluster": {"workers": 2,
      "worker_device": )" + kInstantDevice + R"(, "platform": {"kind": "star",
      "nic_bandwidth": "8Gbps", "latency": 0, "nic_burst": 1.5e6}}, "network_model": "ideal",
      "steps": 1, "warmup_steps": 0, "strategies": ["ps"])");
  const StrategyResult r = sim::simulate_isolated(s, s.strategies[0], std::nullopt, {});
  ASSERT_EQ(r.step_times.size(), 1U);
  EXPECT_LT(relative_error(r.step_times[0], 500'048e-9), 1e-5) << r.step_times[0];
}

TEST(ClosedForm, AnIdleRingEdgePassesItsBurstOnce) {
  // Two workers all-reduce S: each sends S / 2 twice over its uplink (2 x 2,000,036 bytes with
  // headers, reduce-scatter then all-gather) with no pause between, 4 ms without buckets. A 1 MB
  // bucket, full when the step begins, takes 1 ms off whichever ring form runs.
  for (const char* ring : {"message", "coalesced"}) {
    const Scenario s = scenario_from(
        R"("model": )" + fc_model(1000, 1000) + R"(, "batch_per_worker": 8, "cluster": {"workers": 2,
        "worker_device": )" + kInstantDevice + R"(, "platform": {"kind": "star",
        "nic_bandwidth": "8Gbps", "latency": 0, "nic_burst": 1e6}}, "network_model": "ideal",
        "steps": 1, "warmup_steps": 0,
        "strategies": [{"name": "allreduce", "cycle_time": 0, "ring_model": ")" + ring + R"("}])");
    const auto r = sim::simulate_isolated(s, s.strategies[0], std::nullopt, {});
    EXPECT_LT(relative_error(r.step_time_mean_s, 0.003), 1e-3) << ring << ": " << r.step_time_mean_s;
  }
}

TEST(ClosedForm, ARingMembersMessageCpuSpreadsOverWhatFlowsAfterItsBurst) {
  // The ring of the test above on 1 GFLOP/s CPUs, whose members spend 0.1 ns a byte sent and
  // 0.1 ns a byte received, 0.4 ms a phase, spread while their bytes flow: the first phase's
  // bytes flow 1 ms after the bucket's burst, the second's 2 ms, and the CPU, idle after
  // backward, keeps up. The step takes as long as with free messages (spread over the 2 ms the
  // first phase's bytes would take without the burst, it took 1 ms longer).
  for (const char* ring : {"message", "coalesced"}) {
    const auto step = [&](const std::string& message_cpu) {
      const Scenario s = scenario_from(
          R"("model": )" + fc_model(1000, 1000) + R"(, "batch_per_worker": 8, "cluster": {"workers": 2,
          "parameter_servers": 0, "worker_device": )" + kGflopCpu + message_cpu +
          R"(, "platform": {"kind": "star", "nic_bandwidth": "8Gbps", "latency": 0,
          "nic_burst": 1e6}}, "network_model": "ideal", "steps": 1, "warmup_steps": 0,
          "strategies": [{"name": "allreduce", "cycle_time": 0, "ring_model": ")" + ring +
          R"("}])");
      return sim::simulate_isolated(s, s.strategies[0], std::nullopt, {}).step_time_mean_s;
    };
    const double free = step("");
    const double charged =
        step(R"(, "message_cpu": {"send_ns_per_byte": 0.1, "receive_ns_per_byte": 0.1})");
    EXPECT_LT(relative_error(charged, free), 1e-6) << ring << ": " << charged << " against " << free;
  }
}

}  // namespace
}  // namespace ralp
