// Reading results, errors and summaries.
#include "ralp/validate/comparison.hpp"

#include <algorithm>
#include <cmath>
#include <iterator>
#include <stdexcept>

namespace ralp::validate {
namespace {

// The measured step is the median of the real run's measured steps (robust to the machine's
// other load); the prediction's steps are noise-free, so its median is its mean.
constexpr const char* kMeasuredStepTime = "step_time_median_s";
constexpr const char* kMeasuredSpread = "step_time_spread_s";
constexpr const char* kPredictedStepTime = "step_time_median_s";

double number_at(const Json& j, const std::vector<std::string>& keys, const std::string& label) {
  const Json* node = &j;
  std::string path;
  for (const auto& k : keys) {
    path += "/" + k;
    if (!node->is_object() || !node->contains(k)) throw InputError(label, path, "is missing");
    node = &node->at(k);
  }
  if (!node->is_number()) throw InputError(label, path, "expected a number");
  return node->get<double>();
}

double median_of(std::vector<double> v) {
  if (v.empty()) return 0.0;
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 == 1 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2.0;
}

Json split_json(const RoleSplit& s) {
  return {{"compute_s", s.compute_s}, {"communication_s", s.communication_s}, {"waiting_s", s.waiting_s}};
}

Json figures_json(const PointFigures& f, bool with_spread) {
  Json hosts = Json::array();
  for (const HostCompute& h : f.hosts) {
    hosts.push_back({{"name", h.name}, {"compute_s", h.compute_s}});
  }
  Json j = {{"step_time_s", f.step_time_s},
            {"worker", split_json(f.worker)},
            {"ps_busy_s", f.ps_busy_s},
            {"ps-0", {{"bytes_in", f.ps0.in}, {"bytes_out", f.ps0.out}}},
            {"worker-0", {{"bytes_in", f.worker0.in}, {"bytes_out", f.worker0.out}}},
            {"hosts", hosts}};
  if (with_spread) j["spread_s"] = f.spread_s;
  return j;
}

double relative_error_pct(double predicted, double measured) {
  if (!(measured > 0.0)) return 0.0;
  return (predicted - measured) / measured * 100.0;
}

}  // namespace

const Json& only_result(const Json& document, const std::string& label) {
  if (!document.is_object() || !document.contains("results") ||
      !document.at("results").is_array() || document.at("results").size() != 1) {
    throw InputError(label, "/results", "expected an array of exactly one strategy result");
  }
  return document.at("results").at(0);
}

double measured_step_time_s(const Json& result, const std::string& label) {
  return number_at(result, {kMeasuredStepTime}, label);
}

double measured_step_spread_s(const Json& result, const std::string& label) {
  return number_at(result, {kMeasuredSpread}, label);
}

double predicted_step_time_s(const Json& result, const std::string& label) {
  return number_at(result, {kPredictedStepTime}, label);
}

RoleSplit worker_split(const Json& result, const std::string& label) {
  return {number_at(result, {"worker_mean", "compute_s"}, label),
          number_at(result, {"worker_mean", "communication_s"}, label),
          number_at(result, {"worker_mean", "waiting_s"}, label)};
}

double ps_busy_s(const Json& result, const std::string& label) {
  return number_at(result, {"ps_busy_s"}, label);
}

HostBytes host_bytes(const Json& result, const std::string& host, const std::string& label) {
  if (!result.contains("hosts") || !result.at("hosts").is_array()) {
    throw InputError(label, "/hosts", "expected an array of hosts");
  }
  for (const Json& h : result.at("hosts")) {
    if (h.is_object() && h.value("name", "") == host) {
      return {number_at(h, {"bytes_in"}, label), number_at(h, {"bytes_out"}, label)};
    }
  }
  return {};
}

std::vector<HostCompute> host_computes(const Json& result, const std::string& label) {
  if (!result.contains("hosts") || !result.at("hosts").is_array()) {
    throw InputError(label, "/hosts", "expected an array of hosts");
  }
  std::vector<HostCompute> out;
  size_t i = 0;
  for (const Json& h : result.at("hosts")) {
    const std::string path = "/hosts/" + std::to_string(i++);
    if (!h.is_object() || !h.contains("name") || !h.at("name").is_string()) {
      throw InputError(label, path + "/name", "expected a host name");
    }
    if (!h.contains("split")) throw InputError(label, path + "/split", "is missing");
    try {
      out.push_back({h.at("name").get<std::string>(), number_at(h, {"split", "compute_s"}, label)});
    } catch (const InputError& e) {
      throw InputError(label, path + e.path(), e.problem());
    }
  }
  return out;
}

std::string predicted_profile(const Json& result) {
  if (!result.contains("compute_times") || !result.at("compute_times").is_object()) return "";
  const Json& w = result.at("compute_times").value("worker", Json::object());
  if (!w.is_object() || !w.contains("profile") || !w.at("profile").is_string()) return "";
  std::string s = w.at("profile").get<std::string>();
  if (w.contains("profile_source") && w.at("profile_source").is_string()) {
    s += " (" + w.at("profile_source").get<std::string>() + ")";
  }
  return s;
}

PointFigures measured_figures(const Json& result, const std::string& label) {
  PointFigures f;
  f.step_time_s = measured_step_time_s(result, label);
  f.spread_s = measured_step_spread_s(result, label);
  f.worker = worker_split(result, label);
  f.ps_busy_s = ps_busy_s(result, label);
  f.ps0 = host_bytes(result, "ps-0", label);
  f.worker0 = host_bytes(result, "worker-0", label);
  f.hosts = host_computes(result, label);
  return f;
}

PointFigures predicted_figures(const Json& result, const std::string& label) {
  PointFigures f;
  f.step_time_s = predicted_step_time_s(result, label);
  f.worker = worker_split(result, label);
  f.ps_busy_s = ps_busy_s(result, label);
  f.ps0 = host_bytes(result, "ps-0", label);
  f.worker0 = host_bytes(result, "worker-0", label);
  f.hosts = host_computes(result, label);
  return f;
}

double PointComparison::error_pct() const {
  return relative_error_pct(predicted.step_time_s, measured.step_time_s);
}

double PointComparison::replay_error_pct() const {
  return relative_error_pct(replayed.step_time_s, measured.step_time_s);
}

double PointComparison::pass_spread_pct() const {
  if (pass_step_times_s.size() < 2) return 0.0;
  const auto [low, high] = std::minmax_element(pass_step_times_s.begin(), pass_step_times_s.end());
  double sum = 0.0;
  for (const double t : pass_step_times_s) sum += t;
  return (*high - *low) / (sum / static_cast<double>(pass_step_times_s.size())) * 100.0;
}

namespace {

// into += weight x f, field by field.
void add_scaled(PointFigures& into, const PointFigures& f, double weight) {
  into.step_time_s += weight * f.step_time_s;
  into.spread_s += weight * f.spread_s;
  into.worker.compute_s += weight * f.worker.compute_s;
  into.worker.communication_s += weight * f.worker.communication_s;
  into.worker.waiting_s += weight * f.worker.waiting_s;
  into.ps_busy_s += weight * f.ps_busy_s;
  into.ps0.in += weight * f.ps0.in;
  into.ps0.out += weight * f.ps0.out;
  into.worker0.in += weight * f.worker0.in;
  into.worker0.out += weight * f.worker0.out;
  for (const HostCompute& h : f.hosts) {
    auto it = std::find_if(into.hosts.begin(), into.hosts.end(),
                           [&](const HostCompute& x) { return x.name == h.name; });
    if (it == into.hosts.end()) it = into.hosts.insert(into.hosts.end(), {h.name, 0.0});
    it->compute_s += weight * h.compute_s;
  }
}

}  // namespace

PointComparison combine_passes(const std::vector<PointComparison>& passes) {
  if (passes.empty()) throw std::invalid_argument("combine_passes: no passes");
  PointComparison c = passes.front();
  if (passes.size() == 1) return c;
  const double weight = 1.0 / static_cast<double>(passes.size());
  c.measured = {};
  c.predicted = {};
  c.replayed = {};
  c.pass_step_times_s.clear();
  c.pass_predicted_step_times_s.clear();
  double steal = 0.0;
  bool all_steal = true;
  for (const PointComparison& p : passes) {
    if (p.id != c.id) {
      throw std::invalid_argument("combine_passes: " + p.id + " among the passes of " + c.id);
    }
    add_scaled(c.measured, p.measured, weight);
    add_scaled(c.predicted, p.predicted, weight);
    add_scaled(c.replayed, p.replayed, weight);
    c.pass_step_times_s.push_back(p.measured.step_time_s);
    c.pass_predicted_step_times_s.push_back(p.predicted.step_time_s);
    if (p.steal_pct) {
      steal += weight * *p.steal_pct;
    } else {
      all_steal = false;
    }
  }
  c.steal_pct = all_steal ? std::optional<double>(steal) : std::nullopt;
  return c;
}

std::vector<ErrorSummary> summarise(const std::vector<PointComparison>& points, ErrorOf error) {
  std::vector<std::string> groups;
  for (const auto& p : points) {
    if (std::find(groups.begin(), groups.end(), p.kind) == groups.end()) groups.push_back(p.kind);
  }
  groups.push_back("all");
  std::vector<ErrorSummary> out;
  for (const auto& g : groups) {
    std::vector<double> errors;
    for (const auto& p : points) {
      if (g == "all" || p.kind == g) errors.push_back(std::abs((p.*error)()));
    }
    ErrorSummary s{.group = g, .points = errors.size()};
    s.median_abs_error_pct = median_of(errors);
    s.max_abs_error_pct = errors.empty() ? 0.0 : *std::max_element(errors.begin(), errors.end());
    out.push_back(s);
  }
  return out;
}

bool meets_target(const ErrorSummary& overall) {
  return overall.points > 0 && overall.median_abs_error_pct <= kTargetMedianPct &&
         overall.max_abs_error_pct <= kTargetMaxPct;
}

std::optional<bool> machine_resolves_target(const std::vector<ErrorSummary>& repeatability) {
  if (repeatability.empty()) return std::nullopt;
  return meets_target(repeatability.back());
}

Json to_json(const PointComparison& p) {
  Json kernel_speeds = Json::array();
  for (const RankKernelSpeed& k : p.kernel_speeds()) {
    kernel_speeds.push_back({{"host", k.host}, {"busy_share", k.busy_share}, {"ratio", k.ratio}});
  }
  return {{"id", p.id},
          {"scenario", p.scenario},
          {"model", p.model},
          {"strategy", p.strategy},
          {"kind", p.kind},
          {"rate", p.rate},
          {"shape", p.shape},
          {"parameter_servers", p.parameter_servers},
          {"workers", p.workers},
          {"pinned", p.pinned},
          {"steps", p.steps},
          {"warmup_steps", p.warmup_steps},
          {"measured", figures_json(p.measured, true)},
          {"predicted", figures_json(p.predicted, false)},
          {"replayed", figures_json(p.replayed, false)},
          {"kernel_speeds", kernel_speeds},
          {"error_pct", p.error_pct()},
          {"replay_error_pct", p.replay_error_pct()},
          {"steal_pct", p.steal_pct ? Json(*p.steal_pct) : Json(nullptr)},
          {"pass_step_times_s", p.pass_step_times_s},
          {"pass_predicted_step_times_s", p.pass_predicted_step_times_s},
          {"pass_spread_pct", p.pass_step_times_s.size() < 2 ? Json(nullptr)
                                                             : Json(p.pass_spread_pct())}};
}

std::vector<RankKernelSpeed> PointComparison::kernel_speeds() const {
  std::vector<RankKernelSpeed> out;
  if (!pinned || !(measured.step_time_s > 0.0)) return out;
  const auto compute_of = [](const PointFigures& f, const std::string& host) -> const HostCompute* {
    const auto it = std::find_if(f.hosts.begin(), f.hosts.end(),
                                 [&](const HostCompute& h) { return h.name == host; });
    return it == f.hosts.end() ? nullptr : &*it;
  };
  for (const HostCompute& p : predicted.hosts) {
    const HostCompute* r = compute_of(replayed, p.name);
    const HostCompute* m = compute_of(measured, p.name);
    if (!r || !m || p.compute_s < kKernelSpeedMinComputeS) continue;
    out.push_back({p.name, m->compute_s / measured.step_time_s, r->compute_s / p.compute_s});
  }
  return out;
}

std::vector<KernelSpeedBin> kernel_speed(const std::vector<PointComparison>& points) {
  constexpr size_t kBins = std::size(kKernelSpeedBusyEdges);
  std::vector<std::vector<double>> ratios(kBins);
  for (const PointComparison& p : points) {
    for (const RankKernelSpeed& k : p.kernel_speeds()) {
      size_t bin = 0;
      while (bin + 1 < kBins && k.busy_share >= kKernelSpeedBusyEdges[bin + 1]) ++bin;
      ratios[bin].push_back(k.ratio);
    }
  }
  std::vector<KernelSpeedBin> out;
  for (size_t bin = kBins; bin-- > 0;) {
    const std::vector<double>& r = ratios[bin];
    if (r.empty()) continue;
    const auto [low, high] = std::minmax_element(r.begin(), r.end());
    out.push_back({.busy_from = kKernelSpeedBusyEdges[bin],
                   .busy_to = bin + 1 < kBins ? kKernelSpeedBusyEdges[bin + 1] : 1.0,
                   .hosts = r.size(),
                   .median_ratio = median_of(r),
                   .min_ratio = *low,
                   .max_ratio = *high});
  }
  return out;
}

Json to_json(const KernelSpeedBin& b) {
  return {{"busy_from", b.busy_from},   {"busy_to", b.busy_to},
          {"hosts", b.hosts},           {"median_ratio", b.median_ratio},
          {"min_ratio", b.min_ratio},   {"max_ratio", b.max_ratio}};
}

Json to_json(const ErrorSummary& s) {
  return {{"group", s.group},
          {"points", s.points},
          {"median_abs_error_pct", s.median_abs_error_pct},
          {"max_abs_error_pct", s.max_abs_error_pct}};
}

}  // namespace ralp::validate
