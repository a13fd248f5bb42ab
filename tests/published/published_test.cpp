// The published data's parse, the fit, the single-GPU and multi-GPU points, the committed
// report's completeness and determinism, and a published profile's provenance in simulate's
// outputs.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <map>
#include <sstream>
#include <set>

#include "../support/run_command.hpp"
#include "ralp/core/json_input.hpp"
#include "ralp/devices/device_profile.hpp"
#include "ralp/published/cluster_points.hpp"
#include "ralp/published/fit.hpp"
#include "ralp/published/points.hpp"
#include "ralp/spec/scenario.hpp"

namespace ralp::published {
namespace {

using testing::ralp_binary;
using testing::run_command;
using testing::TempDir;

const std::filesystem::path kData = RALP_PUBLISHED_DIR;
const std::filesystem::path kMultiGpu = RALP_SOURCE_DIR "/scenarios/published/multi-gpu";
const std::filesystem::path kReport = RALP_SOURCE_DIR "/reports/published";

TEST(PublishedData, ReadsEveryFittingRow) {
  // 66 DeepBench shapes (8 of them first layers, without a data gradient), 42 GEMMs, 22 Caffe
  // layers of AlexNet and VGG-A timed forward and backward.
  const auto conv = read_deepbench_conv(kData / "deepbench-conv-fp32.csv");
  EXPECT_EQ(conv.size(), 66u + 58u + 66u);
  EXPECT_EQ(read_deepbench_gemm(kData / "deepbench-gemm-fp32.csv").size(), 42u);
  EXPECT_EQ(read_convnet_layers(kData / "convnet-benchmarks-titanx-maxwell.csv").size(), 44u);
  const KernelRow& first = conv.front();
  EXPECT_EQ(first.device, "titanx-maxwell");
  EXPECT_EQ(first.conv.width, 224);
  EXPECT_EQ(first.conv.in_channels, 3);
  EXPECT_EQ(first.conv.out_channels, 64);
  EXPECT_EQ(first.conv.batch, 16);
  EXPECT_EQ(first.conv_pass, ConvPass::forward);
  EXPECT_DOUBLE_EQ(first.measured.value(), 1.317e-3);
  EXPECT_EQ(first.where, "deepbench-conv-fp32.csv:2");
  EXPECT_EQ(conv[1].conv_pass, ConvPass::backward_filter);  // no data gradient on a first layer
}

TEST(PublishedData, ReadsEveryTensorCoreRowOfTheV100Sheet) {
  // DeepBench's V100 FP16 sheet: 94 convolutions' forward and filter gradient, 84 data gradients
  // (10 first layers have none), 160 GEMMs; none of the FP32 sheet.
  const auto rows = read_deepbench_tensor(kData / "deepbench-v100.csv");
  EXPECT_EQ(rows.size(), 94u * 2 + 84u + 160u);
  size_t gemms = 0;
  for (const KernelRow& row : rows) {
    EXPECT_EQ(row.device, "v100");
    EXPECT_EQ(row.precision, Precision::fp16);
    if (row.kind == KernelRow::Kind::conv) {
      EXPECT_TRUE(row.algorithms.tensor_ops) << row.where;
      EXPECT_FALSE(row.algorithms.winograd_nonfused) << row.where;  // forced to implicit GEMM
    }
    if (row.kind == KernelRow::Kind::gemm) {
      ++gemms;
      EXPECT_EQ(static_cast<int64_t>(row.m) % 8, 0) << row.where;
    }
  }
  EXPECT_EQ(gemms, 160u);
  // gemm_bench.cu pads an NN GEMM's M and K, not its N: 1760 x 7000 x 1760 stays, 35 x 8457 x
  // 2560 (not a multiple of 8 in M) becomes 40 x 8457 x 2560.
  const auto padded = std::find_if(rows.begin(), rows.end(), [](const KernelRow& r) {
    return r.kind == KernelRow::Kind::gemm && r.shape == "fp16 gemm 35x8457x2560 NN";
  });
  ASSERT_NE(padded, rows.end());
  EXPECT_EQ(padded->m, 40.0);
  EXPECT_EQ(padded->n, 8457.0);
  EXPECT_EQ(padded->k, 2560.0);
}

TEST(PublishedData, ReadsTheV100Fp32SheetUnpadded) {
  // The same workbook's FP32 sheet, for a refit of the FP32 model: as many rows, NCHW with every
  // algorithm cudnnFind* could time, and GEMMs as they are (35 x 8457 x 2560 stays).
  const auto rows = read_deepbench_v100(kData / "deepbench-v100.csv", Precision::fp32);
  EXPECT_EQ(rows.size(), 94u * 2 + 84u + 160u);
  for (const KernelRow& row : rows) {
    EXPECT_EQ(row.precision, Precision::fp32);
    EXPECT_FALSE(row.algorithms.tensor_ops) << row.where;
  }
  EXPECT_NE(std::find_if(rows.begin(), rows.end(), [](const KernelRow& r) {
              return r.shape == "fp32 gemm 35x8457x2560 NN" && r.m == 35.0;
            }),
            rows.end());
}

TEST(PublishedData, AMalformedRowNamesTheFileAndLine) {
  TempDir dir("published");
  std::ofstream(dir / "gemm.csv") << "device,M,N,K,a_transposed,b_transposed,time_ms\n"
                                  << "p100,1760,128,1760,N,N,0.1\n"
                                  << "p100,abc,128,1760,N,N,0.1\n";
  try {
    read_deepbench_gemm(dir / "gemm.csv");
    FAIL() << "no error";
  } catch (const InputError& e) {
    EXPECT_NE(e.file().find("gemm.csv"), std::string::npos);
    EXPECT_EQ(e.path(), "line 3");
    EXPECT_NE(e.problem().find("column M is \"abc\""), std::string::npos) << e.problem();
  }
  std::ofstream(dir / "short.csv") << "device,M\n";
  EXPECT_THROW(read_deepbench_gemm(dir / "short.csv"), InputError);
}

TEST(PublishedData, ABadCatalogueNamesTheKey) {
  TempDir dir("published");
  std::ofstream(dir / "gpus.json") << R"({"gpus": 3})";
  try {
    read_catalogue(dir / "gpus.json");
    FAIL() << "no error";
  } catch (const InputError& e) {
    EXPECT_EQ(e.path(), "/gpus");
    EXPECT_NE(e.problem().find("expected an array of GPUs"), std::string::npos) << e.problem();
  }
}

TEST(PublishedData, TheCatalogueNamesEveryPublishedGpu) {
  const Catalogue c = read_catalogue(kData / "gpus.json");
  std::set<std::string> named;
  for (const auto& row : read_tf_cnn_benchmarks(kData / "tf-cnn-benchmarks-2017.csv")) named.insert(row.gpu);
  for (const auto& row : read_horovod(kData / "horovod-readme-2017.csv")) named.insert(row.gpu);
  for (const auto& row : read_kernel_rows(kData)) named.insert(row.device);
  EXPECT_EQ(named.size(), 8u);
  for (const std::string& gpu : named) {
    EXPECT_NO_THROW((void)c.gpu(gpu)) << gpu;
    EXPECT_TRUE(find_profile(gpu)) << gpu;
  }
  // One GK210: 2,496 cores x 2 x 875 MHz.
  EXPECT_DOUBLE_EQ(c.gpu("k80").peak().value(), 2496.0 * 2 * 875e6);
  EXPECT_EQ(c.gpu("k80").derive_from, "m40");
  EXPECT_EQ(c.gpu("p100-pcie").derive_from, "p100");
}

// A GPU's datasheet shape, and a fit short enough for a test (no leave-one-shape-out fits).
GpuShape shape_of(const std::string& gpu) {
  return read_catalogue(kData / "gpus.json").gpu(gpu).shape();
}
FitOptions quick_fit() {
  FitOptions options;
  options.global_evaluations = 400;
  options.leave_one_shape_out = false;
  return options;
}

// What the fit minimises: the sum of squared log errors over its rows.
double squared_logs(const GpuFit& fit) {
  double sum = 0.0;
  for (const RowResult& r : fit.rows) sum += std::log(1.0 + r.error) * std::log(1.0 + r.error);
  return sum;
}

TEST(PublishedFit, IsDeterministicAndBeatsItsStartingPoint) {
  const auto rows = read_kernel_rows(kData);
  const GpuShape gpu = shape_of("titanx-pascal");
  const FitOptions options = quick_fit();
  const GpuFit a = fit_gpu("titanx-pascal", rows, gpu, options);
  const GpuFit b = fit_gpu("titanx-pascal", rows, gpu, options);
  EXPECT_EQ(a.params, b.params);
  // 11 shapes' forward and filter gradient, 9 data gradients (not the two first layers'), 7 GEMMs.
  EXPECT_EQ(a.rows.size(), 11u + 9u + 11u + 7u);
  EXPECT_LT(squared_logs(a), squared_logs(check_gpu("titanx-pascal", rows, gpu, GpuKernelParams{})));
}

// Several starts keep the lowest of their minima (titanx-maxwell's differ by 20%): the fit from
// seeds 1 to 4 is the best of the four fits from one seed each.
TEST(PublishedFit, KeepsTheBestOfItsStarts) {
  const auto rows = read_kernel_rows(kData);
  const GpuShape gpu = shape_of("titanx-maxwell");
  FitOptions options = quick_fit();
  std::vector<double> single;
  for (unsigned seed = 1; seed <= 4; ++seed) {
    options.seed = seed;
    options.starts = 1;
    single.push_back(squared_logs(fit_gpu("titanx-maxwell", rows, gpu, options)));
  }
  options.seed = 1;
  options.starts = 4;
  const double best = squared_logs(fit_gpu("titanx-maxwell", rows, gpu, options));
  EXPECT_DOUBLE_EQ(best, *std::min_element(single.begin(), single.end()));
  EXPECT_LT(best, single.front() * 0.9);  // seed 1 alone stops in the minimum 20% higher
}

TEST(PublishedFit, TheTensorCoreFitUsesItsSheetsRowsAlone) {
  const auto fp32 = read_kernel_rows(kData);
  auto rows = read_deepbench_tensor(kData / "deepbench-v100.csv");
  rows.insert(rows.end(), fp32.begin(), fp32.end());
  const GpuShape gpu = read_catalogue(kData / "gpus.json").gpu("v100").shape(Precision::fp16);
  EXPECT_EQ(gpu.peak.value(), 125e12);
  EXPECT_EQ(gpu.element_bytes, 2.0);
  FitOptions options = quick_fit();
  options.starts = 1;
  const GpuFit fit = fit_gpu("v100", rows, gpu, options, Precision::fp16);
  EXPECT_EQ(fit.rows.size(), 432u);
  EXPECT_LT(squared_logs(fit), squared_logs(check_gpu("v100", rows, gpu, GpuKernelParams{}, Precision::fp16)));
  // The FP32 fit of the same GPU sees its 38 FP32 rows only.
  EXPECT_EQ(check_gpu("v100", rows, shape_of("v100"), GpuKernelParams{}).rows.size(), 38u);
}

TEST(PublishedFit, AMixedPrecisionStepRunsOnTensorCoresAndPaysItsUpdate) {
  const DeviceProfile v100 = load_device_profile(*find_profile("v100"));
  ASSERT_TRUE(v100.tensor_kernel_model);
  const double fp32 = single_gpu_step("resnet50", 256, v100, Precision::fp32).value();
  const double fp16 = single_gpu_step("resnet50", 256, v100, Precision::fp16).value();
  EXPECT_LT(fp16, fp32 / 2.0);
  // The update's share: halving the update rate adds the update's time once more, 1.5 times
  // FP32's in FP16 (update_cost_factor: the 16-bit copy, the unscale and overflow check).
  DeviceProfile slow = v100;
  slow.update_rate = v100.update_rate * 0.5;
  const double update32 = single_gpu_step("resnet50", 256, slow, Precision::fp32).value() - fp32;
  const double update16 = single_gpu_step("resnet50", 256, slow, Precision::fp16).value() - fp16;
  EXPECT_NEAR(update16 / update32, update_cost_factor(Precision::fp16), 1e-6);
  // P100 has no tensor cores: FP16 runs its FP32 kernels at twice the rate with 2-byte values,
  // faster than FP32 but not twice as fast.
  const DeviceProfile p100 = load_device_profile(*find_profile("p100"));
  EXPECT_FALSE(p100.tensor_kernel_model);
  const double p32 = single_gpu_step("resnet50", 64, p100, Precision::fp32).value();
  const double p16 = single_gpu_step("resnet50", 64, p100, Precision::fp16).value();
  EXPECT_LT(p16, p32);
  EXPECT_GT(p16, p32 / 2.0);
}

TEST(PublishedPoints, EverySingleGpuPointIsAScenarioThatParses) {
  const auto points = single_gpu_points(kData);
  EXPECT_EQ(points.size(), 30u);
  std::set<std::string> names;
  for (const Point& p : points) {
    names.insert(p.name);
    const Scenario s = parse_scenario(p.scenario, p.name + ".json", kData);
    EXPECT_EQ(s.workers, 1);
    EXPECT_EQ(s.worker_device.source, ProfileSource::published) << p.name;
    EXPECT_GT(p.published_step(), 0.0);
  }
  EXPECT_EQ(names.size(), points.size());  // file names are unique
  const auto dgx_resnet = std::find_if(points.begin(), points.end(), [](const Point& p) {
    return p.row.system == "DGX-1" && p.row.model == "resnet50" && p.row.batch == 64;
  });
  ASSERT_NE(dgx_resnet, points.end());
  EXPECT_TRUE(dgx_resnet->variables_on_host);  // parameter_server, local_parameter_device=cpu
  EXPECT_EQ(dgx_resnet->zoo_model, "resnet50_tf");
}

TEST(PublishedPoints, EveryDleRowIsAScenarioOrSaysWhyNot) {
  const auto points = dle_points(kData);
  EXPECT_EQ(points.size(), read_dle(kData / "dle-pytorch-convnets.csv").size() + 1);  // + MLPerf's
  int targets = 0, fits = 0, eight = 0;
  for (const DlePoint& p : points) {
    if (!p.excluded.empty()) {
      EXPECT_TRUE(p.name.empty()) << p.row.where;
      continue;
    }
    const Scenario s = parse_scenario(p.scenario, p.name + ".json", kData);
    EXPECT_EQ(s.model_ref, p.zoo_model) << p.name;
    EXPECT_EQ(s.precision, *p.row.precision) << p.name;
    EXPECT_EQ(s.worker_device.name, p.profile) << p.name;
    EXPECT_EQ(s.workers, p.row.gpus) << p.name;
    EXPECT_TRUE(std::filesystem::exists(RALP_SOURCE_DIR "/scenarios/published/dle/" + p.name + ".json"))
        << p.name << ": run scripts/published-report";
    targets += p.target;
    fits += p.row.fit;
    eight += p.target && p.row.gpus == 8;
  }
  EXPECT_EQ(fits, 2);  // DGX A100 80 GB, ResNet-50 v1.5, 1 GPU, TF32 and AMP
  EXPECT_GE(targets, 10);
  EXPECT_GE(eight, 4);
  // ResNet-50 v1.5 is the zoo's resnet50; a model the zoo lacks says so.
  const auto gpunet = std::find_if(points.begin(), points.end(),
                                   [](const DlePoint& p) { return p.row.model.starts_with("GPUNet"); });
  ASSERT_NE(gpunet, points.end());
  EXPECT_EQ(gpunet->excluded.rfind("model not in the zoo", 0), 0u) << gpunet->excluded;
  EXPECT_EQ(dle_zoo_name("resnet50v1.5"), "resnet50");
  EXPECT_EQ(dle_zoo_name("se-resnext101-32x4d"), "se_resnext101_32x4d");
}

// The A100 80 GB is the A100 40 GB with its own datasheet figures: the same kernel parameters,
// framework cost and efficiencies.
TEST(PublishedProfiles, DerivedByDatasheetDifferOnlyInTheirFigures) {
  const DeviceProfile a40 = load_device_profile(*find_profile("a100-40gb"));
  const DeviceProfile a80 = load_device_profile(*find_profile("a100-80gb"));
  EXPECT_EQ(a80.kernel_model, a40.kernel_model);
  EXPECT_EQ(a80.tensor_kernel_model, a40.tensor_kernel_model);
  EXPECT_EQ(a80.published->precision_efficiency, a40.published->precision_efficiency);
  EXPECT_EQ(a80.published->framework_layer_overhead, a40.published->framework_layer_overhead);
  EXPECT_DOUBLE_EQ(a80.memory_bandwidth.value(), 2039e9);
  EXPECT_DOUBLE_EQ(a40.memory_bandwidth.value(), 1555e9);
  EXPECT_DOUBLE_EQ(a80.peak_flops.value(), a40.peak_flops.value());
  EXPECT_EQ(a80.published->derived_from, "a100-40gb");
  // Both A100 efficiencies fitted; FP32 (no row) keeps the V100's parameters at factor 1.
  EXPECT_TRUE(a40.published->precision_efficiency.contains(Precision::tf32));
  EXPECT_TRUE(a40.published->precision_efficiency.contains(Precision::fp16));
  EXPECT_DOUBLE_EQ(architecture_efficiency(a40, Precision::fp32), 1.0);
  EXPECT_DOUBLE_EQ(architecture_efficiency(a40, Precision::bf16), architecture_efficiency(a40, Precision::fp16));
  // Hopper takes Ampere's efficiencies; the V100s take none.
  const DeviceProfile h100 = load_device_profile(*find_profile("h100"));
  EXPECT_EQ(h100.published->precision_efficiency, a40.published->precision_efficiency);
  EXPECT_EQ(h100.kernel_model, a40.kernel_model);
  const DeviceProfile v32 = load_device_profile(*find_profile("v100-32gb"));
  EXPECT_TRUE(v32.published->precision_efficiency.empty());
  EXPECT_EQ(v32.tensor_kernel_model, load_device_profile(*find_profile("v100")).tensor_kernel_model);
  for (const DeviceProfile* p : {&a40, &a80, &h100, &v32}) {
    EXPECT_NE(p->origin.find("fitted to published kernel timings of v100"), std::string::npos) << p->name;
  }
  EXPECT_NE(a80.origin.find("dle-pytorch-convnets.csv"), std::string::npos) << a80.origin;
}

TEST(PublishedProfiles, A100IsTheA10040GbUnderItsOldName) {
  DeviceProfile alias = load_device_profile(*find_profile("a100"));
  const DeviceProfile a40 = load_device_profile(*find_profile("a100-40gb"));
  EXPECT_EQ(alias.name, "a100");
  EXPECT_EQ(alias.origin, "alias of a100-40gb: " + a40.origin);
  alias.name = a40.name;
  alias.origin = a40.origin;
  EXPECT_EQ(alias, a40);
}

// The two fit rows' steps on the committed a100-80gb profile: their residual is zero by
// construction, up to the efficiency's four significant figures (0.1%).
TEST(PublishedProfiles, TheA100EfficienciesReproduceTheirFitRows) {
  const DeviceProfile a80 = load_device_profile(*find_profile("a100-80gb"));
  int rows = 0;
  for (const DleRow& row : read_dle(kData / "dle-pytorch-convnets.csv")) {
    if (!row.fit) continue;
    ++rows;
    const double published = static_cast<double>(row.batch) / row.images_per_s;
    const double predicted = single_gpu_step(dle_zoo_name(row.model), row.batch, a80, *row.precision).value();
    EXPECT_NEAR(predicted / published, 1.0, 1e-3) << row.where;
  }
  EXPECT_EQ(rows, 2);
}

TEST(PublishedClusterPoints, EveryMultiGpuRowIsAPointWhoseScenarioParses) {
  const auto points = read_cluster_points(kMultiGpu / "points.csv");
  EXPECT_EQ(points.size(), 89u);
  std::map<std::string, int> roles;
  std::map<std::string, std::string> baselines;  // key -> the zoo model the 1-GPU point runs
  for (const Point& p : single_gpu_points(kData)) {
    baselines[baseline_key(p.row.source, p.row.system, p.row.model, p.row.batch)] = p.zoo_model;
  }
  for (const ClusterPoint& p : points) {
    ++roles[p.role];
    const Scenario s = load_scenario(kMultiGpu / p.scenario);
    EXPECT_EQ(s.workers, p.gpus) << p.scenario;
    // The model as the source ran it (tf_cnn_benchmarks' v1 ResNets), as its 1-GPU point runs.
    EXPECT_EQ(s.model_ref, zoo_name(p.model)) << p.scenario;
    EXPECT_EQ(s.strategies.at(0).transport.name, p.transport) << p.scenario;
    // TensorFlow's replicated update all-reduces each gradient on its own; Horovod fuses them.
    const bool own = p.setup.starts_with("replicated");
    EXPECT_EQ(s.strategies.at(0).fusion_threshold.value(), own ? 1.0 : 64.0 * 1024 * 1024)
        << p.scenario;
    EXPECT_EQ(s.strategies.at(0).cycle_time.value(), own ? 0.0 : 5e-3) << p.scenario;
    // The transports are fitted on table 1b's TCP rows, tf-grpc also on the EC2 distributed rows
    // at 16 GPUs.
    const bool table_1b =
        p.system == "table 1b" && p.setup.find("variables on CPU") == std::string::npos;
    const bool ec2 = p.system == "EC2 p2.8xlarge distributed" && p.gpus == 16;
    EXPECT_EQ(p.role == "fit", table_1b || ec2) << p.scenario;
    const auto baseline = baselines.find(baseline_key(p.source, p.system, p.model, p.batch));
    ASSERT_NE(baseline, baselines.end()) << p.scenario << " has no 1-GPU point";
    EXPECT_EQ(s.model_ref, baseline->second) << p.scenario;
  }
  EXPECT_EQ(roles, (std::map<std::string, int>{{"check", 69}, {"fit", 14}, {"out of scope", 6}}));
}

// Regenerates the report into a temporary folder (about 30 s): it must be what is committed,
// byte for byte, with every multi-GPU point once.
TEST(PublishedReport, IsCompleteAndWhatIsCommitted) {
  if (run_command(ralp_binary() + " published report --help").status != 0) {
    GTEST_SKIP() << "ralp is built without the simulator";
  }
  TempDir dir("published-report");
  const auto run = run_command(ralp_binary() + " published report --quiet --out " + dir.path.string());
  ASSERT_EQ(run.status, 0) << run.err;
  for (const char* file : {"README.md", "points.csv", "multi-gpu.md", "multi-gpu-points.csv",
                           "dle.md", "dle-points.csv"}) {
    EXPECT_EQ(testing::read_file(dir / file), testing::read_file(kReport / file))
        << file << " differs from the committed report: run scripts/published-report";
  }
  // The Markdown names each point's model as its scenario ran it.
  EXPECT_NE(testing::read_file(dir / "multi-gpu.md").find("| table 1b | resnet101_tf | 16 |"),
            std::string::npos);
  std::map<std::string, int> seen;
  std::istringstream lines(testing::read_file(dir / "multi-gpu-points.csv"));
  std::string line;
  std::getline(lines, line);  // header
  while (std::getline(lines, line)) ++seen[line.substr(0, line.find(','))];
  for (const ClusterPoint& p : read_cluster_points(kMultiGpu / "points.csv")) {
    EXPECT_EQ(seen[p.scenario], 1) << p.scenario;
  }
  EXPECT_EQ(seen.size(), 89u);
}

// The fitted transports on the rows they were fitted on (table 1b): mpi-cpu's within 10%,
// nccl's within 13% (its ResNet-101 row is at -12.9%), tf-grpc's within 23% (its ResNet-101 row
// is at +22.5%, VGG-16's at -18.2%: with its cost per message at 0, one cost per byte cannot
// follow both): reports/published/multi-gpu.md. Table 1b does not pin nccl's cost per message: its
// Inception-v3 and ResNet-101 rows go from -13% and -18% at 0 us to -1% and 0% at 1 ms, where
// table 1c's 64-GPU steps more than double, and the local search stops on the way
// (docs/transports.md).
TEST(PublishedTransports, ReproduceTheirFittingRowsWithinTheFitsBound) {
  std::istringstream lines(testing::read_file(kReport / "multi-gpu-points.csv"));
  std::string line;
  std::getline(lines, line);
  int fitting = 0;
  while (std::getline(lines, line)) {
    std::vector<std::string> cells;
    for (size_t start = 0, comma = 0; comma != std::string::npos; start = comma + 1) {
      comma = line.find(',', start);
      cells.push_back(line.substr(start, comma == std::string::npos ? comma : comma - start));
    }
    if (cells.at(7) != "fit") continue;
    ++fitting;
    if (cells.at(2) == "EC2 p2.8xlarge distributed") {
      // Fitted on scaling efficiency: their step error is the K80's compute.
      EXPECT_LT(std::abs(std::stod(cells.at(12)) - std::stod(cells.at(11))), 0.12) << cells.at(0);
      continue;
    }
    const double bound = cells.at(6) == "tf-grpc" ? 0.25 : cells.at(6) == "nccl" ? 0.13 : 0.10;
    EXPECT_LT(std::abs(std::stod(cells.at(10))), bound) << cells.at(0);
  }
  EXPECT_EQ(fitting, 14);
}

TEST(PublishedProvenance, SimulateSaysFittedToPublishedKernelTimings) {
  TempDir dir("published");
  std::ofstream(dir / "one.json") << R"({"name": "one", "model": "resnet50_tf", "batch_per_worker": 32,
    "cluster": {"workers": 1, "parameter_servers": 0, "worker_device": "p100",
                "platform": {"kind": "star", "nic_bandwidth": "10Gbps"}},
    "strategies": ["allreduce"], "steps": 1, "warmup_steps": 0})";
  const auto text = run_command(ralp_binary() + " simulate " + (dir / "one.json") + " --fidelity analytic");
  ASSERT_EQ(text.status, 0) << text.err;
  EXPECT_NE(text.out.find("p100 (published profile): "), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("layers fitted to published kernel timings"), std::string::npos);
  const auto json = run_command(ralp_binary() + " simulate " + (dir / "one.json") +
                                " --fidelity analytic --json " + (dir / "out.json"));
  ASSERT_EQ(json.status, 0) << json.err;
  const Json out = Json::parse(testing::read_file(dir / "out.json"));
  const std::string dump = out.dump();
  EXPECT_NE(dump.find("\"profile_source\":\"published\""), std::string::npos);
  EXPECT_NE(dump.find("fitted to published kernel timings"), std::string::npos);
  EXPECT_EQ(dump.find("\"published_layers\":0"), std::string::npos);
}

// A derived profile's times line says how it was made.
TEST(PublishedProvenance, SimulateSaysADerivedProfileIsDerived) {
  TempDir dir("published-derived");
  std::ofstream(dir / "one.json") << R"({"name": "one", "model": "resnet50", "batch_per_worker": 32,
    "precision": "tf32",
    "cluster": {"workers": 1, "parameter_servers": 0, "worker_device": "a100-80gb",
                "platform": {"kind": "star", "nic_bandwidth": "10Gbps"}},
    "strategies": ["allreduce"], "steps": 1, "warmup_steps": 0})";
  const auto text = run_command(ralp_binary() + " simulate " + (dir / "one.json") + " --fidelity analytic");
  ASSERT_EQ(text.status, 0) << text.err;
  EXPECT_NE(text.out.find("a100-80gb (published profile, derived from a100-40gb by datasheet, "
                          "architecture efficiency fitted on published rows): "),
            std::string::npos)
      << text.out;
}

}  // namespace
}  // namespace ralp::published
