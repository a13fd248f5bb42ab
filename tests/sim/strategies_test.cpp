// Strategy semantics: ring forms agree, deadlocks are errors, stragglers, compression, PCIe
// copies, sharding, head modes, hybrid, measured compute times being reported as such, and the
// simulator module.
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>

#include <gtest/gtest.h>

#include "ralp/schedule/schedule.hpp"
#include "ralp/sim/simulate.hpp"
#include "ralp/sim/step_model.hpp"
#include "sim_fixtures.hpp"

namespace ralp {
namespace {

using testing::fc_model;
using testing::host;
using testing::kInstantDevice;
using testing::relative_error;
using testing::scenario_from;

Scenario cifar(const std::string& strategies, int workers = 4, const std::string& network = "tcp",
               const std::string& extra = "") {
  return scenario_from(R"("model": "cifar_alexnet", "batch_per_worker": 16, "cluster": {"workers": )" +
                       std::to_string(workers) +
                       R"(, "parameter_servers": 2, "worker_device": "gtx1080ti",
                       "platform": {"kind": "star", "nic_bandwidth": "1Gbps", "latency": "50us"}},
                       "network_model": ")" + network + R"(", "strategies": )" + strategies +
                       R"(, "steps": 3, "warmup_steps": 1)" + extra);
}

// Push messages one worker sends per step: one per variable group.
size_t push_messages(const Scenario& s) {
  return schedule::build_schedule(schedule::make_step_plan(s, s.strategies[0], std::nullopt),
                                  s.parameter_servers)
      .groups.size();
}

StrategyResult run(const Scenario& s, size_t index = 0, const char* cut = nullptr) {
  const auto id = cut ? s.model.find(cut) : std::nullopt;
  return sim::simulate_isolated(s, s.strategies[index], id, {});
}

TEST(Strategies, CoalescedRingEqualsMessageRing) {
  for (const char* network : {"tcp", "ideal"}) {
    for (int workers : {2, 3, 8}) {
      const Scenario s = cifar(R"([{"name": "allreduce", "ring_model": "message"},
                                  {"name": "allreduce", "label": "c", "ring_model": "coalesced"}])",
                               workers, network);
      const double message = run(s, 0).step_time_mean_s;
      const double coalesced = run(s, 1).step_time_mean_s;
      // The forms differ only where a buffer's last chunk is shorter (W does not divide it) and
      // where the header-only negotiation shares the links with the ring: microseconds.
      EXPECT_LT(relative_error(coalesced, message), 1e-5)
          << network << ", " << workers << " workers: " << coalesced << " vs " << message;
    }
  }
}

TEST(Strategies, AutoRingPicksTheExactCheapFormOnlyWhereItApplies) {
  const Scenario s = cifar(R"(["allreduce", {"name": "hybrid", "cut": "fc3"}])");
  EXPECT_EQ(run(s, 0).ring_model, "coalesced");
  EXPECT_EQ(run(s, 1, "fc3").ring_model, "message");
}

TEST(Strategies, ADeadlockIsAnErrorNotAResult) {
  // A schedule in which worker-1 waits for a message that nobody sends: SimGrid reports the
  // deadlock and returns; the step model must throw.
  const Scenario s = cifar(R"(["allreduce"])");
  schedule::Schedule plan = schedule::build_schedule(
      schedule::make_step_plan(s, s.strategies[0], std::nullopt), s.parameter_servers);
  schedule::RoleSchedule& worker = plan.roles[static_cast<size_t>(plan.worker_host(1))];
  schedule::Op never;
  never.kind = schedule::OpKind::receive;
  never.message = {schedule::MessageKind::go, plan.worker_host(2), 99, 0};
  never.after_begin = never.after_end = static_cast<uint32_t>(worker.after.size());
  worker.ops.push_back(never);
  std::fflush(nullptr);
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    try {
      sim::run_step_model(s, plan, {});
    } catch (const std::runtime_error& e) {
      _exit(std::string(e.what()).find("deadlock") != std::string::npos ? 3 : 4);
    }
    _exit(5);
  }
  int status = 0;
  waitpid(child, &status, 0);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 3);
}

// The step model lives in a module that the first simulation opens (sim/CMakeLists.txt); opening
// it maps SimGrid into the process (the CLI test checks that `ralp --version` does not).
TEST(SimulatorModule, LoadingItMapsSimgrid) {
  sim::load_simulator();
  std::ifstream maps("/proc/self/maps");
  bool simgrid = false;
  for (std::string line; std::getline(maps, line);) {
    simgrid = simgrid || line.find("libsimgrid") != std::string::npos;
  }
  EXPECT_TRUE(simgrid);
}

TEST(Strategies, StragglersSlowTheirWorkersCompute) {
  // With probability 1 every worker is 3x slower at every step.
  const Scenario base = cifar(R"(["ps"])");
  const Scenario slow =
      cifar(R"(["ps"])", 4, "tcp", R"(, "stragglers": {"kind": "bernoulli", "probability": 1,
      "slowdown": 3})");
  EXPECT_NEAR(run(slow).worker_mean.compute, 3 * run(base).worker_mean.compute, 1e-9);
  // Lognormal draws are seeded: the same seed gives the same steps, another seed others.
  const auto lognormal = [](int seed) {
    return cifar(R"(["ps"])", 4, "tcp",
                 R"(, "stragglers": {"kind": "lognormal", "sigma": 0.5}, "seed": )" +
                     std::to_string(seed));
  };
  EXPECT_EQ(run(lognormal(7)).step_times, run(lognormal(7)).step_times);
  EXPECT_NE(run(lognormal(7)).step_times, run(lognormal(8)).step_times);
}

