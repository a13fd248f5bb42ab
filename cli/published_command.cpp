// `ralp published`: fit the GPU kernel model to published kernel timings (`fit`), write the
// published single-GPU points as scenarios (`scenarios`), fit the named transports on the
// multi-GPU rows kept for fitting (`transports`) and report predictions against every point
// (`report`).
#include <filesystem>
#include <fstream>
#include <iostream>

#include "commands.hpp"
#include "ralp/core/json_input.hpp"
#include "ralp/devices/device_profile.hpp"
#include "ralp/published/fit.hpp"
#include "ralp/published/points.hpp"
#ifdef RALP_HAVE_SIM
#include "published_cluster.hpp"
#include "ralp/placement/sim_evaluator.hpp"
#include "ralp/reports/gnuplot.hpp"
#endif

namespace ralp::cli {
namespace {

namespace fs = std::filesystem;
using published::FitOptions;
using published::FitOutcome;
using published::ThroughputRow;

struct PublishedOptions {
  std::string data = RALP_PUBLISHED_DIR;
  std::string points = std::string(RALP_PUBLISHED_DIR) + "/../scenarios/published/multi-gpu";
  std::string out;
  std::string dle_out;
  bool quiet = false;
  std::string residuals;
  unsigned seed = 1;
  int evaluations = FitOptions{}.global_evaluations;
  int starts = FitOptions{}.starts;
  bool no_leave_out = false;
};

void write_file(const fs::path& path, const std::string& text) {
  std::ofstream out(path);
  out << text;
  if (!out) throw std::runtime_error("cannot write " + path.string());
}

void print_fit(const FitOutcome& o) {
  using Align = TextTable::Align;
  TextTable table({{"profile", Align::left}, {"parameters from", Align::left}, {"rows"}, {"median"},
                   {"max"}, {"loso median"}, {"loso max"}});
  for (const DeviceProfile& p : o.profiles) {
    const PublishedFit& f = *p.published;
    table.add_row({p.name, f.derived_from.empty() ? "own rows" : f.derived_from, std::to_string(f.rows),
               fixed(f.median_error * 100, 1) + "%", fixed(f.max_error * 100, 1) + "%",
               fixed(f.loso_median_error * 100, 1) + "%", fixed(f.loso_max_error * 100, 1) + "%"});
  }
  for (const auto& t : o.tensor_fits) {  // the tensor-core path, beside FP32's
    table.add_row({t.gpu, "own tensor rows", std::to_string(t.rows.size()), fixed(t.median * 100, 1) + "%",
                   fixed(t.max * 100, 1) + "%", fixed(t.loso_median * 100, 1) + "%",
                   fixed(t.loso_max * 100, 1) + "%"});
  }
  table.print(std::cout);
  for (const auto& c : o.derivation_checks) {
    std::cout << "derivation check " << c.gpu << ": " << c.rows.size() << " rows, median "
              << fixed(c.median * 100, 1) << "%, max " << fixed(c.max * 100, 1) << "%\n";
  }
  std::cout << "framework cost per layer and pass: " << fixed(o.framework_layer_overhead.value() * 1e6, 1)
            << " us, fitted on " << o.framework_rows.size() << " TensorFlow whole-network rows\n";
  for (const auto& a : o.architecture_fits) {
    std::cout << "architecture efficiency " << fixed(a.efficiency, 3) << " (" << to_string(a.precision)
              << ") fitted on " << a.gpu << "'s " << a.row << '\n';
  }
}

int run_fit(const PublishedOptions& opt) {
  FitOptions f;
  f.seed = opt.seed;
  f.global_evaluations = opt.evaluations;
  f.starts = opt.starts;
  f.leave_one_shape_out = !opt.no_leave_out;
  std::cerr << "fitting the GPU kernel model to the kernel rows in " << opt.data
            << (f.leave_one_shape_out ? " (with leave-one-shape-out fits: a few minutes)" : "") << '\n';
  const FitOutcome outcome = published::fit_all(opt.data, f);
  print_fit(outcome);
  if (!opt.out.empty()) {
    for (const DeviceProfile& p : outcome.profiles) {
      write_file(fs::path(opt.out) / (p.name + ".json"), device_profile_to_json(p).dump(2) + "\n");
    }
    std::cerr << "wrote " << outcome.profiles.size() << " profiles to " << opt.out << '\n';
  }
  if (!opt.residuals.empty()) write_output(opt.residuals, published::residuals_csv(outcome));
  return kExitOk;
}

int run_scenarios(const PublishedOptions& opt) {
  const auto points = published::single_gpu_points(opt.data);
  fs::create_directories(opt.out);
  for (const auto& p : points) write_file(fs::path(opt.out) / (p.name + ".json"), p.scenario.dump(2) + "\n");
  std::cout << "wrote " << points.size() << " scenarios to " << opt.out << '\n';
  if (!opt.dle_out.empty()) {
    const auto dle = published::dle_points(opt.data);
    fs::create_directories(opt.dle_out);
    size_t written = 0;
    for (const auto& p : dle) {
      if (!p.excluded.empty()) continue;
      write_file(fs::path(opt.dle_out) / (p.name + ".json"), p.scenario.dump(2) + "\n");
      ++written;
    }
    std::cout << "wrote " << written << " scenarios to " << opt.dle_out << " (" << dle.size() - written
              << " rows not run: reports/published/dle.md says why)\n";
  }
  return kExitOk;
}

#ifdef RALP_HAVE_SIM
published::Prediction predict_point(const published::Point& point) {
  Scenario scenario = parse_scenario(point.scenario, point.name + ".json", fs::current_path());
  published::Prediction p{&point, 0, 0, scenario.worker_device.source == ProfileSource::published
                                            ? "published" : std::string(to_string(scenario.worker_device.source))};
  p.predicted_step = placement::analytic_scenario(scenario).results.at(0).step_time_mean_s;
  if (scenario.worker_device.published) {
    scenario.worker_device.published->framework_layer_overhead = Seconds(0.0);
  }
  p.predicted_without_framework = placement::analytic_scenario(scenario).results.at(0).step_time_mean_s;
  return p;
}

Progress progress_of(const PublishedOptions& opt) {
  if (opt.quiet) return [](const std::string&) {};
  return [](const std::string& line) { std::cerr << line << '\n'; };
}

// The DLE points' predictions (one GPU analytic, several simulated), and their report (dle.md,
// dle-points.csv).
void write_dle_report(const PublishedOptions& opt) {
  const auto points = published::dle_points(opt.data);
  std::vector<published::DlePrediction> predictions;
  const Progress progress = progress_of(opt);
  for (const auto& point : points) {
    if (!point.excluded.empty()) continue;
    const Scenario scenario = parse_scenario(point.scenario, point.name + ".json", fs::current_path());
    progress("dle: " + point.name);
    predictions.push_back({&point, point.row.gpus == 1
                                       ? placement::analytic_scenario(scenario).results.at(0).step_time_mean_s
                                       : simulated_step(scenario)});
  }
  const std::string command = "scripts/published-report";
  write_file(fs::path(opt.out) / "dle.md", published::dle_report_markdown(points, predictions, command));
  write_file(fs::path(opt.out) / "dle-points.csv", published::dle_points_csv(predictions));
  std::cout << "wrote " << opt.out << "/dle.md: " << predictions.size() << " points\n";
}

std::vector<published::ProfileSummary> profile_summaries() {
  std::vector<published::ProfileSummary> out;
  for (const std::string& name : available_profiles()) {
    const DeviceProfile p = load_device_profile(*find_profile(name));
    if (!p.published) continue;
    const PublishedFit& f = *p.published;
    std::string efficiencies = f.precision_efficiency.empty() ? fixed(f.architecture_efficiency, 3) : "";
    for (const auto& [precision, e] : f.precision_efficiency) {
      efficiencies += (efficiencies.empty() ? "" : ", ") + std::string(to_string(precision)) + " " + fixed(e, 3);
    }
    out.push_back({p.name, f.source, f.derived_from, f.architecture_row, f.rows, f.median_error,
                   f.max_error, f.loso_median_error, f.loso_max_error, f.architecture_efficiency,
                   f.framework_layer_overhead.value() * 1e6, efficiencies});
    if (p.tensor_published) {  // the tensor-core path's fit, beside FP32's (a derived GPU's: its root's)
      const PublishedFit& t = *p.tensor_published;
      out.push_back({p.name + " tensor cores", t.source, f.derived_from, "", t.rows, t.median_error,
                     t.max_error, t.loso_median_error, t.loso_max_error, 1.0,
                     t.framework_layer_overhead.value() * 1e6, ""});
    }
  }
  return out;
}

// The predicted step of every single-GPU point, keyed as the multi-GPU points name their 1-GPU
// baseline (published::baseline_key).
std::map<std::string, double> baseline_steps(const std::vector<published::Prediction>& single) {
  std::map<std::string, double> out;
  for (const auto& p : single) {
    const ThroughputRow& r = p.point->row;
    out[published::baseline_key(r.source, r.system, r.model, r.batch)] = p.predicted_step;
  }
  return out;
}

int run_transports(const PublishedOptions& opt) {
  const auto points = published::single_gpu_points(opt.data);
  std::vector<published::Prediction> single;
  for (const auto& point : points) single.push_back(predict_point(point));
  const std::vector<Transport> transports =
      fit_transports(opt.points, baseline_steps(single), progress_of(opt));
  for (const Transport& t : transports) {
    std::cout << t.name << ": " << fixed(t.message_s * 1e6, 1) << " us per message, "
              << fixed(t.s_per_byte * 1e9, 3) << " ns per byte at each end, link share "
              << fixed(t.link_share, 3) << "; " << t.source << '\n';
    if (!opt.out.empty()) {
      write_file(fs::path(opt.out) / (t.name + ".json"), transport_to_json(t).dump(2) + "\n");
    }
  }
  if (!opt.out.empty()) {
    std::cerr << "wrote " << transports.size() << " transports to " << opt.out << '\n';
  }
  return kExitOk;
}

void write_cluster_report(const PublishedOptions& opt,
                          const std::vector<published::Prediction>& single) {
  const std::map<std::string, double> baselines = baseline_steps(single);
  const auto points = cluster_points(opt.points);
  const auto predictions = predict_cluster_points(points, opt.points, baselines, progress_of(opt));
  std::vector<Transport> transports;
  for (const auto& name : available_transports()) transports.push_back(*find_transport(name));
  const fs::path out(opt.out);
  write_file(out / "multi-gpu.md", published::cluster_report_markdown(
                                       predictions, transports, "scripts/published-report"));
  write_file(out / "multi-gpu-points.csv", published::cluster_points_csv(predictions));
  reports::ScatterPlot plot{"Multi-GPU training step: predicted against published",
                            "published step (ms)", "predicted step (ms)", true, 10.0, {}};
  std::map<std::string, reports::ScatterSeries> by_transport;
  for (const auto& p : predictions) {
    const std::string& role = p.point->role;
    const std::string name = p.point->transport + (role == "check" ? "" : " (" + role + ")");
    auto& series = by_transport[name];
    series.title = name;
    series.points.emplace_back(p.point->published_step() * 1e3, p.predicted_step * 1e3);
  }
  for (auto& [name, series] : by_transport) plot.series.push_back(series);
  if (auto problem = reports::write_scatter_plot(plot, out / "multi-gpu-predicted-vs-published")) {
    std::cerr << "plot not drawn: " << *problem << '\n';
  }
  std::cout << "wrote " << opt.out << "/multi-gpu.md: " << predictions.size() << " points\n";
}

int run_report(const PublishedOptions& opt) {
  const auto points = published::single_gpu_points(opt.data);
  std::vector<published::Prediction> predictions;
  for (const auto& point : points) predictions.push_back(predict_point(point));
  const auto catalogue = published::read_catalogue(fs::path(opt.data) / "gpus.json");
  const auto rows = published::read_kernel_rows(opt.data);
  std::vector<published::DerivationSummary> derivations;
  for (const auto& [derive, from] : catalogue.derivation_checks) {
    const DeviceProfile source = load_device_profile(*find_profile(from));
    const auto check = published::check_gpu(derive, rows, catalogue.gpu(derive).shape(), *source.kernel_model);
    derivations.push_back({derive + " from " + from, static_cast<int64_t>(check.rows.size()), check.median, check.max});
  }
  fs::create_directories(opt.out);
  const std::string command = "scripts/published-report";  // the one command that remakes it
  write_file(fs::path(opt.out) / "README.md",
             published::report_markdown(predictions, profile_summaries(), derivations, command));
  write_file(fs::path(opt.out) / "points.csv", published::points_csv(predictions));
  reports::ScatterPlot plot{"Single-GPU training step: predicted against published",
                            "published step (ms)", "predicted step (ms)", true, 10.0, {}};
  std::map<std::string, reports::ScatterSeries> by_gpu;
  for (const auto& p : predictions) {
    auto& series = by_gpu[p.point->row.gpu];
    series.title = p.point->row.gpu;
    series.points.emplace_back(p.point->published_step() * 1e3, p.predicted_step * 1e3);
  }
  for (auto& [gpu, series] : by_gpu) plot.series.push_back(series);
  if (auto problem = reports::write_scatter_plot(plot, fs::path(opt.out) / "predicted-vs-published")) {
    std::cerr << "plot not drawn: " << *problem << '\n';
  }
  std::cout << "wrote " << opt.out << "/README.md: " << predictions.size() << " points\n";
  write_dle_report(opt);
  write_cluster_report(opt, predictions);
  return kExitOk;
}
#endif

}  // namespace

void add_published_command(CLI::App& app, Action& action) {
  auto* cmd = app.add_subcommand("published", "Fit GPU profiles to published kernel timings; check them");
  cmd->require_subcommand(1);
  auto opt = std::make_shared<PublishedOptions>();
  auto* fit = cmd->add_subcommand("fit", "Fit the GPU kernel model to the published kernel rows and "
                                         "print each GPU's residuals; --out writes the profiles");
  fit->add_option("--data", opt->data, "Folder of the published data (default: the project's published/)");
  fit->add_option("--out", opt->out, "Folder to write the published profiles into (calibrate/profiles)");
  fit->add_option("--residuals", opt->residuals, "CSV file for every kernel row's residual ('-': stdout)");
  fit->add_option("--seed", opt->seed, "Seed of the first global search (default 1)");
  fit->add_option("--evaluations", opt->evaluations, "Evaluations of the global search per fit")
      ->check(CLI::Range(100, 1000000));
  fit->add_option("--starts", opt->starts,
                  "Global searches per fit, from seeds --seed, --seed + 1, ...; the lowest "
                  "wins (default 16)")
      ->check(CLI::Range(1, 1000));
  fit->add_flag("--no-leave-out", opt->no_leave_out, "Skip the leave-one-shape-out fits");
  fit->callback([opt, &action] {
    if (!opt->out.empty()) check_output_path("--out", (fs::path(opt->out) / "x").string());
    if (!opt->residuals.empty()) check_output_path("--residuals", opt->residuals);
    action = [opt] { return run_fit(*opt); };
  });
  auto* scen = cmd->add_subcommand("scenarios", "Write every published single-GPU point as a scenario");
  scen->add_option("--data", opt->data, "Folder of the published data (default: the project's published/)");
  scen->add_option("--out", opt->out, "Folder to write the scenarios into")->required();
  scen->add_option("--dle-out", opt->dle_out,
                   "Folder to write NVIDIA DeepLearningExamples' ConvNets points and MLPerf's "
                   "DGX H100 row into (scenarios/published/dle)");
  scen->callback([opt, &action] { action = [opt] { return run_scenarios(*opt); }; });
#ifdef RALP_HAVE_SIM
  auto* report = cmd->add_subcommand("report", "Predict every published single-GPU point and write "
                                               "the report (Markdown, CSV, plot)");
  report->add_option("--data", opt->data, "Folder of the published data (default: the project's published/)");
  const std::string points_help =
      "Folder of the published multi-GPU scenarios and their points.csv (default: "
      "scenarios/published/multi-gpu)";
  report->add_option("--points", opt->points, points_help);
  report->add_option("--out", opt->out, "Folder to write the report into")->required();
  report->add_flag("--quiet", opt->quiet, "No progress lines on stderr");
  report->callback([opt, &action] { action = [opt] { return run_report(*opt); }; });
  auto* transports = cmd->add_subcommand(
      "transports", "Fit the named transports (tf-grpc, mpi-cpu, nccl) on the published "
                    "multi-GPU rows whose role is \"fit\", simulating each row per trial; --out "
                    "writes them (calibrate/transports)");
  transports->add_option("--points", opt->points, points_help);
  transports->add_option("--out", opt->out, "Folder to write the fitted transports into");
  transports->add_flag("--quiet", opt->quiet, "No progress lines on stderr");
  transports->callback([opt, &action] {
    if (!opt->out.empty()) check_output_path("--out", (fs::path(opt->out) / "x").string());
    action = [opt] { return run_transports(*opt); };
  });
#endif
}

}  // namespace ralp::cli
