// The analytic step model against closed forms with round numbers, on a device whose compute
// vanishes.
#include <gtest/gtest.h>

#include "ralp/placement/analytic.hpp"
#include "ralp/placement/plans.hpp"
#include "ralp/placement/sim_evaluator.hpp"
#include "ralp/spec/scenario.hpp"

namespace ralp {
namespace {

const char* kInstantDevice =
    R"({"name": "instant", "kind": "cpu", "peak_flops": 1e30, "memory_bandwidth": 1e30})";

// input [in] -> fc(in -> out, no bias) -> softmax: in*out*4 bytes of weights.
std::string fc_model(int in, int out) {
  return R"({"name": "fc", "input": [)" + std::to_string(in) +
         R"(, 1, 1], "layers": [{"name": "fc", "type": "fc", "out_features": )" +
         std::to_string(out) +
         R"(, "bias": false}, {"name": "loss", "type": "softmax_cross_entropy"}]})";
}

Scenario scenario_from(const std::string& body) {
  const std::string text = R"({"name": "test", )" + body + "}";
  return parse_scenario(parse_json_text(text, "test.json"), "test.json", RALP_TEST_DATA_DIR);
}

std::string star(int workers, const std::string& network, const std::string& strategy,
                 const std::string& ps_bandwidth = "8Gbps", const std::string& latency = "0") {
  return R"("model": )" + fc_model(1000, 1000) + R"(, "batch_per_worker": 8, "cluster": {"workers": )" +
         std::to_string(workers) + R"(, "worker_device": )" + kInstantDevice +
         R"(, "platform": {"kind": "star", "nic_bandwidth": "800Gbps", "latency": ")" + latency +
         R"(", "ps_nic": {"bandwidth": ")" + ps_bandwidth + R"("}}}, "network_model": )" + network +
         R"(, "strategies": [)" + strategy + "]";
}

double step(const Scenario& s, std::optional<LayerId> cut = std::nullopt) {
  return placement::estimate_strategy(s, s.strategies[0], cut).step_time_s;
}

TEST(Analytic, PsPullsThenPushesThroughOnePsLink) {
  // 4 workers pull 4 MB (+ a 24-byte header) each through the PS's 1 GB/s uplink: 16 ms; then
  // push as much through its downlink: 16 ms.
  const Scenario s = scenario_from(star(4, R"("ideal")", R"("ps")"));
  EXPECT_NEAR(step(s), 2 * 4 * (4e6 + 24) / 1e9, 1e-9);
}

TEST(Analytic, PsOnTcpIsLinearInWorkers) {
  // LV08: W * S / (0.97 * B) + 13.01 * L per direction, L = 2 x 10 us.
  for (int workers : {2, 8}) {
    const Scenario s = scenario_from(star(workers, R"("tcp")", R"("ps")", "8Gbps", "10us"));
    const double one_way = workers * (4e6 + 24) / (0.97 * 1e9) + 13.01 * 20e-6;
    EXPECT_NEAR(step(s), 2 * one_way, 1e-9) << workers;
  }
}

TEST(Analytic, NetworkFactorsScaleLatencyAndBandwidth) {
  // Bandwidth x 0.5 doubles each transfer; latency x 2 of 2 x 1 ms adds 4 ms each way.
  const Scenario s = scenario_from(
      star(4, R"({"latency_factor": 2, "bandwidth_factor": 0.5})", R"("ps")", "8Gbps", "1ms"));
  EXPECT_NEAR(step(s), 2 * (4 * (4e6 + 24) / 0.5e9 + 4e-3), 1e-9);
}

TEST(Analytic, RingAllReduceMovesTwiceTheBufferOverWorkers) {
  // 2 (W - 1) chunks of S / W (+ header) at 1 GB/s per worker link: 6 ms and 6 headers, plus the
  // coordinator's ready and go (a header each, the 3 readies sharing worker-0's link).
  const std::string model = fc_model(1000, 1000);
  const Scenario s = scenario_from(
      R"("model": )" + model + R"(, "batch_per_worker": 8, "cluster": {"workers": 4,
      "worker_device": )" + kInstantDevice + R"(, "platform": {"kind": "star",
      "nic_bandwidth": "8Gbps", "latency": 0}}, "network_model": "ideal",
      "strategies": [{"name": "allreduce", "cycle_time": 0}])");
  const double ring = 6 * (1e6 + 24) / 1e9;
  const double negotiate = 2 * 3 * 24 / 1e9;
  EXPECT_NEAR(step(s), ring + negotiate, 1e-9);
}

TEST(Analytic, RalpSendsActivationsAndGetsABareHeaderBack) {
  // relu -> fc -> loss cut at fc: each of 4 workers sends 8 x (1000 floats + a label) + header
  // through the PS's 1 GB/s downlink, all at once; nothing before the cut has parameters, so each
  // gets a bare header back, one after another through the uplink.
  const std::string model = R"({"name": "m", "input": [1000, 1, 1], "layers": [
      {"name": "relu", "type": "relu"}, {"name": "fc", "type": "fc", "out_features": 10},
      {"name": "loss", "type": "softmax_cross_entropy"}]})";
  const Scenario s = scenario_from(
      R"("model": )" + model + R"(, "batch_per_worker": 8, "cluster": {"workers": 4,
      "worker_device": )" + kInstantDevice + R"(, "platform": {"kind": "star",
      "nic_bandwidth": "800Gbps", "latency": 0, "ps_nic": {"bandwidth": "8Gbps"}}},
      "network_model": "ideal", "strategies": [{"name": "ralp", "cut": "fc"}])");
  const double in = 4 * (8 * (4000 + 4) + 24) / 1e9;
  const double back = 4 * 24 / 1e9;
  EXPECT_NEAR(step(s, s.model.find("fc")), in + back, 1e-12);
}

