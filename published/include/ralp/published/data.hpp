// The published measurements this project fits and checks GPU profiles against (published/*.csv,
// published/gpus.json; published/README.md gives their sources and licences).
#pragma once

#include <filesystem>
#include <map>
#include <optional>
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
  // What the kernels computed in: fp32 (CUDA cores), or fp16 on the tensor cores (DeepBench's
  // FP16 sheet, with tensor-op algorithms and channels and GEMM dimensions padded to 8).
  Precision precision = Precision::fp32;
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
  Bytes memory_capacity;
  // Dense peaks of the products of other precisions (FP16 on P100's CUDA cores, on V100's tensor
  // cores), from `precision_source`; a precision absent here has no fast arithmetic.
  std::map<Precision, FlopsPerSecond> precision_peaks;
  std::string precision_source;
  std::string derive_from;  // empty: fitted to its own rows
  std::vector<std::string> aliases;  // other names its profile is written under ("a100")
  [[nodiscard]] FlopsPerSecond peak() const { return FlopsPerSecond(cores * 2.0 * boost_mhz * 1e6); }
  [[nodiscard]] GpuShape shape() const { return {peak(), memory_bandwidth, multiprocessors}; }
  // The device as the tensor-core kernels of `precision` see it (its peak, 2-byte operands for
  // FP16 and BF16).
  [[nodiscard]] GpuShape shape(Precision precision) const {
    return {precision_peaks.at(precision), memory_bandwidth, multiprocessors,
            activation_bytes(precision), true};
  }
};

// The published rows an architecture efficiency is fitted on: a tf_cnn_benchmarks row (file
// tf-cnn-benchmarks-2017.csv, picked by system, model and batch) or the DLE rows whose role is
// "fit" (file dle-pytorch-convnets.csv), all run on the profile `gpu`.
struct ArchitectureRows {
  std::string gpu, file, system, model;
  int64_t batch = 0;
};

struct Catalogue {
  std::vector<GpuSpec> gpus;
  std::vector<std::pair<std::string, std::string>> derivation_checks;  // (derive, from)
  std::vector<ArchitectureRows> architecture_rows;
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

// One training row of NVIDIA DeepLearningExamples' PyTorch ConvNets READMEs (checking data but
// for its two "fit" rows, published/dle-pytorch-convnets.csv): a model on 1 to 64 GPUs of DGX-1,
// DGX-2 or DGX A100 machines.
struct DleRow {
  std::string commit;     // the README revision (source_commit)
  std::string date;       // its commit date
  std::string model;      // the README's name ("resnet50v1.5", "se-resnext101-32x4d")
  std::string system;     // "DGX-1"
  std::string gpu;        // "v100-sxm2-16gb"
  std::string container;  // as the README states it
  int64_t gpus = 0, gpus_per_node = 0, nodes = 0;
  bool nodes_inferred = false;  // node count = GPUs / 8, the network not described
  std::string precision_name;   // as the file writes it: fp32, tf32, amp-fp16, fp32-or-tf32
  std::optional<Precision> precision;  // fp32, tf32, fp16 ("amp-fp16"); absent where ambiguous
  int64_t batch = 0;            // per GPU; 0 where the source gives none
  double images_per_s = 0;      // total over all GPUs
  bool fit = false;             // role "fit": fits the A100's architecture efficiencies
  std::string where;
};

// The profile a DLE row's GPU runs on ("v100-sxm2-32gb": "v100-32gb"), or "" for a GPU the
// catalogue does not name.
std::string dle_profile(const std::string& gpu);
// The zoo's name for a DLE README's model ("resnet50v1.5": "resnet50", torchvision's v1.5;
// "se-resnext101-32x4d": "se_resnext101_32x4d"); whether the zoo has it is for the caller to ask.
std::string dle_zoo_name(const std::string& model);

// MLPerf Training v3.0's declared DGX H100 ResNet-50 row (mlperf-h100-declared.csv) as a DLE row:
// 8 GPUs of one machine, float16, its batch per GPU and images/s.
DleRow read_mlperf(const std::filesystem::path& file);

// Each reader throws InputError naming the file, line and column on a malformed row.
std::vector<KernelRow> read_deepbench_conv(const std::filesystem::path& file);
std::vector<KernelRow> read_deepbench_gemm(const std::filesystem::path& file);
std::vector<KernelRow> read_convnet_layers(const std::filesystem::path& file);
std::vector<WholeNetworkRow> read_convnet_networks(const std::filesystem::path& file);
std::vector<ThroughputRow> read_tf_cnn_benchmarks(const std::filesystem::path& file);
std::vector<ThroughputRow> read_horovod(const std::filesystem::path& file);
Catalogue read_catalogue(const std::filesystem::path& file);
// A role other than fit or check, or a precision outside fp32, tf32, amp-fp16 and fp32-or-tf32,
// is an error.
std::vector<DleRow> read_dle(const std::filesystem::path& file);

// The tensor-core rows of DeepBench's V100 workbook (deepbench-v100.csv, sheet "Results - FP16
// ip, Mixed math"), as conv_bench.cu and gemm_bench.cu ran them with USE_TENSOR_CORES: NHWC,
// CUDNN_TENSOR_OP_MATH, the forward forced to IMPLICIT_PRECOMP_GEMM and both backward passes to
// ALGO_1 (implicit GEMM), C and K padded to multiples of 8 (the padded shape is what was timed);
// GEMMs through cublasGemmEx with CUBLAS_GEMM_DFALT_TENSOR_OP, M and K (N and T operands: M and
// N; both transposed: all three) padded to multiples of 8. A first layer's data gradient ("N/A
// (input layer)") is not a row.
std::vector<KernelRow> read_deepbench_tensor(const std::filesystem::path& file);
// Either sheet of that workbook: `sheet` fp16 as read_deepbench_tensor; fp32 the sheet "Results
// FP32" (NCHW, the fastest algorithm cudnnFind* timed, no padding).
std::vector<KernelRow> read_deepbench_v100(const std::filesystem::path& file, Precision sheet);

// Every FP32 kernel row in `data_dir` (the three FP32 kernel files).
std::vector<KernelRow> read_kernel_rows(const std::filesystem::path& data_dir);

}  // namespace ralp::published
