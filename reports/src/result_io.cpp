// JSON, CSV and Chrome trace forms of simulated scenarios, and the JSON form of measured runs.
#include "ralp/reports/result_io.hpp"

#include <cmath>
#include <cstdio>
#include <map>
#include <sstream>
#include <stdexcept>

#include "ralp/reports/verdict.hpp"
#include "ralp/results/training_figures.hpp"

namespace ralp::reports {
namespace {

constexpr double kMicrosecondsPerSecond = 1e6;

std::string csv_field(const std::string& text) {
  if (text.find_first_of(",\"\n") == std::string::npos) return text;
  std::string out = "\"";
  for (const char c : text) out += c == '"' ? std::string("\"\"") : std::string(1, c);
  return out + "\"";
}

std::string number(double value) {
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%.9g", value);
  return buffer;
}

}  // namespace

Json to_json(const ScenarioResult& s) {
  return {{"scenario",
           {{"name", s.scenario},
            {"file", s.file},
            {"model", s.model},
            {"workers", s.workers},
            {"parameter_servers", s.parameter_servers},
            {"batch_per_worker", s.batch_per_worker},
            {"precision", std::string(to_string(s.precision))},
            {"network_model", s.network_model},
            {"baseline", s.baseline ? to_json(*s.baseline) : Json()},
            {"training", to_json(s.training)}}},
          {"results", results_with_figures_json(s)},
          {"verdict", s.results.empty() ? Json(nullptr) : to_json(make_verdict(s, s.split_threshold))}};
}

std::string to_csv(const ScenarioResult& s) {
  std::ostringstream out;
  out << "strategy,kind,cut,step_time_mean_s,images_per_s,speedup_vs_ps,speedup_vs_allreduce,"
         "ps_bytes_in,ps_bytes_out,worker_bytes_in,worker_bytes_out,busiest_link,"
         "busiest_link_utilisation,compute_s,communication_s,waiting_s,worker_profile,"
         "measured_layers,fitted_layers,datasheet_layers,published_layers,images_per_s_per_gpu,"
         "scaling_efficiency,time_to_train_s,billed_hosts,cost,currency\n";
  const std::string currency = s.training.price_per_hour ? s.training.price_per_hour->currency : "";
  for (const auto& r : s.results) {
    const TrainingFigures f = training_figures(r, s.workers, s.training, s.baseline);
    const auto find = [&r](const std::string& name) {
      for (const auto& h : r.hosts) {
        if (h.name == name) return h;
      }
      return HostTraffic{};
    };
    const HostTraffic ps = find("ps-0");
    const HostTraffic worker = find("worker-0");
    out << csv_field(r.label) << ',' << to_string(r.kind) << ',' << csv_field(r.cut.value_or(""))
        << ',' << number(r.step_time_mean_s) << ',' << number(r.images_per_s) << ','
        << (r.speedup_vs_ps ? number(*r.speedup_vs_ps) : "") << ','
        << (r.speedup_vs_allreduce ? number(*r.speedup_vs_allreduce) : "") << ','
        << number(ps.bytes_in) << ',' << number(ps.bytes_out) << ',' << number(worker.bytes_in)
        << ',' << number(worker.bytes_out) << ','
        << csv_field(r.links.empty() ? "" : r.links[0].name) << ','
        << (r.links.empty() ? "" : number(r.links[0].utilisation)) << ','
        << number(r.worker_mean.compute) << ',' << number(r.worker_mean.communication) << ','
        << number(r.worker_mean.waiting) << ',' << csv_field(r.worker_sources.profile) << ','
        << r.worker_sources.measured << ',' << r.worker_sources.fitted << ','
        << r.worker_sources.datasheet << ',' << r.worker_sources.published << ','
        << number(f.images_per_s_per_gpu) << ','
        << (f.scaling_efficiency ? number(*f.scaling_efficiency) : "") << ','
        << number(f.time_to_train_s) << ',' << f.billed_hosts << ','
        << (f.cost ? number(*f.cost) : "") << ',' << currency << '\n';
  }
  return out.str();
}

namespace {

// Chrome trace events of each result's last-step timeline: a process per host and strategy,
// compute-like kinds on fixed threads, transfers on one thread per peer and direction.
Json chrome_trace(const std::vector<const StepResult*>& results, const std::string& scenario,
                  const std::string& model, const std::string& note) {
  Json events = Json::array();
  // Threads: compute-like kinds on fixed ids, transfers on one thread per peer and direction.
  constexpr int64_t kComputeThread = 1;
  constexpr int64_t kPsDeviceThread = 2;
  constexpr int64_t kThreadsPerKind = 1 << 20;  // room for one track per peer host
  constexpr int64_t kSendThreadBase = 1 * kThreadsPerKind;
  constexpr int64_t kReceiveThreadBase = 2 * kThreadsPerKind;
  constexpr int64_t kCopyThreadBase = 3 * kThreadsPerKind;
  constexpr int64_t kRingEncodeThreadBase = 4 * kThreadsPerKind;
  for (size_t si = 0; si < results.size(); ++si) {
    const StepResult& r = *results[si];
    const auto pid = [&](int32_t host) {
      return static_cast<int64_t>(si) * static_cast<int64_t>(r.hosts.size() + 1) + host + 1;
    };
    for (size_t h = 0; h < r.hosts.size(); ++h) {
      events.push_back({{"ph", "M"}, {"name", "process_name"}, {"pid", pid(static_cast<int32_t>(h))},
                        {"args", {{"name", r.label + " / " + r.hosts[h].name}}}});
      events.push_back({{"ph", "M"}, {"name", "process_sort_index"},
                        {"pid", pid(static_cast<int32_t>(h))},
                        {"args", {{"sort_index", pid(static_cast<int32_t>(h))}}}});
    }
    std::map<std::pair<int64_t, int64_t>, std::string> thread_names;
    if (r.timeline.empty()) continue;
    double first = r.timeline.front().start;
    for (const auto& a : r.timeline) first = std::min(first, a.start);
    for (const auto& a : r.timeline) {
      int64_t tid = kComputeThread;
      std::string thread = "compute";
      const auto peer_name = [&]() { return r.hosts[static_cast<size_t>(a.peer)].name; };
      switch (a.kind) {
        case ActivityKind::compute:
          break;
        case ActivityKind::encode:
          // Ring buffers are encoded on a stream of their own, beside the backward pass.
          if (a.peer >= 0) {
            tid = kRingEncodeThreadBase + a.peer;
            thread = "ring encode to " + peer_name();
          }
          break;
        case ActivityKind::update:
        case ActivityKind::aggregate:
          tid = kPsDeviceThread;
          thread = "aggregate and update";
          break;
        case ActivityKind::copy:
          tid = kCopyThreadBase;
          thread = "host-device copies";
          break;
        case ActivityKind::send:
          tid = kSendThreadBase + a.peer;
          thread = "send to " + peer_name();
          break;
        case ActivityKind::receive:
          tid = kReceiveThreadBase + a.peer;
          thread = "receive from " + peer_name();
          break;
      }
      thread_names.emplace(std::pair{pid(a.host), tid}, thread);
      Json event = {{"ph", "X"},
                    {"name", a.label.empty() ? std::string(to_string(a.kind)) : a.label},
                    {"cat", std::string(to_string(a.kind))},
                    {"pid", pid(a.host)},
                    {"tid", tid},
                    {"ts", (a.start - first) * kMicrosecondsPerSecond},
                    {"dur", (a.end - a.start) * kMicrosecondsPerSecond}};
      if (a.bytes > 0.0) event["args"] = {{"bytes", a.bytes}};
      events.push_back(std::move(event));
    }
    for (const auto& [key, name] : thread_names) {
      events.push_back({{"ph", "M"}, {"name", "thread_name"}, {"pid", key.first},
                        {"tid", key.second}, {"args", {{"name", name}}}});
    }
  }
  return {{"traceEvents", std::move(events)},
          {"displayTimeUnit", "ms"},
          {"otherData", {{"scenario", scenario}, {"model", model}, {"note", note}}}};
}

}  // namespace

Json to_chrome_trace(const ScenarioResult& s) {
  std::vector<const StepResult*> results;
  for (const StrategyResult& r : s.results) results.push_back(&r);
  return chrome_trace(results, s.scenario, s.model,
                      "last simulated step of each strategy; times from its start");
}

Json to_chrome_trace(const MeasuredRun& run) {
  std::vector<const StepResult*> results;
  for (const MeasuredResult& r : run.results) results.push_back(&r);
  return chrome_trace(results, run.scenario, run.model,
                      "last measured step of each strategy, every rank on rank 0's clock; times "
                      "from its first activity");
}

Json to_json(const MeasuredRun& run) {
  Json results = Json::array();
  for (const MeasuredResult& r : run.results) {
    Json loss = Json::array();
    for (const double l : r.loss) loss.push_back(std::isfinite(l) ? Json(l) : Json(nullptr));
    Json j = Json::object();
    write_step_fields(r, j);
    j["ring_model"] = r.ring.empty() ? Json(nullptr) : Json(r.ring);
    j["loss"] = loss;
    j["backend"] = r.backend;
    j["threads"] = r.threads;
    Json times = Json::array();
    for (const DeviceOpTime& t : r.device_times) {
      times.push_back(
          {{"host", t.host}, {"op", t.op}, {"label", t.label}, {"seconds", t.seconds}});
    }
    j["device_times"] = std::move(times);
    results.push_back(std::move(j));
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

}  // namespace ralp::reports
