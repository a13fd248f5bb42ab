// `ralp link-probe`: times the link between two MPI ranks with the cluster's own transport (a
// header-only ping-pong and bulk transfers of growing size); `ralp validate` runs it under mpirun
// between two shaped hosts and fits the network model's factors, each message's CPU cost and what
// waiting for one costs a shared core, to what it prints.
#include <iostream>
#include <memory>

#include "commands.hpp"
#include "ralp/cluster/link_probe.hpp"
#include "ralp/cluster/mpi_session.hpp"

namespace ralp::cli {

void add_link_probe_command(CLI::App& app, Action& action) {
  auto options = std::make_shared<cluster::LinkProbeOptions>();
  auto json = std::make_shared<std::string>("-");
  auto* cmd = app.add_subcommand(
      "link-probe",
      "Time a link and each message's CPU cost between two MPI ranks.\n"
      "Time the link between two MPI ranks with the cluster transport: round-trip time of "
      "header-only messages and bulk transfers of growing size, then the CPU time a message of "
      "each size takes from computation on each rank's core (in trains of up to 4 MiB and 8 "
      "messages, sent one at a time 2 ms apart, as a step's pushes follow its layers), and the "
      "share of the core that a "
      "rank waiting for a message takes from computation there (mpirun -np 2 ralp link-probe)");
  cmd->add_option("--json", *json, "Write the timings to FILE ('-': stdout, the default)");
  cmd->add_option("--round-trips", options->round_trips, "Header-only ping-pongs")
      ->check(CLI::Range(1, 100000))
      ->capture_default_str();
  cmd->add_option("--repetitions", options->repetitions, "Transfers per size (median kept)")
      ->check(CLI::Range(1, 1000))
      ->capture_default_str();
  cmd->add_option("--sizes", options->sizes,
                  "Payload sizes in bytes (default: 1 KiB to 16 MiB, each 4 times the last)")
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 30));
  auto no_cpu = std::make_shared<bool>(false);
  cmd->add_flag("--no-cpu", *no_cpu,
                "Skip the CPU series, which measure the CPU time the transfers take from a thread "
                "computing on each rank's core and what waiting for a message takes from it");
  cmd->add_flag("--compute-yields", options->compute_yields,
                "Run that thread as ralp cluster --compute-yields runs the kernels");
  cmd->callback([&action, options, json, no_cpu] {
    action = [options, json, no_cpu] {
      check_output_path("--json", *json);
      options->cpu = !*no_cpu;
      cluster::MpiSession session;
      try {
        const cluster::LinkProbeResult result = cluster::run_link_probe(*options);
        if (session.rank() == 0) write_output(*json, cluster::link_probe_to_json(result));
      } catch (const std::exception& e) {
        std::cerr << ("error: " + std::string(e.what()) + "\n") << std::flush;
        session.abort(kExitFailure);
      }
      return kExitOk;
    };
  });
}

}  // namespace ralp::cli
