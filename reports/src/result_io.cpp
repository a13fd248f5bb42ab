// JSON, CSV and Chrome trace forms of simulation results.
#include "ralp/sim/result_io.hpp"

#include "ralp/sim/verdict.hpp"

#include <array>
#include <cstdio>
#include <map>
#include <sstream>
#include <stdexcept>

namespace ralp::sim {
namespace {

constexpr std::array kActivityNames{"compute", "update", "aggregate", "encode",
                                    "copy",    "send",   "receive"};
constexpr double kMicrosecondsPerSecond = 1e6;

ActivityKind activity_from_string(const std::string& name) {
  for (size_t i = 0; i < kActivityNames.size(); ++i) {
    if (name == kActivityNames[i]) return static_cast<ActivityKind>(i);
  }
  throw std::runtime_error("unknown activity kind '" + name + "'");
}

Json sources_json(const ComputeSources& s) {
  return {{"profile", s.profile},   {"profile_source", s.profile_source},
          {"cost_model", s.cost_model}, {"measured_layers", s.measured},
          {"fitted_layers", s.fitted},  {"datasheet_layers", s.datasheet}};
}

ComputeSources sources_from(const Json& j) {
  return {j.at("profile").get<std::string>(),        j.at("profile_source").get<std::string>(),
          j.at("cost_model").get<std::string>(),     j.at("measured_layers").get<size_t>(),
          j.at("fitted_layers").get<size_t>(),       j.at("datasheet_layers").get<size_t>()};
}

template <class T>
Json optional_json(const std::optional<T>& value) {
  return value ? Json(*value) : Json(nullptr);
}

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

std::string_view to_string(ActivityKind kind) { return kActivityNames[static_cast<size_t>(kind)]; }

Json to_json(const StrategyResult& r, bool with_timeline) {
  Json links = Json::array();
  for (const auto& l : r.links) {
    links.push_back({{"name", l.name},
                     {"bytes", l.bytes},
                     {"bandwidth", l.bandwidth},
                     {"utilisation", l.utilisation}});
  }
  Json trials = Json::array();
  for (const auto& t : r.cut_search) {
    trials.push_back({{"cut", t.cut}, {"step_time_mean_s", t.step_time_mean_s}});
  }
  Json j = Json::object();
  write_step_fields(r, j);
  j["speedup_vs_ps"] = optional_json(r.speedup_vs_ps);
  j["speedup_vs_allreduce"] = optional_json(r.speedup_vs_allreduce);
  j["busiest_link"] = links.empty() ? Json(nullptr) : links[0];
  j["links"] = links;
  j["ring_model"] = r.ring_model.empty() ? Json(nullptr) : Json(r.ring_model);
  j["compute_times"] = {{"worker", sources_json(r.worker_sources)},
                        {"ps", r.ps_sources ? sources_json(*r.ps_sources) : Json(nullptr)}};
  j["cut_search"] = trials;
  if (with_timeline) {
    Json timeline = Json::array();
    for (const auto& a : r.timeline) {
      timeline.push_back({a.host, a.peer, std::string(to_string(a.kind)), a.step, a.label, a.start,
                          a.end, a.bytes});
    }
    j["timeline"] = std::move(timeline);
  }
  return j;
}

StrategyResult strategy_result_from_json(const Json& j) {
  try {
    StrategyResult r;
    read_step_fields(j, r);
    if (!j.at("speedup_vs_ps").is_null()) r.speedup_vs_ps = j.at("speedup_vs_ps").get<double>();
    if (!j.at("speedup_vs_allreduce").is_null()) {
      r.speedup_vs_allreduce = j.at("speedup_vs_allreduce").get<double>();
    }
    for (const auto& l : j.at("links")) {
      r.links.push_back({l.at("name").get<std::string>(), l.at("bytes").get<double>(),
                         l.at("bandwidth").get<double>(), l.at("utilisation").get<double>()});
    }
    if (!j.at("ring_model").is_null()) r.ring_model = j.at("ring_model").get<std::string>();
    r.worker_sources = sources_from(j.at("compute_times").at("worker"));
    if (!j.at("compute_times").at("ps").is_null()) {
      r.ps_sources = sources_from(j.at("compute_times").at("ps"));
    }
    for (const auto& t : j.at("cut_search")) {
      r.cut_search.push_back(
          {t.at("cut").get<std::string>(), t.at("step_time_mean_s").get<double>()});
    }
    if (j.contains("timeline")) {
      for (const auto& a : j.at("timeline")) {
        r.timeline.push_back({a.at(0).get<int32_t>(), a.at(1).get<int32_t>(),
                              activity_from_string(a.at(2).get<std::string>()),
                              a.at(3).get<int32_t>(), a.at(4).get<std::string>(),
                              a.at(5).get<double>(), a.at(6).get<double>(), a.at(7).get<double>()});
      }
    }
    return r;
  } catch (const Json::exception& e) {
    throw std::runtime_error(std::string("malformed simulation result: ") + e.what());
  }
}

Json to_json(const ScenarioResult& s) {
  Json results = Json::array();
  for (const auto& r : s.results) results.push_back(to_json(r, false));
  return {{"scenario",
           {{"name", s.scenario},
            {"file", s.file},
            {"model", s.model},
            {"workers", s.workers},
            {"parameter_servers", s.parameter_servers},
            {"batch_per_worker", s.batch_per_worker},
            {"network_model", s.network_model}}},
          {"results", std::move(results)},
          {"verdict", s.results.empty() ? Json(nullptr) : to_json(make_verdict(s, s.split_threshold))}};
}

std::string to_csv(const ScenarioResult& s) {
  std::ostringstream out;
  out << "strategy,kind,cut,step_time_mean_s,images_per_s,speedup_vs_ps,speedup_vs_allreduce,"
         "ps_bytes_in,ps_bytes_out,worker_bytes_in,worker_bytes_out,busiest_link,"
         "busiest_link_utilisation,compute_s,communication_s,waiting_s,worker_profile,"
         "measured_layers,fitted_layers,datasheet_layers\n";
  for (const auto& r : s.results) {
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
        << r.worker_sources.datasheet << '\n';
  }
  return out.str();
}

Json to_chrome_trace(const ScenarioResult& s) {
  Json events = Json::array();
  // Threads: compute-like kinds on fixed ids, transfers on one thread per peer and direction.
  constexpr int64_t kComputeThread = 1;
  constexpr int64_t kPsDeviceThread = 2;
  constexpr int64_t kThreadsPerKind = 1 << 20;  // room for one track per peer host
  constexpr int64_t kSendThreadBase = 1 * kThreadsPerKind;
  constexpr int64_t kReceiveThreadBase = 2 * kThreadsPerKind;
  constexpr int64_t kCopyThreadBase = 3 * kThreadsPerKind;
  constexpr int64_t kRingEncodeThreadBase = 4 * kThreadsPerKind;
  for (size_t si = 0; si < s.results.size(); ++si) {
    const StrategyResult& r = s.results[si];
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
          {"otherData", {{"scenario", s.scenario}, {"model", s.model},
                         {"note", "last simulated step of each strategy; times from its start"}}}};
}

}  // namespace ralp::sim
