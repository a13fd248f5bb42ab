// Command-line overrides of a scenario: each replaces its value, is checked as the file is, and
// its errors name the option.
#include "ralp/spec/scenario_overrides.hpp"

#include <filesystem>

#include <gtest/gtest.h>

namespace ralp {
namespace {

namespace fs = std::filesystem;
const fs::path kData = RALP_TEST_DATA_DIR "/data";

// small-mixed.json: cifar_alexnet, 4 workers, 1 PS, batch 16, 1 Gbps star with 50 us latency,
// strategies ps, ralp@fc3, ralp-auto, allreduce.
Scenario with(const std::vector<ScenarioOverride>& overrides) {
  return load_scenario(kData / "scenarios/small-mixed.json", overrides);
}

std::string error_of(const std::vector<ScenarioOverride>& overrides,
                     const std::string& text = "") {
  try {
    if (text.empty()) {
      with(overrides);
    } else {
      parse_scenario(parse_json_text(text, "s.json"), "s.json", kData / "scenarios", overrides);
    }
  } catch (const InputError& e) {
    return e.what();
  }
  return "no error";
}

std::vector<std::string> labels(const Scenario& s) {
  std::vector<std::string> out;
  for (const auto& st : s.strategies) out.push_back(st.label);
  return out;
}

TEST(ScenarioOverrides, NoOverridesReadTheFileAsItIs) {
  const fs::path file = kData / "scenarios/small-mixed.json";
  EXPECT_EQ(scenario_to_json(load_scenario(file, {})), scenario_to_json(load_scenario(file)));
}

TEST(ScenarioOverrides, EachReplacesItsValue) {
  const Scenario s = with({{"workers", "16"},
                           {"parameter-servers", "2"},
                           {"batch", "64"},
                           {"bandwidth", "10Gbps"},
                           {"latency", "5us"},
                           {"network-model", "ideal"}});
  EXPECT_EQ(s.workers, 16);
  EXPECT_EQ(s.parameter_servers, 2);
  EXPECT_EQ(s.batch_per_worker, 64);
  EXPECT_DOUBLE_EQ(s.platform.nic.bandwidth.value(), 1.25e9);  // 10 Gbit/s = 1.25 GB/s
  EXPECT_DOUBLE_EQ(s.platform.nic.latency.value(), 5e-6);
  EXPECT_EQ(s.network_model.kind, NetworkModelKind::ideal);
  // Everything else is the file's.
  EXPECT_EQ(labels(s), (std::vector<std::string>{"ps", "ralp@fc3", "ralp-auto", "allreduce"}));
  EXPECT_EQ(s.steps, 3);
  EXPECT_EQ(s.seed, 7u);
  // Plain numbers are SI base units, as in the file: 125000000 bytes/s is 1 Gbit/s.
  EXPECT_DOUBLE_EQ(with({{"bandwidth", "125000000"}}).platform.nic.bandwidth.value(), 125e6);
}

TEST(ScenarioOverrides, StrategyKeepsALabelElseAKind) {
  EXPECT_EQ(labels(with({{"strategy", "ralp-auto"}})), std::vector<std::string>{"ralp-auto"});
  // A kind picks the first strategy of that kind, with its options (cut fc3).
  const Scenario ralp = with({{"strategy", "ralp"}});
  ASSERT_EQ(ralp.strategies.size(), 1u);
  EXPECT_EQ(ralp.strategies[0].cut, "fc3");
  // A kind the scenario lacks comes with default options.
  const Scenario hybrid = with({{"strategy", "hybrid"}});
  ASSERT_EQ(hybrid.strategies.size(), 1u);
  EXPECT_EQ(hybrid.strategies[0], (StrategySpec{.kind = StrategyKind::hybrid, .label = "hybrid"}));
}

TEST(ScenarioOverrides, CutSetsEveryRalpAndHybridCut) {
  const Scenario s = with({{"cut", "fc4"}});
  EXPECT_EQ(labels(s), (std::vector<std::string>{"ps", "ralp@fc4", "ralp-auto", "allreduce"}));
  EXPECT_EQ(s.strategies[1].cut, "fc4");
  EXPECT_EQ(s.strategies[2].cut, "fc4");
  EXPECT_FALSE(s.strategies[0].cut);
  // With --strategy the cut applies to the strategy kept.
  const Scenario one = with({{"cut", "pool2"}, {"strategy", "hybrid"}});
  EXPECT_EQ(labels(one), std::vector<std::string>{"hybrid@pool2"});
  EXPECT_FALSE(with({{"cut", "auto"}, {"strategy", "ralp"}}).strategies[0].cut);
}

TEST(ScenarioOverrides, ZeroParameterServersForAllReduceOnly) {
  const Scenario s = with({{"parameter-servers", "0"}, {"strategy", "allreduce"}});
  EXPECT_EQ(s.parameter_servers, 0);
  EXPECT_EQ(error_of({{"parameter-servers", "0"}}),
            "--parameter-servers is 0, but the strategy \"ps\" needs a parameter server; expected "
            "an integer in [1, 1024], or only allreduce strategies");
}

TEST(ScenarioOverrides, ErrorsNameTheOption) {
  EXPECT_EQ(error_of({{"workers", "0"}}), "--workers is 0, expected an integer in [1, 65536]");
  EXPECT_EQ(error_of({{"workers", "many"}}),
            "--workers is \"many\", expected an integer in [1, 65536]");
  EXPECT_EQ(error_of({{"workers", "2.5"}}), "--workers is 2.5, expected an integer in [1, 65536]");
  EXPECT_EQ(error_of({{"batch", "1e400"}}),
            "--batch is \"1e400\", expected an integer in [1, 65536]");
  EXPECT_EQ(error_of({{"bandwidth", "0"}}),
            "--bandwidth is 0, expected a bandwidth such as \"10Gbps\", \"10Gb/s\", \"10Gbit/s\" "
            "(bits) or \"1.25GB/s\", \"1GiB/s\" (bytes), or a number of bytes per second greater "
            "than 0");
  EXPECT_EQ(error_of({{"latency", "soon"}}),
            "--latency is \"soon\", expected a duration such as \"50us\" or a number of seconds");
  EXPECT_EQ(error_of({{"network-model", "idael"}}),
            "--network-model is \"idael\", expected one of: tcp, ideal (did you mean \"ideal\"?)");
  EXPECT_EQ(error_of({{"cut", "fc9"}}),
            "--cut is \"fc9\", expected \"auto\" or the name of a layer of cifar_alexnet other than "
            "its first (the first head layer)");
  EXPECT_EQ(error_of({{"cut", "fc3"}, {"strategy", "ps"}}),
            "--cut is \"fc3\", but no strategy of " + (kData / "scenarios/small-mixed.json").string() +
                " takes a cut; expected a ralp or hybrid strategy to apply it to");
  EXPECT_EQ(error_of({{"strategy", "ralp-aut"}}),
            "--strategy is \"ralp-aut\", expected a strategy of " +
                (kData / "scenarios/small-mixed.json").string() +
                " (ps, ralp@fc3, ralp-auto, allreduce) or a kind (ps, ralp, allreduce, hybrid) (did "
                "you mean \"ralp-auto\"?)");
  EXPECT_EQ(error_of({{"worker", "2"}}),
            "--worker is not an override, expected one of: workers, parameter-servers, "
            "devices-per-node, batch, bandwidth, latency, network-model, strategy, transport, cut, "
            "nics-per-node, ps-placement, worker-device, ps-device, interconnect-bandwidth, "
            "price-per-hour, epochs, dataset-images, precision (did you mean \"workers\"?)");
  EXPECT_EQ(error_of({{"workers", "2"}, {"workers", "3"}}), "--workers is given twice, expected it once");
}

TEST(ScenarioOverrides, ValuesTheyCauseToFailNameTheFile) {
  // 5 workers + 1 PS do not fit a torus of 4 hosts: the file's topology is at fault.
  const std::string torus =
      R"({"name": "t", "model": "cifar_alexnet", "batch_per_worker": 8,
          "cluster": {"workers": 2, "worker_device": "cpu-core",
                      "platform": {"kind": "torus", "nic_bandwidth": "1Gbps", "topology": "2,2"}},
          "strategies": ["ps"]})";
  EXPECT_EQ(error_of({}, torus), "no error");
  EXPECT_EQ(error_of({{"workers", "5"}}, torus),
            "s.json: /cluster/platform/topology is \"2,2\", which holds 4 hosts, expected at least "
            "6 (parameter servers + workers)");
}

