// Roofline fitting per layer kind.
#include "ralp/calibrate/fit.hpp"

#include <algorithm>
#include <cmath>

namespace ralp::calibrate {
namespace {

constexpr double kMinComputeShare = 0.1;  // of a pass's time, left after the launch overhead

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 == 1 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

}  // namespace

std::map<LayerKind, FittedRates> fit_rates(const std::vector<FitPoint>& points,
                                           Seconds launch_overhead) {
  std::map<LayerKind, std::vector<FitPoint>> by_kind;
  for (const FitPoint& p : points) {
    const bool has_work = p.work.flops.value() > 0.0 || p.work.bytes.value() > 0.0;
    if (p.time.value() > 0.0 && has_work) by_kind[p.kind].push_back(p);
  }
  std::map<LayerKind, FittedRates> out;
  for (const auto& [kind, list] : by_kind) {
    double flops = 0.0, bytes = 0.0, time = 0.0, best_flops = 0.0, best_bytes = 0.0;
    std::vector<double> busy;
    for (const FitPoint& p : list) {
      const double t = std::max(p.time.value() - launch_overhead.value(),
                                kMinComputeShare * p.time.value());
      busy.push_back(t);
      flops += p.work.flops.value();
      bytes += p.work.bytes.value();
      time += t;
      best_flops = std::max(best_flops, p.work.flops.value() / t);
      best_bytes = std::max(best_bytes, p.work.bytes.value() / t);
    }
    const double flop_rate = flops / time;
    const double byte_rate = bytes / time;
    FittedRates rates;
    if (flops <= 0.0) {
      rates.bytes = BytesPerSecond(byte_rate);
      rates.flops = FlopsPerSecond(byte_rate);
      out[kind] = rates;
      continue;
    }
    std::vector<double> flop_error, byte_error;
    for (size_t i = 0; i < list.size(); ++i) {
      flop_error.push_back(std::abs(list[i].work.flops.value() / flop_rate - busy[i]) / busy[i]);
      byte_error.push_back(std::abs(list[i].work.bytes.value() / byte_rate - busy[i]) / busy[i]);
    }
    if (median(flop_error) <= median(byte_error)) {
      rates.flops = FlopsPerSecond(flop_rate);
      rates.bytes = BytesPerSecond(best_bytes);
    } else {
      rates.flops = FlopsPerSecond(best_flops);
      rates.bytes = BytesPerSecond(byte_rate);
    }
    out[kind] = rates;
  }
  return out;
}

}  // namespace ralp::calibrate