TEST(CutPlans, EveryCutsPlanEstimatesAsMakeStepPlansDoes) {
  for (const char* sharding : {"round_robin", "greedy"}) {
    for (const char* strategy : {"ralp", "hybrid"}) {
      const std::string text = R"({"name": "t", "model": "googlenet", "batch_per_worker": 16,
          "cluster": {"workers": 4, "parameter_servers": 2, "worker_device": "v100",
          "platform": {"kind": "star", "nic_bandwidth": "10Gbps", "latency": "50us"}},
          "strategies": [{"name": ")" + std::string(strategy) + R"(", "cut": "auto", "sharding": ")" +
                               sharding + R"("}]})";
      const Scenario s = parse_scenario(parse_json_text(text, "t.json"), "t.json", RALP_TEST_DATA_DIR);
      const placement::CutPlans plans(s, s.strategies[0]);
      for (const LayerId cut : s.model.cut_points()) {
        const auto fast = plans.plan_at(cut);
        const auto full = schedule::make_step_plan(s, s.strategies[0], cut);
        ASSERT_EQ(fast.boundary_bytes, full.boundary_bytes) << cut;
        ASSERT_EQ(fast.activation_grad_bytes, full.activation_grad_bytes) << cut;
        ASSERT_EQ(fast.groups_by_layer, full.groups_by_layer) << cut;
        ASSERT_EQ(fast.tensors, full.tensors) << cut;
        ASSERT_EQ(fast.tail_param_bytes, full.tail_param_bytes) << cut;
        ASSERT_EQ(fast.head_param_bytes, full.head_param_bytes) << cut;
        ASSERT_DOUBLE_EQ(fast.head_micro_batch.value(), full.head_micro_batch.value()) << cut;
        ASSERT_DOUBLE_EQ(fast.head_full_batch.value(), full.head_full_batch.value()) << cut;
        ASSERT_DOUBLE_EQ(placement::estimate_step(s, fast).step_time_s,
                         placement::estimate_step(s, full).step_time_s) << cut;
      }
    }
  }
}

TEST(Analytic, RefusesTokenBucketNicsItDoesNotModel) {
  const Scenario s = scenario_from(
      R"("model": )" + fc_model(1000, 1000) + R"(, "batch_per_worker": 8, "cluster": {"workers": 2,
      "worker_device": )" + kInstantDevice + R"(, "platform": {"kind": "star",
      "nic_bandwidth": "1Gbps", "nic_burst": "64KiB"}}, "strategies": ["ps"])");
  try {
    (void)placement::analytic_scenario(s);
    FAIL() << "a scenario with token-bucket NICs was estimated";
  } catch (const InputError& e) {
    EXPECT_EQ(e.path(), "/cluster/platform/nic_burst");
  }
}

}  // namespace
}  // namespace ralp

namespace ralp {
namespace {

TEST(StepPlan, SixteenBitPrecisionsSendHalfTheActivationsAndUpdateMoreArrays) {
  // VGG-16 cut at fc6: each worker sends 8 images x 25,088 activations (pool5) and 8 labels, and
  // gets the activations' gradients back; gradients and labels keep their size.
  const auto plan = [](const std::string& precision) {
    const std::string text = R"({"name": "t", "model": "vgg16", "batch_per_worker": 8,
        "cluster": {"workers": 2, "worker_device": "a100",
        "platform": {"kind": "star", "nic_bandwidth": "10Gbps"}}, "precision": ")" + precision +
                             R"(", "strategies": [{"name": "ralp", "cut": "fc6"}]})";
    const Scenario s = parse_scenario(parse_json_text(text, "t.json"), "t.json", ".");
    return schedule::make_step_plan(s, s.strategies[0], s.model.find("fc6"));
  };
  const auto fp32 = plan("fp32");
  const auto bf16 = plan("bf16");
  const auto fp16 = plan("fp16");
  EXPECT_EQ(fp32.boundary_bytes, 8 * 25088 * 4 + 8 * 4);
  EXPECT_EQ(fp32.activation_grad_bytes, 8 * 25088 * 4);
  EXPECT_EQ(bf16.boundary_bytes, 8 * 25088 * 2 + 8 * 4);
  EXPECT_EQ(bf16.activation_grad_bytes, 8 * 25088 * 2);
  EXPECT_EQ(bf16.tail_param_bytes, fp32.tail_param_bytes);  // FP32 gradients on the wire
  EXPECT_DOUBLE_EQ(fp32.worker_update_rate / bf16.worker_update_rate, 5.5 / 5.0);
  EXPECT_DOUBLE_EQ(fp32.ps_update_rate / fp16.ps_update_rate, 7.5 / 5.0);
  EXPECT_EQ(fp32.ps_sum_rate, fp16.ps_sum_rate);
}

}  // namespace
}  // namespace ralp
