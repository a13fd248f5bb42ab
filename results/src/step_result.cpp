// Step statistics, time splits and the JSON form of the fields predicted and measured results
// share.
#include "ralp/results/step_result.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <numeric>
#include <stdexcept>

namespace ralp {
namespace {

constexpr std::array kActivityNames{"compute", "update", "aggregate", "encode",
                                    "copy",    "send",   "receive"};

// Quantile q of sorted values, interpolating linearly between neighbours.
double quantile(const std::vector<double>& sorted, double q) {
  const double position = q * static_cast<double>(sorted.size() - 1);
  const auto below = static_cast<size_t>(std::floor(position));
  const size_t above = std::min(below + 1, sorted.size() - 1);
  const double fraction = position - static_cast<double>(below);
  return sorted[below] + fraction * (sorted[above] - sorted[below]);
}

// Total length of the union of [start, end) intervals.
double union_length(std::vector<std::pair<double, double>> spans) {
  std::sort(spans.begin(), spans.end());
  double total = 0.0;
  double open_start = 0.0;
  double open_end = -1.0;
  for (const auto& [start, end] : spans) {
    if (start > open_end) {
      if (open_end > open_start) total += open_end - open_start;
      open_start = start;
      open_end = end;
    } else {
      open_end = std::max(open_end, end);
    }
  }
  if (open_end > open_start) total += open_end - open_start;
  return total;
}

template <class T>
Json optional_json(const std::optional<T>& value) {
  return value ? Json(*value) : Json(nullptr);
}

}  // namespace

std::string_view to_string(ActivityKind kind) { return kActivityNames[static_cast<size_t>(kind)]; }

ActivityKind activity_kind_from_string(const std::string& name) {
  for (size_t i = 0; i < kActivityNames.size(); ++i) {
    if (name == kActivityNames[i]) return static_cast<ActivityKind>(i);
  }
  throw std::runtime_error("unknown activity kind '" + name + "'");
}

double median(std::vector<double> values) {
  if (values.empty()) throw std::invalid_argument("median of no values");
  std::sort(values.begin(), values.end());
  return quantile(values, 0.5);
}

std::vector<size_t> middle_half(const std::vector<double>& values) {
  std::vector<size_t> order(values.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return values[a] < values[b]; });
  const size_t quarter = values.size() / 4;
  std::vector<size_t> middle(order.begin() + static_cast<std::ptrdiff_t>(quarter),
                             order.end() - static_cast<std::ptrdiff_t>(quarter));
  std::sort(middle.begin(), middle.end());
  return middle;
}

double interquartile_range(std::vector<double> values) {
  if (values.empty()) throw std::invalid_argument("interquartile range of no values");
  std::sort(values.begin(), values.end());
  return quantile(values, 0.75) - quantile(values, 0.25);
}

TimeSplit time_split(const std::vector<BusyInterval>& intervals,
                     const std::vector<double>& step_ends, double start, int64_t warmup) {
  const auto steps = static_cast<int64_t>(step_ends.size());
  TimeSplit split;
  if (steps <= warmup) return split;
  for (int64_t k = warmup; k < steps; ++k) {
    const double begin = k == 0 ? start : step_ends[static_cast<size_t>(k - 1)];
    const double end = step_ends[static_cast<size_t>(k)];
    std::vector<std::pair<double, double>> compute;
    std::vector<std::pair<double, double>> any;
    for (const BusyInterval& b : intervals) {
      if (b.step != k) continue;
      const double s = std::max(b.start, begin);
      const double e = std::min(b.end, end);
      if (e <= s) continue;
      any.emplace_back(s, e);
      if (b.compute) compute.emplace_back(s, e);
    }
    const double c = union_length(compute);
    const double busy = union_length(any);
    split.compute += c;
    split.communication += busy - c;
    split.waiting += std::max(0.0, (end - begin) - busy);
  }
  const auto measured = static_cast<double>(steps - warmup);
  split.compute /= measured;
  split.communication /= measured;
  split.waiting /= measured;
  return split;
}

void set_step_times(StepResult& r, std::vector<double> step_times, int64_t warmup_steps,
                    int64_t images_per_step) {
  if (warmup_steps < 0 || static_cast<int64_t>(step_times.size()) <= warmup_steps) {
    throw std::invalid_argument("no measured step after " + std::to_string(warmup_steps) +
                                " warm-up steps");
  }
  r.step_times = std::move(step_times);
  r.warmup_steps = warmup_steps;
  const std::vector<double> measured(r.step_times.begin() + warmup_steps, r.step_times.end());
  double sum = 0.0;
  for (const double t : measured) sum += t;
  r.step_time_mean_s = sum / static_cast<double>(measured.size());
  r.step_time_median_s = median(measured);
  r.step_time_spread_s = interquartile_range(measured);
  r.images_per_s = static_cast<double>(images_per_step) / r.step_time_mean_s;
}

StrategyKind strategy_kind_from_string(const std::string& name) {
  for (const auto kind : {StrategyKind::ps, StrategyKind::ralp, StrategyKind::allreduce,
                          StrategyKind::hybrid}) {
    if (name == to_string(kind)) return kind;
  }
  throw std::runtime_error("unknown strategy kind '" + name + "'");
}

