// Scenario files: defaults, cross-references, and the corpus of bad scenarios with the exact
// message each must produce.
#include "ralp/model/model_file.hpp"
#include "ralp/spec/scenario.hpp"

#include <algorithm>
#include <filesystem>

#include <gtest/gtest.h>

#include "../support/run_command.hpp"

namespace ralp {
namespace {

namespace fs = std::filesystem;
const fs::path kData = RALP_TEST_DATA_DIR "/data";

std::string replace_all(std::string text, const std::string& from, const std::string& to) {
  for (size_t at = text.find(from); at != std::string::npos; at = text.find(from, at + to.size())) {
    text.replace(at, from.size(), to);
  }
  return text;
}

std::vector<fs::path> bad_scenarios() {
  std::vector<fs::path> files;
  for (const auto& entry : fs::directory_iterator(kData / "bad-scenarios")) {
    if (entry.path().extension() == ".json") files.push_back(entry.path());
  }
  std::sort(files.begin(), files.end());
  return files;
}

std::string expected_message(const fs::path& file) {
  fs::path expected_file = file;
  expected_file.replace_extension(".expected");
  std::string text = testing::read_file(expected_file.string());
  while (!text.empty() && text.back() == '\n') text.pop_back();
  std::string profiles;
  for (const auto& name : available_profiles()) profiles += (profiles.empty() ? "" : ", ") + name;
  text = replace_all(text, "{file}", file.string());
  text = replace_all(text, "{dir}", file.parent_path().string());
  return replace_all(text, "{profiles}", profiles);
}

TEST(Scenario, MinimalExampleWithDefaults) {
  const Scenario s = load_scenario(kData / "scenarios/minimal.json");
  EXPECT_EQ(s.name, "vgg16-1gbe-8w");
  EXPECT_EQ(s.model.name(), "vgg16");
  EXPECT_EQ(s.workers, 8);
  EXPECT_EQ(s.parameter_servers, 1);
  EXPECT_EQ(s.worker_device.name, "gtx1080ti");
  EXPECT_DOUBLE_EQ(s.platform.nic.bandwidth.value(), 125e6);
  EXPECT_DOUBLE_EQ(s.platform.nic.latency.value(), 50e-6);
  ASSERT_EQ(s.strategies.size(), 3u);
  EXPECT_EQ(s.strategies[1].kind, StrategyKind::ralp);
  EXPECT_FALSE(s.strategies[1].cut);  // auto
  EXPECT_EQ(s.strategies[2].fusion_threshold, Bytes(64.0 * 1024 * 1024));
  EXPECT_EQ(s.strategies[2].cycle_time, Seconds(5e-3));
  EXPECT_EQ(s.steps, 5);
  EXPECT_EQ(s.seed, 1u);
  EXPECT_TRUE(s.pcie_copies);
}

TEST(Scenario, FilledInJsonIsStableAndReloads) {
  const Scenario s = load_scenario(kData / "scenarios/minimal.json");
  const std::string once = scenario_to_json(s).dump(2);
  EXPECT_EQ(once, scenario_to_json(load_scenario(kData / "scenarios/minimal.json")).dump(2));
  // The filled-in form names profiles and the zoo model, so it parses back to the same scenario.
  const Scenario back = parse_scenario(scenario_to_json(s), "filled", kData / "scenarios");
  EXPECT_EQ(scenario_to_json(back).dump(2), once);
}

TEST(Scenario, MessageCpuReadsAndReloads) {
  Json j = scenario_to_json(load_scenario(kData / "scenarios/minimal.json"));
  j["cluster"]["message_cpu"] = {{"send_ns_per_byte", 1.5}, {"receive_us_per_message", 150}};
  const Scenario s = parse_scenario(j, "cpu", kData / "scenarios");
  EXPECT_DOUBLE_EQ(s.message_cpu.send_s_per_byte, 1.5e-9);
  EXPECT_DOUBLE_EQ(s.message_cpu.receive_s_per_message, 150e-6);
  EXPECT_EQ(s.message_cpu.receive_s_per_byte, 0.0);
  EXPECT_EQ(s.message_cpu.send_s_per_message, 0.0);
  const Scenario back = parse_scenario(scenario_to_json(s), "cpu", kData / "scenarios");
  EXPECT_DOUBLE_EQ(back.message_cpu.send_s_per_byte, s.message_cpu.send_s_per_byte);
  EXPECT_DOUBLE_EQ(back.message_cpu.receive_s_per_message, s.message_cpu.receive_s_per_message);
  EXPECT_EQ(back.message_cpu.receive_s_per_byte, 0.0);
  EXPECT_EQ(back.message_cpu.send_s_per_message, 0.0);
  EXPECT_EQ(back.message_cpu.waiting_share, 0.0);
  EXPECT_FALSE(scenario_to_json(s)["cluster"]["message_cpu"].contains("waiting_share"));
  // The waiting share alone is written back too.
  j["cluster"]["message_cpu"] = {{"waiting_share", 0.125}};
  const Scenario waiting = parse_scenario(j, "cpu", kData / "scenarios");
  EXPECT_FALSE(waiting.message_cpu.charged());
  EXPECT_EQ(parse_scenario(scenario_to_json(waiting), "cpu", kData / "scenarios")
                .message_cpu.waiting_share,
            0.125);
  j["cluster"]["message_cpu"] = {{"waiting_share", 0.75}};
  try {
    parse_scenario(j, "cpu", kData / "scenarios");
    ADD_FAILURE() << "a waiting share above 0.5 was accepted";
  } catch (const InputError& e) {
    EXPECT_EQ(e.path(), "/cluster/message_cpu/waiting_share");
  }
}

TEST(Scenario, BadScenariosGiveTheirExactMessage) {
  const auto files = bad_scenarios();
  ASSERT_GE(files.size(), 20u);
  for (const auto& file : files) {
    SCOPED_TRACE(file.filename().string());
    try {
      load_scenario(file);
      ADD_FAILURE() << "no error";
    } catch (const InputError& e) {
      EXPECT_EQ(std::string(e.what()), expected_message(file));
    }
  }
}

TEST(Scenario, CliReportsOneLineAndExitsTwo) {
  for (const auto& file : bad_scenarios()) {
    SCOPED_TRACE(file.filename().string());
    const auto result =
        testing::run_command(testing::ralp_binary() + " scenario check '" + file.string() + "'");
    EXPECT_EQ(result.status, 2);
    EXPECT_EQ(result.err, "error: " + expected_message(file) + "\n");
    EXPECT_EQ(result.out, "");
  }
}

TEST(Scenario, ZeroParameterServersSuitAllReduceAlone) {
  const auto parse = [](const std::string& cluster_extra, const std::string& strategies) {
    const std::string text =
        R"({"name": "z", "model": "cifar_alexnet", "batch_per_worker": 8,
            "cluster": {"workers": 2, "parameter_servers": 0, "worker_device": "cpu-core",
                        "platform": )" + cluster_extra + R"(}, "strategies": )" + strategies + "}";
    return parse_scenario(parse_json_text(text, "z.json"), "z.json", kData / "scenarios");
  };
  const Scenario s = parse(R"({"kind": "star", "nic_bandwidth": "1Gbps"})",
                           R"(["allreduce", {"name": "allreduce", "label": "slow", "cycle_time": "50ms"}])");
  EXPECT_EQ(s.parameter_servers, 0);
  EXPECT_EQ(s.strategies.size(), 2u);
  EXPECT_EQ(scenario_to_json(s)["cluster"]["parameter_servers"], 0);
  try {
    parse(R"({"kind": "star", "nic_bandwidth": "1Gbps"})", R"(["allreduce", "hybrid"])");
    FAIL();
  } catch (const InputError& e) {
    EXPECT_STREQ(e.what(), "z.json: /cluster/parameter_servers is 0, but the strategy \"hybrid\" "
                           "needs a parameter server; expected an integer in [1, 1024], or only "
                           "allreduce strategies");
  }
  // With no PS a platform file's roles are workers only.
  try {
    parse(R"({"kind": "file", "file": "../../../platforms/two-racks.xml", "roles": {"ps-0": "a"}})",
          R"(["allreduce"])");
    FAIL();
  } catch (const InputError& e) {
    EXPECT_STREQ(e.what(), "z.json: /cluster/platform/roles/ps-0 is not a role of this cluster, "
                           "expected worker-0..worker-1");
  }
}

