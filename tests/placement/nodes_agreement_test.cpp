// The analytic model against the event simulation on nodes of several devices: NCCL's ring in
// node order and the hierarchical all-reduce, and ps, ralp and hybrid with and without local
// aggregation, on NVLink and PCIe nodes.
#include <cstdio>
#include <filesystem>

#include <gtest/gtest.h>

#include "ralp/placement/analytic.hpp"
#include "ralp/sim/simulate.hpp"

namespace ralp {
namespace {

// Measured: at most 1.7% (ps and ralp with local aggregation), the ring, ps without it and
// hybrid within 1.6%; docs/nodes.md.
constexpr double kTolerance = 0.02;
// ralp with every device a worker: its staggered devices share their node's NIC to the servers,
// which the analytic's fluid model gives each device alone: up to 2.6% optimistic.
constexpr double kDevicesTolerance = 0.03;
// Hierarchical all-reduce: the analytic is up to 10% optimistic (the gathers, sums and sends
// back of successive buffers overlap on the first device's links and device in the event
// simulation in ways its per-buffer recurrence leaves out).
constexpr double kHierarchicalTolerance = 0.12;

Scenario nodes_scenario(const std::string& model, int nodes, int per_node,
                        const std::string& interconnect, const std::string& nic, int servers = 2) {
  const std::string cut = model == "resnet50" ? "fc" : "fc6";
  const std::string text = R"({"name": "nodes", "model": ")" + model + R"(",
      "batch_per_worker": 32,
      "cluster": {"workers": )" + std::to_string(nodes * per_node) + R"(, "devices_per_node": )" +
      std::to_string(per_node) + R"(, "parameter_servers": )" + std::to_string(servers) +
      R"(, "worker_device": "v100",
                  "ps_device": "v100", "node_interconnect": )" + interconnect + R"(,
                  "platform": {"kind": "star", "nic_bandwidth": ")" + nic + R"(",
                               "latency": "5us"}},
      "strategies": [{"name": "ps", "label": "ps-local"},
                     {"name": "ps", "label": "ps-devices", "local_aggregation": false},
                     {"name": "allreduce", "cycle_time": 0},
                     {"name": "allreduce", "label": "hierarchical", "cycle_time": 0,
                      "algorithm": "hierarchical"},
                     {"name": "ralp", "label": "ralp-local", "cut": ")" + cut + R"("},
                     {"name": "ralp", "label": "ralp-devices", "cut": ")" + cut + R"(",
                      "local_aggregation": false},
                     {"name": "hybrid", "label": "hybrid-local", "cut": ")" + cut + R"(",
                      "cycle_time": 0},
                     {"name": "hybrid", "label": "hybrid-devices", "cut": ")" + cut + R"(",
                      "cycle_time": 0, "local_aggregation": false}],
      "steps": 2, "warmup_steps": 1})";
  return parse_scenario(parse_json_text(text, "nodes.json"), "nodes.json", RALP_TEST_DATA_DIR);
}