Json to_json(const TimeSplit& s) {
  return {{"compute_s", s.compute}, {"communication_s", s.communication}, {"waiting_s", s.waiting}};
}

TimeSplit time_split_from_json(const Json& j) {
  return {j.at("compute_s").get<double>(), j.at("communication_s").get<double>(),
          j.at("waiting_s").get<double>()};
}

void write_step_fields(const StepResult& r, Json& j) {
  Json hosts = Json::array();
  for (size_t i = 0; i < r.hosts.size(); ++i) {
    const HostTraffic& h = r.hosts[i];
    Json host = {{"name", h.name}, {"bytes_in", h.bytes_in}, {"bytes_out", h.bytes_out}};
    if (i < r.splits.size()) host["split"] = to_json(r.splits[i]);
    hosts.push_back(std::move(host));
  }
  j["strategy"] = r.label;
  j["kind"] = std::string(to_string(r.kind));
  j["cut"] = optional_json(r.cut);
  if (!r.head_layers.empty()) j["head_layers"] = r.head_layers;
  j["step_time_mean_s"] = r.step_time_mean_s;
  j["step_time_median_s"] = r.step_time_median_s;
  j["step_time_spread_s"] = r.step_time_spread_s;
  j["images_per_s"] = r.images_per_s;
  j["step_times_s"] = r.step_times;
  j["warmup_steps"] = r.warmup_steps;
  j["hosts"] = std::move(hosts);
  if (!r.nodes.empty()) {
    Json nodes = Json::array();
    for (const NodeBytes& n : r.nodes) {
      nodes.push_back({{"name", n.name}, {"nic_bytes_in", n.nic_in}, {"nic_bytes_out", n.nic_out},
                       {"interconnect_bytes", n.interconnect}});
    }
    j["nodes"] = std::move(nodes);
  }
  j["worker_mean"] = to_json(r.worker_mean);
  j["ps_busy_s"] = r.ps_busy_s;
  if (!r.shards.empty()) {
    Json shards = Json::array();
    for (const ShardShare& s : r.shards) {
      shards.push_back({{"name", "ps-" + std::to_string(s.shard)}, {"bytes", s.bytes},
                        {"layers", s.layers}});
    }
    j["shards"] = std::move(shards);
  }
  if (!r.messages.empty()) {
    Json messages = Json::array();
    for (const auto& host : r.messages) {
      Json sent = Json::array();
      for (const SentMessage& m : host) sent.push_back({m.kind, m.peer, m.item, m.payload_bytes});
      messages.push_back(std::move(sent));
    }
    j["messages"] = std::move(messages);
  }
}

void read_step_fields(const Json& j, StepResult& r) {
  try {
    r.label = j.at("strategy").get<std::string>();
    r.kind = strategy_kind_from_string(j.at("kind").get<std::string>());
    if (!j.at("cut").is_null()) r.cut = j.at("cut").get<std::string>();
    if (j.contains("head_layers")) r.head_layers = j.at("head_layers").get<std::vector<std::string>>();
    r.step_time_mean_s = j.at("step_time_mean_s").get<double>();
    r.step_time_median_s = j.at("step_time_median_s").get<double>();
    r.step_time_spread_s = j.at("step_time_spread_s").get<double>();
    r.images_per_s = j.at("images_per_s").get<double>();
    r.step_times = j.at("step_times_s").get<std::vector<double>>();
    r.warmup_steps = j.at("warmup_steps").get<int64_t>();
    for (const auto& h : j.at("hosts")) {
      r.hosts.push_back({h.at("name").get<std::string>(), h.at("bytes_in").get<double>(),
                         h.at("bytes_out").get<double>()});
      if (h.contains("split")) r.splits.push_back(time_split_from_json(h.at("split")));
    }
    if (j.contains("nodes")) {
      for (const auto& n : j.at("nodes")) {
        r.nodes.push_back({n.at("name").get<std::string>(), n.at("nic_bytes_in").get<double>(),
                           n.at("nic_bytes_out").get<double>(),
                           n.at("interconnect_bytes").get<double>()});
      }
    }
    r.worker_mean = time_split_from_json(j.at("worker_mean"));
    r.ps_busy_s = j.at("ps_busy_s").get<double>();
    if (j.contains("shards")) {
      int64_t shard = 0;
      for (const auto& s : j.at("shards")) {
        r.shards.push_back({shard++, s.at("bytes").get<int64_t>(),
                            s.at("layers").get<std::vector<std::string>>()});
      }
    }
    if (j.contains("messages")) {
      for (const auto& host : j.at("messages")) {
        std::vector<SentMessage> sent;
        for (const auto& m : host) {
          sent.push_back({m.at(0).get<std::string>(), m.at(1).get<std::string>(),
                          m.at(2).get<int64_t>(), m.at(3).get<int64_t>()});
        }
        r.messages.push_back(std::move(sent));
      }
    }
  } catch (const Json::exception& e) {
    throw std::runtime_error(std::string("malformed step result: ") + e.what());
  }
}

}  // namespace ralp