TEST(Strategies, Fp16CompressionHalvesPushes) {
  const Scenario plain = cifar(R"(["ps"])");
  const Scenario fp16 = cifar(R"(["ps"])", 4, "tcp", R"(, "compression": {"kind": "fp16"})");
  // Half the payload of each push message; the headers stay whole.
  const double headers = 24.0 * static_cast<double>(push_messages(plain));
  const double pushed = host(run(plain), "worker-0").bytes_out - headers;
  EXPECT_NEAR(host(run(fp16), "worker-0").bytes_out - headers, pushed / 2, 8);
  // Pulls (parameters) are not compressed.
  EXPECT_DOUBLE_EQ(host(run(fp16), "worker-0").bytes_in, host(run(plain), "worker-0").bytes_in);
}

TEST(Strategies, PcieCopiesCostTimeOnGpus) {
  const Scenario with = cifar(R"(["ps"])");
  const Scenario without = cifar(R"(["ps"])", 4, "tcp", R"(, "pcie_copies": false)");
  EXPECT_GT(run(with).step_time_mean_s, run(without).step_time_mean_s);
}

TEST(Strategies, GreedyShardingBalancesBytes) {
  // cifar_alexnet's fc3 weight (16.8 MB) dwarfs the rest: round-robin puts more on one shard
  // than greedy does.
  const Scenario rr = cifar(R"(["ps"])");
  const Scenario greedy = cifar(R"([{"name": "ps", "sharding": "greedy"}])");
  const auto imbalance = [](const StrategyResult& r) {
    return std::abs(host(r, "ps-0").bytes_in - host(r, "ps-1").bytes_in);
  };
  EXPECT_LE(imbalance(run(greedy)), imbalance(run(rr)));
  // Both move every gradient once per worker, with a header per message.
  const auto payload = [](const Scenario& s) {
    const auto r = run(s);
    return host(r, "ps-0").bytes_in + host(r, "ps-1").bytes_in -
           24.0 * static_cast<double>(s.workers * push_messages(s));
  };
  EXPECT_DOUBLE_EQ(payload(greedy), payload(rr));
}

TEST(Strategies, HeadModesAndHybridRun) {
  const Scenario s = cifar(R"([{"name": "ralp", "cut": "flatten"},
      {"name": "ralp", "label": "batched", "cut": "flatten", "head_mode": "all_workers"},
      {"name": "hybrid", "cut": "flatten"}])");
  const auto per_worker = run(s, 0, "flatten");
  const auto batched = run(s, 1, "flatten");
  const auto hybrid = run(s, 2, "flatten");
  for (const auto* r : {&per_worker, &batched, &hybrid}) {
    EXPECT_GT(r->step_time_mean_s, 0.0);
    EXPECT_EQ(r->step_times.size(), 4u);
  }
  // The same activations cross the network in both head modes.
  EXPECT_DOUBLE_EQ(host(per_worker, "ps-0").bytes_in, host(batched, "ps-0").bytes_in);
  // Hybrid's workers exchange the tail's gradients among themselves: PS traffic is the boundary.
  EXPECT_LT(host(hybrid, "ps-1").bytes_in, 1.0);
  EXPECT_GT(host(hybrid, "worker-0").bytes_out, host(per_worker, "worker-0").bytes_out / 2);
}

TEST(Strategies, MeasuredTimesAreUsedAndReported) {
  const Scenario plain = cifar(R"(["ps"])");
  const Layer& conv2 = plain.model.layer(*plain.model.find("conv2"));
  const std::string device = R"({"name": "measured-gpu", "kind": "gpu", "source": "measured",
      "peak_flops": "11.34TFLOPS", "memory_bandwidth": "484GB/s", "pcie_bandwidth": "12GB/s",
      "measured": {"layers": [{"signature": ")" + conv2.signature() + R"(", "kind": "conv2d",
      "batch": 16, "forward": 0.5, "backward_data": 0.25, "backward_weight": 0.25}]}})";
  const Scenario s = scenario_from(R"("model": "cifar_alexnet", "batch_per_worker": 16,
      "cluster": {"workers": 2, "worker_device": )" + device + R"(, "platform": {"kind": "star",
      "nic_bandwidth": "1Gbps"}}, "strategies": ["allreduce"])");
  const auto r = run(s);
  EXPECT_EQ(r.worker_sources.measured, 1u);
  EXPECT_EQ(r.worker_sources.profile_source, "measured");
  // One second of measured conv2 per step dominates the compute.
  EXPECT_GT(r.worker_mean.compute, 1.0);
  EXPECT_LT(r.worker_mean.compute, 1.01);
}

}  // namespace
}  // namespace ralp
