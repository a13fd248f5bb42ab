// The published measurements this project fits and checks GPU profiles against (published/*.csv,
// published/gpus.json; published/README.md gives their sources and licences).
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "ralp/devices/device_profile.hpp"
#include "ralp/devices/gpu_kernels.hpp"

namespace ralp::published {

// One published kernel timing: a DeepBench convolution pass, a DeepBench GEMM, or one layer's
// forward or backward in convnet-benchmarks' Caffe logs (a zoo model's layer).
struct KernelRow {
  enum class Kind { conv, gemm, layer };
  Kind kind = Kind::conv;
  std::string device;  // profile name
  std::string where;   // "deepbench-conv-fp32.csv:12"
  std::string shape;   // rows of one shape (all its passes) leave a fit together
  std::string pass;    // "forward", "backward_data", "backward_filter", "backward", "gemm"
  ConvShape conv;      // conv
  ConvPass conv_pass = ConvPass::forward;
  ConvAlgorithms algorithms;  // what the row's cuDNN offered
  double m = 0, n = 0, k = 0;  // gemm
  std::string model, layer;    // layer: a zoo model's layer; pass "forward" or "backward"
  int64_t batch = 0;
  Seconds measured;
};

// A whole network's forward and backward per iteration in convnet-benchmarks' README table.
struct WholeNetworkRow {
  std::string framework;  // "TensorFlow", "CuDNN R4 fp32 (Torch)"
  std::string model;      // zoo model
  int64_t batch = 0;
  Seconds forward, backward;
  std::string where;
};

// A GPU's datasheet figures (published/gpus.json).
struct GpuSpec {
  std::string name, description, architecture, source;
  double cores = 0, boost_mhz = 0;
  int multiprocessors = 0;
  BytesPerSecond memory_bandwidth, pcie_bandwidth;
  std::string derive_from;  // empty: fitted to its own rows
  [[nodiscard]] FlopsPerSecond peak() const { return FlopsPerSecond(cores * 2.0 * boost_mhz * 1e6); }
  [[nodiscard]] GpuShape shape() const { return {peak(), memory_bandwidth, multiprocessors}; }
};

struct Catalogue {
  std::vector<GpuSpec> gpus;
  std::vector<std::pair<std::string, std::string>> derivation_checks;  // (derive, from)
  std::string architecture_gpu, architecture_system, architecture_model;
  int64_t architecture_batch = 0;
  [[nodiscard]] const GpuSpec& gpu(const std::string& name) const;
};

// One single-GPU or multi-GPU whole-network throughput row (checking data).
struct ThroughputRow {
  std::string source;  // "tf_cnn_benchmarks 2017", "Horovod README 2017"
  std::string system;  // "DGX-1", "table 1b", ...
  std::string gpu;     // profile name
  std::string model;   // the published name ("resnet50")
  int64_t batch = 0, gpus = 0;
  std::string variable_update;
  std::string data;
  double images_per_s = 0;
  std::string where;
};

// Each reader throws InputError naming the file, line and column on a malformed row.
std::vector<KernelRow> read_deepbench_conv(const std::filesystem::path& file);
std::vector<KernelRow> read_deepbench_gemm(const std::filesystem::path& file);
std::vector<KernelRow> read_convnet_layers(const std::filesystem::path& file);
std::vector<WholeNetworkRow> read_convnet_networks(const std::filesystem::path& file);
std::vector<ThroughputRow> read_tf_cnn_benchmarks(const std::filesystem::path& file);
std::vector<ThroughputRow> read_horovod(const std::filesystem::path& file);
Catalogue read_catalogue(const std::filesystem::path& file);

// Every kernel row in `data_dir` (the three kernel files).
std::vector<KernelRow> read_kernel_rows(const std::filesystem::path& data_dir);

}  // namespace ralp::published
