// `ralp cluster`: the scenario's strategies as a real cluster under mpirun, with the real
// kernels; rank 0 prints the measured step times, phase split and bytes, and writes JSON whose
// fields match `ralp simulate --json`.
#include <cstdio>
#include <iostream>
#include <memory>
#include <optional>

#include "commands.hpp"
#include "ralp/spec/scenario_overrides.hpp"
#include "ralp/cluster/run_cluster.hpp"
#include "ralp/reports/result_io.hpp"
#include "ralp/spec/scenario.hpp"
#ifdef RALP_HAVE_SIM
#include "ralp/placement/sim_evaluator.hpp"
#endif

namespace ralp::cli {
namespace {

struct ClusterCommandOptions {
  std::string scenario;
  std::string strategy;
  std::string cut;
  int64_t steps = 0;
  std::string step_timeout;
  std::string json;
  std::string trace;
  std::string allreduce = "ring";
  std::string device = "auto";
  std::string precision;  // replaces the scenario's /precision when given
  std::string dump_parameters;
  bool messages = false;
  bool quiet = false;
  bool compute_yields = false;
};

std::string in_out(const MeasuredResult& r, const std::string& host) {
  for (const auto& h : r.hosts) {
    if (h.name == host) {
      return format_bytes(Bytes(h.bytes_in)) + " / " + format_bytes(Bytes(h.bytes_out));
    }
  }
  return "-";
}

std::string seconds(double s) { return format_seconds(Seconds(s)); }

void print_tables(const Scenario& scenario, const MeasuredRun& run) {
  const auto& first = run.results.front();
  std::cout << scenario.name << ": " << run.model << ", " << run.workers << " workers x batch "
            << run.batch_per_worker << ", " << run.parameter_servers << " PS; measured on "
            << first.backend << " per rank; " << first.step_times.size() - first.warmup_steps
            << " steps after " << first.warmup_steps << " warm-up\n";
  TextTable table({{"strategy", TextTable::Align::left},
                   {"cut", TextTable::Align::left},
                   {"step time"},
                   {"spread"},
                   {"images/s"},
                   {"ps-0 in / out"},
                   {"worker-0 in / out"},
                   {"compute / comm / wait"},
                   {"loss first -> last"}});
  for (const auto& r : run.results) {
    const auto& m = r.worker_mean;
    table.add_row(
        {r.label, r.cut.value_or("-"), seconds(r.step_time_median_s), seconds(r.step_time_spread_s),
         fixed(r.images_per_s, 1), in_out(r, "ps-0"), in_out(r, "worker-0"),
         seconds(m.compute) + " / " + seconds(m.communication) + " / " + seconds(m.waiting),
         fixed(r.loss.front(), 4) + " -> " + fixed(r.loss.back(), 4)});
  }
  table.print(std::cout);
  std::cout << "Step time: median over the measured steps, spread: their interquartile range. "
               "Traffic is per step; compute / comm / wait is a worker's mean per step.\n";
  for (const auto& r : run.results) {
    if (const std::string line = shard_line(r, scenario); !line.empty()) std::cout << line << '\n';
  }
  std::cout << '\n';

  TextTable splits({{"strategy", TextTable::Align::left},
                    {"rank", TextTable::Align::left},
                    {"compute"},
                    {"communication"},
                    {"waiting"},
                    {"bytes in / out"}});
  for (const auto& r : run.results) {
    for (size_t i = 0; i < r.splits.size(); ++i) {
      const TimeSplit& p = r.splits[i];
      splits.add_row({i == 0 ? r.label : "", r.hosts[i].name, seconds(p.compute),
                      seconds(p.communication), seconds(p.waiting),
                      in_out(r, r.hosts[i].name)});
    }
  }
  splits.print(std::cout);
  std::cout << "Per rank and step, mean over the measured steps: computing, communicating (a "
               "transfer of its own in flight, not computing), waiting (neither).\n";
}

// Cut "auto" is resolved by the placement search, as `ralp simulate` resolves it.
cluster::CutResolver auto_cut_resolver(const Scenario& scenario) {
#ifdef RALP_HAVE_SIM
  return [&scenario](const StrategySpec& spec) {
    Scenario one = scenario;
    one.strategies = {spec};
    return placement::resolve_cuts(one, {}).front().cut;
  };
#else
  (void)scenario;
  return {};
#endif
}

}  // namespace

void add_cluster_command(CLI::App& app, Action& action) {
  auto options = std::make_shared<ClusterCommandOptions>();
  auto* cmd = app.add_subcommand(
      "cluster",
      "Run the strategies as a real MPI cluster and measure the step.\n"
      "Run the scenario's strategies as a real cluster under mpirun (parameter servers first, "
      "then workers, one rank each), training its model on synthetic data with the real kernels, "
      "and print the measured step time, phase split and bytes: mpirun -np P+W ralp cluster "
      "SCENARIO");
  cmd->add_option("scenario", options->scenario, "Scenario file (JSON)")->required();
  cmd->add_option("--strategy", options->strategy,
                  "Run only this strategy (a label of the scenario, or ps, ralp, allreduce, "
                  "hybrid); default: every strategy of the scenario, one after another");
  cmd->add_option("--cut", options->cut, "First head layer for ralp and hybrid");
  cmd->add_option("--steps", options->steps, "Measured steps (default: the scenario's)")
      ->check(CLI::Range(int64_t{1}, int64_t{1000000}));
  cmd->add_option("--step-timeout", options->step_timeout,
                  "How long a rank waits for a peer before it aborts the job, e.g. 30s "
                  "(default: the scenario's training.step_timeout, 60 s)");
  cmd->add_option("--json", options->json, "Write the measurements as JSON to FILE ('-': stdout)");
  cmd->add_option("--trace", options->trace,
                  "Write the last step's timeline, every rank on one clock, as Chrome trace "
                  "events to FILE ('-': stdout), with the same threads and labels as ralp "
                  "simulate --trace; open it in https://ui.perfetto.dev or chrome://tracing");
  cmd->add_option("--allreduce", options->allreduce,
                  "ring: this project's ring over point-to-point messages (what the simulator "
                  "models); mpi: the MPI library's MPI_Allreduce, to compare")
      ->check(CLI::IsMember({"ring", "mpi"}));
  for (const auto& o : scenario_override_options()) {
    if (o.name != "precision") continue;  // --strategy and --cut are the cluster's own
    cmd->add_option("--" + o.name, options->precision, o.help)->type_name(o.value_name);
  }
  cmd->add_option("--device", options->device, "Kernel device: auto (CUDA when present), cpu, cuda")
      ->check(CLI::IsMember({"auto", "cpu", "cuda"}));
  // A testing aid: each strategy's final parameters, for the equivalence test.
  cmd->add_option("--dump-parameters", options->dump_parameters)->group("");
  // A testing aid: every host's sent messages of the last step in the JSON, to compare with the
  // schedule and the simulator.
  cmd->add_flag("--messages", options->messages)->group("");
  cmd->add_flag("--compute-yields", options->compute_yields,
                "On a CPU, run the kernels below the threads that move messages (Linux's "
                "SCHED_IDLE class), so that these take the core at once when they wake: for "
                "ranks with a core of their own, as ralp validate runs them");
  cmd->add_flag("--quiet", options->quiet, "No progress lines on stderr");
  cmd->callback([&action, options] {
    action = [options] {
      // Every rank reads and checks the scenario on its own, and resolves cut "auto" with the
      // simulator's search (before MPI starts: the search runs in child processes); they agree
      // before any training message, so a bad scenario stops every rank with its message and
      // status 2.
      std::optional<InputError> problem;
      std::optional<Scenario> scenario;
      std::vector<cluster::PlannedStrategy> strategies;
      cluster::ClusterOptions run_options;
      try {
        std::vector<ScenarioOverride> overrides;
        if (!options->precision.empty()) overrides.push_back({"precision", options->precision});
        scenario.emplace(load_scenario(options->scenario, overrides));
        for (size_t i = 0; i < scenario->strategies.size(); ++i) {
          if (scenario->strategies[i].token_queues) {
            throw InputError(options->scenario, json_path("/strategies", i) + "/sync",
                             "is \"token_queues\", whose barriers only the event simulation "
                             "runs; expected \"sum\" or no sync in a real run");
          }
          const Transport& t = scenario->strategies[i].transport;
          if (t.name == "ideal") continue;
          throw InputError(options->scenario, json_path("/strategies", i) + "/transport",
                           "is \"" + t.name + "\", but a real run moves its bytes over Open MPI "
                           "(its costs are cluster.message_cpu, fitted by ralp link-probe); "
                           "expected \"ideal\" or no transport");
        }
        check_output_path("--json", options->json);
        check_output_path("--trace", options->trace);
        if (options->json == "-" && options->trace == "-") {
          throw InputError("--trace", "", "is '-' as --json is; expected one of them on stdout");
        }
        if (!options->strategy.empty()) run_options.strategy = options->strategy;
        if (!options->cut.empty()) run_options.cut = options->cut;
        if (options->steps > 0) run_options.steps = options->steps;
        if (!options->step_timeout.empty()) {
          const auto timeout = parse_seconds(options->step_timeout);
          if (!timeout || timeout->value() <= 0.0) {
            throw InputError("--step-timeout", "",
                             "is '" + options->step_timeout + "', expected a duration > 0 (30s)");
          }
          run_options.step_timeout = *timeout;
        }
        run_options.allreduce = options->allreduce == "mpi"
                                    ? cluster::AllreduceImplementation::mpi
                                    : cluster::AllreduceImplementation::ring;
        run_options.device = options->device == "cpu"    ? cluster::ClusterDevice::cpu
                             : options->device == "cuda" ? cluster::ClusterDevice::cuda
                                                         : cluster::ClusterDevice::automatic;
        run_options.dump_parameters = options->dump_parameters;
        run_options.keep_messages = options->messages;
        run_options.compute_yields = options->compute_yields;
        run_options.keep_timeline = !options->trace.empty();
        run_options.fault = cluster::fault_from_environment();
        strategies = cluster::plan_strategies(*scenario, run_options, auto_cut_resolver(*scenario));
        cluster::check_precision(*scenario, run_options.device);
      } catch (const InputError& e) {
        problem = e;
      } catch (const std::exception& e) {
        problem = InputError(options->scenario, "", std::string("resolving cut \"auto\": ") + e.what());
      }
      cluster::MpiSession session;
      if (!problem) {
        try {
          cluster::check_world_size(*scenario, session.size());
        } catch (const InputError& e) {
          problem = e;
        }
      }
      if (!session.all_ranks_ready(!problem)) {
        // One write per message, so that the ranks' lines do not interleave.
        const std::string message =
            problem ? problem->what()
                    : options->scenario + ": another rank could not start (its message says why)";
        std::cerr << ("error: " + message + "\n") << std::flush;
        return kExitBadInput;
      }
      const DeviceProfile* devices[] = {&scenario->worker_device, &scenario->ps_device};
      const auto w = foreign_host_warning(devices, this_machine_cpu_model());
      if (w && session.rank() == 0) std::cerr << (*w + "\n") << std::flush;
      if (!options->quiet && session.rank() == 0) {
        run_options.progress = [](const std::string& line) { std::cerr << line << std::endl; };
      }
      std::optional<MeasuredRun> run;
      try {
        run = cluster::run_cluster(session, *scenario, strategies, run_options);
        if (run) {
          if (options->json != "-" && options->trace != "-") print_tables(*scenario, *run);
          if (!options->json.empty()) {
            write_output(options->json, reports::to_json(*run).dump(2) + "\n");
          }
          if (!options->trace.empty()) {
            write_output(options->trace, reports::to_chrome_trace(*run).dump() + "\n");
          }
        }
      } catch (const std::exception& e) {
        // The other ranks are waiting for this one: end the whole job.
        std::cerr << ("error: " + std::string(e.what()) + "\n") << std::flush;
        session.abort(kExitFailure);
      }
      return kExitOk;
    };
  });
}

}  // namespace ralp::cli
