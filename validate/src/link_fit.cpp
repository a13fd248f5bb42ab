// Least-squares fit of a link probe's transfer times to latency and bandwidth factors.
#include "ralp/validate/link_fit.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace ralp::validate {
namespace {

constexpr int kLinksPerRoute = 2;
constexpr double kNsPerSecond = 1e9;
constexpr double kUsPerSecond = 1e6;
// A CPU time below this weighs as this much in the relative fit (a transfer can cost ~0).
constexpr double kMinWeighedCpuS = 1e-6;

// y = intercept + slope x by least squares; slope 0 when x does not vary.
struct Line {
  double slope = 0.0;
  double intercept = 0.0;
};
template <class Point, class X, class Y>
Line fit_line(const std::vector<Point>& points, X x, Y y) {
  if (points.empty()) return {};
  double mean_x = 0.0, mean_y = 0.0;
  for (const auto& p : points) {
    mean_x += x(p);
    mean_y += y(p);
  }
  mean_x /= static_cast<double>(points.size());
  mean_y /= static_cast<double>(points.size());
  double sxx = 0.0, sxy = 0.0;
  for (const auto& p : points) {
    sxx += (x(p) - mean_x) * (x(p) - mean_x);
    sxy += (x(p) - mean_x) * (y(p) - mean_y);
  }
  const double slope = sxx > 0.0 ? sxy / sxx : 0.0;
  return {slope, mean_y - slope * mean_x};
}

// A point's weight in a fit on relative residuals: 1 / y^2.
double relative_weight(double y) {
  return 1.0 / std::pow(std::max(std::abs(y), kMinWeighedCpuS), 2);
}

// y = intercept + slope x minimizing the sum of ((y - fitted) / y)^2, with intercept >= 0 and
// slope >= 0: where the free fit breaks one bound, the other is fitted alone.
template <class Point, class X, class Y>
Line fit_line_relative(const std::vector<Point>& points, X x, Y y) {
  double w = 0.0, wx = 0.0, wy = 0.0, wxx = 0.0, wxy = 0.0;
  for (const auto& p : points) {
    const double weight = relative_weight(y(p));
    w += weight;
    wx += weight * x(p);
    wy += weight * y(p);
    wxx += weight * x(p) * x(p);
    wxy += weight * x(p) * y(p);
  }
  if (w <= 0.0) return {};
  const double det = w * wxx - wx * wx;
  Line line;
  if (det > 0.0) {
    line.slope = (w * wxy - wx * wy) / det;
    line.intercept = (wy - line.slope * wx) / w;
  }
  if (det <= 0.0 || line.intercept < 0.0) {
    line.intercept = 0.0;
    line.slope = wxx > 0.0 ? wxy / wxx : 0.0;
  }
  if (line.slope < 0.0) line = {0.0, std::max(0.0, wy / w)};
  return line;
}

// The slope of y = intercept + slope x minimizing the sum of ((y - fitted) / y)^2 for a given
// intercept, at least 0.
template <class Point, class X, class Y>
double fit_slope_relative(const std::vector<Point>& points, double intercept, X x, Y y) {
  double wxx = 0.0, wxr = 0.0;
  for (const auto& p : points) {
    const double weight = relative_weight(y(p));
    wxx += weight * x(p) * x(p);
    wxr += weight * x(p) * (y(p) - intercept);
  }
  return wxx > 0.0 ? std::max(0.0, wxr / wxx) : 0.0;
}

}  // namespace

LinkProbe parse_link_probe(const Json& json, const std::string& label) {
  LinkProbe probe;
  auto number = [&](const Json& object, const char* key, const std::string& path) {
    if (!object.is_object() || !object.contains(key) || !object.at(key).is_number()) {
      throw InputError(label, path + "/" + key, "expected a number");
    }
    return object.at(key).get<double>();
  };
  probe.rtt_s = number(json, "rtt_median_s", "");
  if (!json.contains("transfers") || !json.at("transfers").is_array()) {
    throw InputError(label, "/transfers", "expected an array");
  }
  size_t i = 0;
  for (const Json& t : json.at("transfers")) {
    const std::string path = "/transfers/" + std::to_string(i++);
    probe.transfers.push_back(
        {number(t, "bytes", path) + kTransportHeaderBytes, number(t, "seconds", path)});
  }
  if (json.contains("cpu")) {
    if (!json.at("cpu").is_array()) throw InputError(label, "/cpu", "expected an array");
    i = 0;
    for (const Json& c : json.at("cpu")) {
      const std::string path = "/cpu/" + std::to_string(i++);
      probe.cpu.push_back({number(c, "bytes", path) + kTransportHeaderBytes,
                           number(c, "sender_s", path), number(c, "receiver_s", path)});
    }
  }
  if (json.contains("waiting_shares")) {
    const Json& w = json.at("waiting_shares");
    if (!w.is_array()) throw InputError(label, "/waiting_shares", "expected an array");
    i = 0;
    for (const Json& share : w) {
      const std::string path = "/waiting_shares/" + std::to_string(i++);
      if (!share.is_number() || share.get<double>() < 0.0 || share.get<double>() > 1.0) {
        throw InputError(label, path, "expected a number in [0, 1]");
      }
      probe.waiting_shares.push_back(share.get<double>());
    }
  }
  return probe;
}

