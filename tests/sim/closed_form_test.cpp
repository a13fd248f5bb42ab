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

}  // namespace
}  // namespace ralp
