// The published-points report (reports/published/README.md).
#include <algorithm>
#include <cmath>
#include <iomanip>
#include <map>
#include <sstream>

#include "ralp/published/cluster_points.hpp"
#include "ralp/published/fit.hpp"
#include "ralp/published/points.hpp"
#include "report_format.hpp"

namespace ralp::published {
namespace {

struct Stats {
  size_t n = 0;
  double median = 0, max = 0;
};
Stats stats(const std::vector<double>& errors) {
  std::vector<double> a;
  for (const double e : errors) a.push_back(std::abs(e));
  return {a.size(), median(a), a.empty() ? 0.0 : *std::max_element(a.begin(), a.end())};
}

void summary_table(std::ostringstream& out, const std::string& title,
                   const std::map<std::string, std::vector<double>>& groups) {
  out << "| " << title << " | points | median abs(error) | max abs(error) |\n|---|---:|---:|---:|\n";
  for (const auto& [name, errors] : groups) {
    const Stats s = stats(errors);
    out << "| " << name << " | " << s.n << " | " << pct(s.median) << " | " << pct(s.max) << " |\n";
  }
  out << '\n';
}

void points_table(std::ostringstream& out, const std::vector<Prediction>& predictions,
                  const std::string& excluded) {
  out << "| source | system | GPU | model (as run) | batch | variables | published img/s | "
         "published step ms | predicted step ms | error |\n"
         "|---|---|---|---|---:|---|---:|---:|---:|---:|\n";
  for (const Prediction& p : predictions) {
    const ThroughputRow& r = p.point->row;
    out << "| " << r.source << " | " << r.system << " | " << r.gpu << " | " << p.point->zoo_model
        << " | " << r.batch << " | " << (p.point->variables_on_host ? "host CPU" : "GPU") << " | "
        << r.images_per_s << " | " << fixed1(p.point->published_step() * 1e3) << " | "
        << fixed1(p.predicted_step * 1e3) << " | " << pct(p.error(), true)
        << (p.point->name == excluded ? " (fitting row, excluded)" : "") << " |\n";
  }
  out << '\n';
}

void kernel_tables(std::ostringstream& out, const std::vector<ProfileSummary>& profiles,
                   const std::vector<DerivationSummary>& derivations) {
  out << "## The kernel fit\n\nEach fitted GPU's residuals on its own kernel rows (DeepBench's "
         "convolution passes and GEMMs; for titanx-maxwell also convnet-benchmarks' Caffe layers), "
         "and the same with each shape predicted by a fit that never saw it (leave one shape out). "
         "Every row: `kernel-residuals.csv`.\n\n"
         "| profile | parameters from | kernel rows | median | max | leave-one-shape-out median | "
         "leave-one-shape-out max |\n|---|---|---:|---:|---:|---:|---:|\n";
  for (const ProfileSummary& p : profiles) {
    out << "| " << p.name << " | "
        << (p.derived_from.empty() ? "its own rows" : "derived from " + p.derived_from) << " | "
        << p.rows << " | " << pct(p.median) << " | " << pct(p.max) << " | " << pct(p.loso_median)
        << " | " << pct(p.loso_max) << " |\n";
  }
  out << "\nThe derivation rule (a GPU takes the kernel parameters of a fitted GPU of its "
         "architecture with its own datasheet figures), checked on GPUs that have rows of their own:\n\n"
         "| derived | rows | median | max |\n|---|---:|---:|---:|\n";
  for (const DerivationSummary& d : derivations) {
    out << "| " << d.check << " | " << d.rows << " | " << pct(d.median) << " | " << pct(d.max) << " |\n";
  }
  out << '\n';
  // One sentence per set of fitted rows, naming every profile that takes its efficiencies.
  std::map<std::string, std::vector<const ProfileSummary*>> by_rows;
  for (const ProfileSummary& p : profiles) {
    if (!p.architecture_row.empty() && !p.name.ends_with(" tensor cores")) by_rows[p.architecture_row].push_back(&p);
  }
  for (const auto& [rows, group] : by_rows) {
    std::string names;
    for (const ProfileSummary* p : group) names += (names.empty() ? "" : ", ") + p->name;
    out << "Architecture efficiency " << group.front()->efficiencies
        << " (factors on the peak FLOP/s and bandwidth), fitted on " << rows << ", taken by " << names
        << ". Those rows leave the check.\n\n";
  }
  if (!profiles.empty()) {
    out << "The framework's own cost per layer and pass, fitted on convnet-benchmarks' TensorFlow "
           "whole-network rows against the sum of their layers: "
        << fixed1(profiles.front().framework_us) << " us.\n\n";
  }
}

}  // namespace

std::string report_markdown(const std::vector<Prediction>& predictions,
                            const std::vector<ProfileSummary>& profiles,
                            const std::vector<DerivationSummary>& derivations,
                            const std::string& command) {
  std::string excluded;
  for (const ProfileSummary& p : profiles) {
    if (!p.architecture_row.empty()) excluded = p.architecture_row;
  }
  std::string excluded_point;
  std::vector<double> all, all_zero;
  std::map<std::string, std::vector<double>> by_source, by_gpu;
  for (const Prediction& p : predictions) {
    const ThroughputRow& r = p.point->row;
    if (!excluded.empty() && excluded.starts_with(r.where + " ")) {
      excluded_point = p.point->name;
      continue;
    }
    all.push_back(p.error());
    all_zero.push_back(p.predicted_without_framework / p.point->published_step() - 1.0);
    by_source[r.source].push_back(p.error());
    by_gpu[r.gpu].push_back(p.error());
  }
  const Stats s = stats(all), z = stats(all_zero);
  std::ostringstream out;
  out << "# Published single-GPU training steps against ralp's predictions\n\n"
      << "Generated by `" << command << "`; do not edit. Each point is a synthetic-data, one-GPU "
         "row of tf_cnn_benchmarks (May 2017) or the Horovod README (2017), run as the scenario "
         "in `scenarios/published/single-gpu/` that describes its setup; the error is predicted "
         "step / published step - 1, the published step being batch / images per second. None "
         "of these rows fitted the GPU profiles (published/README.md).\n\n"
      << "**All points: " << s.n << ", median abs(error) " << pct(s.median) << ", max "
      << pct(s.max) << "** (with the framework's per-layer cost set to zero: median "
      << pct(z.median) << ", max " << pct(z.max) << ").\n\n"
      << "![predicted against published step time](predicted-vs-published.svg)\n\n"
      << "The multi-GPU points, with the transports their frameworks used: "
         "[multi-gpu.md](multi-gpu.md).\n\n";
  summary_table(out, "source", by_source);
  summary_table(out, "GPU", by_gpu);
  out << "## Every point\n\n";
  points_table(out, predictions, excluded_point);
  kernel_tables(out, profiles, derivations);
  return out.str();
}

namespace {

struct ClusterStats {
  Stats step, efficiency;
};
ClusterStats cluster_stats(const std::vector<const ClusterPrediction*>& group) {
  std::vector<double> steps, efficiencies;
  for (const ClusterPrediction* p : group) {
    steps.push_back(p->error());
    efficiencies.push_back(p->efficiency_error());
  }
  return {stats(steps), stats(efficiencies)};
}

std::string points(double x) { return fixed1(x * 100.0); }

void cluster_summary(std::ostringstream& out, const std::string& title,
                     const std::map<std::string, std::vector<const ClusterPrediction*>>& groups) {
  out << "| " << title << " | points | median abs(error) | max abs(error) | "
         "efficiency: median abs(diff), points | max abs(diff), points |\n"
         "|---|---:|---:|---:|---:|---:|\n";
  for (const auto& [name, group] : groups) {
    const ClusterStats s = cluster_stats(group);
    out << "| " << name << " | " << s.step.n << " | " << pct(s.step.median) << " | "
        << pct(s.step.max) << " | " << points(s.efficiency.median) << " | "
        << points(s.efficiency.max) << " |\n";
  }
  out << '\n';
}

void transport_table(std::ostringstream& out, const std::vector<Transport>& transports) {
  out << "| transport | us per message | ns per byte | link share | fitted | source |\n"
         "|---|---:|---:|---:|---|---|\n";
  for (const Transport& t : transports) {
    std::string fitted;
    for (const auto& f : t.fitted) fitted += (fitted.empty() ? "" : ", ") + f;
    out << "| " << t.name << " | " << fixed1(t.message_s * 1e6) << " | "
        << std::fixed << std::setprecision(3) << t.s_per_byte * 1e9 << " | " << t.link_share
        << std::defaultfloat << " | " << (fitted.empty() ? "none" : fitted) << " | " << t.source
        << " |\n";
  }
  out << '\n';
}

void cluster_points_table(std::ostringstream& out,
                          const std::vector<ClusterPrediction>& predictions) {
  out << "| scenario | system | model (as run) | GPUs | batch | setup | transport | role | "
         "published img/s | predicted img/s | error | published efficiency | predicted "
         "efficiency |\n"
         "|---|---|---|---:|---:|---|---|---|---:|---:|---:|---:|---:|\n";
  for (const ClusterPrediction& p : predictions) {
    const ClusterPoint& c = *p.point;
    const double predicted = static_cast<double>(c.batch * c.gpus) / p.predicted_step;
    out << "| " << c.scenario << " | " << c.system << " | " << p.model_as_run << " | " << c.gpus
        << " | " << c.batch << " | " << c.setup << " | " << c.transport << " | " << c.role << " | "
        << c.images_per_s << " | " << fixed1(predicted) << " | " << pct(p.error(), true) << " | "
        << pct(c.published_efficiency()) << " | " << pct(p.predicted_efficiency()) << " |\n";
  }
  out << '\n';
}

}  // namespace

std::string cluster_report_markdown(const std::vector<ClusterPrediction>& predictions,
                                    const std::vector<Transport>& transports,
                                    const std::string& command) {
  std::vector<const ClusterPrediction*> held_out, fitting;
  std::map<std::string, std::vector<const ClusterPrediction*>> by_source, by_transport;
  for (const ClusterPrediction& p : predictions) {
    if (p.point->role == "fit") fitting.push_back(&p);
    if (p.point->role != "check") continue;
    held_out.push_back(&p);
    by_source[p.point->source + ", " + p.point->system].push_back(&p);
    by_transport[p.point->transport].push_back(&p);
  }
  const ClusterStats h = cluster_stats(held_out), f = cluster_stats(fitting);
  std::ostringstream out;
  out << "# Published multi-GPU training steps against ralp's predictions\n\n"
      << "Generated by `" << command << "`; do not edit. Each point is a synthetic-data, "
         "multi-GPU row of tf_cnn_benchmarks (May 2017) or the Horovod README (2017, TCP rows), "
         "simulated event by event as the scenario in `scenarios/published/multi-gpu/` that "
         "describes its machines, strategy and transport (docs/transports.md). The error is "
         "predicted step / published step - 1, the published step being batch per GPU x GPUs / "
         "images per second. Scaling efficiency is images/s over GPUs x the same source's "
         "1-GPU figure; the predicted one divides by the 1-GPU point's prediction "
         "([README.md](README.md)), which takes the compute model's error out. Rows whose role "
         "is `fit` fitted their transport's parameters and are not held out; `out of scope` "
         "rows (TensorFlow with variables on the CPU) are shown, not counted.\n\n"
      << "**Held-out points: " << h.step.n << ", median abs(error) " << pct(h.step.median)
      << ", max " << pct(h.step.max) << "; scaling efficiency: median abs(difference) "
      << points(h.efficiency.median) << " points, max " << points(h.efficiency.max)
      << ".** Fitting rows: " << f.step.n << ", median abs(error) " << pct(f.step.median)
      << ", max " << pct(f.step.max) << ".\n\n"
      << "![predicted against published step time](multi-gpu-predicted-vs-published.svg)\n\n"
      << "## Transports\n\n";
  transport_table(out, transports);
  out << "## Fitting rows\n\nThe rows whose role is `fit` in `scenarios/published/multi-gpu/points.csv`: "
         "`ralp published transports` fits each transport on its own (docs/transports.md), on the "
         "step where its rows come from one source and on the scaling efficiency where they span "
         "several.\n\n"
         "| transport | source | system | model | GPUs | batch | error | published efficiency | "
         "predicted efficiency |\n|---|---|---|---|---:|---:|---:|---:|---:|\n";
  for (const ClusterPrediction* p : fitting) {
    const ClusterPoint& c = *p->point;
    out << "| " << c.transport << " | " << c.source << " | " << c.system << " | " << c.model
        << " | " << c.gpus << " | " << c.batch << " | " << pct(p->error(), true) << " | "
        << pct(c.published_efficiency()) << " | " << pct(p->predicted_efficiency()) << " |\n";
  }
  out << "\n## Held-out points by source and by transport\n\n";
  cluster_summary(out, "source", by_source);
  cluster_summary(out, "transport", by_transport);
  out << "## Every point\n\n";
  cluster_points_table(out, predictions);
  return out.str();
}

std::string cluster_points_csv(const std::vector<ClusterPrediction>& predictions) {
  std::ostringstream out;
  out << "scenario,source,system,model,gpus,batch,transport,role,published_images_per_s,"
         "predicted_images_per_s,error,published_efficiency,predicted_efficiency\n";
  out << std::setprecision(6);
  for (const ClusterPrediction& p : predictions) {
    const ClusterPoint& c = *p.point;
    out << c.scenario << ',' << c.source << ',' << c.system << ',' << c.model << ',' << c.gpus
        << ',' << c.batch << ',' << c.transport << ',' << c.role << ',' << c.images_per_s << ','
        << static_cast<double>(c.batch * c.gpus) / p.predicted_step << ',' << p.error() << ','
        << c.published_efficiency() << ',' << p.predicted_efficiency() << '\n';
  }
  return out.str();
}

}  // namespace ralp::published