NetworkFit fit_network(const LinkProbe& probe, double rate_bytes_per_s) {
  const auto& t = probe.transfers;
  if (t.size() < 2) throw std::runtime_error("a link fit needs transfers of at least two sizes");
  const Line line = fit_line(
      t, [](const ProbeTransfer& p) { return p.bytes; },
      [](const ProbeTransfer& p) { return p.seconds; });
  const double slope = line.slope;  // seconds per byte
  const double intercept = line.intercept;
  if (slope <= 0.0) {
    throw std::runtime_error("the link probe's times do not grow with size: no goodput to fit");
  }
  NetworkFit fit;
  fit.rate_bytes_per_s = rate_bytes_per_s;
  fit.rtt_s = probe.rtt_s;
  fit.latency_s = probe.rtt_s / 2.0;
  fit.goodput_bytes_per_s = 1.0 / slope;
  // No message arrives sooner than half a header-only round trip, whatever the bulk fit's intercept.
  fit.fixed_cost_s = std::max(probe.rtt_s / 2.0, intercept - probe.rtt_s / 2.0);
  fit.bandwidth_factor = fit.goodput_bytes_per_s / rate_bytes_per_s;
  const double route_latency = kLinksPerRoute * fit.latency_s;
  fit.latency_factor = route_latency > 0.0 ? fit.fixed_cost_s / route_latency : 1.0;
  for (const auto& p : t) {
    const double fitted = intercept + slope * p.bytes;
    fit.residual_max = std::max(fit.residual_max, std::abs(p.seconds - fitted) / p.seconds);
  }
  const auto bytes = [](const ProbeCpu& p) { return p.bytes; };
  const Line send =
      fit_line_relative(probe.cpu, bytes, [](const ProbeCpu& p) { return p.sender_s; });
  const Line receive =
      fit_line_relative(probe.cpu, bytes, [](const ProbeCpu& p) { return p.receiver_s; });
  fit.send_cpu_s_per_byte = send.slope;
  fit.send_cpu_s_per_message = send.intercept;
  fit.receive_cpu_s_per_byte = receive.slope;
  fit.receive_cpu_s_per_message = receive.intercept;
  if (!probe.waiting_shares.empty()) {
    double sum = 0.0;
    for (const double share : probe.waiting_shares) sum += share;
    fit.waiting_share =
        std::min(kMaxWaitingShare, sum / static_cast<double>(probe.waiting_shares.size()));
  }
  return fit;
}

NetworkFit fit_network(const LinkProbe& probe, double rate_bytes_per_s,
                       const MessageCosts& per_message) {
  NetworkFit fit = fit_network(probe, rate_bytes_per_s);
  const auto bytes = [](const ProbeCpu& p) { return p.bytes; };
  fit.send_cpu_s_per_message = std::max(0.0, per_message.send_s);
  fit.receive_cpu_s_per_message = std::max(0.0, per_message.receive_s);
  fit.send_cpu_s_per_byte = fit_slope_relative(probe.cpu, fit.send_cpu_s_per_message, bytes,
                                               [](const ProbeCpu& p) { return p.sender_s; });
  fit.receive_cpu_s_per_byte =
      fit_slope_relative(probe.cpu, fit.receive_cpu_s_per_message, bytes,
                         [](const ProbeCpu& p) { return p.receiver_s; });
  return fit;
}

Json to_json(const NetworkFit& fit) {
  return {{"rate_bytes_per_s", fit.rate_bytes_per_s},
          {"rtt_s", fit.rtt_s},
          {"latency_s", fit.latency_s},
          {"goodput_bytes_per_s", fit.goodput_bytes_per_s},
          {"fixed_cost_s", fit.fixed_cost_s},
          {"bandwidth_factor", fit.bandwidth_factor},
          {"latency_factor", fit.latency_factor},
          {"residual_max", fit.residual_max},
          {"send_cpu_ns_per_byte", fit.send_cpu_s_per_byte * kNsPerSecond},
          {"receive_cpu_ns_per_byte", fit.receive_cpu_s_per_byte * kNsPerSecond},
          {"send_cpu_us_per_message", fit.send_cpu_s_per_message * kUsPerSecond},
          {"receive_cpu_us_per_message", fit.receive_cpu_s_per_message * kUsPerSecond},
          {"waiting_share", fit.waiting_share}};
}

}  // namespace ralp::validate
