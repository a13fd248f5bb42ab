// Device profiles: a device's datasheet figures, and, for measured profiles, per-layer-shape
// timings and a cost model fitted to them. Stored as JSON in calibrate/profiles/.
#pragma once

#include <filesystem>
#include <istream>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "ralp/core/json_input.hpp"
#include "ralp/core/precision.hpp"
#include "ralp/core/units.hpp"
#include "ralp/devices/gpu_kernels.hpp"
#include "ralp/model/layer.hpp"

namespace ralp {

enum class DeviceKind { cpu, gpu };
enum class ProfileSource { datasheet, measured, published };

std::string_view to_string(DeviceKind kind);
std::string_view to_string(ProfileSource source);

// Median times of one layer signature's passes inside real training steps of a whole model: the
// network executor timing each layer as it steps, over repeated steps after a first, untimed one.
struct InStepTimes {
  Seconds forward;
  Seconds backward_data;
  Seconds backward_weight;
  friend bool operator==(const InStepTimes&, const InStepTimes&) = default;
};

// Median times of one layer signature at one batch size on the profiled device.
struct MeasuredLayer {
  std::string signature;  // Layer::signature()
  LayerKind kind = LayerKind::relu;
  int64_t batch = 0;
  Seconds forward;
  Seconds backward_data;
  Seconds backward_weight;
  double spread = 0.0;  // (max - min) / median over the repetitions, largest of the passes
  // The same passes inside a training step (slower than alone: colder caches, neighbours' memory
  // traffic); absent when calibration ran no end-to-end step containing this shape.
  std::optional<InStepTimes> in_step;
  Precision precision = Precision::fp32;  // what the kernels computed in
  friend bool operator==(const MeasuredLayer&, const MeasuredLayer&) = default;
};

// Achieved rates of one layer kind, fitted to the measured layers of that kind.
struct FittedRates {
  FlopsPerSecond flops;
  BytesPerSecond bytes;
  friend bool operator==(const FittedRates&, const FittedRates&) = default;
};

// Measured end-to-end forward+backward of a whole model against the sum of its layers' times.
struct EndToEndCheck {
  std::string model;
  int64_t batch = 0;
  Seconds measured;
  Seconds sum_of_layers;
  friend bool operator==(const EndToEndCheck&, const EndToEndCheck&) = default;
};

// Two processes time-sharing one device: a model's training step alone and, while two copies of
// it run at once on the same device, each copy's step.
struct TimeSharingCheck {
  std::string model;
  int64_t batch = 0;
  Seconds alone;
  Seconds shared;
  friend bool operator==(const TimeSharingCheck&, const TimeSharingCheck&) = default;
};

// The machine a measured profile was measured on, without host names.
struct ProfileHost {
  std::string cpu_model;  // as this_machine_cpu_model() says it: "AMD EPYC (family 26, model 2)"
  std::string gpu_model;  // the GPU's name for a GPU profile, else empty
  int threads = 0;        // CPU threads the kernels ran on; 0 when not recorded
  friend bool operator==(const ProfileHost&, const ProfileHost&) = default;
};

// How a published profile was made: fitted to published kernel timings (DeepBench, convnet-
// benchmarks), or derived from such a fit with this GPU's own datasheet figures.
struct PublishedFit {
  std::string source;       // repositories, files and commits of the fitting rows
  int64_t rows = 0;         // kernel rows fitted (of this GPU, or of `derived_from`)
  double median_error = 0;  // |predicted / published - 1| over those rows
  double max_error = 0;
  double loso_median_error = 0;  // the same, each shape predicted by a fit without it
  double loso_max_error = 0;
  std::string derived_from;             // the fitted profile whose parameters this one takes
  double architecture_efficiency = 1;   // derived only: one factor on every compute rate
  std::string architecture_row;         // the published rows those factors were fitted on
  Seconds framework_layer_overhead;     // per layer and pass, fitted on whole-network rows
  // Derived only: the factor of a precision whose rows fitted their own (A100: TF32, FP16),
  // in place of architecture_efficiency for that precision.
  std::map<Precision, double> precision_efficiency;
  friend bool operator==(const PublishedFit&, const PublishedFit&) = default;
};

struct DeviceProfile {
  std::string name;         // "gtx1080ti", the key scenarios use
  std::string description;  // "NVIDIA GeForce GTX 1080 Ti"
  DeviceKind kind = DeviceKind::gpu;
  ProfileSource source = ProfileSource::datasheet;
  std::string origin;  // where the figures come from