TEST(ScenarioOverrides, AKeptStrategyKeepsItsPathInTheFile) {
  const std::string text =
      R"({"name": "t", "model": "cifar_alexnet", "batch_per_worker": 8,
          "cluster": {"workers": 2, "worker_device": "cpu-core",
                      "platform": {"kind": "star", "nic_bandwidth": "1Gbps"}},
          "strategies": ["ps", {"name": "ralp", "cut": "fc3", "head_mod": "per_worker"}]})";
  EXPECT_EQ(error_of({{"strategy", "ralp@fc3"}}, text),
            "s.json: /strategies/1/head_mod is not a known key, expected one of: cut, head, head_mode, "
            "label, local_aggregation, name, sharding, transport (did you mean \"head_mode\"?)");
}

TEST(ScenarioOverrides, BandwidthAndLatencyNeedAGeneratedPlatform) {
  const std::string file_platform =
      R"({"name": "t", "model": "cifar_alexnet", "batch_per_worker": 8,
          "cluster": {"workers": 2, "worker_device": "cpu-core",
                      "platform": {"kind": "file", "file": "../../../platforms/two-racks.xml"}},
          "strategies": ["ps"]})";
  EXPECT_EQ(error_of({}, file_platform), "no error");
  EXPECT_EQ(error_of({{"latency", "1us"}}, file_platform),
            "--latency is \"1us\", but the platform is a SimGrid platform file (kind \"file\"), "
            "whose links set their own; expected a generated platform");
}

