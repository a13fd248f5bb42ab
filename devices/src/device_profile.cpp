// Reading, writing and finding device profiles.
#include "ralp/devices/device_profile.hpp"

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <set>
#include <system_error>

namespace ralp {
namespace {

// Summing W gradient buffers reads two arrays and writes one per byte of gradient; SGD with
// momentum reads weights, gradient and velocity and writes weights and velocity.
constexpr double kSumArraysPerGradientByte = 3.0;
constexpr double kUpdateArraysPerGradientByte = 5.0;

const std::vector<std::string> kDeviceKinds{"cpu", "gpu"};
const std::vector<std::string> kSources{"datasheet", "measured", "published"};

std::vector<std::string> layer_kind_names() {
  std::vector<std::string> out;
  for (const LayerKind kind : all_layer_kinds()) out.emplace_back(to_string(kind));
  return out;
}

void parse_efficiency(ObjectReader& parent, DeviceProfile& profile) {
  const Json* value = parent.get("efficiency");
  if (value == nullptr) return;
  ObjectReader r(*value, parent.path_of("efficiency"), parent.file());
  if (auto d = r.optional_number("default", 1e-6, 1.0)) profile.default_efficiency = *d;
  if (auto m = r.optional_number("memory", 1e-6, 1.0)) profile.memory_efficiency = *m;
  for (const LayerKind kind : all_layer_kinds()) {
    if (auto e = r.optional_number(to_string(kind), 1e-6, 1.0)) {
      profile.compute_efficiency[kind] = *e;
    }
  }
  r.finish();
}

LayerKind parse_kind(ObjectReader& r, std::string_view key) {
  return *layer_kind_from_string(r.choice(key, layer_kind_names()));
}

// Upper bound on a recorded kernel thread count, far above any machine's cores.
constexpr int64_t kMaxThreads = 1 << 16;

void parse_host(ObjectReader& parent, DeviceProfile& profile) {
  const Json* value = parent.get("host");
  if (value == nullptr) return;
  ObjectReader r(*value, parent.path_of("host"), parent.file());
  ProfileHost host;
  host.cpu_model = r.string("cpu_model");
  host.gpu_model = r.optional_string("gpu_model").value_or("");
  host.threads = static_cast<int>(r.optional_integer("threads", 1, kMaxThreads).value_or(0));
  r.finish();
  profile.host = std::move(host);
}

void parse_precision_peaks(ObjectReader& parent, DeviceProfile& profile) {
  const Json* value = parent.get("precision_peaks");
  if (value == nullptr) return;
  ObjectReader r(*value, parent.path_of("precision_peaks"), parent.file());
  for (const Precision precision : kPrecisions) {
    if (precision == Precision::fp32) continue;  // FP32's is peak_flops
    if (auto peak = r.optional_flops_rate(to_string(precision))) {
      profile.precision_peaks[precision] = *peak;
    }
  }
  r.finish();
}

std::optional<GpuKernelParams> parse_kernel_model(ObjectReader& parent, std::string_view key) {
  const Json* value = parent.get(key);
  if (value == nullptr) return std::nullopt;
  ObjectReader r(*value, parent.path_of(key), parent.file());
  std::array<double, kKernelParamCount> values{};
  for (size_t i = 0; i + 1 < values.size(); ++i) {  // every parameter but the launch
    const ParamBounds& b = kKernelParamBounds[i];
    values[i] = r.number(b.name, b.low, b.high);
  }
  GpuKernelParams params = params_from_array(values);
  params.launch = r.seconds("launch");
  r.finish();
  return params;
}

std::optional<PublishedFit> parse_published(ObjectReader& parent, std::string_view key) {
  const Json* value = parent.get(key);
  if (value == nullptr) return std::nullopt;
  ObjectReader r(*value, parent.path_of(key), parent.file());
  PublishedFit f;
  f.source = r.string("source");
  f.rows = r.integer("rows", 0, int64_t{1} << 40);
  f.median_error = r.number("median_error", 0.0, 1e6);
  f.max_error = r.number("max_error", 0.0, 1e6);
  f.loso_median_error = r.optional_number("loso_median_error", 0.0, 1e6).value_or(0.0);
  f.loso_max_error = r.optional_number("loso_max_error", 0.0, 1e6).value_or(0.0);
  f.derived_from = r.optional_string("derived_from").value_or("");
  f.architecture_efficiency = r.optional_number("architecture_efficiency", 0.01, 10.0).value_or(1.0);
  if (const Json* per = r.get("precision_efficiency")) {
    ObjectReader e(*per, r.path_of("precision_efficiency"), r.file());
    for (const Precision precision : kPrecisions) {
      if (auto v = e.optional_number(to_string(precision), 0.01, 10.0)) f.precision_efficiency[precision] = *v;
    }
    e.finish();
  }
  f.architecture_row = r.optional_string("architecture_row").value_or("");
  f.framework_layer_overhead = r.optional_seconds("framework_layer_overhead").value_or(Seconds(0.0));
  r.finish();
  return f;
}

std::map<LayerKind, FittedRates> parse_fitted(ObjectReader& r, std::string_view key) {
  std::map<LayerKind, FittedRates> out;
  const Json* fitted = r.get(key);
  if (fitted == nullptr) return out;
  ObjectReader f(*fitted, r.path_of(key), r.file());
  for (const LayerKind kind : all_layer_kinds()) {
    const Json* entry = f.get(to_string(kind));
    if (entry == nullptr) continue;
    ObjectReader e(*entry, f.path_of(to_string(kind)), f.file());
    FittedRates rates;
    e.require("flops", "a rate such as \"1TFLOPS\"");
    rates.flops = *e.optional_flops_rate("flops");
    rates.bytes = e.bandwidth("bytes");
    e.finish();
    out[kind] = rates;
  }
  f.finish();
  return out;
}

Json kernel_model_to_json(const GpuKernelParams& params) {
  const auto values = as_array(params);
  Json k = Json::object();
  for (size_t i = 0; i + 1 < values.size(); ++i) {
    k[std::string(kKernelParamBounds[i].name)] = values[i];
  }
  k["launch"] = params.launch.value();
  return k;
}

Json published_to_json(const PublishedFit& f) {
  Json q = {{"source", f.source},
            {"rows", f.rows},
            {"median_error", f.median_error},
            {"max_error", f.max_error},
            {"loso_median_error", f.loso_median_error},
            {"loso_max_error", f.loso_max_error}};
  if (!f.derived_from.empty()) q["derived_from"] = f.derived_from;
  if (f.architecture_efficiency != 1.0) q["architecture_efficiency"] = f.architecture_efficiency;
  for (const auto& [precision, e] : f.precision_efficiency) {
    q["precision_efficiency"][std::string(to_string(precision))] = e;
  }
  if (!f.architecture_row.empty()) q["architecture_row"] = f.architecture_row;
  q["framework_layer_overhead"] = f.framework_layer_overhead.value();
  return q;
}

Json fitted_to_json(const std::map<LayerKind, FittedRates>& fitted) {
  Json out = Json::object();
  for (const auto& [kind, rates] : fitted) {
    out[std::string(to_string(kind))] = {{"flops", rates.flops.value()},
                                         {"bytes", rates.bytes.value()}};
  }
  return out;
}

void parse_measured(ObjectReader& parent, DeviceProfile& profile) {
  const Json* value = parent.get("measured");
  if (value == nullptr) return;
  ObjectReader r(*value, parent.path_of("measured"), parent.file());

  if (const Json* prov = r.get("provenance")) {
    ObjectReader p(*prov, r.path_of("provenance"), r.file());
    for (const auto& [key, item] : prov->items()) {
      if (item.is_string()) {
        profile.provenance[key] = item.get<std::string>();
      } else if (item.is_number() || item.is_boolean()) {
        profile.provenance[key] = item.dump();
      } else {
        p.fail(key, "is " + describe_json(item) + ", expected a string or a number");
      }
    }
  }
  profile.fitted_launch_overhead = r.optional_seconds("launch_overhead");

  profile.fitted = parse_fitted(r, "fitted");
  if (const Json* other = r.get("precision_fitted")) {
    ObjectReader o(*other, r.path_of("precision_fitted"), r.file());
    for (const Precision precision : kPrecisions) {
      if (precision == Precision::fp32 || !o.has(to_string(precision))) continue;
      profile.precision_fitted[precision] = parse_fitted(o, to_string(precision));
    }
    o.finish();
  }

  if (const Json* layers = r.get("layers")) {
    if (!layers->is_array()) {
      r.fail("layers", "is " + describe_json(*layers) + ", expected an array");
    }
    for (size_t i = 0; i < layers->size(); ++i) {
      ObjectReader l((*layers)[i], json_path(r.path_of("layers"), i), r.file());
      MeasuredLayer m;
      m.signature = l.string("signature");
      m.kind = parse_kind(l, "kind");
      if (const auto precision = l.optional_choice(
              "precision", {precision_names().begin(), precision_names().end()})) {
        m.precision = *parse_precision(*precision);
      }
      m.batch = l.integer("batch", 1, 1 << 20);
      m.forward = l.seconds("forward");
      m.backward_data = l.seconds("backward_data");
      m.backward_weight = l.seconds("backward_weight");
      m.spread = l.optional_number("spread", 0.0, 1e6).value_or(0.0);
      if (const Json* in_step = l.get("in_step")) {
        ObjectReader s(*in_step, l.path_of("in_step"), l.file());
        m.in_step = InStepTimes{s.seconds("forward"), s.seconds("backward_data"),
                                s.seconds("backward_weight")};
        s.finish();
      }
      l.finish();
      profile.measured.push_back(std::move(m));
    }
  }

  if (const Json* checks = r.get("end_to_end")) {
    if (!checks->is_array()) {
      r.fail("end_to_end", "is " + describe_json(*checks) + ", expected an array");
    }
    for (size_t i = 0; i < checks->size(); ++i) {
      ObjectReader c((*checks)[i], json_path(r.path_of("end_to_end"), i), r.file());
      EndToEndCheck check;
      check.model = c.string("model");
      check.batch = c.integer("batch", 1, 1 << 20);
      check.measured = c.seconds("measured");
      check.sum_of_layers = c.seconds("sum_of_layers");
      c.finish();
      profile.end_to_end.push_back(std::move(check));
    }
  }

  if (const Json* checks = r.get("time_sharing")) {
    if (!checks->is_array()) {
      r.fail("time_sharing", "is " + describe_json(*checks) + ", expected an array");
    }
    for (size_t i = 0; i < checks->size(); ++i) {
      ObjectReader c((*checks)[i], json_path(r.path_of("time_sharing"), i), r.file());
      TimeSharingCheck check;
      check.model = c.string("model");
      check.batch = c.integer("batch", 1, 1 << 20);
      check.alone = c.seconds("alone");
      check.shared = c.seconds("shared");
      c.finish();
      profile.time_sharing.push_back(std::move(check));
    }
  }
  r.finish();
}

}  // namespace

std::string_view to_string(DeviceKind kind) { return kind == DeviceKind::cpu ? "cpu" : "gpu"; }

std::string_view to_string(ProfileSource source) {
  switch (source) {
    case ProfileSource::datasheet:
      return "datasheet";
    case ProfileSource::measured:
      return "measured";
    case ProfileSource::published:
      return "published";
  }
  return "unknown";
}

DeviceProfile parse_device_profile(const Json& value, const std::string& path,
                                   const std::string& file) {
  ObjectReader r(value, path, file);
  DeviceProfile p;
  p.name = r.string("name");
  p.description = r.optional_string("description").value_or(p.name);
  p.kind = r.choice("kind", kDeviceKinds) == "cpu" ? DeviceKind::cpu : DeviceKind::gpu;
  const std::string source = r.optional_choice("source", kSources).value_or("datasheet");
  p.source = source == "measured"    ? ProfileSource::measured
             : source == "published" ? ProfileSource::published
                                     : ProfileSource::datasheet;
  p.origin = r.optional_string("origin").value_or("");
  r.require("peak_flops", "a rate such as \"11.3TFLOPS\"");
  p.peak_flops = *r.optional_flops_rate("peak_flops");
  p.memory_bandwidth = r.bandwidth("memory_bandwidth");
  p.pcie_bandwidth = r.optional_bandwidth("pcie_bandwidth");
  p.memory_capacity = r.optional_bytes("memory_capacity", /*allow_zero=*/false);
  p.cores = static_cast<int>(r.optional_integer("cores", 1, kMaxThreads).value_or(0));
  parse_precision_peaks(r, p);
  p.launch_overhead = r.optional_seconds("launch_overhead").value_or(Seconds(0.0));
  parse_efficiency(r, p);
  parse_host(r, p);
  const BytesPerSecond achieved = p.memory_bandwidth * p.memory_efficiency;
  p.gradient_sum_rate =
      r.optional_bandwidth("gradient_sum_rate").value_or(achieved / kSumArraysPerGradientByte);
  p.update_rate =
      r.optional_bandwidth("update_rate").value_or(achieved / kUpdateArraysPerGradientByte);
  p.time_sharing_slowdown = r.optional_number("time_sharing_slowdown", 1.0, 10.0).value_or(1.0);
  p.multiprocessors =
      static_cast<int>(r.optional_integer("multiprocessors", 1, 100000).value_or(0));
  p.kernel_model = parse_kernel_model(r, "kernel_model");
  p.published = parse_published(r, "published");
  p.tensor_kernel_model = parse_kernel_model(r, "tensor_kernel_model");
  p.tensor_published = parse_published(r, "tensor_published");
  if (p.source == ProfileSource::published &&
      (!p.kernel_model || !p.published || p.multiprocessors == 0)) {
    r.fail(!p.kernel_model ? "kernel_model" : !p.published ? "published" : "multiprocessors",
           "is missing, expected it in a profile whose source is \"published\"");
  }
  parse_measured(r, p);
  // Profiles written before "host" existed recorded the CPU in their provenance.
  if (!p.host && p.source == ProfileSource::measured && p.provenance.contains("cpu_model")) {
    const auto threads = p.provenance.find("threads");
    p.host = ProfileHost{p.provenance.at("cpu_model"), "",
                         threads == p.provenance.end() ? 0 : std::atoi(threads->second.c_str())};
  }
  if (p.source == ProfileSource::measured && p.measured.empty() && p.fitted.empty()) {
    r.fail("measured", "is missing, expected the measurements of a profile whose source is "
                       "\"measured\"");
  }
  r.finish();
  return p;
}

PrecisionCheck precision_support(const DeviceProfile& profile, Precision precision) {
  if (precision == Precision::fp32 || profile.precision_peaks.contains(precision) ||
      profile.precision_fitted.contains(precision)) {
    return {};
  }
  const bool cpu = profile.kind == DeviceKind::cpu;
  switch (precision) {
    case Precision::fp32:
      return {};
    case Precision::tf32:
      return {PrecisionSupport::unsupported,
              cpu ? "TF32 is a GPU tensor-core format (Ampere and later)"
                  : "TF32 needs tensor cores of Ampere or later"};
    case Precision::bf16:
      return {PrecisionSupport::unsupported,
              cpu ? "BF16 on a CPU needs AVX-512 BF16 or AMX, which this profile does not list"
                  : "BF16 needs tensor cores of Ampere or later"};
    case Precision::fp16:
      if (cpu) return {PrecisionSupport::unsupported, "oneDNN runs no FP16 convolution on a CPU"};
      return {PrecisionSupport::slow,
              "no fast FP16 arithmetic: FP16 runs at FP32 speed or slower, only memory traffic "
              "halves"};
  }
  return {};
}

double architecture_efficiency(const DeviceProfile& profile, Precision precision) {
  if (!profile.published) return 1.0;
  const auto it = profile.published->precision_efficiency.find(precision);
  return it != profile.published->precision_efficiency.end() ? it->second
                                                             : profile.published->architecture_efficiency;
}

FlopsPerSecond precision_peak(const DeviceProfile& profile, Precision precision) {
  const auto it = profile.precision_peaks.find(precision);
  return it == profile.precision_peaks.end() ? profile.peak_flops : it->second;
}

DeviceProfile load_device_profile(const std::filesystem::path& file) {
  return parse_device_profile(read_json_file(file), "", file.string());
}

Json device_profile_to_json(const DeviceProfile& p) {
  Json j = Json::object();
  j["name"] = p.name;
  j["description"] = p.description;
  j["kind"] = std::string(to_string(p.kind));
  j["source"] = std::string(to_string(p.source));
  j["origin"] = p.origin;
  j["peak_flops"] = p.peak_flops.value();
  j["memory_bandwidth"] = p.memory_bandwidth.value();
  if (p.pcie_bandwidth) j["pcie_bandwidth"] = p.pcie_bandwidth->value();
  if (p.memory_capacity) j["memory_capacity"] = p.memory_capacity->value();
  if (p.cores > 0) j["cores"] = p.cores;
  if (!p.precision_peaks.empty()) {
    Json peaks = Json::object();
    for (const auto& [precision, peak] : p.precision_peaks) {
      peaks[std::string(to_string(precision))] = peak.value();
    }
    j["precision_peaks"] = peaks;
  }
  j["launch_overhead"] = p.launch_overhead.value();
  Json eff = Json::object();
  eff["default"] = p.default_efficiency;
  eff["memory"] = p.memory_efficiency;
  for (const auto& [kind, e] : p.compute_efficiency) eff[std::string(to_string(kind))] = e;
  j["efficiency"] = eff;
  j["gradient_sum_rate"] = p.gradient_sum_rate.value();
  j["update_rate"] = p.update_rate.value();
  if (p.time_sharing_slowdown != 1.0) j["time_sharing_slowdown"] = p.time_sharing_slowdown;
  if (p.multiprocessors > 0) j["multiprocessors"] = p.multiprocessors;
  if (p.kernel_model) j["kernel_model"] = kernel_model_to_json(*p.kernel_model);
  if (p.published) j["published"] = published_to_json(*p.published);
  if (p.tensor_kernel_model) j["tensor_kernel_model"] = kernel_model_to_json(*p.tensor_kernel_model);
  if (p.tensor_published) j["tensor_published"] = published_to_json(*p.tensor_published);
  if (p.host) {
    j["host"] = {{"cpu_model", p.host->cpu_model}};
    if (!p.host->gpu_model.empty()) j["host"]["gpu_model"] = p.host->gpu_model;
    if (p.host->threads > 0) j["host"]["threads"] = p.host->threads;
  }

  const bool has_measured = !p.measured.empty() || !p.fitted.empty() ||
                            !p.precision_fitted.empty() || !p.end_to_end.empty() ||
                            !p.time_sharing.empty() || !p.provenance.empty() ||
                            p.fitted_launch_overhead;
  if (!has_measured) return j;
  Json m = Json::object();
  m["provenance"] = Json(p.provenance);
  if (p.fitted_launch_overhead) m["launch_overhead"] = p.fitted_launch_overhead->value();
  m["fitted"] = fitted_to_json(p.fitted);
  if (!p.precision_fitted.empty()) {
    Json other = Json::object();
    for (const auto& [precision, fitted] : p.precision_fitted) {
      other[std::string(to_string(precision))] = fitted_to_json(fitted);
    }
    m["precision_fitted"] = other;
  }
  Json layers = Json::array();
  for (const auto& l : p.measured) {
    Json entry = {{"signature", l.signature},
                  {"kind", std::string(to_string(l.kind))},
                  {"batch", l.batch},
                  {"forward", l.forward.value()},
                  {"backward_data", l.backward_data.value()},
                  {"backward_weight", l.backward_weight.value()},
                  {"spread", l.spread}};
    if (l.precision != Precision::fp32) entry["precision"] = std::string(to_string(l.precision));
    if (l.in_step) {
      entry["in_step"] = {{"forward", l.in_step->forward.value()},
                          {"backward_data", l.in_step->backward_data.value()},
                          {"backward_weight", l.in_step->backward_weight.value()}};
    }
    layers.push_back(std::move(entry));
  }
  m["layers"] = layers;
  Json checks = Json::array();
  for (const auto& c : p.end_to_end) {
    checks.push_back({{"model", c.model},
                      {"batch", c.batch},
                      {"measured", c.measured.value()},
                      {"sum_of_layers", c.sum_of_layers.value()}});
  }
  m["end_to_end"] = checks;
  if (!p.time_sharing.empty()) {
    Json sharing = Json::array();
    for (const auto& c : p.time_sharing) {
      sharing.push_back({{"model", c.model},
                         {"batch", c.batch},
                         {"alone", c.alone.value()},
                         {"shared", c.shared.value()}});
    }
    m["time_sharing"] = sharing;
  }
  j["measured"] = m;
  return j;
}

std::string cpu_model_from_cpuinfo(std::istream& in) {
  std::string line, name, family, model;
  const auto value = [](const std::string& l) {
    const auto colon = l.find(':');
    if (colon == std::string::npos) return std::string();
    const auto start = l.find_first_not_of(" \t", colon + 1);
    return start == std::string::npos ? std::string() : l.substr(start);
  };
  const auto key_is = [](const std::string& l, std::string_view key) {
    if (l.rfind(key, 0) != 0) return false;
    const auto rest = l.find_first_not_of(" \t", key.size());
    return rest != std::string::npos && l[rest] == ':';
  };
  // The first processor's block is enough: a machine's cores are of one model.
  while (std::getline(in, line) && !line.empty()) {
    if (key_is(line, "model name")) {
      name = value(line);
    } else if (key_is(line, "cpu family")) {
      family = value(line);
    } else if (key_is(line, "model")) {
      model = value(line);
    }
  }
  if (name.empty()) return "unknown CPU";
  if (family.empty() || model.empty()) return name;
  return name + " (family " + family + ", model " + model + ")";
}

std::string this_machine_cpu_model() {
  std::ifstream in("/proc/cpuinfo");
  return cpu_model_from_cpuinfo(in);
}

std::optional<std::string> foreign_host_warning(std::span<const DeviceProfile* const> profiles,
                                                std::string_view this_cpu_model) {
  std::set<std::string> named;
  std::string list;
  for (const DeviceProfile* p : profiles) {
    if (p->source != ProfileSource::measured || p->kind != DeviceKind::cpu || !p->host) continue;
    if (p->host->cpu_model == this_cpu_model || !named.insert(p->name).second) continue;
    list += (list.empty() ? "" : ", ") + ("'" + p->name + "' from " + p->host->cpu_model);
  }
  if (list.empty()) return std::nullopt;
  const bool several = named.size() > 1;
  return "warning: measured CPU profile" + std::string(several ? "s " : " ") + list +
         ", but this machine's CPU is " + std::string(this_cpu_model) + ": " +
         (several ? "their" : "its") + " times may not hold here (ralp calibrate measures them here)";
}

std::vector<std::filesystem::path> profile_search_path() {
  return search_path("RALP_PROFILE_PATH", RALP_PROFILE_DIR);
}

std::optional<std::filesystem::path> find_profile(std::string_view name) {
  for (const auto& dir : profile_search_path()) {
    auto candidate = dir / (std::string(name) + ".json");
    std::error_code ec;
    if (std::filesystem::is_regular_file(candidate, ec)) return candidate;
  }
  return std::nullopt;
}

std::vector<std::string> available_profiles() {
  std::set<std::string> names;
  for (const auto& dir : profile_search_path()) {
    std::error_code ec;
    for (std::filesystem::directory_iterator it(dir, ec), end; !ec && it != end;
         it.increment(ec)) {
      if (it->path().extension() == ".json") names.insert(it->path().stem().string());
    }
  }
  return {names.begin(), names.end()};
}

}  // namespace ralp