TEST(NodesAgreement, AnalyticAgreesWithTheEventSimulation) {
  const std::string nvlink = R"({"kind": "nvswitch", "bandwidth": "150GBps", "latency": "1us"})";
  const std::string pcie =
      R"({"kind": "pcie", "bandwidth": "16GBps", "latency": "1us", "host_links": 2})";
  const std::vector<Scenario> scenarios = {
      nodes_scenario("resnet50", 2, 4, nvlink, "25Gbps"),
      nodes_scenario("vgg16", 4, 8, nvlink, "100Gbps"),
      nodes_scenario("alexnet", 2, 4, pcie, "10Gbps"),
      // One server: with two, round-robin puts VGG-16's weights on ps-0 and its biases on ps-1,
      // and where the node's NIC is the bottleneck the analytic's equal shares of it are 2x off.
      nodes_scenario("vgg16", 1, 8, pcie, "10Gbps", 1),
  };
  for (const Scenario& s : scenarios) {
    for (const StrategySpec& spec : s.strategies) {
      const std::optional<LayerId> cut = spec.cut ? s.model.find(*spec.cut) : std::nullopt;
      const double analytic = placement::estimate_strategy(s, spec, cut).step_time_s;
      const double simulated = sim::simulate_isolated(s, spec, cut, {}).step_time_mean_s;
      const double error = (analytic - simulated) / simulated;
      std::printf("%-10s %2lld x %lld  %-10s analytic %9.3f ms  simulated %9.3f ms  %+6.2f%%\n",
                  s.model.name().c_str(), static_cast<long long>(s.workers / s.nodes.devices_per_node),
                  static_cast<long long>(s.nodes.devices_per_node), spec.label.c_str(),
                  1e3 * analytic, 1e3 * simulated, 100 * error);
      const bool hierarchical = spec.algorithm == AllreduceAlgorithm::hierarchical;
      const bool devices = spec.kind == StrategyKind::ralp && !spec.local_aggregation;
      EXPECT_LT(std::abs(error), hierarchical ? kHierarchicalTolerance
                                 : devices    ? kDevicesTolerance
                                              : kTolerance)
          << s.model.name() << " " << spec.label;
    }
  }
}

// Co-located parameter servers: published setups of each kind (scenarios/published/multi-gpu)
// at wire speed (the analytic fidelity prices no transport), with ralp and hybrid at the FC head
// beside each's ps. Measured: within 5.8% (pessimistic, on the EC2 p2.8xlarge distributed row: 4
// nodes of 8 K80 with a CPU server each), on one node within 1.1%; docs/nodes.md.
constexpr double kColocatedTolerance = 0.07;

TEST(NodesAgreement, AnalyticAgreesWithCoLocatedServers) {
  const std::filesystem::path folder =
      std::filesystem::path(RALP_SOURCE_DIR) / "scenarios/published/multi-gpu";
  for (const char* name :
       {"horovod-1b-vgg16-16gpu-distributed-tensorflow-ps-grpc",
        "horovod-1c-resnet101-64gpu-distributed-tensorflow-ps-grpc",
        "tf-cnn-dgx-1-resnet50-8gpu-b64-parameter-server-local-parameter-device-cpu",
        "tf-cnn-ec2-p2-8xlarge-vgg16-8gpu-b32-parameter-server-gpu",
        "tf-cnn-ec2-p2-8xlarge-distributed-resnet50-32gpu-b32-distributed-replicated-cross-"
        "replica-sync-4ps"}) {
    Scenario s = load_scenario(folder / (std::string(name) + ".json"));
    ASSERT_EQ(s.nodes.ps_placement, PsPlacement::colocated) << name;
    StrategySpec ps = s.strategies.front();
    ps.transport = ideal_transport();
    ps.token_queues = false;  // the barriers only the event simulation models
    const std::string cut = s.model.name().starts_with("vgg") ? "fc6" : "fc";
    std::vector<StrategySpec> specs = {ps};
    for (const StrategyKind kind : {StrategyKind::ralp, StrategyKind::hybrid}) {
      StrategySpec head = ps;
      head.kind = kind;
      head.label = std::string(to_string(kind));
      head.cut = cut;
      specs.push_back(head);
    }
    for (const StrategySpec& spec : specs) {
      const std::optional<LayerId> at = spec.cut ? s.model.find(*spec.cut) : std::nullopt;
      const double analytic = placement::estimate_strategy(s, spec, at).step_time_s;
      const double simulated = sim::simulate_isolated(s, spec, at, {}).step_time_mean_s;
      const double error = (analytic - simulated) / simulated;
      std::printf("%-72s %-7s analytic %9.3f ms  simulated %9.3f ms  %+6.2f%%\n", name,
                  spec.label.c_str(), 1e3 * analytic, 1e3 * simulated, 100 * error);
      EXPECT_LT(std::abs(error), kColocatedTolerance) << name << " " << spec.label;
    }
  }
}

}  // namespace
}  // namespace ralp