TEST(ScenarioOverrides, AFileThatIsNotAScenarioKeepsItsOwnError) {
  // The overrides never hide the file's own problems.
  EXPECT_EQ(error_of({{"workers", "2"}}, "[1]"), "s.json: the document is an array, expected an object");
  EXPECT_EQ(error_of({{"workers", "2"}, {"bandwidth", "1Gbps"}},
                     R"({"name": "t", "model": "cifar_alexnet", "batch_per_worker": 8,
                         "cluster": [], "strategies": ["ps"]})"),
            "s.json: /cluster is an array, expected an object");
  EXPECT_EQ(error_of({{"workers", "2"}}, R"({"name": "t", "model": "cifar_alexnet",
                                            "batch_per_worker": 8, "strategies": ["ps"]})"),
            "s.json: /cluster is missing, expected a cluster object");
}

TEST(ScenarioOverrides, ClusterAndTrainingKeysHaveOverrides) {
  const Scenario s = with({{"price-per-hour", "3.06 USD"},
                           {"epochs", "30"},
                           {"dataset-images", "50000"},
                           {"ps-placement", "colocated"},
                           {"worker-device", "v100"},
                           {"ps-device", "p100"}});
  ASSERT_TRUE(s.price_per_hour.has_value());
  EXPECT_EQ(*s.price_per_hour, (Price{3.06, "USD"}));
  EXPECT_EQ(s.training.epochs, 30);
  EXPECT_EQ(s.training.dataset_images, 50000);
  EXPECT_EQ(s.nodes.ps_placement, PsPlacement::colocated);
  EXPECT_EQ(s.worker_device.name, "v100");
  EXPECT_EQ(s.ps_device.name, "p100");
  EXPECT_EQ(error_of({{"price-per-hour", "32.77"}}),
            "--price-per-hour is \"32.77\", expected a host's price an hour as an amount and an "
            "ISO 4217 currency code, such as \"32.77 USD\"");
  EXPECT_EQ(error_of({{"interconnect-bandwidth", "100Gbps"}}),
            "--interconnect-bandwidth is \"100Gbps\", but the scenario has no "
            "cluster.node_interconnect; expected a scenario of nodes of several devices");
}

// 4 workers on 2 nodes of 2 devices, a NIC per device.
constexpr const char* kTwoByTwo = R"({"name": "n", "model": "cifar_alexnet", "batch_per_worker": 8,
 "cluster": {"workers": 4, "devices_per_node": 2, "nics_per_node": 2, "parameter_servers": 1,
             "worker_device": "cpu-core",
             "node_interconnect": {"kind": "pcie", "bandwidth": "16GBps", "host_links": 2},
             "platform": {"kind": "star", "nic_bandwidth": "1Gbps", "latency": "50us"}},
 "strategies": ["ps", "allreduce"]})";

Scenario two_by_two(const std::vector<ScenarioOverride>& overrides) {
  return parse_scenario(parse_json_text(kTwoByTwo, "n.json"), "n.json", kData / "scenarios",
                        overrides);
}

TEST(ScenarioOverrides, FewerWorkersThanANodeRunOnOneNodeOfThatMany) {
  const Scenario one = two_by_two({{"workers", "1"}});
  EXPECT_EQ(one.workers, 1);
  EXPECT_EQ(one.nodes.devices_per_node, 1);
  EXPECT_EQ(one.nodes.nics_per_node, 1);  // clipped with the devices
  EXPECT_EQ(one.nodes.interconnect->host_links, 1);
  // A whole node or more keeps the file's nodes.
  const Scenario two = two_by_two({{"workers", "2"}});
  EXPECT_EQ(two.nodes.devices_per_node, 2);
  EXPECT_EQ(two.nodes.nics_per_node, 2);
  EXPECT_EQ(two_by_two({{"workers", "8"}}).nodes.devices_per_node, 2);
  // --devices-per-node given too: the user's word stands, and a misfit is an error.
  EXPECT_EQ(error_of({{"workers", "1"}, {"devices-per-node", "2"}}, kTwoByTwo),
            "--workers is 1, expected a multiple of devices_per_node (2)");
  EXPECT_EQ(two_by_two({{"workers", "4"}, {"devices-per-node", "4"}, {"nics-per-node", "1"}})
                .nodes.nics_per_node,
            1);
}

TEST(ScenarioOverrides, EveryOptionHasHelp) {
  for (const auto& o : scenario_override_options()) {
    SCOPED_TRACE(o.name);
    EXPECT_FALSE(o.value_name.empty());
    EXPECT_FALSE(o.help.empty());
  }
  EXPECT_EQ(scenario_override_options().size(), 19u);
}

}  // namespace
}  // namespace ralp
