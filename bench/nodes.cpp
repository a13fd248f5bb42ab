// Benchmark: VGG-16 at batch 64 on 128 nodes of 8 V100 on NVLink over a 100 Gbps star (1,024
// GPUs), the analytic fidelity in process (targets: under 10 ms per scenario) and the event
// simulation per simulated step for ps (local aggregation, 8 separate parameter servers) and
// NCCL's ring (target: under 1 s). The event column divides a whole run (setup included) by the
// steps it simulates; the marginal column is what each step beyond them adds, from a second run
// with --more steps more. The reference, measured in the same run: the first simulation again with
// actors on every connection (RunOptions::played_flows false), and the ratio of the two. Each
// event figure is the median of --event-repetitions rounds of the three simulations. Prints a
// table with a context block, and writes it to --out.
//
//   build/bench/nodes_bench [--nodes N] [--steps K] [--more M] [--repetitions R]
//                           [--event-repetitions E] [--out FILE]
#include <sys/utsname.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "ralp/placement/analytic.hpp"
#include "ralp/sim/simulate.hpp"

namespace {

using Clock = std::chrono::steady_clock;

ralp::Scenario scenario(int nodes, int steps) {
  const std::string text = R"({"name": "bench-nodes", "model": "vgg16", "batch_per_worker": 64,
      "cluster": {"workers": )" + std::to_string(nodes * 8) + R"(, "devices_per_node": 8,
                  "parameter_servers": 8, "worker_device": "v100", "ps_device": "v100",
                  "node_interconnect": {"kind": "nvlink", "bandwidth": "150GBps",
                                        "latency": "1us"},
                  "platform": {"kind": "star", "nic_bandwidth": "100Gbps", "latency": "5us"}},
      "network_model": "tcp", "strategies": ["ps", "allreduce"],
      "steps": )" + std::to_string(steps) + R"(, "warmup_steps": 1})";
  return ralp::parse_scenario(ralp::parse_json_text(text, "bench"), "bench", ".");
}

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

double median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  return values[values.size() / 2];
}

std::string context(int repetitions, int events, int steps, int more) {
  utsname host{};
  uname(&host);
  std::string load;
  std::ifstream("/proc/loadavg") >> load;
  char date[32];
  const std::time_t now = std::time(nullptr);
  std::strftime(date, sizeof date, "%Y-%m-%d %H:%M:%S UTC", std::gmtime(&now));
  std::ostringstream out;
  out << "context: " << host.sysname << " " << host.release << " " << host.machine << ", "
      << std::thread::hardware_concurrency() << " hardware threads, load " << load << ", "
      << date << "\n"
      << "method: analytic: median wall time of " << repetitions
      << " in-process estimates per strategy; event: a simulation of 1 warm-up + " << steps
      << " steps per strategy in a child process, wall time over the steps simulated; marginal:"
      << " a simulation of " << more << " steps more, the wall time it adds per step;"
      << " actors: the first simulation with actors on every connection; each the median of "
      << events << " rounds\n";
  return out.str();
}

}  // namespace

int main(int argc, char** argv) {
  int nodes = 128;
  int steps = 2;
  int more = 4;
  int repetitions = 20;
  int events = 3;
  std::string out_file;  // none: stdout only (bench/record keeps it)
  for (int i = 1; i + 1 < argc; i += 2) {
    if (std::strcmp(argv[i], "--nodes") == 0) nodes = std::atoi(argv[i + 1]);
    if (std::strcmp(argv[i], "--steps") == 0) steps = std::atoi(argv[i + 1]);
    if (std::strcmp(argv[i], "--more") == 0) more = std::max(1, std::atoi(argv[i + 1]));
    if (std::strcmp(argv[i], "--repetitions") == 0) repetitions = std::atoi(argv[i + 1]);
    if (std::strcmp(argv[i], "--event-repetitions") == 0) {
      events = std::max(1, std::atoi(argv[i + 1]));
    }
    if (std::strcmp(argv[i], "--out") == 0) out_file = argv[i + 1];
  }
  const ralp::Scenario s = scenario(nodes, steps);
  const ralp::Scenario longer = scenario(nodes, steps + more);
  std::ostringstream table;
  table << "nodes: VGG-16, batch 64, " << nodes << " nodes x 8 v100 on NVLink, "
        << "100 Gbps star, tcp network model, 8 parameter servers\n"
        << context(repetitions, events, steps, more);
  char line[256];
  std::snprintf(line, sizeof line, "%-10s  %12s  %12s  %13s  %15s  %13s  %6s  %12s\n",
                "strategy", "analytic ms", "analytic step", "event s/step", "marginal s/step",
                "actors s/step", "ratio", "event step");
  table << line;
  for (const ralp::StrategySpec& spec : s.strategies) {
    std::vector<double> walls;
    double analytic_step = 0.0;
    for (int r = 0; r < repetitions; ++r) {
      const auto start = Clock::now();
      analytic_step = ralp::placement::estimate_strategy(s, spec, std::nullopt).step_time_s;
      walls.push_back(seconds_since(start));
    }
    std::sort(walls.begin(), walls.end());
    // Rounds of the three simulations, so that the machine's drift reaches each alike.
    ralp::sim::RunOptions actors;
    actors.played_flows = false;
    std::vector<double> runs, longer_runs, actor_runs;
    ralp::StrategyResult result;
    for (int r = 0; r < events; ++r) {
      auto start = Clock::now();
      result = ralp::sim::simulate_isolated(s, spec, std::nullopt, {});
      runs.push_back(seconds_since(start));
      start = Clock::now();
      ralp::sim::simulate_isolated(longer, spec, std::nullopt, {});
      longer_runs.push_back(seconds_since(start));
      start = Clock::now();
      ralp::sim::simulate_isolated(s, spec, std::nullopt, actors);
      actor_runs.push_back(seconds_since(start));
    }
    const double wall = median(runs);
    const double marginal = (median(longer_runs) - wall) / static_cast<double>(more);
    const double reference = median(actor_runs);
    const auto per_step = [&](double seconds) { return seconds / static_cast<double>(steps + 1); };
    std::snprintf(line, sizeof line,
                  "%-10s  %12.3f  %10.1f ms  %13.3f  %15.3f  %13.3f  %5.2fx  %9.1f ms\n",
                  spec.label.c_str(), 1e3 * walls[walls.size() / 2], 1e3 * analytic_step,
                  per_step(wall), marginal, per_step(reference), reference / wall,
                  1e3 * result.step_time_mean_s);
    table << line;
  }
  table << "targets: analytic under 10 ms per strategy; event under 1 s per simulated step\n";
  std::fputs(table.str().c_str(), stdout);
  if (!out_file.empty()) std::ofstream(out_file) << table.str();
  return 0;
}
