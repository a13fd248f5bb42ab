// `ralp simulate`: every strategy of a scenario through the SimGrid model, as a table and as
// JSON, CSV and Chrome trace files.
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <iostream>
#include <map>
#include <memory>
#include <vector>

#include "commands.hpp"
#include "ralp/placement/baseline.hpp"
#include "ralp/placement/sim_evaluator.hpp"
#include "ralp/reports/result_io.hpp"
#include "ralp/reports/verdict.hpp"
#include "ralp/results/training_figures.hpp"
#include "ralp/sim/simulate.hpp"
#include "ralp/spec/nccl_plan.hpp"
#include "ralp/spec/scenario.hpp"
#include "ralp/spec/scenario_overrides.hpp"
#include "ralp/results/memory_use.hpp"
#include "ralp/spec/memory_plan.hpp"
#include "scenario_override_flags.hpp"
#include "ralp/spec/simulation_limits.hpp"

namespace ralp::cli {
namespace {

struct SimulateOptions {
  std::string scenario;
  std::string json;
  std::string csv;
  std::string trace;
  std::string replay;
  std::string fidelity = "event";
  int jobs = 0;
  bool messages = false;
  bool quiet = false;
  ScenarioOverrideFlags overrides;  // of the scenario's values, checked as the file is
};

// Scripts read one stream from standard output: at most one output goes there, and no two
// outputs share a file.
void check_output_streams(const SimulateOptions& o) {
  const std::vector<std::pair<std::string, std::string>> outputs{
      {"--json", o.json}, {"--csv", o.csv}, {"--trace", o.trace}};
  for (size_t i = 0; i < outputs.size(); ++i) {
    for (size_t j = 0; j < i; ++j) {
      const auto& [option, path] = outputs[i];
      const auto& [earlier, earlier_path] = outputs[j];
      if (path.empty() || path != earlier_path) continue;
      if (path == "-") {
        throw InputError("", option,
                         "is \"-\", but " + earlier +
                             " already writes to standard output; expected at most one of "
                             "--json, --csv and --trace on \"-\"");
      }
      throw InputError("", option,
                       "is \"" + path + "\", which " + earlier +
                           " also writes; expected a file of its own");
    }
  }
}

std::string speedup(const std::optional<double>& value) {
  return value ? fixed(*value, 2) + "x" : "-";
}

std::string in_out(const StrategyResult& r, const std::string& host) {
  for (const auto& h : r.hosts) {
    if (h.name == host) {
      return format_bytes(Bytes(h.bytes_in)) + " / " + format_bytes(Bytes(h.bytes_out));
    }
  }
  return "-";
}

// The busiest node's traffic per step (nodes of several devices or co-located servers), or "".
std::string node_line(const StrategyResult& r) {
  if (r.nodes.empty()) return "";
  const auto busiest = std::max_element(r.nodes.begin(), r.nodes.end(), [](const auto& a, const auto& b) {
    return std::max(a.nic_in, a.nic_out) < std::max(b.nic_in, b.nic_out);
  });
  return r.label + ": busiest node " + busiest->name + ", NIC in / out " +
         format_bytes(Bytes(busiest->nic_in)) + " / " + format_bytes(Bytes(busiest->nic_out)) +
         ", interconnect " + format_bytes(Bytes(busiest->interconnect)) + " per step";
}

// The nodes a scenario groups its workers into, or "" for one device per node.
std::string nodes_header(const Scenario& s) {
  const NodeSpec& n = s.nodes;
  if (n.devices_per_node == 1 && n.ps_placement == PsPlacement::separate) return "";
  std::string text = "nodes: " + std::to_string(s.workers / n.devices_per_node) + " of " +
                     std::to_string(n.devices_per_node) + " devices";
  if (n.interconnect) {
    text += " on " + std::string(to_string(n.interconnect->kind)) + " at " +
            format_bandwidth(n.interconnect->bandwidth);
  }
  text += n.nics_per_node == 1 ? ", one NIC each" : ", a NIC per device";
  if (n.ps_placement == PsPlacement::colocated) text += "; parameter servers on the nodes";
  return text;
}

// How a published profile derived from another was made ("" for one fitted on its own rows).
std::string derivation(const DeviceProfile& device) {
  if (!device.published || device.published->derived_from.empty()) return "";
  const PublishedFit& f = *device.published;
  const bool efficiency = f.architecture_efficiency != 1.0 || !f.precision_efficiency.empty();
  return ", derived from " + f.derived_from + " by datasheet" +
         (efficiency ? ", architecture efficiency fitted on published rows" : "");
}

std::string sources_line(const ComputeSources& s, const DeviceProfile& device) {
  if (s.published > 0) {
    return s.profile + " (" + s.profile_source + " profile" + derivation(device) + "): " +
           std::to_string(s.published) + " layers fitted to published kernel timings";
  }
  return s.profile + " (" + s.profile_source + " profile): " + std::to_string(s.measured) +
         " layers measured, " + std::to_string(s.fitted) + " fitted, " +
         std::to_string(s.datasheet) + " from the datasheet";
}

// "1 worker", "8 workers".
std::string count_of(int64_t n, const std::string& one, const std::string& many) {
  return std::to_string(n) + " " + (n == 1 ? one : many);
}

// The scenario's first line: model, workers and servers, devices, platform, steps.
void print_header(const Scenario& scenario, const ScenarioResult& result) {
  const int64_t servers = scenario.parameter_servers;
  std::cout << scenario.name << ": " << scenario.model.name() << ", "
            << count_of(scenario.workers, "worker", "workers") << " x batch "
            << scenario.batch_per_worker << " in " << to_string(scenario.precision) << ", "
            << (servers == 0 ? std::string("no PS") : std::to_string(servers) + " PS") << "; "
            << scenario.worker_device.name << (scenario.workers == 1 ? " worker" : " workers")
            << (servers > 0 ? ", " + scenario.ps_device.name + " PS" : "") << "; "
            << to_string(scenario.platform.kind) << " platform, " << result.network_model
            << " network model; " << count_of(scenario.steps, "step", "steps") << " after "
            << scenario.warmup_steps << " warm-up\n";
}

// Where the memory columns come from, and the capacities they are held against.
void print_memory_note(const ScenarioResult& result) {
  if (result.results.empty() || !result.results.front().worker_memory) return;
  const StrategyResult& r = result.results.front();
  std::cout << "Memory: the peak of a worker and of the busiest PS in a step "
               "(docs/precision.md#memory)";
  std::string capacities;
  if (r.worker_memory_capacity) capacities += "worker " + format_bytes(*r.worker_memory_capacity);
  for (const auto& s : result.results) {
    if (s.ps_memory_capacity) {
      capacities += (capacities.empty() ? "" : ", ") + std::string("PS ") +
                    format_bytes(*s.ps_memory_capacity);
      break;
    }
  }
  std::cout << (capacities.empty() ? "; no memory_capacity in the profiles" : "; capacity: " + capacities)
            << ".\n";
}

// What the training run takes per strategy: images/s per GPU, scaling efficiency against one
// device, time and cost to train, the memory a worker and the busiest PS hold; then what each
// figure is measured against.
void print_training_table(const ScenarioResult& result) {
  TextTable table({{"strategy", TextTable::Align::left},
                   {"images/s per GPU"},
                   {"scaling efficiency"},
                   {"time to train"},
                   {"cost"},
                   {"worker memory"},
                   {"PS memory"}});
  const auto memory = [](const std::optional<MemoryFootprint>& m) {
    return m ? format_bytes(m->total()) : std::string("-");
  };
  const TrainingPlan& plan = result.training;
  for (const auto& r : result.results) {
    const TrainingFigures f = training_figures(r, result.workers, plan, result.baseline);
    table.add_row({r.label, fixed(f.images_per_s_per_gpu, 1),
                   f.scaling_efficiency ? format_efficiency(*f.scaling_efficiency) : "-",
                   format_seconds(Seconds(f.time_to_train_s)),
                   f.cost ? with_commas(std::llround(*f.cost)) + " " +
                                plan.price_per_hour->currency
                          : "-",
                   memory(r.worker_memory), memory(r.ps_memory)});
  }
  table.print(std::cout);
  print_memory_note(result);
  if (result.baseline) {
    const SingleDeviceBaseline& b = *result.baseline;
    std::cout << "Scaling efficiency: images/s per GPU against one " << b.device
              << " alone at batch " << b.batch << " (" << fixed(b.images_per_s, 1)
              << " images/s, " << format_seconds(Seconds(b.step_time_s))
              << " a step, analytic model).\n";
  }
  std::cout << "Time to train: " << count_of(plan.epochs, "epoch", "epochs") << " of "
            << with_commas(plan.dataset_images) << " images (training.epochs, "
            << "training.dataset_images).";
  if (plan.price_per_hour) {
    std::cout << " Cost: " << count_of(plan.worker_hosts, "node", "nodes");
    if (plan.ps_hosts > 0) {
      std::cout << ", and " << count_of(plan.ps_hosts, "server host", "server hosts")
                << " for the strategies with parameter servers,";
    }
    std::cout << " at " << format_price(*plan.price_per_hour) << " an hour each.\n";
  } else {
    std::cout << " Cost: no cluster.price_per_hour in the scenario.\n";
  }
}

void print_table(const Scenario& scenario, const ScenarioResult& result, bool analytic) {
  print_header(scenario, result);
  if (const std::string line = nodes_header(scenario); !line.empty()) std::cout << line << '\n';
  for (const std::vector<int64_t>& group : shared_device_groups(scenario)) {
    std::string names;
    for (size_t i = 0; i < group.size(); ++i) {
      const int64_t h = group[i];
      names += (i == 0 ? "" : i + 1 == group.size() ? " and " : ", ") +
               (h < scenario.parameter_servers
                    ? "ps-" + std::to_string(h)
                    : "worker-" + std::to_string(h - scenario.parameter_servers));
    }
    std::cout << names << " share one device (cluster.shared_devices)\n";
  }
  if (!shared_device_groups(scenario).empty() && scenario.message_cpu.waiting_share > 0.0) {
    constexpr double kPercent = 100.0;
    std::cout << "a rank waiting for a message takes "
              << fixed(scenario.message_cpu.waiting_share * kPercent, 1)
              << "% of a shared CPU from the computations on it "
                 "(cluster.message_cpu.waiting_share)\n";
  }
  if (scenario.message_cpu.charged()) {
    constexpr double kNsPerSecond = 1e9;
    constexpr double kUsPerSecond = 1e6;
    const MessageCpuSpec& c = scenario.message_cpu;
    std::cout << "messages cost CPU time on CPU hosts: "
              << fixed(c.send_s_per_message * kUsPerSecond, 1) << " us per message + "
              << fixed(c.send_s_per_byte * kNsPerSecond, 3) << " ns per byte sent, "
              << fixed(c.receive_s_per_message * kUsPerSecond, 1) << " us per message + "
              << fixed(c.receive_s_per_byte * kNsPerSecond, 3)
              << " ns per byte received (cluster.message_cpu)\n";
  }
  for (const StrategySpec& st : scenario.strategies) {
    const Transport& t = st.transport;
    if (t.name == "ideal") continue;
    if (uses_nccl_model(scenario, st)) {
      const NcclMachine m = nccl_machine_of(scenario);
      std::cout << st.label << " over transport nccl: NCCL " << kNcclRelease
                << "'s tuning model (docs/fabrics.md), " << m.channels << " channels of "
                << fixed(m.bw_inter.value() / 1e9, 1) << " GB/s, algorithm "
                << (st.nccl_algorithm == NcclAlgorithmChoice::automatic
                        ? std::string("as NCCL picks it per buffer")
                        : std::string(to_string(st.nccl_algorithm)) + " (forced)")
                << '\n';
      continue;
    }
    std::cout << st.label << " over transport " << t.name << ": " << fixed(t.message_s * 1e6, 1)
              << " us per message and " << fixed(t.s_per_byte * 1e9, 3)
              << " ns per byte at each end, link share " << fixed(t.link_share, 3)
              << (scenario.message_cpu.charged() ? " (in place of cluster.message_cpu)" : "")
              << '\n';
  }
  TextTable table({{"strategy", TextTable::Align::left},
                   {"cut", TextTable::Align::left},
                   {"step time"},
                   {"images/s"},
                   {"vs ps"},
                   {"vs allreduce"},
                   {"ps-0 in / out"},
                   {"worker-0 in / out"},
                   {"busiest link", TextTable::Align::left},
                   {"util"},
                   {"compute / comm / wait"}});
  for (const auto& r : result.results) {
    const auto& m = r.worker_mean;
    table.add_row({r.label, r.cut.value_or("-"), format_seconds(Seconds(r.step_time_mean_s)),
                   fixed(r.images_per_s, 1), speedup(r.speedup_vs_ps),
                   speedup(r.speedup_vs_allreduce), in_out(r, "ps-0"), in_out(r, "worker-0"),
                   r.links.empty() ? "-" : r.links[0].name,
                   r.links.empty() ? "-" : fixed(100.0 * r.links[0].utilisation, 0) + "%",
                   analytic ? std::string("-")
                            : format_seconds(Seconds(m.compute)) + " / " +
                                  format_seconds(Seconds(m.communication)) + " / " +
                                  format_seconds(Seconds(m.waiting))});
  }
  table.print(std::cout);
  std::cout << "Traffic is per step; compute / comm / wait is a worker's mean per step.\n";
  const bool cuts = std::any_of(result.results.begin(), result.results.end(), [](const auto& r) {
    return r.kind == StrategyKind::ralp || r.kind == StrategyKind::hybrid;
  });
  if (cuts && !analytic) {
    std::cout << "Compute differs by strategy: a worker runs only the layers before a cut "
                 "(ralp, hybrid) and applies updates itself only under allreduce and hybrid.\n";
  }
  print_training_table(result);
  if (analytic) {
    std::cout << "fidelity: analytic (the closed-form step model, docs/placement.md): step times "
                 "only, cut \"auto\" at the analytic best\n";
  }
  std::cout << "worker times: " << sources_line(result.results.front().worker_sources, scenario.worker_device) << '\n';
  for (const auto& r : result.results) {
    if (r.ps_sources && (r.kind == StrategyKind::ralp || r.kind == StrategyKind::hybrid)) {
      std::cout << r.label << " head times: " << sources_line(*r.ps_sources, scenario.ps_device) << '\n';
    }
    if (const std::string line = shard_line(r, scenario); !line.empty()) std::cout << line << '\n';
    if (const std::string line = node_line(r); !line.empty()) std::cout << line << '\n';
    if (!r.cut_search.empty()) {
      std::cout << r.label << ": cut " << r.cut.value_or("-") << " is the fastest of the "
                << r.cut_search.size() << " best analytic cuts simulated (ralp place shows the ranking)\n";
    }
  }
  for (const std::string& line : reports::verdict_lines(reports::make_verdict(result, result.split_threshold))) {
    std::cout << line << "\n";
  }
}

}  // namespace

void add_simulate_command(CLI::App& app, Action& action) {
  auto options = std::make_shared<SimulateOptions>();
  auto* cmd = app.add_subcommand(
      "simulate",
      "Predict each strategy's step: times, traffic, verdict.\n"
      "Simulate the scenario's training steps under each of its strategies and print a table of "
      "step time, images/s, speedups, traffic, the busiest link and each worker's compute / "
      "communication / waiting split");
  cmd->add_option("scenario", options->scenario, "Scenario file (JSON)")->required();
  cmd->add_option("--json", options->json, "Write the results as JSON to FILE ('-': stdout)");
  cmd->add_option("--csv", options->csv, "Write one CSV row per strategy to FILE ('-': stdout)");
  cmd->add_option("--trace", options->trace,
                  "Write the last step's timeline as Chrome trace events to FILE ('-': stdout; "
                  "open it in https://ui.perfetto.dev or chrome://tracing)");
  cmd->add_option("--jobs", options->jobs,
                  "Simulations run at once, each in its own process (default: one per CPU)")
      ->check(CLI::Range(1, 1024));
  cmd->add_option("--fidelity", options->fidelity,
                  "event: SimGrid's event simulation; analytic: the closed-form step model "
                  "(docs/placement.md), for clusters too large to simulate event by event: step "
                  "times only, cut \"auto\" at the analytic best")
      ->check(CLI::IsMember({"event", "analytic"}));
  cmd->add_option("--replay", options->replay,
                  "Give each device operation (kernel, sum, update) the time a real run of this "
                  "scenario measured, from FILE written by ralp cluster --json, instead of the "
                  "profile's (and no time-sharing slowdown on top: a time measured on a shared "
                  "core holds what sharing cost it): what the schedule and the network model "
                  "predict when the kernels' times are known exactly")
      ->type_name("FILE");
  cmd->add_flag("--quiet", options->quiet, "No progress lines on stderr");
  options->overrides.add_to(*cmd);
  // A testing aid: every host's sent messages of the last step in the JSON, to compare with the
  // schedule and the real cluster.
  cmd->add_flag("--messages", options->messages)->group("");
  cmd->callback([&action, options] {
    action = [options] {
      check_output_streams(*options);
      const Scenario scenario = load_scenario(options->scenario, options->overrides.overrides());
      const DeviceProfile* devices[] = {&scenario.worker_device, &scenario.ps_device};
      const auto w = foreign_host_warning(devices, this_machine_cpu_model());
      if (w) std::cerr << *w << '\n';
      for (const std::string& line : scenario_warnings(scenario)) std::cerr << line << '\n';
      check_simulation_limits(scenario);
      check_output_path("--json", options->json);
      check_output_path("--csv", options->csv);
      check_output_path("--trace", options->trace);
      sim::SimulateOptions sim_options;
      sim_options.jobs = options->jobs;
      sim_options.keep_timeline = !options->trace.empty();
      sim_options.keep_messages = options->messages;
      if (!options->quiet && isatty(STDERR_FILENO)) {
        sim_options.progress = [](const std::string& line) { std::cerr << "\r" << line << "\033[K"; };
      }
      const bool analytic = options->fidelity == "analytic";
      if (analytic && (!options->trace.empty() || options->messages)) {
        throw InputError("--fidelity", "", "is analytic, which has no timeline or messages: "
                                           "drop --trace, or use --fidelity event");
      }
      if (!options->replay.empty()) {
        if (analytic) {
          throw InputError("--fidelity", "", "is analytic, which plays no schedule: drop "
                                             "--replay, or use --fidelity event");
        }
        sim_options.replay_file = options->replay;
        sim_options.replay = read_device_times(options->replay);
        for (const StrategySpec& spec : scenario.strategies) {
          if (!sim_options.replay.contains(spec.label)) {
            throw InputError(options->replay, "/results",
                             "has no strategy \"" + spec.label +
                                 "\"; expected ralp cluster --json of this scenario");
          }
        }
      }
      // Cut "auto" is resolved by the placement search, as `ralp cluster` resolves it.
      ScenarioResult result =
          analytic ? placement::analytic_scenario(scenario)
                   : sim::simulate_scenario(scenario, placement::resolve_cuts(scenario, sim_options),
                                            sim_options);
      result.baseline = placement::single_device_baseline(scenario);
      add_memory(result, scenario);
      if (sim_options.progress) std::cerr << "\r\033[K";
      const bool table_on_stdout =
          options->json != "-" && options->csv != "-" && options->trace != "-";
      if (table_on_stdout) {
        print_table(scenario, result, analytic);
        if (!options->replay.empty()) {
          std::cout << "device operations: the times the run in " << options->replay
                    << " measured (--replay), not the profile's\n";
        }
      }
      if (!options->json.empty()) {
        Json j = reports::to_json(result);
        if (!options->replay.empty()) j["scenario"]["replay"] = options->replay;
        write_output(options->json, j.dump(2) + "\n");
      }
      if (!options->csv.empty()) write_output(options->csv, reports::to_csv(result));
      if (!options->trace.empty()) {
        write_output(options->trace, reports::to_chrome_trace(result).dump() + "\n");
      }
      return kExitOk;
    };
  });
}

}  // namespace ralp::cli
