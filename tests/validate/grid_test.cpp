// The validation grid: shapes and layouts, pinning, the grid's points, derived scenarios, steps.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "ralp/spec/scenario.hpp"
#include "ralp/validate/grid.hpp"

namespace ralp::validate {
namespace {

const std::filesystem::path kAlexnet =
    std::filesystem::path(RALP_SOURCE_DIR) / "scenarios/cluster/cifar-alexnet-1ps-2w.json";
const std::filesystem::path kAllconv =
    std::filesystem::path(RALP_SOURCE_DIR) / "scenarios/cluster/cifar-allconv-1ps-2w.json";

TEST(LinkRates, ParseTcUnits) {
  EXPECT_DOUBLE_EQ(parse_link_rate("100mbit")->bits_per_s, 100e6);
  EXPECT_DOUBLE_EQ(parse_link_rate("1gbit")->bytes_per_s(), 125e6);
  EXPECT_DOUBLE_EQ(parse_link_rate("2.5Gbit")->bits_per_s, 2.5e9);
  EXPECT_DOUBLE_EQ(parse_link_rate("500kbit")->bits_per_s, 500e3);
  EXPECT_EQ(parse_link_rate("1gbit")->text, "1gbit");
  EXPECT_FALSE(parse_link_rate("fast"));
  EXPECT_FALSE(parse_link_rate("100"));
  EXPECT_FALSE(parse_link_rate("0mbit"));
  EXPECT_FALSE(parse_link_rate("1.2.3gbit"));
}

TEST(LinkRates, BurstIsAtLeast64KiBOr2msOfTheRate) {
  EXPECT_DOUBLE_EQ(tbf_burst_bytes(*parse_link_rate("100mbit")), 65536.0);  // 25 kB < 64 KiB
  EXPECT_DOUBLE_EQ(tbf_burst_bytes(*parse_link_rate("1gbit")), 250000.0);   // 125 MB/s x 2 ms
}

TEST(Shapes, Layouts) {
  EXPECT_EQ(layout_of(Shape::two_node, "ps"), (Layout{1, 1}));
  EXPECT_EQ(layout_of(Shape::two_node, "hybrid"), (Layout{1, 1}));
  EXPECT_EQ(layout_of(Shape::two_node, "allreduce"), (Layout{0, 2}));
  EXPECT_EQ(layout_of(Shape::ps_two_workers, "ralp"), (Layout{1, 2}));
  EXPECT_EQ(layout_of(Shape::ps_two_workers, "allreduce"), (Layout{0, 2}));
  // An allreduce layout is workers only: 2 ranks.
  EXPECT_EQ(ranks_of(Layout{0, 2}), 2);
  EXPECT_EQ(ranks_of(Layout{1, 1}), 2);
  EXPECT_EQ(parse_shape("1ps-2w"), Shape::ps_two_workers);
  EXPECT_EQ(to_string(Shape::two_node), "2-node");
  EXPECT_FALSE(parse_shape("3-node"));
}

TEST(Shapes, PinsEachRankToItsOwnCoreWhenTheyFitElseServersAloneAndWorkersSharing) {
  using Pins = std::vector<std::optional<int>>;
  EXPECT_EQ(pin_ranks(Layout{1, 1}, 2), (Pins{0, 1}));
  EXPECT_TRUE(shared_cores(Layout{1, 1}, 2).empty());
  // The two workers of an allreduce run get cores 0 and 1.
  EXPECT_EQ(pin_ranks(Layout{0, 2}, 2), (Pins{0, 1}));
  // Three ranks on two cores: ps-0 keeps core 0, the two workers share core 1, and the
  // scenario says so.
  EXPECT_EQ(pin_ranks(Layout{1, 2}, 2), (Pins{0, 1, 1}));
  EXPECT_FALSE(fits_cores(Layout{1, 2}, 2));
  EXPECT_EQ(shared_cores(Layout{1, 2}, 2), (std::vector<int>{0, 1, 1}));
  EXPECT_EQ(pin_ranks(Layout{1, 2}, 4), (Pins{0, 1, 2}));
  EXPECT_TRUE(shared_cores(Layout{1, 2}, 4).empty());
  // Workers spread round robin over the cores the servers leave.
  EXPECT_EQ(pin_ranks(Layout{1, 4}, 3), (Pins{0, 1, 2, 1, 2}));
  EXPECT_EQ(pin_ranks(Layout{2, 3}, 4), (Pins{0, 1, 2, 3, 2}));
  // Workers only, or as many servers as cores: rank r on core r mod cores.
  EXPECT_EQ(pin_ranks(Layout{0, 3}, 2), (Pins{0, 1, 0}));
  EXPECT_EQ(pin_ranks(Layout{2, 1}, 2), (Pins{0, 1, 0}));
  EXPECT_EQ(pin_ranks(Layout{1, 2}, 1), (Pins{0, 0, 0}));
}

TEST(Grid, DefaultGridHas28PointsInRateScenarioShapeOrder) {
  const auto rates = std::vector{*parse_link_rate("100mbit"), *parse_link_rate("1gbit")};
  const auto grid = make_grid({kAlexnet, kAllconv}, {Shape::two_node, Shape::ps_two_workers},
                              rates, {});
  // 2 rates x 2 nets x (4 strategies x 2 shapes - allreduce's repeated layout) = 2 x 2 x 7.
  ASSERT_EQ(grid.size(), 28u);
  EXPECT_EQ(grid[0].id(), "cifar-alexnet-1ps-2w_ps_100mbit_2-node");
  EXPECT_EQ(grid[1].id(), "cifar-alexnet-1ps-2w_ralp-fc3_100mbit_2-node");
  EXPECT_EQ(grid[4].id(), "cifar-alexnet-1ps-2w_ps_100mbit_1ps-2w");
  EXPECT_EQ(grid[6].id(), "cifar-alexnet-1ps-2w_hybrid-fc3_100mbit_1ps-2w");
  EXPECT_EQ(grid[7].scenario_name, "cifar-allconv-1ps-2w");
  EXPECT_EQ(grid[14].rate.text, "1gbit");
  EXPECT_EQ(grid[1].strategy.kind, "ralp");
  EXPECT_EQ(grid[1].model, "cifar_alexnet");
}

TEST(Grid, FiltersByLabelOrKind) {
  const auto rate = std::vector{*parse_link_rate("1gbit")};
  const auto grid = make_grid({kAllconv}, {Shape::two_node}, rate, {"ps", "ralp@fc"});
  ASSERT_EQ(grid.size(), 2u);
  EXPECT_EQ(grid[1].strategy.label, "ralp@fc");
  EXPECT_THROW(make_grid({kAllconv}, {Shape::two_node}, rate, {"horovod"}), InputError);
}

TEST(Grid, StrategyLabelsAreTheScenariosOwn) {
  const std::filesystem::path file =
      std::filesystem::path(RALP_SOURCE_DIR) / "tests/data/scenarios/cluster-branches.json";
  const auto entries = strategy_entries(read_json_file(file), file.string());
  const Scenario parsed = load_scenario(file);
  ASSERT_EQ(entries.size(), parsed.strategies.size());
  for (size_t i = 0; i < entries.size(); ++i) EXPECT_EQ(entries[i].label, parsed.strategies[i].label);
  EXPECT_EQ(entries[1].label, "ralp@a_fc+");  // a head named by its minimal layer
}

TEST(Grid, DerivedScenarioCarriesTheCalibration) {
  const auto rate = std::vector{*parse_link_rate("100mbit")};
  const auto grid = make_grid({kAlexnet}, {Shape::two_node}, rate, {"allreduce"});
  ASSERT_EQ(grid.size(), 1u);
  NetworkFit fit;
  fit.latency_s = 20e-6;
  fit.bandwidth_factor = 0.95;
  fit.latency_factor = 3.0;
  const std::filesystem::path profile =
      std::filesystem::path(RALP_SOURCE_DIR) / "calibrate/profiles/amd-epyc-family-26-model-2-1-thread.json";
  const Json base = read_json_file(kAlexnet);
  const Json s = derived_scenario(base, kAlexnet.parent_path(), grid[0],
                                  {.profile = profile, .network = fit, .steps = 7, .warmup_steps = 1});
  EXPECT_EQ(s["name"], "cifar-alexnet-1ps-2w_allreduce_100mbit_2-node");
  EXPECT_EQ(s["cluster"]["workers"], 2);
  EXPECT_EQ(s["cluster"]["parameter_servers"], 0);  // all-reduce: workers only
  EXPECT_DOUBLE_EQ(s["cluster"]["platform"]["nic_bandwidth"].get<double>(), 12.5e6);
  EXPECT_DOUBLE_EQ(s["cluster"]["platform"]["latency"].get<double>(), 20e-6);
  EXPECT_DOUBLE_EQ(s["network_model"]["bandwidth_factor"].get<double>(), 0.95);
  EXPECT_DOUBLE_EQ(s["network_model"]["latency_factor"].get<double>(), 3.0);
  EXPECT_EQ(s["strategies"], Json::array({"allreduce"}));
  EXPECT_EQ(s["steps"], 7);
  EXPECT_EQ(s["warmup_steps"], 1);
  EXPECT_EQ(s["training"], base["training"]);
  // The derived file is a valid scenario wherever it is written.
  const auto dir = std::filesystem::temp_directory_path() / "ralp-grid-test";
  std::filesystem::create_directories(dir);
  const auto file = dir / "derived.json";
  std::ofstream(file) << s.dump(2);
  const Scenario loaded = load_scenario(file.string());
  EXPECT_EQ(loaded.workers, 2);
  EXPECT_EQ(loaded.worker_device.name, "amd-epyc-family-26-model-2-1-thread");
  EXPECT_EQ(loaded.strategies.size(), 1u);
  EXPECT_TRUE(loaded.shared_devices.empty());
  // Ranks that share a core are written down for the simulator.
  std::ofstream(file) << derived_scenario(base, kAlexnet.parent_path(), grid[0],
                                          {.profile = profile, .network = fit, .steps = 7,
                                           .warmup_steps = 1, .shared_devices = {0, 0}})
                             .dump(2);
  EXPECT_EQ(load_scenario(file.string()).shared_devices, (std::vector<int64_t>{0, 0}));
  EXPECT_DOUBLE_EQ(loaded.platform.nic_burst.value(), 0.0);
  // So are the shaper's token buckets.
  std::ofstream(file) << derived_scenario(base, kAlexnet.parent_path(), grid[0],
                                          {.profile = profile, .network = fit, .steps = 7,
                                           .warmup_steps = 1, .nic_burst_bytes = 65536.0})
                             .dump(2);
  EXPECT_DOUBLE_EQ(load_scenario(file.string()).platform.nic_burst.value(), 65536.0);
  EXPECT_FALSE(loaded.message_cpu.charged());
  // The precision only when it is not fp32, which the profile's bf16 section lets it ask for.
  EXPECT_FALSE(s.contains("precision"));
  std::ofstream(file) << derived_scenario(base, kAlexnet.parent_path(), grid[0],
                                          {.profile = profile, .network = fit, .steps = 7,
                                           .warmup_steps = 1, .precision = Precision::bf16})
                             .dump(2);
  EXPECT_EQ(load_scenario(file.string()).precision, Precision::bf16);
  // And the messages' CPU time, per message and per byte.
  NetworkFit charged = fit;
  charged.send_cpu_s_per_byte = 1.5e-9;
  charged.receive_cpu_s_per_message = 150e-6;
  std::ofstream(file) << derived_scenario(base, kAlexnet.parent_path(), grid[0],
                                          {.profile = profile, .network = charged, .steps = 7,
                                           .warmup_steps = 1})
                             .dump(2);
  const MessageCpuSpec cpu = load_scenario(file.string()).message_cpu;
  EXPECT_DOUBLE_EQ(cpu.send_s_per_byte, 1.5e-9);
  EXPECT_DOUBLE_EQ(cpu.receive_s_per_message, 150e-6);
  EXPECT_EQ(cpu.send_s_per_message, 0.0);
  EXPECT_EQ(cpu.receive_s_per_byte, 0.0);
  std::filesystem::remove_all(dir);
}

TEST(Grid, PlanStepsFitsTheBudget) {
  EXPECT_EQ(plan_steps(0.5, 10.0, 5, 20), 20);  // 0.5 s steps: 20 in 10 s
  EXPECT_EQ(plan_steps(1.0, 10.0, 5, 20), 10);
  EXPECT_EQ(plan_steps(3.0, 10.0, 5, 20), 5);   // 3 fit, at least 5
  EXPECT_EQ(plan_steps(0.01, 10.0, 5, 20), 20);
}

}  // namespace
}  // namespace ralp::validate
