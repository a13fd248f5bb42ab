// Transports (devices/transport.hpp) against closed forms on the ideal network model, with compute
// that vanishes: one message of S bytes costs what its transport's parameters say.
#include <cstdlib>

#include <gtest/gtest.h>

#include "ralp/sim/simulate.hpp"
#include "sim_fixtures.hpp"

namespace ralp {
namespace {

using testing::fc_model;
using testing::kInstantDevice;
using testing::relative_error;
using testing::scenario_from;

constexpr double kTolerance = 0.01;
// fc_model(1000, 1000): 4 MB of weights; each message carries a 24-byte header.
constexpr double kMessageBytes = 4e6 + 24;
// test-cpu: 100 us per message, 2 ns per byte at each end.
constexpr double kMessageSeconds = 100e-6 + 2e-9 * kMessageBytes;

// A GPU whose compute vanishes: its messages' CPU time is on a host core of its own.
const char* kInstantGpu =
    R"({"name": "instant-gpu", "kind": "gpu", "peak_flops": 1e30, "memory_bandwidth": 1e30,
        "pcie_bandwidth": 1e30})";

class TransportTest : public ::testing::Test {
 protected:
  void SetUp() override {
    setenv("RALP_TRANSPORT_PATH", RALP_TEST_DATA_DIR "/transports", 1);  // test-cpu, test-share
  }
  void TearDown() override { unsetenv("RALP_TRANSPORT_PATH"); }

  // W workers and one PS on `device`, every NIC 8 Gbps (1 GB/s), the strategy as given.
  static Scenario cluster(int workers, const std::string& device, const std::string& strategy,
                          const std::string& extra = "", const std::string& latency = "0") {
    return scenario_from(R"("model": )" + fc_model(1000, 1000) +
                         R"(, "batch_per_worker": 8, "cluster": {"workers": )" +
                         std::to_string(workers) + extra + R"(, "worker_device": )" + device +
                         R"(, "ps_device": )" + device +
                         R"(, "platform": {"kind": "star", "nic_bandwidth": "8Gbps", "latency": ")" +
                         latency + R"("}},
                         "pcie_copies": false, "network_model": "ideal", "strategies": [)" +
                         strategy + "]");
  }
  static double step(const Scenario& s) {
    return sim::simulate_isolated(s, s.strategies[0], std::nullopt, {}).step_time_mean_s;
  }
};

TEST_F(TransportTest, IdealIsTheWire) {
  // One worker: a pull and a push of 4 MB at 1 GB/s.
  const Scenario s = cluster(1, kInstantDevice, R"({"name": "ps", "transport": "ideal"})");
  EXPECT_LT(relative_error(step(s), 2 * kMessageBytes / 1e9), kTolerance) << step(s);
}

TEST_F(TransportTest, AMessageCostsItsCpuTimeWhereThatExceedsTheWire) {
  // 100 us + 2 ns x 4 MB = 8.1 ms per message against 4 ms on the wire, on a CPU (charged there)
  // and on a GPU (a core of its own): a pull and a push.
  for (const char* device : {kInstantDevice, kInstantGpu}) {
    const Scenario s = cluster(1, device, R"({"name": "ps", "transport": "test-cpu"})");
    EXPECT_LT(relative_error(step(s), 2 * kMessageSeconds), kTolerance) << device << ": " << step(s);
  }
}

TEST_F(TransportTest, APsOnACpuSpendsEveryConnectionsTimeOnThatCpu) {
  // Four workers pull at once: the PS's CPU sends the four messages one CPU-time after another
  // (4 x 8.1 ms, more than 16 ms on its NIC), then receives the four pushes likewise. On GPUs,
  // each connection has a core of its own: the PS's NIC (16 ms each way) decides.
  const Scenario cpu = cluster(4, kInstantDevice, R"({"name": "ps", "transport": "test-cpu"})");
  EXPECT_LT(relative_error(step(cpu), 8 * kMessageSeconds), kTolerance) << step(cpu);
  const Scenario gpu = cluster(4, kInstantGpu, R"({"name": "ps", "transport": "test-cpu"})");
  EXPECT_LT(relative_error(step(gpu), 8 * kMessageBytes / 1e9), kTolerance) << step(gpu);
}

TEST_F(TransportTest, ALinkShareSlowsConnectionsBetweenNodesOnly) {
  // Ring all-reduce of 4 MB over 4 workers: 2 x 3/4 x 4 MB at 1 GB/s = 6 ms; at half the link,
  // 12 ms. On one node of 4 devices the ring never leaves it: the share does not apply.
  const std::string ring = R"({"name": "allreduce", "cycle_time": 0, "transport": "test-share"})";
  const Scenario apart = cluster(4, kInstantDevice, ring);
  EXPECT_LT(relative_error(step(apart), 0.012), kTolerance) << step(apart);
  const std::string node = R"(, "devices_per_node": 4, "parameter_servers": 0,
      "node_interconnect": {"kind": "pcie", "bandwidth": "8Gbps", "latency": 0})";
  const Scenario together = cluster(4, kInstantDevice, ring, node);
  const Scenario wire = cluster(4, kInstantDevice, R"({"name": "allreduce", "cycle_time": 0})", node);
  EXPECT_GT(step(together), 0.0);
  EXPECT_DOUBLE_EQ(step(together), step(wire));
}

TEST_F(TransportTest, ARateHoldsOnRoutesWithLatency) {
  // The same closed forms with 100 us on every link (200 us a route on the star): a link share
  // and a CPU's pace bound a flow's rate whatever the latency the network model adds. At half
  // of 1 GB/s, each of the ring's 6 hops takes 1 ms more than on the ideal transport; the PS's
  // pull and push on a GPU take 200 us + 8.1 ms each.
  const std::string ring = R"({"name": "allreduce", "cycle_time": 0, "transport": "test-share"})";
  const Scenario shared = cluster(4, kInstantDevice, ring, "", "100us");
  const Scenario wire =
      cluster(4, kInstantDevice, R"({"name": "allreduce", "cycle_time": 0})", "", "100us");
  EXPECT_LT(relative_error(step(shared) - step(wire), 6e-3), kTolerance) << step(shared);
  const Scenario cpu =
      cluster(1, kInstantGpu, R"({"name": "ps", "transport": "test-cpu"})", "", "100us");
  EXPECT_LT(relative_error(step(cpu), 2 * (200e-6 + kMessageSeconds)), kTolerance) << step(cpu);
}

TEST_F(TransportTest, AnUnknownTransportNamesTheKeyAndTheAcceptedNames) {
  try {
    (void)cluster(1, kInstantDevice, R"({"name": "ps", "transport": "tf-grcp"})");
    FAIL() << "accepted an unknown transport";
  } catch (const InputError& e) {
    EXPECT_EQ(e.path(), "/strategies/0/transport");
    const std::string what = e.what();
    // The project's transports and the test's, from RALP_TRANSPORT_PATH.
    EXPECT_NE(what.find("expected one of: ideal, mpi-cpu, nccl, test-cpu, test-share, tf-grpc"),
              std::string::npos)
        << what;
    EXPECT_NE(what.find("did you mean \"tf-grpc\""), std::string::npos) << what;
  }
}

}  // namespace
}  // namespace ralp
