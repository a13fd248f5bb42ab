// Least-squares fit of a link probe's transfer times to latency and bandwidth factors.
#include "ralp/validate/link_fit.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace ralp::validate {
namespace {

constexpr int kLinksPerRoute = 2;

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
  return probe;
}

NetworkFit fit_network(const LinkProbe& probe, double rate_bytes_per_s) {
  const auto& t = probe.transfers;
  if (t.size() < 2) throw std::runtime_error("a link fit needs transfers of at least two sizes");
  double mean_x = 0.0, mean_y = 0.0;
  for (const auto& p : t) {
    mean_x += p.bytes;
    mean_y += p.seconds;
  }
  mean_x /= static_cast<double>(t.size());
  mean_y /= static_cast<double>(t.size());
  double sxx = 0.0, sxy = 0.0;
  for (const auto& p : t) {
    sxx += (p.bytes - mean_x) * (p.bytes - mean_x);
    sxy += (p.bytes - mean_x) * (p.seconds - mean_y);
  }
  if (sxx <= 0.0 || sxy <= 0.0) {
    throw std::runtime_error("the link probe's times do not grow with size: no goodput to fit");
  }
  const double slope = sxy / sxx;  // seconds per byte
  const double intercept = mean_y - slope * mean_x;
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
          {"residual_max", fit.residual_max}};
}

}  // namespace ralp::validate
