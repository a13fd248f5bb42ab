// The JSON form of a simulated strategy's result, both ways.
#include "ralp/results/simulation_result.hpp"

#include <stdexcept>

namespace ralp {
namespace {

Json sources_json(const ComputeSources& s) {
  return {{"profile", s.profile},   {"profile_source", s.profile_source},
          {"cost_model", s.cost_model}, {"measured_layers", s.measured},
          {"fitted_layers", s.fitted},  {"datasheet_layers", s.datasheet},
          {"published_layers", s.published}};
}

ComputeSources sources_from(const Json& j) {
  return {j.at("profile").get<std::string>(),        j.at("profile_source").get<std::string>(),
          j.at("cost_model").get<std::string>(),     j.at("measured_layers").get<size_t>(),
          j.at("fitted_layers").get<size_t>(),       j.at("datasheet_layers").get<size_t>(),
          j.value("published_layers", size_t{0})};
}

MemoryFootprint footprint_from(const Json& j) {
  MemoryFootprint f;
  f.weights = Bytes(j.at("weights").get<double>());
  f.weight_copies = Bytes(j.at("weight_copies").get<double>());
  f.gradients = Bytes(j.at("gradients").get<double>());
  f.optimizer_state = Bytes(j.at("optimizer_state").get<double>());
  f.activations = Bytes(j.at("activations").get<double>());
  f.workspace = Bytes(j.at("workspace").get<double>());
  return f;
}

std::optional<Bytes> capacity_from(const Json& j) {
  const Json& c = j.at("capacity");
  return c.is_null() ? std::nullopt : std::optional<Bytes>(Bytes(c.get<double>()));
}

template <class T>
Json optional_json(const std::optional<T>& value) {
  return value ? Json(*value) : Json(nullptr);
}

}  // namespace

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
  if (r.worker_memory) {
    j["memory"] = {{"worker", memory_json(*r.worker_memory, r.worker_memory_capacity)},
                   {"ps", r.ps_memory ? memory_json(*r.ps_memory, r.ps_memory_capacity)
                                      : Json(nullptr)}};
  }
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

Json memory_json(const MemoryFootprint& f, const std::optional<Bytes>& capacity) {
  return {{"weights", f.weights.value()},
          {"weight_copies", f.weight_copies.value()},
          {"gradients", f.gradients.value()},
          {"optimizer_state", f.optimizer_state.value()},
          {"activations", f.activations.value()},
          {"workspace", f.workspace.value()},
          {"total", f.total().value()},
          {"capacity", capacity ? Json(capacity->value()) : Json(nullptr)}};
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
    if (j.contains("memory")) {
      const Json& m = j.at("memory");
      r.worker_memory = footprint_from(m.at("worker"));
      r.worker_memory_capacity = capacity_from(m.at("worker"));
      if (!m.at("ps").is_null()) {
        r.ps_memory = footprint_from(m.at("ps"));
        r.ps_memory_capacity = capacity_from(m.at("ps"));
      }
    }
    if (j.contains("timeline")) {
      for (const auto& a : j.at("timeline")) {
        r.timeline.push_back({a.at(0).get<int32_t>(), a.at(1).get<int32_t>(),
                              activity_kind_from_string(a.at(2).get<std::string>()),
                              a.at(3).get<int32_t>(), a.at(4).get<std::string>(),
                              a.at(5).get<double>(), a.at(6).get<double>(), a.at(7).get<double>()});
      }
    }
    return r;
  } catch (const Json::exception& e) {
    throw std::runtime_error(std::string("malformed simulation result: ") + e.what());
  }
}

}  // namespace ralp
