// Summaries of measured runs and their JSON forms.
#include "ralp/cluster/measurement.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <stdexcept>

namespace ralp::cluster {
namespace {

// Quantile q of sorted values, interpolating linearly between neighbours.
double quantile(const std::vector<double>& sorted, double q) {
  const double position = q * static_cast<double>(sorted.size() - 1);
  const auto below = static_cast<size_t>(std::floor(position));
  const size_t above = std::min(below + 1, sorted.size() - 1);
  const double fraction = position - static_cast<double>(below);
  return sorted[below] + fraction * (sorted[above] - sorted[below]);
}

Json phases_json(const PhaseTimes& t) {
  Json j = Json::object();
  for (size_t i = 0; i < kPhaseCount; ++i) {
    j[std::string(to_string(static_cast<Phase>(i))) + "_s"] = t.seconds[i];
  }
  return j;
}

Json split_json(const WorkerSplit& s) {
  return {{"compute_s", s.compute}, {"communication_s", s.communication}, {"waiting_s", s.waiting}};
}

}  // namespace

double median(std::vector<double> values) {
  if (values.empty()) throw std::invalid_argument("median of no values");
  std::sort(values.begin(), values.end());
  return quantile(values, 0.5);
}

double interquartile_range(std::vector<double> values) {
  if (values.empty()) throw std::invalid_argument("interquartile range of no values");
  std::sort(values.begin(), values.end());
  return quantile(values, 0.75) - quantile(values, 0.25);
}

Json to_json(const RankRecord& r) {
  Json phases = Json::array();
  for (const PhaseTimes& p : r.phases)
    phases.push_back(std::vector<double>(std::begin(p.seconds), std::end(p.seconds)));
  Json parts = Json::array();
  for (const auto& p : r.part_done) parts.push_back(p ? Json(*p) : Json(nullptr));
  Json losses = Json::array();
  for (const LossSample& l : r.losses) losses.push_back({l.step, l.worker, l.loss});
  return {{"name", r.name},         {"start", r.start},         {"phases", phases},
          {"bytes_in", r.bytes_in}, {"bytes_out", r.bytes_out}, {"part_done", parts},
          {"losses", losses}};
}

RankRecord rank_record_from_json(const Json& j) {
  try {
    RankRecord r;
    r.name = j.at("name").get<std::string>();
    r.start = j.at("start").get<double>();
    for (const auto& p : j.at("phases")) {
      PhaseTimes t;
      const auto values = p.get<std::vector<double>>();
      if (values.size() != kPhaseCount) throw std::runtime_error("phases of a step");
      std::copy(values.begin(), values.end(), std::begin(t.seconds));
      r.phases.push_back(t);
    }
    r.bytes_in = j.at("bytes_in").get<std::vector<double>>();
    r.bytes_out = j.at("bytes_out").get<std::vector<double>>();
    for (const auto& p : j.at("part_done")) {
      r.part_done.push_back(p.is_null() ? std::nullopt : std::optional<double>(p.get<double>()));
    }
    for (const auto& l : j.at("losses")) {
      r.losses.push_back({l.at(0).get<int64_t>(), l.at(1).get<int64_t>(), l.at(2).get<double>()});
    }
    return r;
  } catch (const std::exception& e) {
    throw std::runtime_error(std::string("malformed rank record: ") + e.what());
  }
}

MeasuredResult summarise(const std::vector<RankRecord>& records, int64_t parameter_servers,
                         int64_t warmup_steps, int64_t batch_per_worker) {
  if (records.empty()) throw std::invalid_argument("no rank records");
  const size_t steps = records.front().phases.size();
  for (const RankRecord& r : records) {
    if (r.phases.size() != steps || r.bytes_in.size() != steps || r.bytes_out.size() != steps ||
        r.part_done.size() != steps) {
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
  out.warmup_steps = warmup_steps;
  double previous = -std::numeric_limits<double>::infinity();
  for (const RankRecord& r : records) previous = std::max(previous, r.start);
  for (size_t k = 0; k < steps; ++k) {
    double boundary = -std::numeric_limits<double>::infinity();
    for (const RankRecord& r : records) {
      if (r.part_done[k]) boundary = std::max(boundary, *r.part_done[k]);
    }
    if (!std::isfinite(boundary)) {
      throw std::invalid_argument("no rank finished a part of step " + std::to_string(k));
    }
    out.step_times.push_back(boundary - previous);
    previous = boundary;
  }
  const std::vector<double> measured_times(out.step_times.begin() + warmup_steps,
                                           out.step_times.end());
  out.step_time_s = median(measured_times);
  out.step_time_spread_s = interquartile_range(measured_times);
  out.images_per_s = static_cast<double>(workers * batch_per_worker) / out.step_time_s;

  for (size_t i = 0; i < records.size(); ++i) {
    const RankRecord& r = records[i];
    HostBytes bytes{r.name, 0.0, 0.0};
    RankPhases phases{r.name, {}};
    for (size_t k = first_measured; k < steps; ++k) {
      bytes.bytes_in += r.bytes_in[k] / measured;
      bytes.bytes_out += r.bytes_out[k] / measured;
      for (size_t p = 0; p < kPhaseCount; ++p) {
        phases.mean.seconds[p] += r.phases[k].seconds[p] / measured;
      }
    }
    out.hosts.push_back(bytes);
    out.ranks.push_back(phases);
    if (static_cast<int64_t>(i) < parameter_servers) continue;
    const PhaseTimes& m = phases.mean;
    const WorkerSplit split{m[Phase::compute] + m[Phase::aggregation],
                            m[Phase::send] + m[Phase::receive], m[Phase::waiting]};
    out.workers.push_back(split);
    out.worker_mean.compute += split.compute / static_cast<double>(workers);
    out.worker_mean.communication += split.communication / static_cast<double>(workers);
    out.worker_mean.waiting += split.waiting / static_cast<double>(workers);
  }
  const PhaseTimes& ps0 = out.ranks.front().mean;
  out.ps_busy_s = ps0[Phase::compute] + ps0[Phase::aggregation];

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

Json to_json(const MeasuredRun& run) {
  Json results = Json::array();
  for (const MeasuredResult& r : run.results) {
    Json hosts = Json::array();
    for (const HostBytes& h : r.hosts) {
      hosts.push_back({{"name", h.name}, {"bytes_in", h.bytes_in}, {"bytes_out", h.bytes_out}});
    }
    Json workers = Json::array();
    for (const WorkerSplit& w : r.workers) workers.push_back(split_json(w));
    Json ranks = Json::array();
    for (const RankPhases& p : r.ranks) {
      Json entry = {{"name", p.name}};
      entry.update(phases_json(p.mean));
      ranks.push_back(std::move(entry));
    }
    Json loss = Json::array();
    for (const double l : r.loss) loss.push_back(std::isfinite(l) ? Json(l) : Json(nullptr));
    results.push_back({{"strategy", r.label},
                       {"kind", std::string(to_string(r.kind))},
                       {"cut", r.cut ? Json(*r.cut) : Json(nullptr)},
                       {"step_time_s", r.step_time_s},
                       {"step_time_spread_s", r.step_time_spread_s},
                       {"images_per_s", r.images_per_s},
                       {"step_times_s", r.step_times},
                       {"warmup_steps", r.warmup_steps},
                       {"hosts", hosts},
                       {"worker_mean", split_json(r.worker_mean)},
                       {"workers", workers},
                       {"ranks", ranks},
                       {"ps_busy_s", r.ps_busy_s},
                       {"ring_model", r.ring.empty() ? Json(nullptr) : Json(r.ring)},
                       {"loss", loss},
                       {"backend", r.backend},
                       {"threads", r.threads}});
  }
  return {{"scenario",
           {{"name", run.scenario},
            {"file", run.file},
            {"model", run.model},
            {"workers", run.workers},
            {"parameter_servers", run.parameter_servers},
            {"batch_per_worker", run.batch_per_worker},
            {"mode", "measured"}}},
          {"results", std::move(results)}};
}

}  // namespace ralp::cluster