TEST(Scenario, CliAcceptsAGoodScenario) {
  const auto result = testing::run_command(testing::ralp_binary() + " scenario check " +
                                           (kData / "scenarios/minimal.json").string());
  EXPECT_EQ(result.status, 0) << result.err;
  EXPECT_NE(result.out.find("ok: "), std::string::npos);
}

}  // namespace
}  // namespace ralp

namespace ralp {
namespace {

TEST(Scenario, EveryShippedScenarioIsValid) {
  size_t checked = 0;
  for (const auto& entry : fs::recursive_directory_iterator(fs::path(RALP_SOURCE_DIR) / "scenarios")) {
    if (entry.path().extension() != ".json" ||
        entry.path().parent_path().filename() == "models") {
      continue;
    }
    SCOPED_TRACE(entry.path().string());
    EXPECT_NO_THROW(load_scenario(entry.path()));
    ++checked;
  }
  EXPECT_GE(checked, 30u);
}

TEST(Scenario, ModelFilesInTheDocsParse) {
  const auto g = load_model_file(fs::path(RALP_SOURCE_DIR) / "scenarios/examples/models/mynet.json");
  EXPECT_EQ(g.predecessors(*g.find("sum")).size(), 2u);
}

TEST(Prices, ReadAnAmountAndAnIsoCode) {
  EXPECT_EQ(parse_price("32.77 USD"), (Price{32.77, "USD"}));
  EXPECT_EQ(parse_price("0 EUR"), (Price{0.0, "EUR"}));
  EXPECT_EQ(parse_price("3.0593  USD"), (Price{3.0593, "USD"}));
  for (const char* bad : {"32.77", "USD 32.77", "32.77 usd", "32.77 US", "-1 USD", "$32.77",
                          "32.77USD", "nan USD", "1e999 USD", ""}) {
    EXPECT_FALSE(parse_price(bad).has_value()) << bad;
  }
  EXPECT_EQ(format_price({32.77, "USD"}), "32.77 USD");
  EXPECT_EQ(format_price({3.0593, "USD"}), "3.0593 USD");
  EXPECT_EQ(format_price({24.0, "EUR"}), "24.00 EUR");
}

TEST(Scenario, TrainingRunAndPriceHaveDefaultsAndRoundTrip) {
  const Scenario plain = load_scenario(kData / "scenarios/minimal.json");
  EXPECT_EQ(plain.training.epochs, 90);
  EXPECT_EQ(plain.training.dataset_images, 1281167);  // ImageNet-1k's training set
  EXPECT_FALSE(plain.price_per_hour.has_value());
  Json j = scenario_to_json(plain);
  j["cluster"]["price_per_hour"] = "24.48 USD";
  j["training"]["epochs"] = 30;
  const Scenario priced = parse_scenario(j, "p.json", kData / "scenarios");
  EXPECT_EQ(priced.price_per_hour, (Price{24.48, "USD"}));
  EXPECT_EQ(priced.training.epochs, 30);
  EXPECT_EQ(scenario_to_json(priced)["cluster"]["price_per_hour"], "24.48 USD");
  j["cluster"]["price_per_hour"] = 24.48;
  try {
    parse_scenario(j, "p.json", kData / "scenarios");
    ADD_FAILURE() << "a number is not a price";
  } catch (const InputError& e) {
    EXPECT_EQ(std::string(e.what()),
              "p.json: /cluster/price_per_hour is 24.48, expected a host's price an hour as an "
              "amount and an ISO 4217 currency code, such as \"32.77 USD\"");
  }
}

}  // namespace
}  // namespace ralp
