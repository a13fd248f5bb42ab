// Fitting the GPU kernel model's parameters to published kernel timings, deriving GPUs without
// kernel rows, and writing the results as published device profiles.
#pragma once

#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "ralp/devices/device_profile.hpp"
#include "ralp/published/data.hpp"

namespace ralp::published {

// The kernel model's time for a row on `gpu` with `params`.
Seconds predict(const KernelRow& row, const GpuShape& gpu, const GpuKernelParams& params);

struct FitOptions {
  unsigned seed = 1;
  int global_evaluations = 3000;  // NLopt CRS2 before the local Subplex polish
  int starts = 16;                // searches from seeds seed, seed + 1, ...: the lowest wins
  bool leave_one_shape_out = true;
  // Parameters held at their value in `held` rather than fitted (in kKernelParamBounds' order):
  // the tensor-core path runs neither fused Winograd nor FFT, so its rows say nothing of them.
  std::array<bool, kKernelParamCount> fitted = {true, true, true, true, true, true, true, true, true};
  GpuKernelParams held;
  // Each leave-one-shape-out fit starts from the full fit's parameters with one local search
  // (Subplex) instead of `starts` global ones: for sheets of hundreds of shapes.
  bool leave_out_from_full_fit = false;
};

struct RowResult {
  const KernelRow* row = nullptr;
  Seconds predicted;
  double error = 0;       // predicted / measured - 1
  double loso_error = 0;  // the same from a fit without this row's shape
};

struct GpuFit {
  std::string gpu;
  GpuKernelParams params;
  std::vector<RowResult> rows;
  double median = 0, max = 0, loso_median = 0, loso_max = 0;
};

// The parameters that minimise the sum of squared log errors over `rows` (all of one GPU and
// precision).
GpuKernelParams fit_params(const std::vector<const KernelRow*>& rows, const GpuShape& gpu,
                           const FitOptions& options);
// fit_params with each row's error and, when asked, the leave-one-shape-out errors, over the
// rows of `name` in `precision` (`gpu` is the device as that precision's kernels see it).
GpuFit fit_gpu(const std::string& name, const std::vector<KernelRow>& all, const GpuShape& gpu,
               const FitOptions& options, Precision precision = Precision::fp32);
// Errors of `params` (fitted elsewhere) on `name`'s rows: the derivation rule's check.
GpuFit check_gpu(const std::string& name, const std::vector<KernelRow>& all, const GpuShape& gpu,
                 const GpuKernelParams& params, Precision precision = Precision::fp32);

// One architecture efficiency: fitted on `gpu`'s profile to one published row in `precision`.
struct ArchitectureFit {
  std::string gpu;
  Precision precision = Precision::fp32;
  double efficiency = 1;
  std::string row;
};

// Everything `ralp published fit` makes: a profile per catalogue GPU, each fitted GPU's residuals,
// the derivation checks and the framework cost with the rows it came from.
struct FitOutcome {
  std::vector<KernelRow> kernel_rows;  // every row the fits and checks below point into
  std::vector<DeviceProfile> profiles;
  std::vector<GpuFit> fits;
  std::vector<GpuFit> derivation_checks;  // gpu = "m40 from titanx-maxwell"
  std::vector<GpuFit> tensor_fits;        // gpu = "v100 fp16": the tensor-core path's fits
  Seconds framework_layer_overhead;
  std::vector<std::string> framework_rows;
  std::vector<ArchitectureFit> architecture_fits;
};
FitOutcome fit_all(const std::filesystem::path& data_dir, const FitOptions& options);

// A whole network's training step on one GPU with variables on it, in `precision`: every
// layer's passes (PublishedGpuModel's) plus the SGD update of every parameter, which mixed
// precision makes update_cost_factor times longer (the 16-bit copy, FP16's unscale and check).
Seconds single_gpu_step(const std::string& model, int64_t batch, const DeviceProfile& profile,
                        Precision precision = Precision::fp32);

// The residuals of every fitted row as CSV (gpu, where, shape, pass, measured_ms, predicted_ms,
// error, loso_error).
std::string residuals_csv(const FitOutcome& outcome);

double median(std::vector<double> values);

// The point within [lower, upper] from `x` that minimises `f`, by NLopt's Subplex in at most
// `evaluations` calls (deterministic for a deterministic f).
std::vector<double> minimize_locally(const std::function<double(const std::vector<double>&)>& f,
                                     std::vector<double> x, const std::vector<double>& lower,
                                     const std::vector<double>& upper, int evaluations);

// The zoo model a tf_cnn_benchmarks or Horovod row ran: its 2017 ResNets are v1 ("resnet50_tf"),
// its AlexNet is alexnet_tf; other names are the zoo's own.
std::string zoo_name(const std::string& published_model);

}  // namespace ralp::published
