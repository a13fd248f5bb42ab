// Calibration: distinct shapes, the fitted roofline, a real (small, fast) calibration whose
// profile the cost model reads back as measured, the host and command `ralp calibrate` records,
// and its bad-input exits.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include <unistd.h>

#include <gtest/gtest.h>

#include "ralp/calibrate/calibration.hpp"
#include "ralp/calibrate/fit.hpp"
#include "ralp/devices/cost_model.hpp"
#include "ralp/devices/profile_cost_model.hpp"
#include "ralp/model/model_zoo.hpp"

namespace ralp::calibrate {
namespace {

TEST(DistinctShapes, MeasuresEachSignatureAndBatchOnce) {
  std::vector<ModelRequest> requests;
  requests.push_back({*zoo_model("vgg16"), {8}});
  const auto shapes = distinct_shapes(requests);
  // VGG-16's 40 layers: 13 convolutions of 9 distinct shapes (conv3_2 = conv3_3,
  // conv4_2 = conv4_3, conv5_1 = conv5_2 = conv5_3), 15 ReLUs of 6, 5 pools of 5, 2 dropouts of
  // 1, flatten (a copy), 3 FC layers and the loss. 9 + 6 + 5 + 1 + 1 + 3 + 1 = 26 distinct.
  size_t uses = 0;
  for (const auto& s : shapes) uses += s.uses;
  EXPECT_EQ(uses, 40U);  // every layer
  EXPECT_EQ(shapes.size(), 26U);
  requests.front().batches = {8, 16};
  EXPECT_EQ(distinct_shapes(requests).size(), 52U);
}

TEST(FitRates, RecoversTheRatesOfExactRooflineData) {
  // Convolutions at 100 GFLOP/s (compute-bound), ReLUs at 10 GB/s (memory-bound), 2 us launch.
  const Seconds launch(2e-6);
  std::vector<FitPoint> points;
  for (const double gflop : {1.0, 3.0, 10.0}) {
    points.push_back({LayerKind::conv2d, {Flops(gflop * 1e9), Bytes(gflop * 1e7)},
                      Seconds(gflop * 1e9 / 100e9) + launch});
  }
  for (const double mb : {1.0, 4.0, 16.0}) {
    points.push_back({LayerKind::relu, {Flops(mb * 2.5e5), Bytes(mb * 1e6)},
                      Seconds(mb * 1e6 / 10e9) + launch});
  }
  const auto rates = fit_rates(points, launch);
  ASSERT_EQ(rates.size(), 2U);
  EXPECT_NEAR(rates.at(LayerKind::conv2d).flops.value(), 100e9, 1e6);
  EXPECT_NEAR(rates.at(LayerKind::relu).bytes.value(), 10e9, 1e5);
  // The non-binding ceilings never make the roofline exceed a measured point.
  EXPECT_GE(rates.at(LayerKind::conv2d).bytes.value(), 1e9 - 1);
  EXPECT_GE(rates.at(LayerKind::relu).flops.value(), 2.5e9 - 1);
}

TEST(Slug, MakesFileNameSafeNames) {
  EXPECT_EQ(slug("AMD EPYC (family 26, model 2)"), "amd-epyc-family-26-model-2");
  EXPECT_EQ(slug("NVIDIA H200"), "nvidia-h200");
}

// A BF16 calibration of a small model becomes the bf16 section of an FP32 profile: its layers are
// tagged bf16, its fits go to precision_fitted, and the FP32 layers, fits and rates stay as they
// were; the cost model then reads the BF16 times in bf16 and the FP32 ones in fp32.
TEST(Calibrate, AddsABf16SectionAndKeepsTheFp32One) {
  if (!kernels::cpu_backend_built()) GTEST_SKIP() << "the CPU backend is not built";
  std::unique_ptr<kernels::Backend> bf16;
  try {
    bf16 = kernels::make_cpu_backend(1, kernels::CpuPassLayout::automatic, Precision::bf16);
  } catch (const std::invalid_argument& e) {
    GTEST_SKIP() << e.what();
  }
  auto fp32 = kernels::make_cpu_backend(1);
  std::vector<ModelRequest> requests;
  requests.push_back({*zoo_model("cifar_allconv"), {2}});
  CalibrationOptions options;
  options.repetitions = 1;
  options.min_time = 0.001;
  options.warm_up_time = 0.0;
  options.model_steps = 2;
  options.time_sharing_window = 0.0;
  const auto quiet = [](const ProgressUpdate&) {};
  const DeviceProfile base = calibrate(*fp32, requests, options, quiet);
  const DeviceProfile section = calibrate(*bf16, requests, options, quiet);
  EXPECT_TRUE(section.fitted.empty());
  ASSERT_TRUE(section.precision_fitted.contains(Precision::bf16));
  EXPECT_EQ(section.provenance.at("precision"), "bf16");
  for (const MeasuredLayer& m : section.measured) EXPECT_EQ(m.precision, Precision::bf16);

  const DeviceProfile both = add_precision_section(base, section, Precision::bf16);
  EXPECT_EQ(both.fitted, base.fitted);
  EXPECT_EQ(both.end_to_end, base.end_to_end);
  EXPECT_EQ(both.peak_flops, base.peak_flops);
  EXPECT_EQ(both.precision_fitted.at(Precision::bf16), section.precision_fitted.at(Precision::bf16));
  EXPECT_EQ(both.measured.size(), base.measured.size() + section.measured.size());
  EXPECT_TRUE(std::equal(base.measured.begin(), base.measured.end(), both.measured.begin()));
  EXPECT_EQ(both.provenance.at("bf16_date"), section.provenance.at("date"));
  EXPECT_NE(both.provenance.at("bf16_end_to_end").find("cifar_allconv b2: "), std::string::npos);
  EXPECT_FALSE(both.provenance.contains("precision"));
  // Adding it again replaces the section rather than doubling it; the JSON round trip keeps all.
  const DeviceProfile again = add_precision_section(both, section, Precision::bf16);
  EXPECT_EQ(again.measured.size(), both.measured.size());
  EXPECT_EQ(parse_device_profile(device_profile_to_json(both), "", "test"), both);
  EXPECT_EQ(precision_support(both, Precision::bf16).support, PrecisionSupport::native);

  const Layer& conv = requests[0].graph.layer(0);
  const auto fp32_model = make_cost_model(both, Precision::fp32);
  const auto bf16_model = make_cost_model(both, Precision::bf16);
  const auto time_of = [&](const DeviceProfile& p) {
    for (const MeasuredLayer& m : p.measured) {
      if (m.signature == conv.signature() && m.batch == 2) {
        return m.in_step ? m.in_step->forward : m.forward;  // the model prefers in-step times
      }
    }
    return Seconds(-1.0);
  };
  EXPECT_EQ(fp32_model->estimate(make_layer_key(conv, 2)).forward, time_of(base));
  EXPECT_EQ(bf16_model->estimate(make_layer_key(conv, 2)).forward, time_of(section));

  DeviceProfile elsewhere = base;
  elsewhere.host->threads = 2;
  EXPECT_THROW((void)add_precision_section(elsewhere, section, Precision::bf16),
               std::invalid_argument);
}

// A whole calibration of a small model on the CPU: every layer with work comes back as measured
// from the written profile, and the end-to-end check is recorded.
TEST(Calibrate, WritesAProfileTheCostModelReadsAsMeasured) {
  if (!kernels::cpu_backend_built()) GTEST_SKIP() << "the CPU backend is not built";
  auto backend = kernels::make_cpu_backend(1);
  std::vector<ModelRequest> requests;
  requests.push_back({*zoo_model("cifar_allconv"), {2}});
  CalibrationOptions options;
  options.repetitions = 2;
  options.min_time = 0.001;
  options.warm_up_time = 0.0;
  options.model_steps = 3;
  options.time_sharing_window = 0.2;
  options.name = "test-cpu";
  size_t updates = 0;
  const DeviceProfile p = calibrate(*backend, requests, options,
                                    [&](const ProgressUpdate& u) {
                                      ++updates;
                                      EXPECT_LE(u.done, u.total);
                                      EXPECT_TRUE(u.error.empty()) << u.what << ": " << u.error;
                                    });
  EXPECT_GT(updates, 10U);
  EXPECT_EQ(p.name, "test-cpu");
  EXPECT_EQ(p.source, ProfileSource::measured);
  EXPECT_EQ(p.provenance.at("threads"), "1");
  EXPECT_EQ(p.provenance.at("model_steps"), "3");
  EXPECT_TRUE(p.provenance.contains("onednn"));
  EXPECT_TRUE(p.provenance.contains("loadavg_start"));
  EXPECT_GT(p.gradient_sum_rate.value(), 0.0);
  EXPECT_GT(p.update_rate.value(), 0.0);
  ASSERT_EQ(p.end_to_end.size(), 1U);
  EXPECT_GT(p.end_to_end[0].measured.value(), 0.0);
  EXPECT_FALSE(p.fitted.empty());
  // The model stepped alone and two copies at once on one core; the slowdown comes from them.
  ASSERT_EQ(p.time_sharing.size(), 1U);
  EXPECT_EQ(p.time_sharing[0].model, "cifar_allconv");
  EXPECT_EQ(p.time_sharing[0].batch, 2);
  EXPECT_GT(p.time_sharing[0].alone.value(), 0.0);
  EXPECT_GT(p.time_sharing[0].shared.value(), 0.0);
  EXPECT_DOUBLE_EQ(p.time_sharing_slowdown, time_sharing_slowdown(p.time_sharing));

  // Through the JSON format, as `ralp calibrate` writes and the simulator reads it.
  const DeviceProfile back = parse_device_profile(device_profile_to_json(p), "", "test.json");
  EXPECT_EQ(back, p);
  const auto model = make_cost_model(back);
  const LayerGraph& g = requests.front().graph;
  const ModelCost cost = model_cost(g, *model, 2);
  EXPECT_EQ(cost.fitted + cost.datasheet, 0U);
  EXPECT_EQ(cost.measured, g.size());  // every layer, flatten's copy too
  // A batch never measured falls back to the fitted model.
  EXPECT_GT(model_cost(g, *model, 3).fitted, 0U);

  // Every shape was also timed inside the end-to-end steps, and the cost model uses those times;
  // the fidelity check sums the times alone.
  DeviceProfile alone = p;
  for (MeasuredLayer& m : alone.measured) {
    ASSERT_TRUE(m.in_step) << m.signature;
    if (m.kind == LayerKind::conv2d) {
      EXPECT_GT(m.in_step->forward.value(), 0.0) << m.signature;
    }
    m.in_step.reset();
  }
  const ModelCost sum_alone = model_cost(g, *make_cost_model(alone), 2);
  EXPECT_DOUBLE_EQ(p.end_to_end[0].sum_of_layers.value(),
                   (sum_alone.forward + sum_alone.backward).value());
  const Layer& conv1 = g.layer(*g.find("conv1"));
  const auto in_step = std::find_if(p.measured.begin(), p.measured.end(),
                                    [&](const MeasuredLayer& m) { return m.signature == conv1.signature(); });
  ASSERT_NE(in_step, p.measured.end());
  EXPECT_DOUBLE_EQ(model->estimate(make_layer_key(conv1, 2)).forward.value(),
                   in_step->in_step->forward.value());
}

TEST(TimeSharing, SlowdownIsTheMeanRatioToTwiceAlone) {
  EXPECT_DOUBLE_EQ(time_sharing_slowdown({}), 1.0);
  // 2.2 / (2 x 1) = 1.1 and 4.8 / (2 x 2) = 1.2: 1.15.
  EXPECT_DOUBLE_EQ(time_sharing_slowdown({{"a", 8, Seconds(1.0), Seconds(2.2)},
                                          {"b", 8, Seconds(2.0), Seconds(4.8)}}),
                   1.15);
  // Sharing that measured faster than equal halves (noise) is no sharing cost.
  EXPECT_DOUBLE_EQ(time_sharing_slowdown({{"a", 8, Seconds(1.0), Seconds(1.9)}}), 1.0);
}

int run_ralp(const std::string& args, std::string* err) {
  // One file per process: CTest runs these cases in parallel processes.
  const std::string log = std::string(RALP_BINARY_DIR) + "/calibrate_test_stderr." +
                          std::to_string(getpid()) + ".txt";
  const std::string command = std::string(RALP_BINARY_DIR) + "/ralp " + args + " 2> " + log;
  const int status = std::system(command.c_str());
  std::ifstream in(log);
  std::stringstream text;
  text << in.rdbuf();
  *err = text.str();
  std::remove(log.c_str());
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

// The profile names this machine as its host and records the command as given: only the options
// given, with their values as typed, none added.
TEST(CalibrateCommand, RecordsTheHostAndTheCommandThatRan) {
  if (!kernels::cpu_backend_built()) GTEST_SKIP() << "the CPU backend is not built";
  const std::string out = std::string(RALP_BINARY_DIR) + "/calibrate_test_profile." +
                          std::to_string(getpid()) + ".json";
  const std::string args = "--model cifar_allconv:2 --device cpu --no-end-to-end --min-time 0.001 "
                           "--repetitions 1 --name 'my cpu' --out " + out;
  std::string err;
  ASSERT_EQ(run_ralp("calibrate " + args, &err), 0) << err;
  const DeviceProfile p = load_device_profile(out);
  std::remove(out.c_str());
  EXPECT_EQ(p.name, "my cpu");
  EXPECT_EQ(p.provenance.at("command"),
            "ralp calibrate --model cifar_allconv:2 --device cpu --out " + out +
                " --name 'my cpu' --repetitions 1 --min-time 0.001 --no-end-to-end");
  ASSERT_TRUE(p.host);
  EXPECT_EQ(p.host->cpu_model, this_machine_cpu_model());
  EXPECT_EQ(p.host->threads, 1);
  EXPECT_TRUE(p.host->gpu_model.empty());
  EXPECT_TRUE(p.end_to_end.empty());
  ASSERT_FALSE(p.measured.empty());
  EXPECT_FALSE(p.measured.front().in_step);  // no steps, no in-step times
}

struct BadInput {
  std::string args;
  std::string message;
};

class CalibrateCommand : public ::testing::TestWithParam<BadInput> {};

TEST_P(CalibrateCommand, RejectsBadInputWithOneLine) {
  std::string err;
  EXPECT_EQ(run_ralp("calibrate " + GetParam().args, &err), 2);
  EXPECT_EQ(err, GetParam().message + "\n");
}

INSTANTIATE_TEST_SUITE_P(
    BadInputs, CalibrateCommand,
    ::testing::Values(
        BadInput{"--model cifar_nope --out -",
                 "error: ralp calibrate: --model is 'cifar_nope', expected a zoo model (alexnet, "
                 "alexnet_tf, vgg11, vgg16, vgg19, resnet18, resnet50, resnet101, resnet152, "
                 "resnet50_tf, resnet101_tf, resnet152_tf, resnext101_32x4d, "
                 "se_resnext101_32x4d, googlenet, inception_v3, efficientnet_b0, "
                 "efficientnet_b4, cifar_alexnet, cifar_allconv) or a model file"},
        BadInput{"--model vgg16 --batch 8,x --out -",
                 "error: ralp calibrate: --batch is '8,x', expected a comma-separated list of "
                 "integers >= 1"},
        BadInput{"--model vgg16 --batch 0 --out -",
                 "error: ralp calibrate: --batch is '0', expected a comma-separated list of "
                 "integers >= 1"},
        BadInput{"--model vgg16 --device tpu --out -",
                 "error: ralp calibrate: --device is 'tpu', expected one of auto, cpu, cuda"},
        BadInput{"--model vgg16 --threads 0 --out -",
                 "error: ralp calibrate: --threads is 0, expected an integer >= 1"},
        BadInput{"--model vgg16 --model-steps -1 --out -",
                 "error: ralp calibrate: --model-steps is -1, expected an integer >= 0"},
        BadInput{"--model vgg16 --time-sharing -1 --out -",
                 "error: ralp calibrate: --time-sharing is -1, expected 0 to 60 seconds"}),
    [](const auto& p) { return "case" + std::to_string(p.index); });

}  // namespace
}  // namespace ralp::calibrate
