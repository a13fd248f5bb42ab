// Published profiles: fit every GPU with kernel rows, derive the others, fit the framework's
// per-layer cost and the one architecture efficiency, and write the profiles.
#include <algorithm>
#include <cmath>
#include <map>
#include <sstream>

#include "ralp/core/json_input.hpp"
#include "ralp/devices/cost_model.hpp"
#include "ralp/devices/published_model.hpp"
#include "ralp/model/model_zoo.hpp"
#include "ralp/published/fit.hpp"

namespace ralp::published {
namespace {

constexpr const char* kSource =
    "baidu-research/DeepBench results/train/DeepBench_NV_*.xlsx, commit "
    "da81ba7820739e2e506dc27f382d15be5479f98f; soumith/convnet-benchmarks caffe/output_*.log, "
    "commit b458aab61c0ac2257c0990119b5de15c1e886f02 (rows in published/*.csv)";
constexpr const char* kTensorSource =
    "baidu-research/DeepBench results/train/DeepBench_NV_V100.xlsx, sheet \"Results - FP16 ip, "
    "Mixed math\" (CUDA 10.1, cuDNN 7.6.2), commit da81ba7820739e2e506dc27f382d15be5479f98f "
    "(rows in published/deepbench-v100.csv)";
constexpr int kBisections = 60;
// The tensor-core fit's global searches: its sheet has 430 rows, ten times the FP32 fits'.
constexpr int kTensorStarts = 4;

std::string figure(double value) {
  std::ostringstream out;
  out.precision(4);
  out << value;
  return out.str();
}

// The tensor-core path's parameters and fit, where the GPU has one.
struct TensorFit {
  const GpuFit* fit = nullptr;
  Seconds framework;
};

DeviceProfile make_profile(const GpuSpec& spec, const GpuKernelParams& params, PublishedFit fit,
                           const TensorFit& tensor = {}) {
  Json j = Json::object();
  j["name"] = spec.name;
  j["description"] = spec.description;
  j["kind"] = "gpu";
  j["source"] = "published";
  j["origin"] = "GPU kernel model fitted to published kernel timings" +
                (fit.derived_from.empty() ? std::string()
                                          : " of " + fit.derived_from + ", with this GPU's datasheet figures") +
                "; datasheet: " + spec.source +
                (spec.precision_source.empty() ? std::string() : "; " + spec.precision_source);
  j["peak_flops"] = spec.peak().value();
  j["memory_capacity"] = spec.memory_capacity.value();
  for (const auto& [precision, peak] : spec.precision_peaks) {
    j["precision_peaks"][std::string(to_string(precision))] = peak.value();
  }
  j["memory_bandwidth"] = spec.memory_bandwidth.value();
  j["pcie_bandwidth"] = spec.pcie_bandwidth.value();
  j["launch_overhead"] = params.launch.value();
  j["efficiency"] = {{"default", params.implicit_gemm_efficiency},
                     {"memory", params.memory_efficiency}};
  j["multiprocessors"] = spec.multiprocessors;
  DeviceProfile p;
  p.kernel_model = params;
  p.published = std::move(fit);
  if (tensor.fit != nullptr) {
    const GpuFit& t = *tensor.fit;
    p.tensor_kernel_model = t.params;
    p.tensor_published = PublishedFit{kTensorSource, static_cast<int64_t>(t.rows.size()), t.median, t.max,
                                      t.loso_median, t.loso_max, "", 1.0, "", tensor.framework};
  }
  const Json extra = device_profile_to_json(p);
  j["kernel_model"] = extra.at("kernel_model");
  j["published"] = extra.at("published");
  if (tensor.fit != nullptr) {
    j["tensor_kernel_model"] = extra.at("tensor_kernel_model");
    j["tensor_published"] = extra.at("tensor_published");
  }
  return parse_device_profile(j, "", spec.name + " (generated)");
}

// Whole-network forward and backward on `profile` with no framework cost, and the passes that
// would each pay one.
struct NetworkSums {
  double forward = 0, backward = 0, forward_passes = 0, backward_passes = 0;
};
NetworkSums network_sums(const std::string& model, int64_t batch, const DeviceProfile& profile,
                         const ConvAlgorithms& available = {},
                         Precision precision = Precision::fp32) {
  const LayerGraph graph = *zoo_model(model);
  const bool tensor = uses_tensor_cores(profile, precision);
  const GpuKernelParams& params = tensor ? *profile.tensor_kernel_model : *profile.kernel_model;
  ConvAlgorithms algorithms = available;
  algorithms.tensor_ops = tensor;
  NetworkSums s;
  for (const Layer& layer : graph.layers()) {
    const LayerKey key = make_layer_key(layer, batch);
    const LayerCost c = gpu_layer_cost(key, gpu_shape(profile, precision), params, Seconds(0.0),
                                       algorithms);
    s.forward += c.forward.value();
    s.backward += c.backward().value();
    s.forward_passes += key.work.forward.flops.value() > 0 || key.work.forward.bytes.value() > 0;
    for (const PassWork* w : {&key.work.backward_data, &key.work.backward_weight}) {
      s.backward_passes += w->flops.value() > 0 || w->bytes.value() > 0;
    }
  }
  return s;
}

// Least squares of measured - predicted = passes x overhead over the TensorFlow rows, >= 0.
Seconds fit_framework(const std::vector<WholeNetworkRow>& rows, const DeviceProfile& profile,
                      std::vector<std::string>& used) {
  double num = 0.0, den = 0.0;
  for (const WholeNetworkRow& row : rows) {
    if (row.framework != "TensorFlow") continue;
    // convnet-benchmarks' TensorFlow rows ran cuDNN R4: no Winograd.
    const NetworkSums s = network_sums(row.model, row.batch, profile, {false, false});
    num += s.forward_passes * (row.forward.value() - s.forward) +
           s.backward_passes * (row.backward.value() - s.backward);
    den += s.forward_passes * s.forward_passes + s.backward_passes * s.backward_passes;
    used.push_back(row.where + " (" + row.model + ", TensorFlow)");
  }
  return Seconds(den > 0.0 ? std::max(0.0, num / den) : 0.0);
}

// The tensor-core fit of every GPU with tensor-core rows, on its rows in the precision its
// datasheet lists a tensor peak for (V100: FP16). The path runs no fused Winograd and no FFT:
// their efficiencies are held at the FP32 fit's, unused.
void fit_tensor_paths(const Catalogue& catalogue, const std::vector<KernelRow>& rows,
                      const FitOptions& options, const std::map<std::string, const GpuFit*>& fitted,
                      FitOutcome& out) {
  for (const GpuSpec& spec : catalogue.gpus) {
    const bool has_rows = std::any_of(rows.begin(), rows.end(), [&](const KernelRow& r) {
      return r.device == spec.name && r.precision == Precision::fp16;
    });
    if (!has_rows || !spec.precision_peaks.contains(Precision::fp16)) continue;
    FitOptions tensor = options;
    tensor.starts = std::min(options.starts, kTensorStarts);
    tensor.leave_out_from_full_fit = true;
    tensor.held = fitted.at(spec.name)->params;
    tensor.fitted[2] = false;  // winograd_efficiency
    tensor.fitted[3] = false;  // fft_efficiency
    GpuFit fit = fit_gpu(spec.name, rows, spec.shape(Precision::fp16), tensor, Precision::fp16);
    fit.gpu = spec.name + " fp16";
    out.tensor_fits.push_back(std::move(fit));
  }
}


// The GPU with kernel rows a GPU's parameters come from: itself, or the end of its derive_from
// chain.
const GpuSpec& fitted_root(const Catalogue& catalogue, const GpuSpec& spec) {
  const GpuSpec* s = &spec;
  for (size_t hops = 0; !s->derive_from.empty(); ++hops) {
    if (hops > catalogue.gpus.size()) {
      throw InputError("gpus.json", "/gpus", "derive_from of " + spec.name + " runs in a circle");
    }
    s = &catalogue.gpu(s->derive_from);
  }
  return *s;
}

// Whether `spec` is of `architecture` or derived (through any chain) from a GPU that is.
bool takes_architecture(const Catalogue& catalogue, const GpuSpec& spec, const std::string& architecture) {
  for (const GpuSpec* s = &spec;; s = &catalogue.gpu(s->derive_from)) {
    if (s->architecture == architecture) return true;
    if (s->derive_from.empty()) return false;
  }
}

// One architecture row to fit: the zoo model, batch, precision and published step.
struct ArchitectureTarget {
  std::string model;
  int64_t batch = 0;
  Precision precision = Precision::fp32;
  double step = 0;  // seconds
  std::string text;
};

std::vector<ArchitectureTarget> architecture_targets(const std::filesystem::path& dir,
                                                     const ArchitectureRows& a) {
  std::vector<ArchitectureTarget> targets;
  if (a.file == "tf-cnn-benchmarks-2017.csv") {
    for (const ThroughputRow& row : read_tf_cnn_benchmarks(dir / a.file)) {
      if (row.gpu != a.gpu || row.system != a.system || row.model != a.model || row.batch != a.batch ||
          row.gpus != 1) {
        continue;
      }
      targets.push_back({zoo_name(row.model), row.batch, Precision::fp32,
                         static_cast<double>(row.batch) / row.images_per_s,
                         row.where + " (" + row.system + ", " + row.model + ", batch " +
                             std::to_string(row.batch) + ", 1 GPU, " + figure(row.images_per_s) +
                             " images/s)"});
    }
    return targets;
  }
  for (const DleRow& row : read_dle(dir / a.file)) {
    if (!row.fit) continue;
    if (dle_profile(row.gpu) != a.gpu || row.gpus != 1 || !row.precision || row.batch < 1) {
      throw InputError((dir / a.file).string(), row.where,
                       "a fit row must run one " + a.gpu + " in fp32, tf32 or amp-fp16 with its batch");
    }
    targets.push_back({dle_zoo_name(row.model), row.batch, *row.precision,
                       static_cast<double>(row.batch) / row.images_per_s,
                       row.where + " (" + row.system + ", " + row.model + ", " + row.precision_name +
                           ", batch " + std::to_string(row.batch) + ", 1 GPU, " +
                           figure(row.images_per_s) + " images/s)"});
  }
  return targets;
}

// The factor on `profile`'s rates in `precision` whose one-GPU step is `t`'s, by bisection.
double fit_efficiency(const DeviceProfile& profile, const ArchitectureTarget& t) {
  double low = 0.05, high = 2.0;
  for (int i = 0; i < kBisections; ++i) {
    const double mid = 0.5 * (low + high);
    DeviceProfile p = profile;
    p.published->architecture_efficiency = mid;
    p.published->precision_efficiency[t.precision] = mid;
    (single_gpu_step(t.model, t.batch, p, t.precision).value() > t.step ? low : high) = mid;
  }
  return std::stod(figure(0.5 * (low + high)));
}

// Each row's efficiency, fitted on `a.gpu`'s profile, set on every profile of its architecture
// or derived from one: an FP32 row's as the architecture's factor, another precision's as that
// precision's (BF16 takes FP16's: the same tensor cores at the same datasheet rate).
void fit_architecture(const std::filesystem::path& dir, const Catalogue& catalogue,
                      const ArchitectureRows& a, FitOutcome& out) {
  auto own = std::find_if(out.profiles.begin(), out.profiles.end(),
                          [&](const DeviceProfile& p) { return p.name == a.gpu; });
  if (own == out.profiles.end()) throw InputError("gpus.json", "/architecture_rows", a.gpu + " is not a GPU");
  const std::string architecture = catalogue.gpu(a.gpu).architecture;
  const DeviceProfile fitted_on = *own;
  for (const ArchitectureTarget& t : architecture_targets(dir, a)) {
    const double efficiency = fit_efficiency(fitted_on, t);
    out.architecture_fits.push_back({a.gpu, t.precision, efficiency, t.text});
    for (DeviceProfile& p : out.profiles) {
      if (!takes_architecture(catalogue, catalogue.gpu(p.name), architecture)) continue;
      PublishedFit& f = *p.published;
      if (t.precision == Precision::fp32) {
        f.architecture_efficiency = efficiency;
      } else {
        f.precision_efficiency[t.precision] = efficiency;
        if (t.precision == Precision::fp16) f.precision_efficiency[Precision::bf16] = efficiency;
      }
      f.architecture_row += (f.architecture_row.empty() ? "" : "; ") + t.text;
    }
  }
}

// How a profile was made, for simulate's times line and the profile's readers.
std::string origin_of(const Catalogue& catalogue, const GpuSpec& spec, const DeviceProfile& p) {
  const GpuSpec& root = fitted_root(catalogue, spec);
  std::string text = "GPU kernel model fitted to published kernel timings";
  if (root.name != spec.name) {
    text += " of " + root.name + " (derived" +
            (spec.derive_from != root.name ? " through " + spec.derive_from : std::string()) +
            "), with this GPU's datasheet figures";
  }
  const PublishedFit& f = *p.published;
  if (!f.architecture_row.empty()) {
    text += "; architecture efficiency";
    if (f.precision_efficiency.empty() || f.architecture_efficiency != 1.0) {
      text += " " + figure(f.architecture_efficiency);
    }
    for (const auto& [precision, e] : f.precision_efficiency) {
      text += " " + std::string(to_string(precision)) + " " + figure(e);
    }
    text += " fitted on " + f.architecture_row;
  }
  return text + "; datasheet: " + spec.source +
         (spec.precision_source.empty() ? std::string() : "; " + spec.precision_source);
}

// A copy of each profile under each of its aliases ("a100": the a100-40gb profile).
void add_aliases(const Catalogue& catalogue, FitOutcome& out) {
  const size_t n = out.profiles.size();
  for (size_t i = 0; i < n; ++i) {
    for (const std::string& alias : catalogue.gpu(out.profiles[i].name).aliases) {
      DeviceProfile copy = out.profiles[i];
      copy.origin = "alias of " + copy.name + ": " + copy.origin;
      copy.name = alias;
      out.profiles.push_back(std::move(copy));
    }
  }
}

}  // namespace

Seconds single_gpu_step(const std::string& model, int64_t batch, const DeviceProfile& profile,
                        Precision precision) {
  const NetworkSums s = network_sums(model, batch, profile, {}, precision);
  const double framework = profile.published ? profile.published->framework_layer_overhead.value() : 0.0;
  const double params = static_cast<double>(zoo_model(model)->total_params()) * kBytesPerFloat;
  return Seconds(s.forward + s.backward + framework * (s.forward_passes + s.backward_passes) +
                 params * update_cost_factor(precision) / profile.update_rate.value());
}

FitOutcome fit_all(const std::filesystem::path& dir, const FitOptions& options) {
  FitOutcome out;
  out.kernel_rows = read_kernel_rows(dir);
  const std::vector<KernelRow> tensor_rows = read_deepbench_tensor(dir / "deepbench-v100.csv");
  out.kernel_rows.insert(out.kernel_rows.end(), tensor_rows.begin(), tensor_rows.end());
  const std::vector<KernelRow>& rows = out.kernel_rows;
  const Catalogue catalogue = read_catalogue(dir / "gpus.json");
  std::map<std::string, const GpuFit*> fitted;
  for (const GpuSpec& spec : catalogue.gpus) {
    if (spec.derive_from.empty()) out.fits.push_back(fit_gpu(spec.name, rows, spec.shape(), options));
  }
  for (const GpuFit& fit : out.fits) fitted[fit.gpu] = &fit;
  fit_tensor_paths(catalogue, rows, options, fitted, out);
  for (const auto& [derive, from] : catalogue.derivation_checks) {
    GpuFit check = check_gpu(derive, rows, catalogue.gpu(derive).shape(), fitted.at(from)->params);
    check.gpu = derive + " from " + from;
    out.derivation_checks.push_back(std::move(check));
  }
  // The framework's per-layer cost, on the TensorFlow whole-network rows of the one GPU they ran.
  const GpuSpec& titanx = catalogue.gpu("titanx-maxwell");
  PublishedFit base_fit;
  base_fit.source = kSource;
  const DeviceProfile base = make_profile(titanx, fitted.at(titanx.name)->params, base_fit);
  out.framework_layer_overhead =
      fit_framework(read_convnet_networks(dir / "convnet-benchmarks-titanx-maxwell.csv"), base,
                    out.framework_rows);
  // A derived GPU takes its fitted root's parameters (through any chain of derive_from).
  for (const GpuSpec& spec : catalogue.gpus) {
    const GpuSpec& root = fitted_root(catalogue, spec);
    const GpuFit& source = *fitted.at(root.name);
    PublishedFit fit{kSource, static_cast<int64_t>(source.rows.size()), source.median, source.max,
                     source.loso_median, source.loso_max, spec.derive_from, 1.0, "",
                     out.framework_layer_overhead};
    TensorFit tensor{nullptr, out.framework_layer_overhead};
    for (const GpuFit& t : out.tensor_fits) {
      if (t.gpu.substr(0, t.gpu.find(' ')) == root.name && !spec.precision_peaks.empty()) tensor.fit = &t;
    }
    out.profiles.push_back(make_profile(spec, source.params, std::move(fit), tensor));
  }
  for (const ArchitectureRows& a : catalogue.architecture_rows) fit_architecture(dir, catalogue, a, out);
  for (DeviceProfile& p : out.profiles) p.origin = origin_of(catalogue, catalogue.gpu(p.name), p);
  add_aliases(catalogue, out);
  return out;
}

std::string zoo_name(const std::string& published_model) {
  if (published_model.starts_with("resnet") || published_model == "alexnet") {
    return published_model + "_tf";
  }
  return published_model;
}

}  // namespace ralp::published
