// `ralp published transports` and the multi-GPU half of `ralp published report`: the named
// transports fitted on the published rows whose role is "fit" (scenarios/published/multi-gpu/
// points.csv), and every multi-GPU point simulated event by event beside its published figure.
#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>

#include "commands.hpp"
#include "published_cluster.hpp"
#include "ralp/published/fit.hpp"
#include "ralp/reports/gnuplot.hpp"
#include "ralp/sim/simulate.hpp"

namespace ralp::cli {
namespace {

namespace fs = std::filesystem;
using published::ClusterPoint;
using published::ClusterPrediction;

// What each named transport is, and which of its parameters the fit moves (fewer than its rows);
// the others keep the value given here.
struct TransportDefinition {
  std::string name, summary;
  std::vector<std::string> fitted;
  Transport start;  // where the fit starts, and the fixed parameters' values
};

Transport with(double message_us, double ns_per_byte, double share) {
  Transport t;
  t.message_s = message_us * 1e-6;
  t.s_per_byte = ns_per_byte * 1e-9;
  t.link_share = share;
  return t;
}

const std::vector<TransportDefinition>& definitions() {
  static const std::vector<TransportDefinition> kDefinitions{
      {"tf-grpc",
       "TensorFlow 1.x's gRPC: every tensor a call, serialised and copied on the host; a PS on "
       "the host's CPU does it on that CPU",
       {"cpu_ns_per_byte", "message_us"}, with(50.0, 0.5, 1.0)},
      {"mpi-cpu",
       "Horovod's ring all-reduce over MPI on the host (2017): device-host "
       "copies, TCP and the sums on a host core per rank",
       {"cpu_ns_per_byte", "message_us"}, with(50.0, 0.5, 1.0)},
      {"nccl",
       "NCCL 2's ring: sums on the GPUs, sockets between nodes reaching a share of the NIC, the "
       "interconnect inside a node",
       {"link_share", "message_us"}, with(20.0, 0.0, 0.8)},
  };
  return kDefinitions;
}

// A transport's parameter in the fit's units (us, ns, share) and back.
double get(const Transport& t, const std::string& name) {
  return name == "message_us" ? t.message_s * 1e6 : name == "cpu_ns_per_byte" ? t.s_per_byte * 1e9
                                                                                : t.link_share;
}
void set(Transport& t, const std::string& name, double value) {
  if (name == "message_us") t.message_s = value * 1e-6;
  if (name == "cpu_ns_per_byte") t.s_per_byte = value * 1e-9;
  if (name == "link_share") t.link_share = value;
}
double lower_bound(const std::string& name) { return name == "link_share" ? 0.05 : 0.0; }
double upper_bound(const std::string& name) {
  return name == "message_us" ? 5000.0 : name == "cpu_ns_per_byte" ? 20.0 : 1.0;
}

// Where a fitted transport's values come from: its rows (system and model, with the GPUs and the
// batch where the system and model name several) and their sources.
std::string fit_source(const std::vector<const ClusterPoint*>& rows) {
  std::string out = "fitted by ralp published transports on " + std::to_string(rows.size()) + " rows (";
  std::vector<std::string> sources;
  for (size_t r = 0; r < rows.size(); ++r) {
    const ClusterPoint& p = *rows[r];
    const auto same = [&p](const ClusterPoint* q) {
      return q != &p && q->system == p.system && q->model == p.model;
    };
    out += (r ? ", " : "") + p.system + " " + p.model;
    if (std::ranges::any_of(rows, same)) {
      out += " " + std::to_string(p.gpus) + " GPUs batch " + std::to_string(p.batch);
    }
    if (std::ranges::find(sources, p.source) == sources.end()) sources.push_back(p.source);
  }
  out += ") of ";
  for (size_t i = 0; i < sources.size(); ++i) out += (i ? " and " : "") + sources[i];
  return out + ", scenarios/published/multi-gpu/";
}

}  // namespace

std::vector<ClusterPoint> cluster_points(const fs::path& dir) {
  return published::read_cluster_points(dir / "points.csv");
}

Scenario cluster_scenario(const ClusterPoint& point, const fs::path& dir,
                          const std::optional<Transport>& transport) {
  Scenario scenario = load_scenario(dir / point.scenario);
  if (transport) {
    for (StrategySpec& s : scenario.strategies) s.transport = *transport;
  }
  return scenario;
}

double simulated_step(const Scenario& scenario) {
  sim::SimulateOptions options;
  options.jobs = 1;
  const ScenarioResult result = sim::simulate_scenario(scenario, options);
  return result.results.at(0).step_time_mean_s;
}

namespace {

// The log error a fit minimises for one row: of the step, or of the scaling efficiency against
// the row's 1-GPU point's predicted step (fit_transports).
double log_error(const ClusterPoint& row, double step, bool efficiency,
                 const std::map<std::string, double>& baseline_steps, const fs::path& dir) {
  if (!efficiency) return std::log(step / row.published_step());
  const std::string key = published::baseline_key(row.source, row.system, row.model, row.batch);
  const auto baseline = baseline_steps.find(key);
  if (baseline == baseline_steps.end()) {
    throw InputError((dir / "points.csv").string(), row.scenario,
                     "has no 1-GPU point of " + key + " among the single-GPU points");
  }
  return std::log(baseline->second / step / row.published_efficiency());
}

}  // namespace

std::vector<Transport> fit_transports(const fs::path& dir,
                                      const std::map<std::string, double>& baseline_steps,
                                      const Progress& progress) {
  const std::vector<ClusterPoint> points = cluster_points(dir);
  std::vector<Transport> out;
  for (const TransportDefinition& d : definitions()) {
    std::vector<const ClusterPoint*> rows;
    std::vector<Scenario> scenarios;
    for (const ClusterPoint& p : points) {
      if (p.role != "fit" || p.transport != d.name) continue;
      rows.push_back(&p);
      scenarios.push_back(cluster_scenario(p, dir, std::nullopt));
    }
    if (rows.size() <= d.fitted.size()) {
      throw InputError((dir / "points.csv").string(), d.name,
                       "has " + std::to_string(rows.size()) + " fitting rows, expected more than " +
                           std::to_string(d.fitted.size()) + " (its fitted parameters)");
    }
    bool efficiency = false;
    for (const ClusterPoint* p : rows) efficiency = efficiency || p->source != rows.front()->source;
    Transport t = d.start;
    t.name = d.name;
    t.summary = d.summary;
    t.fitted = d.fitted;
    std::vector<double> x, lower, upper;
    for (const auto& name : d.fitted) {
      x.push_back(get(t, name));
      lower.push_back(lower_bound(name));
      upper.push_back(upper_bound(name));
    }
    int evaluation = 0;
    const auto objective = [&](const std::vector<double>& at) {
      Transport trial = t;
      for (size_t i = 0; i < at.size(); ++i) set(trial, d.fitted[i], at[i]);
      double sum = 0.0;
      for (size_t r = 0; r < rows.size(); ++r) {
        Scenario s = scenarios[r];
        for (StrategySpec& st : s.strategies) st.transport = trial;
        const double e = log_error(*rows[r], simulated_step(s), efficiency, baseline_steps, dir);
        sum += e * e;
      }
      progress("ralp: fitting " + d.name + ": evaluation " + std::to_string(++evaluation) +
               ", rms log error " + fixed(std::sqrt(sum / static_cast<double>(rows.size())), 4));
      return sum;
    };
    x = published::minimize_locally(objective, x, lower, upper, kTransportEvaluations);
    for (size_t i = 0; i < x.size(); ++i) set(t, d.fitted[i], x[i]);
    t.source = fit_source(rows);
    out.push_back(t);
  }
  return out;
}

std::vector<ClusterPrediction> predict_cluster_points(
    const std::vector<ClusterPoint>& points, const fs::path& dir,
    const std::map<std::string, double>& baseline_steps, const Progress& progress) {
  std::vector<ClusterPrediction> out;
  for (const ClusterPoint& p : points) {
    const std::string key = published::baseline_key(p.source, p.system, p.model, p.batch);
    const auto baseline = baseline_steps.find(key);
    if (baseline == baseline_steps.end()) {
      throw InputError((dir / "points.csv").string(), p.scenario,
                       "has no 1-GPU point of " + key + " among the single-GPU points");
    }
    progress("ralp: simulating " + p.scenario + " (" + std::to_string(out.size() + 1) + "/" +
             std::to_string(points.size()) + ")");
    const Scenario scenario = cluster_scenario(p, dir, std::nullopt);
    out.push_back({&p, simulated_step(scenario), baseline->second, scenario.model_ref});
  }
  return out;
}

}  // namespace ralp::cli
