// `ralp validate`: measures how close `ralp simulate` comes to real runs of `ralp cluster`, on
// hosts made of network namespaces with shaped links (as root on one Linux machine) or on the
// machines of a hostfile; prints the table and the summary and writes the report.
#include <unistd.h>

#include <filesystem>
#include <iostream>
#include <memory>
#include <sstream>

#include "commands.hpp"
#include "ralp/reports/validation_report.hpp"
#include "ralp/validate/process.hpp"
#include "ralp/validate/validate_run.hpp"
#ifdef RALP_HAVE_CLUSTER
#include "ralp/kernels/backend.hpp"
#endif

namespace ralp::cli {
namespace {

namespace fs = std::filesystem;

struct ValidateCommandOptions {
  std::vector<std::string> scenarios;
  std::string rates = "100mbit,1gbit";
  std::string strategies;
  std::string shapes = "2-node,1ps-2w";
  std::string out = "validate-results";
  std::string json;
  std::string hostfile;
  std::string network;
  std::string precision = "fp32";
  std::string profile;
  // The library's defaults, so that they are set in one place.
  int passes = validate::ValidateOptions{}.passes;
  double point_budget = validate::ValidateOptions{}.point_budget_s;
  int min_steps = validate::ValidateOptions{}.min_steps;
  int max_steps = validate::ValidateOptions{}.max_steps;
  int warmup_steps = validate::ValidateOptions{}.warmup_steps;
  int threads = 1;
  int cores = 0;
};

constexpr int kExitInterrupted = 130;
const char* const kDefaultScenarios[] = {"scenarios/cluster/cifar-alexnet-1ps-2w.json",
                                         "scenarios/cluster/cifar-allconv-1ps-2w.json"};

std::vector<std::string> split_list(const std::string& text) {
  std::vector<std::string> items;
  std::stringstream in(text);
  std::string item;
  while (std::getline(in, item, ',')) {
    if (!item.empty()) items.push_back(item);
  }
  return items;
}

fs::path self_executable() {
  std::error_code ec;
  const fs::path p = fs::read_symlink("/proc/self/exe", ec);
  return ec ? fs::path("ralp") : p;
}

// The default scenarios, from the working folder or else from the checkout the binary was built
// in (build/ralp sits one level below it).
std::vector<fs::path> default_scenarios() {
  std::vector<fs::path> found;
  const fs::path roots[] = {fs::current_path(), self_executable().parent_path().parent_path()};
  for (const auto& root : roots) {
    found.clear();
    for (const char* s : kDefaultScenarios) {
      if (fs::exists(root / s)) found.push_back(root / s);
    }
    if (found.size() == std::size(kDefaultScenarios)) return found;
  }
  throw InputError("ralp validate", "",
                   "found no scenarios/cluster/ here or beside the build; name the scenarios");
}

std::string ms(double s) { return fixed(s * 1e3, s < 0.01 ? 2 : 1); }

void print_table(const validate::ValidationRun& run) {
  TextTable table({{"model", TextTable::Align::left},
                   {"strategy", TextTable::Align::left},
                   {"shape", TextTable::Align::left},
                   {"rate", TextTable::Align::left},
                   {"measured ms"},
                   {"IQR"},
                   {"predicted ms"},
                   {"error"},
                   {"replayed ms"},
                   {"error"},
                   {"worker c/c/w measured"},
                   {"worker c/c/w predicted"},
                   {"ps-0 in MB m/p"},
                   {"steal"},
                   {"pinned", TextTable::Align::left}});
  for (const auto& p : run.points) {
    auto split = [](const validate::RoleSplit& s) {
      return ms(s.compute_s) + "/" + ms(s.communication_s) + "/" + ms(s.waiting_s);
    };
    table.add_row({p.model, p.strategy, p.shape, p.rate, ms(p.measured.step_time_s),
                   ms(p.measured.spread_s), ms(p.predicted.step_time_s),
                   (p.error_pct() >= 0 ? "+" : "") + fixed(p.error_pct(), 1) + "%",
                   ms(p.replayed.step_time_s),
                   (p.replay_error_pct() >= 0 ? "+" : "") + fixed(p.replay_error_pct(), 1) + "%",
                   split(p.measured.worker), split(p.predicted.worker),
                   fixed(p.measured.ps0.in * 1e-6, 2) + "/" + fixed(p.predicted.ps0.in * 1e-6, 2),
                   p.steal_pct ? fixed(*p.steal_pct, 1) + "%" : "-", p.pinned ? "yes" : "shared"});
  }
  table.print(std::cout);
  std::cout << "\n";
  std::vector<TextTable::Column> columns = {{"strategy", TextTable::Align::left},
                                            {"points"},
                                            {"median |error|"},
                                            {"max |error|"},
                                            {"replayed: median"},
                                            {"max"}};
  const bool passes = !run.repeatability.empty();
  if (passes) columns.insert(columns.end(), {{"between passes: median"}, {"max"}});
  TextTable summary(columns);
  for (size_t i = 0; i < run.summary.size(); ++i) {
    const auto& s = run.summary[i];
    const auto& r = run.replay_summary.at(i);
    std::vector<std::string> row = {s.group, std::to_string(s.points),
                                    fixed(s.median_abs_error_pct, 1) + "%",
                                    fixed(s.max_abs_error_pct, 1) + "%",
                                    fixed(r.median_abs_error_pct, 1) + "%",
                                    fixed(r.max_abs_error_pct, 1) + "%"};
    if (passes) {
      const auto& b = run.repeatability.at(i);
      row.insert(row.end(), {fixed(b.median_abs_error_pct, 1) + "%", fixed(b.max_abs_error_pct, 1) + "%"});
    }
    summary.add_row(row);
  }
  summary.print(std::cout);
  const bool met = !run.summary.empty() && validate::meets_target(run.summary.back());
  std::cout << "Target: median |error| <= " << fixed(validate::kTargetMedianPct, 0)
            << "%, max <= " << fixed(validate::kTargetMaxPct, 0) << "%: "
            << (met ? "met" : "not met") << ".";
  if (const auto resolves = validate::machine_resolves_target(run.repeatability)) {
    const auto& spread = run.repeatability.back();
    std::cout << " This machine " << (*resolves ? "can" : "cannot")
              << " judge it: the same point moved by " << fixed(spread.median_abs_error_pct, 1)
              << "% at the median and up to " << fixed(spread.max_abs_error_pct, 1)
              << "% between passes.";
  }
  std::cout << " Profile " << run.profile.name << " ("
            << run.profile.file.string() << "; time-sharing slowdown "
            << fixed(run.profile.time_sharing_slowdown, 3) << " where ranks share a core); wall time "
            << fixed(run.wall_s, 0) << " s.\n";
  std::cout << "Replayed: simulated again with the time each kernel, sum and update took in the "
               "run (ralp simulate --replay): the error left to the schedule and the network "
               "model.\n";
  if (passes) {
    std::cout << "Measured and predicted: the mean of " << run.passes
              << " passes over the grid (each in the same order); between passes: "
                 "(largest - smallest) / mean of one point's step times, how far this machine "
                 "moved the same measurement.\n";
  }
  std::cout << "Network factors (fitted per rate):";
  for (const auto& l : run.links) {
    std::cout << " " << l.rate.text << ": bandwidth " << fixed(l.fit.bandwidth_factor, 4)
              << ", latency " << fixed(l.fit.latency_factor, 3) << " (link latency "
              << fixed(l.fit.latency_s * 1e6, 1) << " us), message CPU "
              << fixed(l.fit.send_cpu_s_per_message * 1e6, 0) << " us + "
              << fixed(l.fit.send_cpu_s_per_byte * 1e9, 3) << " ns per byte sent, "
              << fixed(l.fit.receive_cpu_s_per_message * 1e6, 0) << " us + "
              << fixed(l.fit.receive_cpu_s_per_byte * 1e9, 3) << " ns per byte received, "
              << "waiting share " << fixed(l.fit.waiting_share * 100, 1) << "%;";
  }
  std::cout << "\n";
  if (!run.speed_checks.empty()) {
    std::cout << "Machine speed (end-to-end step on one core, as the profile measured it and after the grid):";
    for (const auto& c : run.speed_checks) {
      std::cout << " " << c.model << " b" << c.batch << " " << ms(c.start_s) << " -> "
                << ms(c.end_s) << " ms (" << (c.change_pct() >= 0 ? "+" : "")
                << fixed(c.change_pct(), 1) << "%);";
    }
    std::cout << "\n";
  }
  if (!run.kernel_speed.empty()) {
    std::cout << "Kernel speed in the runs (each pinned rank's kernel time over the profile's, "
                 "median, by the share of the step its core computed):";
    for (const auto& b : run.kernel_speed) {
      std::cout << " " << fixed(b.busy_from * 100, 0)
                << (b.busy_to >= 1.0 ? "%+" : "-" + fixed(b.busy_to * 100, 0) + "%") << ": "
                << fixed(b.median_ratio, 2) << " (" << b.hosts << (b.hosts == 1 ? " rank" : " ranks")
                << ");";
    }
    std::cout << "\n";
  }
}

// The precision asked for, which this machine's CPU kernels must compute in.
Precision validate_precision(const std::string& text, int threads) {
  const auto precision = parse_precision(text);
  if (!precision) {
    std::string names;
    for (const auto& n : precision_names()) names += (names.empty() ? "" : ", ") + n;
    throw InputError("--precision", "", "is '" + text + "', expected one of " + names);
  }
#ifdef RALP_HAVE_CLUSTER
  try {
    (void)kernels::make_cpu_backend(std::max(threads, 1), kernels::CpuPassLayout::automatic,
                                    *precision);
  } catch (const std::invalid_argument& e) {
    throw InputError("--precision", "", "is '" + text + "', which this machine cannot run: " +
                                            e.what());
  }
#else
  (void)threads;
#endif
  return *precision;
}

std::map<std::string, std::string> host_identity(int threads) {
#ifdef RALP_HAVE_CLUSTER
  return kernels::make_cpu_backend(threads)->provenance();
#else
  (void)threads;
  return {};
#endif
}

}  // namespace

void add_validate_command(CLI::App& app, Action& action) {
  auto o = std::make_shared<ValidateCommandOptions>();
  auto* cmd = app.add_subcommand(
      "validate",
      "Check predictions against real runs on shaped namespace hosts.\n"
      "Measure how close `ralp simulate` comes to real `ralp cluster` runs: as root, hosts as "
      "network namespaces with tc-shaped links on this machine (or --hostfile machines), "
      "calibrated kernels and links, a grid of nets x strategies x rates x shapes; prints the "
      "table and the error summary and writes a Markdown report with a plot; each point is "
      "simulated again with the kernel times its run measured, which separates the kernels' "
      "error from the schedule's and the network model's; the kernels are measured again after "
      "the grid, to show how far the machine's speed moved");
  cmd->add_option("scenarios", o->scenarios,
                  "Scenario files (default: scenarios/cluster/cifar-alexnet-1ps-2w.json and "
                  "cifar-allconv-1ps-2w.json)");
  cmd->add_option("--rates", o->rates, "Link rates, comma-separated (tc units: 100mbit, 1gbit)")
      ->capture_default_str();
  cmd->add_option("--strategies", o->strategies,
                  "Strategies to run, by label or kind, comma-separated (default: every strategy "
                  "of each scenario)");
  cmd->add_option("--shapes", o->shapes,
                  "Cluster shapes: 2-node (1 PS + 1 worker; 2 workers for allreduce), 1ps-2w")
      ->capture_default_str();
  cmd->add_option("--out", o->out, "Folder for the report, the derived scenarios and the logs")
      ->capture_default_str();
  cmd->add_option("--json", o->json, "Also write the results as JSON to FILE ('-': stdout)");
  cmd->add_option("--hostfile", o->hostfile,
                  "Run over these machines (mpirun hostfile, one slot each) instead of namespaces; "
                  "links are not shaped, so --rates names their real rate");
  cmd->add_option("--network", o->network,
                  "With --hostfile: the network the ranks use (interface or CIDR)");
  cmd->add_option("--precision", o->precision,
                  "Precision the points train and are predicted in: fp32, or bf16 (the CPU's "
                  "kernels with AVX-512); other than fp32, each calibration also measures that "
                  "precision's section of the profile")
      ->capture_default_str();
  cmd->add_option("--profile", o->profile,
                  "Device profile to use instead of calibrating (it must have been measured on "
                  "this host with these threads and library versions)");
  cmd->add_option("--passes", o->passes,
                  "Times the grid runs, each pass in the same order and predicted with a "
                  "calibration measured just before it; a point's figures are the passes' means, "
                  "and their spread says how repeatable this machine's measurements are")
      ->check(CLI::Range(1, 20))
      ->capture_default_str();
  cmd->add_option("--point-budget", o->point_budget,
                  "Seconds of measured steps per point and pass; steps = budget / predicted step "
                  "time")
      ->check(CLI::Range(0.1, 3600.0))
      ->capture_default_str();
  cmd->add_option("--min-steps", o->min_steps, "Fewest measured steps per point")
      ->check(CLI::Range(1, 10000))
      ->capture_default_str();
  cmd->add_option("--max-steps", o->max_steps, "Most measured steps per point")
      ->check(CLI::Range(1, 10000))
      ->capture_default_str();
  cmd->add_option("--warmup-steps", o->warmup_steps, "Warm-up steps before measuring")
      ->check(CLI::Range(0, 1000))
      ->capture_default_str();
  cmd->add_option("--threads", o->threads, "Kernel threads per rank (as the scenarios' training.threads)")
      ->check(CLI::Range(1, 1024))
      ->capture_default_str();
  cmd->add_option("--cores", o->cores, "Cores the ranks may use (default: this process's CPUs)")
      ->check(CLI::Range(1, 4096));
  cmd->callback([&action, o, cmd] {
    action = [o, cmd] {
      validate::ValidateOptions v;
      for (const auto& s : o->scenarios) v.scenarios.emplace_back(s);
      if (v.scenarios.empty()) v.scenarios = default_scenarios();
      for (const auto& r : split_list(o->rates)) {
        const auto rate = validate::parse_link_rate(r);
        if (!rate) {
          throw InputError("--rates", "", "has '" + r + "', expected a rate such as 100mbit or 1gbit");
        }
        v.rates.push_back(*rate);
      }
      for (const auto& s : split_list(o->shapes)) {
        const auto shape = validate::parse_shape(s);
        if (!shape) throw InputError("--shapes", "", "has '" + s + "', expected 2-node or 1ps-2w");
        v.shapes.push_back(*shape);
      }
      if (v.rates.empty() || v.shapes.empty()) {
        throw InputError("ralp validate", "", "needs at least one rate and one shape");
      }
      if (o->min_steps > o->max_steps) {
        throw InputError("--min-steps", "", "is above --max-steps");
      }
      v.strategies = split_list(o->strategies);
      v.out = o->out;
      v.ralp = self_executable();
      v.threads = o->threads;
      v.cores = o->cores;
      v.passes = o->passes;
      v.point_budget_s = o->point_budget;
      v.min_steps = o->min_steps;
      v.max_steps = o->max_steps;
      v.warmup_steps = o->warmup_steps;
      if (!o->profile.empty()) v.profile = o->profile;
      v.precision = validate_precision(o->precision, o->threads);
      check_output_path("--json", o->json);
      if (!o->hostfile.empty()) {
        v.hostfile = o->hostfile;
        v.hostfile_network = o->network;
      } else if (const auto why = validate::namespaces_unavailable()) {
        std::cerr << "error: ralp validate: " << *why << "\n";
        return kExitBadInput;
      }
#ifndef RALP_HAVE_CLUSTER
      std::cerr << "error: ralp validate needs the real-cluster mode: install Open MPI "
                   "(openmpi-bin libopenmpi-dev) and rebuild\n";
      return kExitBadInput;
#endif
      v.host = host_identity(o->threads);
      v.progress = [](const std::string& line) { std::cerr << line << std::endl; };
      std::error_code ec;
      fs::create_directories(v.out, ec);
      validate::ValidationRun run;
      try {
        run = validate::run_validation(v);
      } catch (const validate::Interrupted& e) {
        std::cerr << "ralp validate: " << e.what() << "; everything it made is removed\n";
        return kExitInterrupted;
      }
      std::string command = "ralp validate";
      for (const auto* opt : cmd->get_options()) {
        if (opt->count() == 0 || opt->get_name() == "--help") continue;
        for (const auto& value : opt->results()) {
          command += " " + (opt->get_name() == "scenarios" ? "" : opt->get_name() + " ") + value;
        }
      }
      run.command = command;
      const Json doc = validate::to_json(run);
      write_output((v.out / "validation.json").string(), doc.dump(2) + "\n");
      if (!o->json.empty()) write_output(o->json, doc.dump(2) + "\n");
      const auto plot_problem = reports::write_validation_report(doc, v.out);
      if (o->json != "-") print_table(run);
      std::cerr << "ralp validate: report in " << (v.out / "report.md").string()
                << (plot_problem ? " (" + *plot_problem + ")" : "") << "\n";
      return kExitOk;
    };
  });
}

}  // namespace ralp::cli
