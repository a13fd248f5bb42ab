// The grid's points, their hosts and pinning, and the derived scenario files.
#include "ralp/validate/grid.hpp"

#include <algorithm>
#include <cmath>
#include <set>

#include "ralp/spec/scenario.hpp"

namespace ralp::validate {
namespace {

constexpr const char* kAllreduce = "allreduce";

// A relative path of the base scenario, made absolute against its folder.
std::string absolute(const std::filesystem::path& base_dir, const std::string& path) {
  const std::filesystem::path p(path);
  if (p.is_absolute()) return path;
  return std::filesystem::absolute(base_dir / p).lexically_normal().string();
}

}  // namespace

std::string to_string(Shape shape) {
  switch (shape) {
    case Shape::two_node: return "2-node";
    case Shape::ps_two_workers: return "1ps-2w";
  }
  return "?";
}

std::optional<Shape> parse_shape(const std::string& text) {
  for (const Shape s : {Shape::two_node, Shape::ps_two_workers}) {
    if (to_string(s) == text) return s;
  }
  return std::nullopt;
}

Layout layout_of(Shape shape, const std::string& strategy_kind) {
  const bool allreduce = strategy_kind == kAllreduce;
  switch (shape) {
    case Shape::two_node: return allreduce ? Layout{0, 2} : Layout{1, 1};
    case Shape::ps_two_workers: return allreduce ? Layout{0, 2} : Layout{1, 2};
  }
  return {};
}

int scenario_parameter_servers(const Layout& layout) { return layout.parameter_servers; }

int ranks_of(const Layout& layout) { return scenario_parameter_servers(layout) + layout.workers; }

bool fits_cores(const Layout& layout, int cores) {
  return layout.parameter_servers + layout.workers <= cores;
}

std::vector<std::optional<int>> pin_ranks(const Layout& layout, int cores) {
  cores = std::max(cores, 1);
  const int servers = scenario_parameter_servers(layout);
  const int ranks = ranks_of(layout);
  std::vector<std::optional<int>> pins(static_cast<size_t>(ranks));
  if (ranks <= cores || servers >= cores) {
    for (int r = 0; r < ranks; ++r) pins[static_cast<size_t>(r)] = r % cores;
    return pins;
  }
  // Servers first, each on a core of its own; the workers share the cores left, round robin.
  for (int r = 0; r < servers; ++r) pins[static_cast<size_t>(r)] = r;
  for (int w = 0; w < layout.workers; ++w) {
    pins[static_cast<size_t>(servers + w)] = servers + w % (cores - servers);
  }
  return pins;
}

std::vector<int> shared_cores(const Layout& layout, int cores) {
  if (fits_cores(layout, cores)) return {};
  std::vector<int> out;
  for (const std::optional<int>& core : pin_ranks(layout, cores)) out.push_back(*core);
  return out;
}

std::vector<StrategyEntry> strategy_entries(const Json& scenario, const std::string& file) {
  if (!scenario.is_object() || !scenario.contains("strategies") ||
      !scenario.at("strategies").is_array()) {
    throw InputError(file, "/strategies", "expected a non-empty array of strategies");
  }
  std::vector<StrategyEntry> entries;
  size_t i = 0;
  for (const Json& s : scenario.at("strategies")) {
    const std::string path = "/strategies/" + std::to_string(i++);
    StrategyEntry e{.spec = s};
    if (s.is_string()) {
      e.kind = s.get<std::string>();
      e.label = e.kind;
    } else if (s.is_object() && s.contains("name") && s.at("name").is_string()) {
      e.kind = s.at("name").get<std::string>();
      const bool has_cut = s.contains("cut") && s.at("cut").is_string();
      e.label = s.contains("label") && s.at("label").is_string()
                    ? s.at("label").get<std::string>()
                    : (has_cut ? e.kind + "@" + s.at("cut").get<std::string>() : e.kind);
      if (s.contains("head") && !s.contains("label")) {
        // A head's default label names it as the scenario does (its minimal layers).
        const Scenario parsed =
            parse_scenario(scenario, file, std::filesystem::path(file).parent_path());
        e.label = parsed.strategies.at(i - 1).label;
      }
    } else {
      throw InputError(file, path, "expected a strategy name or an object with \"name\"");
    }
    entries.push_back(std::move(e));
  }
  return entries;
}

std::string GridPoint::id() const {
  std::string label = strategy.label;
  std::replace(label.begin(), label.end(), '@', '-');
  return scenario_name + "_" + label + "_" + rate.text + "_" + to_string(shape);
}

std::vector<GridPoint> make_grid(const std::vector<std::filesystem::path>& scenarios,
                                 const std::vector<Shape>& shapes,
                                 const std::vector<LinkRate>& rates,
                                 const std::vector<std::string>& strategies) {
  struct Base {
    std::filesystem::path file;
    std::string name, model;
    std::vector<StrategyEntry> entries;
  };
  std::vector<Base> bases;
  std::set<std::string> matched;
  for (const auto& file : scenarios) {
    const Json j = read_json_file(file);
    Base b{.file = file};
    b.name = j.contains("name") && j.at("name").is_string() ? j.at("name").get<std::string>()
                                                            : file.stem().string();
    b.model = j.contains("model") && j.at("model").is_string() ? j.at("model").get<std::string>()
                                                               : "?";
    for (auto& e : strategy_entries(j, file.string())) {
      const bool wanted = strategies.empty() ||
                          std::find(strategies.begin(), strategies.end(), e.label) !=
                              strategies.end() ||
                          std::find(strategies.begin(), strategies.end(), e.kind) !=
                              strategies.end();
      if (!wanted) continue;
      matched.insert(e.label);
      matched.insert(e.kind);
      b.entries.push_back(std::move(e));
    }
    bases.push_back(std::move(b));
  }
  for (const auto& s : strategies) {
    if (!matched.contains(s)) {
      throw InputError("--strategies", "", "names '" + s + "', which no scenario lists");
    }
  }
  std::vector<GridPoint> grid;
  for (const auto& rate : rates) {
    for (const auto& b : bases) {
      for (const Shape shape : shapes) {
        for (const auto& e : b.entries) {
          // allreduce has no PS, so its 1ps-2w point is its 2-node point: run it once.
          const bool duplicate = shape != shapes.front() &&
                                 layout_of(shape, e.kind) == layout_of(shapes.front(), e.kind);
          if (duplicate) continue;
          grid.push_back({.scenario_file = b.file,
                          .scenario_name = b.name,
                          .model = b.model,
                          .strategy = e,
                          .rate = rate,
                          .shape = shape});
        }
      }
    }
  }
  return grid;
}

Json derived_scenario(const Json& base, const std::filesystem::path& base_dir,
                      const GridPoint& point, const DerivedSettings& settings) {
  Json s = base;
  s["name"] = point.id();
  if (s.contains("model") && s.at("model").is_string()) {
    const std::string model = s.at("model").get<std::string>();
    // A model file rather than a zoo name: it has a folder or a .json / .onnx ending.
    const std::filesystem::path p(model);
    if (p.has_parent_path() || p.extension() == ".json" || p.extension() == ".onnx") {
      s["model"] = absolute(base_dir, model);
    }
  }
  const Layout layout = layout_of(point.shape, point.strategy.kind);
  Json cluster = s.contains("cluster") && s.at("cluster").is_object() ? s.at("cluster") : Json::object();
  cluster["workers"] = layout.workers;
  cluster["parameter_servers"] = scenario_parameter_servers(layout);
  const Json device = {{"file", std::filesystem::absolute(settings.profile).string()}};
  cluster["worker_device"] = device;
  cluster["ps_device"] = device;
  cluster["platform"] = {{"kind", "star"},
                         {"nic_bandwidth", point.rate.bytes_per_s()},
                         {"latency", settings.network.latency_s}};
  if (settings.nic_burst_bytes > 0.0) cluster["platform"]["nic_burst"] = settings.nic_burst_bytes;
  if (!settings.shared_devices.empty()) cluster["shared_devices"] = settings.shared_devices;
  const NetworkFit& n = settings.network;
  const MessageCpuSpec message_cpu{n.send_cpu_s_per_byte, n.receive_cpu_s_per_byte,
                                   n.send_cpu_s_per_message, n.receive_cpu_s_per_message,
                                   settings.shared_devices.empty() ? 0.0 : n.waiting_share};
  if (message_cpu.charged() || message_cpu.waiting_share > 0.0) {
    cluster["message_cpu"] = message_cpu_to_json(message_cpu);
  } else {
    cluster.erase("message_cpu");
  }
  s["cluster"] = cluster;
  s["network_model"] = {{"latency_factor", settings.network.latency_factor},
                        {"bandwidth_factor", settings.network.bandwidth_factor}};
  s["strategies"] = Json::array({point.strategy.spec});
  s["steps"] = settings.steps;
  s["warmup_steps"] = settings.warmup_steps;
  if (settings.precision != Precision::fp32) s["precision"] = std::string(to_string(settings.precision));
  return s;
}

int plan_steps(double predicted_s, double budget_s, int min_steps, int max_steps) {
  if (!(predicted_s > 0.0)) return max_steps;
  const double fit = std::floor(budget_s / predicted_s);
  return static_cast<int>(std::clamp(fit, static_cast<double>(min_steps),
                                     static_cast<double>(max_steps)));
}

}  // namespace ralp::validate
