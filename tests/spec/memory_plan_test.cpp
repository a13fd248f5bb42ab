// Memory per strategy and device, and the check against the devices' capacities.
#include "ralp/spec/memory_plan.hpp"

#include <gtest/gtest.h>

#include "ralp/spec/scenario_overrides.hpp"

namespace ralp {
namespace {

Scenario a100_scenario(const std::string& model, int64_t batch, const std::string& extra = "") {
  const std::string text =
      R"({"name": "m", "model": ")" + model + R"(", "batch_per_worker": )" +
      std::to_string(batch) +
      R"(, "cluster": {"workers": 4, "parameter_servers": 2, "worker_device": "a100",
          "ps_device": "a100", "platform": {"kind": "star", "nic_bandwidth": "100Gbps"}},
          "strategies": ["ps", "allreduce", {"name": "ralp", "cut": "fc6"},
                         {"name": "hybrid", "cut": "fc6"}])" +
      extra + "}";
  return parse_scenario(parse_json_text(text, "m.json"), "m.json", ".");
}

TEST(MemoryPlan, EachStrategyHoldsWhatItsDevicesKeep) {
  const Scenario s = a100_scenario("vgg16", 32);
  const MemoryFootprint whole = training_footprint(s.model, 32, Precision::fp32);
  const StrategySpec& ps = s.strategies[0];
  const StrategySpec& allreduce = s.strategies[1];
  const StrategySpec& ralp = s.strategies[2];
  const StrategySpec& hybrid = s.strategies[3];

  const StrategyMemory a = strategy_memory(s, allreduce, std::nullopt);
  EXPECT_EQ(a.worker, whole);
  EXPECT_FALSE(a.ps);

  // A ps worker keeps no momentum; the fullest of 2 round-robin shards holds fc6's weights.
  const StrategyMemory p = strategy_memory(s, ps, std::nullopt);
  MemoryFootprint no_momentum = whole;
  no_momentum.optimizer_state = Bytes(0.0);
  EXPECT_EQ(p.worker, no_momentum);
  ASSERT_TRUE(p.ps);
  EXPECT_EQ(p.ps->optimizer_state, p.ps->weights);
  EXPECT_EQ(p.ps->activations, Bytes(0.0));
  EXPECT_GT(p.ps->weights.value(), 4.0 * 102760448);  // fc6: 25,088 x 4,096 weights

  // RALP: the tail on the worker without momentum; the head at one worker's batch on the PS,
  // with its fullest tail shard on top.
  const LayerId cut = *s.model.find("fc6");
  const StrategyMemory r = strategy_memory(s, ralp, std::nullopt, "fc6");
  MemoryFootprint tail = training_footprint(s.model, 0, cut, 32, Precision::fp32);
  const MemoryFootprint head = training_footprint(s.model, cut, s.model.size(), 32, Precision::fp32);
  EXPECT_EQ(r.worker.activations, tail.activations);
  EXPECT_EQ(r.worker.optimizer_state, Bytes(0.0));
  ASSERT_TRUE(r.ps);
  EXPECT_EQ(r.ps->activations, head.activations);
  EXPECT_GT(r.ps->weights, head.weights);  // plus a tail shard

  // Hybrid: the tail is all-reduced, so the worker keeps its momentum; the PS holds the head only.
  const StrategyMemory h = strategy_memory(s, hybrid, std::nullopt, "fc6");
  EXPECT_EQ(h.worker, tail);
  EXPECT_EQ(*h.ps, head);
}

TEST(MemoryPlan, MixedPrecisionHoldsLess) {
  const Scenario fp32 = a100_scenario("vgg16", 64);
  const Scenario bf16 = a100_scenario("vgg16", 64, R"(, "precision": "bf16")");
  const StrategyMemory a = strategy_memory(fp32, fp32.strategies[1], std::nullopt);
  const StrategyMemory b = strategy_memory(bf16, bf16.strategies[1], std::nullopt);
  EXPECT_LT(b.worker.total(), a.worker.total());
  EXPECT_GT(b.worker.weight_copies.value(), 0.0);
  EXPECT_EQ(b.worker.weights, a.worker.weights);  // FP32 masters
}

TEST(MemoryPlan, RefusesWhatDoesNotFitAndSaysTheBatchThatDoes) {
  EXPECT_FALSE(memory_problem(a100_scenario("vgg16", 64)));
  const Scenario big = a100_scenario("vgg16", 4096);
  const std::optional<std::string> problem = memory_problem(big);
  ASSERT_TRUE(problem);
  EXPECT_NE(problem->find("strategy \"ps\" needs "), std::string::npos) << *problem;
  EXPECT_NE(problem->find("worker's a100"), std::string::npos) << *problem;
  EXPECT_NE(problem->find("which has 40 GB"), std::string::npos) << *problem;
  // The largest batch it names fits, and one more does not.
  const size_t at = problem->find("the largest batch per worker that fits is ");
  ASSERT_NE(at, std::string::npos) << *problem;
  const int64_t largest = std::stoll(problem->substr(at + 42));
  EXPECT_FALSE(memory_problem(a100_scenario("vgg16", largest)));
  EXPECT_TRUE(memory_problem(a100_scenario("vgg16", largest + 1)));

  try {
    (void)check_memory(big);
    FAIL() << "expected a refusal";
  } catch (const InputError& e) {
    EXPECT_EQ(e.path(), "/batch_per_worker");
  }
  const Scenario warned = a100_scenario("vgg16", 4096, R"(, "memory_check": false)");
  const std::optional<std::string> warning = check_memory(warned);
  ASSERT_TRUE(warning);
  EXPECT_EQ(warning->rfind("warning: strategy \"ps\" needs ", 0), 0u) << *warning;
}

TEST(MemoryPlan, VggAtBatch4096DoesNotFitAGtx1080Ti) {
  // 300 GB of saved activations alone, on an 11 GiB card.
  const Scenario s = parse_scenario(
      parse_json_text(R"({"name": "v", "model": "vgg16", "batch_per_worker": 4096,
          "cluster": {"workers": 1, "worker_device": "gtx1080ti",
                      "platform": {"kind": "star", "nic_bandwidth": "1Gbps"}},
          "strategies": ["ps"]})",
                      "v.json"),
      "v.json", ".");
  const std::optional<std::string> problem = memory_problem(s);
  ASSERT_TRUE(problem);
  EXPECT_NE(problem->find("on each worker's gtx1080ti (activations 300 GB"), std::string::npos)
      << *problem;
  EXPECT_NE(problem->find("which has 11.8 GB"), std::string::npos) << *problem;
}

TEST(MemoryPlan, OverridesAreCheckedAndNamed) {
  const Json base = parse_json_text(
      R"({"name": "m", "model": "vgg16", "batch_per_worker": 32,
          "cluster": {"workers": 2, "worker_device": "a100",
                      "platform": {"kind": "star", "nic_bandwidth": "100Gbps"}},
          "strategies": ["allreduce"]})",
      "m.json");
  EXPECT_NO_THROW((void)parse_scenario(base, "m.json", ".", {}));
  try {
    (void)parse_scenario(base, "m.json", ".", {{"batch", "4096"}});
    FAIL() << "expected a refusal";
  } catch (const InputError& e) {
    EXPECT_EQ(std::string(e.what()).rfind("--batch is 4096, but strategy \"allreduce\" needs ", 0), 0u)
        << e.what();
  }
  // A profile without memory_capacity is never refused.
  EXPECT_NO_THROW(
      (void)parse_scenario(base, "m.json", ".", {{"batch", "4096"}, {"worker-device", "cpu-core"}}));
}

}  // namespace
}  // namespace ralp