  // Datasheet figures; measured profiles keep them as the last fallback.
  FlopsPerSecond peak_flops;
  BytesPerSecond memory_bandwidth;
  std::optional<BytesPerSecond> pcie_bandwidth;  // host-device copies; GPUs only
  // The device memory (a GPU's) or the host memory a CPU profile's ranks share; absent: not
  // stated, and no footprint is checked against it.
  std::optional<Bytes> memory_capacity;
  // A CPU's cores, where its datasheet states them (0: not stated). Work that runs on threads of
  // its own, as a transport's connections do, spreads over up to this many (docs/transports.md).
  int cores = 0;
  // Dense peak rates of the products of each precision other than FP32 (tensor cores on a GPU,
  // AVX-512 BF16 or AMX on a CPU), from the datasheet named in `origin`. A precision absent here
  // runs its products at peak_flops where precision_support() allows it at all.
  std::map<Precision, FlopsPerSecond> precision_peaks;
  Seconds launch_overhead;                       // per kernel
  // Fraction of peak a layer kind achieves; kinds not listed use default_efficiency.
  std::map<LayerKind, double> compute_efficiency;
  double default_efficiency = 0.5;
  double memory_efficiency = 0.8;  // fraction of memory_bandwidth achieved
  // PS-side costs: summing W gradient buffers and the SGD update, in bytes of gradient per second.
  BytesPerSecond gradient_sum_rate;
  BytesPerSecond update_rate;
  // How much longer work takes while two processes time-share the device than its equal share of
  // the device gives (switching between them costs, and each evicts the other's data from the
  // caches): each of two computations at once progresses at 1 / (2 x this) of the device's speed.
  // 1: they divide it without loss. Measured profiles take it from `time_sharing`.
  double time_sharing_slowdown = 1.0;

  // Published profiles only: the kernel model, its device figures and how it was fitted.
  int multiprocessors = 0;
  std::optional<GpuKernelParams> kernel_model;
  std::optional<PublishedFit> published;
  // The same for the tensor-core path (FP16, BF16 and TF32 products), and how it was fitted;
  // absent: the profile has no tensor-core fit of its own.
  std::optional<GpuKernelParams> tensor_kernel_model;
  std::optional<PublishedFit> tensor_published;

  // Measured profiles only.
  std::optional<ProfileHost> host;
  std::vector<MeasuredLayer> measured;
  std::map<LayerKind, FittedRates> fitted;  // FP32
  std::map<Precision, std::map<LayerKind, FittedRates>> precision_fitted;  // other precisions
  std::optional<Seconds> fitted_launch_overhead;
  std::vector<EndToEndCheck> end_to_end;
  std::vector<TimeSharingCheck> time_sharing;
  std::map<std::string, std::string> provenance;  // device, driver, libraries, threads, date, load

  friend bool operator==(const DeviceProfile&, const DeviceProfile&) = default;
};

// Whether a device runs a precision: natively (its products at their own rate), slowly (accepted
// with a warning: FP16 on a GPU without fast FP16 arithmetic, which cuDNN runs at FP32 speed or
// worse) or not at all (TF32 and BF16 before Ampere; on a CPU, BF16 without AVX-512 BF16 or AMX,
// and never FP16 or TF32, which oneDNN does not run on CPUs). `reason` says why in a few words
// when not native.
enum class PrecisionSupport { native, slow, unsupported };
struct PrecisionCheck {
  PrecisionSupport support = PrecisionSupport::native;
  std::string reason;
};
PrecisionCheck precision_support(const DeviceProfile& profile, Precision precision);
// The peak rate of a precision's products: precision_peaks' entry, else peak_flops.
FlopsPerSecond precision_peak(const DeviceProfile& profile, Precision precision);
// The factor a published profile's compute and memory rates take in `precision`: that
// precision's own fitted one, else the architecture's (1 for a profile fitted on its own rows).
double architecture_efficiency(const DeviceProfile& profile, Precision precision);

// Parses a profile object (a whole profile file, or an inline "worker_device" object in a
// scenario). Throws InputError naming `file` and the JSON path under `path`.
DeviceProfile parse_device_profile(const Json& value, const std::string& path,
                                   const std::string& file);
DeviceProfile load_device_profile(const std::filesystem::path& file);

// The profile as JSON, in the format parse_device_profile reads back unchanged.
Json device_profile_to_json(const DeviceProfile& profile);

// This machine's CPU model: /proc/cpuinfo's model name with the family and model numbers that
// tell its generation ("AMD EPYC (family 25, model 1)"), or "unknown CPU" when it says none.
std::string this_machine_cpu_model();
// The same from a /proc/cpuinfo's text.
std::string cpu_model_from_cpuinfo(std::istream& cpuinfo);

// One warning line (without a newline) when one or more of `profiles` are measured CPU profiles
// whose host CPU model differs from `this_cpu_model`: their times were measured on another CPU.
// nullopt when none is (datasheet and GPU profiles never are; a profile named twice counts once).
std::optional<std::string> foreign_host_warning(std::span<const DeviceProfile* const> profiles,
                                                std::string_view this_cpu_model);

// Where named profiles are looked up, in order: $RALP_PROFILE_PATH (colon-separated folders),
// then the project's calibrate/profiles/ folder.
std::vector<std::filesystem::path> profile_search_path();
// Finds "<name>.json" on the search path; nullopt when absent.
std::optional<std::filesystem::path> find_profile(std::string_view name);
// Names of every profile on the search path, sorted, without duplicates.
std::vector<std::string> available_profiles();

}  // namespace ralp
