// Summaries of measured runs, and the rank records' JSON form.
#include "ralp/cluster/measurement.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <numeric>
#include <optional>
#include <stdexcept>

namespace ralp::cluster {

Json to_json(const RankRecord& r) {
  Json intervals = Json::array();
  for (const BusyInterval& b : r.intervals) intervals.push_back({b.start, b.end, b.step, b.compute});
  Json parts = Json::array();
  for (const auto& p : r.part_done) parts.push_back(p ? Json(*p) : Json(nullptr));
  Json losses = Json::array();
  for (const LossSample& l : r.losses) losses.push_back({l.step, l.worker, l.loss});
  Json sent = Json::array();
  for (const SentMessage& m : r.sent) sent.push_back({m.kind, m.peer, m.item, m.payload_bytes});
  Json timeline = Json::array();
  for (const Activity& a : r.timeline) {
    timeline.push_back({a.peer, std::string(to_string(a.kind)), a.step, a.label, a.start, a.end,
                        a.bytes});
  }
  Json device_ops = Json::array();
  for (const auto& [op, label] : r.device_ops) device_ops.push_back({op, label});
  return {{"name", r.name},
          {"start", r.start},
          {"intervals", intervals},
          {"bytes_in", r.bytes_in},
          {"bytes_out", r.bytes_out},
          {"bytes_to", r.bytes_to},
          {"part_done", parts},
          {"losses", losses},
          {"sent", sent},
          {"timeline", timeline},
          {"device_ops", device_ops},
          {"device_seconds", r.device_seconds}};
}

RankRecord rank_record_from_json(const Json& j) {
  try {
    RankRecord r;
    r.name = j.at("name").get<std::string>();
    r.start = j.at("start").get<double>();
    for (const auto& b : j.at("intervals")) {
      r.intervals.push_back({b.at(0).get<double>(), b.at(1).get<double>(),
                             b.at(2).get<int64_t>(), b.at(3).get<bool>()});
    }
    r.bytes_in = j.at("bytes_in").get<std::vector<double>>();
    r.bytes_out = j.at("bytes_out").get<std::vector<double>>();
    if (j.contains("bytes_to")) r.bytes_to = j.at("bytes_to").get<std::vector<std::vector<double>>>();
    for (const auto& p : j.at("part_done")) {
      r.part_done.push_back(p.is_null() ? std::nullopt : std::optional<double>(p.get<double>()));
    }
    for (const auto& l : j.at("losses")) {
      r.losses.push_back({l.at(0).get<int64_t>(), l.at(1).get<int64_t>(), l.at(2).get<double>()});
    }
    for (const auto& m : j.at("sent")) {
      r.sent.push_back({m.at(0).get<std::string>(), m.at(1).get<std::string>(),
                        m.at(2).get<int64_t>(), m.at(3).get<int64_t>()});
    }
    for (const auto& a : j.at("timeline")) {
      r.timeline.push_back({0, a.at(0).get<int32_t>(),
                            activity_kind_from_string(a.at(1).get<std::string>()),
                            a.at(2).get<int32_t>(), a.at(3).get<std::string>(),
                            a.at(4).get<double>(), a.at(5).get<double>(), a.at(6).get<double>()});
    }
    for (const auto& d : j.at("device_ops")) {
      r.device_ops.emplace_back(d.at(0).get<int32_t>(), d.at(1).get<std::string>());
    }
    r.device_seconds = j.at("device_seconds").get<std::vector<std::vector<double>>>();
    for (const auto& step : r.device_seconds) {
      if (step.size() != r.device_ops.size()) {
        throw std::runtime_error("a step's device times do not match its device operations");
      }
    }
    return r;
  } catch (const std::exception& e) {
    throw std::runtime_error(std::string("malformed rank record: ") + e.what());
  }
}

std::vector<DeviceOpTime> typical_device_times(const RankRecord& record, size_t first_measured) {
  std::vector<DeviceOpTime> out;
  if (record.device_seconds.size() <= first_measured) return out;
  std::vector<double> totals;
  for (size_t k = first_measured; k < record.device_seconds.size(); ++k) {
    const std::vector<double>& step = record.device_seconds[k];
    totals.push_back(std::accumulate(step.begin(), step.end(), 0.0));
  }
  const std::vector<size_t> typical = middle_half(totals);
  for (size_t p = 0; p < record.device_ops.size(); ++p) {
    double sum = 0.0;
    for (const size_t k : typical) sum += record.device_seconds[first_measured + k].at(p);
    out.push_back({record.name, record.device_ops[p].first, record.device_ops[p].second,
                   sum / static_cast<double>(typical.size())});
  }
  return out;
}

void add_node_traffic(MeasuredResult& result, const std::vector<RankRecord>& records,
                      const NodeLayout& layout, int64_t warmup_steps) {
  if (layout.devices_per_node <= 1 && !layout.colocated) return;
  std::vector<NodeTraffic> traffic(static_cast<size_t>(layout.nodes));
  double measured = 0.0;
  for (size_t src = 0; src < records.size(); ++src) {
    const auto& steps = records[src].bytes_to;
    if (src == 0) measured = static_cast<double>(steps.size()) - static_cast<double>(warmup_steps);
    for (size_t k = static_cast<size_t>(warmup_steps); k < steps.size(); ++k) {
      for (size_t dst = 0; dst < steps[k].size(); ++dst) {
        if (steps[k][dst] > 0.0) {
          count_node_traffic(layout, static_cast<int64_t>(src), static_cast<int64_t>(dst),
                             steps[k][dst], traffic);
        }
      }
    }
  }
  if (measured <= 0.0) return;
  for (size_t n = 0; n < traffic.size(); ++n) {
    const NodeTraffic& t = traffic[n];
    result.nodes.push_back({node_name(static_cast<int64_t>(n)), t.nic_in / measured,
                            t.nic_out / measured, t.interconnect / measured});
  }
}

MeasuredResult summarise(const std::vector<RankRecord>& records, int64_t parameter_servers,
                         int64_t warmup_steps, int64_t batch_per_worker) {
  if (records.empty()) throw std::invalid_argument("no rank records");
  const size_t steps = records.front().part_done.size();
  for (const RankRecord& r : records) {
    if (r.bytes_in.size() != steps || r.bytes_out.size() != steps || r.part_done.size() != steps) {
      throw std::invalid_argument("rank records of different lengths");
    }
  }
  if (warmup_steps < 0 || static_cast<size_t>(warmup_steps) >= steps) {
    throw std::invalid_argument("no measured step after " + std::to_string(warmup_steps) +
                                " warm-up steps of " + std::to_string(steps));
  }
  const auto first_measured = static_cast<size_t>(warmup_steps);
  const double measured = static_cast<double>(steps - first_measured);
  const int64_t workers = static_cast<int64_t>(records.size()) - parameter_servers;

  MeasuredResult out;
  double start = -std::numeric_limits<double>::infinity();
  for (const RankRecord& r : records) start = std::max(start, r.start);
  std::vector<double> ends;
  std::vector<double> times;
  double previous = start;
  for (size_t k = 0; k < steps; ++k) {
    double boundary = -std::numeric_limits<double>::infinity();
    for (const RankRecord& r : records) {
      if (r.part_done[k]) boundary = std::max(boundary, *r.part_done[k]);
    }
    if (!std::isfinite(boundary)) {
      throw std::invalid_argument("no rank finished a part of step " + std::to_string(k));
    }
    times.push_back(boundary - previous);
    ends.push_back(boundary);
    previous = boundary;
  }
  set_step_times(out, std::move(times), warmup_steps, workers * batch_per_worker);

  for (size_t i = 0; i < records.size(); ++i) {
    const RankRecord& r = records[i];
    HostTraffic bytes{r.name, 0.0, 0.0};
    for (size_t k = first_measured; k < steps; ++k) {
      bytes.bytes_in += r.bytes_in[k] / measured;
      bytes.bytes_out += r.bytes_out[k] / measured;
    }
    out.hosts.push_back(bytes);
    const TimeSplit split = time_split(r.intervals, ends, start, warmup_steps);
    out.splits.push_back(split);
    if (static_cast<int64_t>(i) < parameter_servers) {
      if (i == 0) out.ps_busy_s = split.compute;
      continue;
    }
    out.worker_mean.compute += split.compute / static_cast<double>(workers);
    out.worker_mean.communication += split.communication / static_cast<double>(workers);
    out.worker_mean.waiting += split.waiting / static_cast<double>(workers);
  }
  if (std::any_of(records.begin(), records.end(), [](const RankRecord& r) { return !r.sent.empty(); })) {
    for (const RankRecord& r : records) out.messages.push_back(r.sent);
  }
  for (const RankRecord& r : records) {
    if (!r.device_seconds.empty() && r.device_seconds.size() != steps) {
      throw std::invalid_argument("rank records of different lengths");
    }
    const std::vector<DeviceOpTime> typical = typical_device_times(r, first_measured);
    out.device_times.insert(out.device_times.end(), typical.begin(), typical.end());
  }
  for (size_t i = 0; i < records.size(); ++i) {
    for (Activity a : records[i].timeline) {
      a.host = static_cast<int32_t>(i);
      out.timeline.push_back(std::move(a));
    }
  }

  std::map<int64_t, std::pair<double, int64_t>> losses;  // step -> (sum, count)
  for (const RankRecord& r : records) {
    for (const LossSample& l : r.losses) {
      auto& [sum, count] = losses[l.step];
      sum += l.loss;
      ++count;
    }
  }
  for (size_t k = 0; k < steps; ++k) {
    const auto it = losses.find(static_cast<int64_t>(k));
    out.loss.push_back(it == losses.end()
                           ? std::numeric_limits<double>::quiet_NaN()
                           : it->second.first / static_cast<double>(it->second.second));
  }
  return out;
}

}  // namespace ralp::cluster
