// Benchmark: wall time per simulated step and peak memory of VGG-16 under ps, ralp (cut at fc6)
// and allreduce on a 10 Gbps star, for 8 to 16,384 workers; each simulation in its own process,
// as ralp runs them. References measured in the same run: the message-level ring beside the
// coalesced one, and, up to --lazy-max-workers (default 1,024), each row again under SimGrid's
// lazy max-min update (its cost and how far its step time strays from the full update's).
//
//   build/bench/sim_steps [--max-workers N] [--steps K] [--network tcp|ideal]
//                         [--lazy-max-workers N] [--ralp-max-workers N]
// ralp's rows stop at --ralp-max-workers (default 4,096): its time per step grows with the square
// of the workers (every flow start and end re-solves the shares of every flow on the PS link).
#include <sys/resource.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>

#include "ralp/sim/simulate.hpp"
#include "ralp/spec/scenario.hpp"

namespace {

std::string loadavg() {
  std::ifstream in("/proc/loadavg");
  std::string a, b, c;
  in >> a >> b >> c;
  return a + " " + b + " " + c;
}

ralp::Scenario scenario(int workers, int steps, const std::string& network) {
  const std::string text = R"({"name": "bench", "model": "vgg16", "batch_per_worker": 32,
      "cluster": {"workers": )" + std::to_string(workers) + R"(, "worker_device": "v100",
      "platform": {"kind": "star", "nic_bandwidth": "10Gbps", "latency": "5us"}},
      "network_model": ")" + network + R"(", "strategies": ["ps", {"name": "ralp", "cut": "fc6"},
      "allreduce", {"name": "allreduce", "label": "allreduce-message", "ring_model": "message"}],
      "steps": )" + std::to_string(steps) + R"(, "warmup_steps": 1})";
  return ralp::parse_scenario(ralp::parse_json_text(text, "bench"), "bench", ".");
}

struct Row {
  double wall_per_step = 0.0;
  double simulated_step = 0.0;
  double cpu_per_step = 0.0;  // user + system time of the simulation's processes
  double peak_mib = 0.0;  // the largest resident set of the simulation's processes
};

// Runs one simulation in a child process, so that its peak memory is its own.
Row measure(const ralp::Scenario& s, const ralp::StrategySpec& strategy, int steps, bool lazy) {
  int fds[2];
  if (pipe(fds) != 0) std::abort();
  std::fflush(nullptr);
  const pid_t pid = fork();
  if (pid == 0) {
    close(fds[0]);
    const auto cut =
        strategy.kind == ralp::StrategyKind::ralp ? s.model.find("fc6") : std::nullopt;
    const auto start = std::chrono::steady_clock::now();
    ralp::sim::RunOptions options;
    options.lazy_network_update = lazy;
    const auto r = ralp::sim::simulate_isolated(s, strategy, cut, options);
    Row row;
    row.wall_per_step = std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
                            .count() / static_cast<double>(steps + 1);
    row.simulated_step = r.step_time_mean_s;
    if (write(fds[1], &row, sizeof row) != static_cast<ssize_t>(sizeof row)) _exit(1);
    _exit(0);
  }
  close(fds[1]);
  Row row;
  const bool got = read(fds[0], &row, sizeof row) == static_cast<ssize_t>(sizeof row);
  close(fds[0]);
  int status = 0;
  rusage usage{};
  wait4(pid, &status, 0, &usage);  // the child's and its waited-for children's peak
  if (!got || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    std::fprintf(stderr, "sim_steps: the simulation of %s failed\n", strategy.label.c_str());
    std::exit(1);
  }
  constexpr double kKiBPerMiB = 1024.0;
  row.peak_mib = static_cast<double>(usage.ru_maxrss) / kKiBPerMiB;  // ru_maxrss is in KiB
  const auto seconds = [](const timeval& t) {
    return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_usec) * 1e-6;
  };
  row.cpu_per_step =
      (seconds(usage.ru_utime) + seconds(usage.ru_stime)) / static_cast<double>(steps + 1);
  return row;
}

}  // namespace

int main(int argc, char** argv) {
  int max_workers = 16384;
  int steps = 2;
  std::string network = "tcp";
  int lazy_max_workers = 1024;
  int ralp_max_workers = 4096;
  const auto usage = [] {
    std::fprintf(stderr,
                 "usage: sim_steps [--max-workers N] [--steps K] [--network tcp|ideal]\n"
                 "                 [--lazy-max-workers N] [--ralp-max-workers N]\n");
    return 2;
  };
  // A count given on the command line: a whole number of at least `least`, else -1.
  const auto count = [](const char* text, int least) {
    char* end = nullptr;
    const long value = std::strtol(text, &end, 10);
    return end != text && *end == '\0' && value >= least && value <= (1L << 20)
               ? static_cast<int>(value)
               : -1;
  };
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (i + 1 >= argc) return usage();
    const char* value = argv[++i];
    if (arg == "--network") {
      if (std::strcmp(value, "tcp") != 0 && std::strcmp(value, "ideal") != 0) return usage();
      network = value;
      continue;
    }
    int* target = arg == "--max-workers"        ? &max_workers
                  : arg == "--steps"            ? &steps
                  : arg == "--lazy-max-workers" ? &lazy_max_workers
                  : arg == "--ralp-max-workers" ? &ralp_max_workers
                                                : nullptr;
    if (!target) return usage();
    *target = count(value, arg == "--steps" ? 1 : 0);
    if (*target < 0) return usage();
  }
  utsname host{};
  uname(&host);
  std::printf("sim_steps: VGG-16, batch 32, v100, 10 Gbps star, %s network model\n",
              network.c_str());
  std::printf("machine: %s %s, load %s; %d simulated steps (1 warm-up + %d) per run\n",
              host.sysname, host.machine, loadavg().c_str(), steps + 1, steps);
  std::printf("%8s  %-18s  %14s  %13s  %16s  %12s  %9s  %14s  %12s\n", "workers", "strategy",
              "wall/step (s)", "cpu/step (s)", "simulated step", "vs coalesced", "peak MiB",
              "lazy wall/step", "lazy step");
  for (int workers = 8; workers <= max_workers; workers *= (workers < 64 ? 8 : 4)) {
    const ralp::Scenario s = scenario(workers, steps, network);
    double coalesced = 0.0;
    for (size_t i = 0; i < s.strategies.size(); ++i) {
      const auto& strategy = s.strategies[i];
      // The message-level ring costs 2(W-1) messages per worker and buffer: skip it past 256.
      if (strategy.label == "allreduce-message" && workers > 256) continue;
      if (strategy.kind == ralp::StrategyKind::ralp && workers > ralp_max_workers) continue;
      const Row row = measure(s, strategy, steps, false);
      const double wall = row.wall_per_step;
      if (strategy.label == "allreduce") coalesced = wall;
      char ratio[32] = "";
      if (strategy.label == "allreduce-message") std::snprintf(ratio, sizeof ratio, "%.1fx", wall / coalesced);
      char lazy_wall[32] = "-";
      char lazy_step[32] = "-";
      if (workers <= lazy_max_workers) {
        const Row lazy = measure(s, strategy, steps, true);
        std::snprintf(lazy_wall, sizeof lazy_wall, "%.3f", lazy.wall_per_step);
        std::snprintf(lazy_step, sizeof lazy_step, "%+.2f%%",
                      100.0 * (lazy.simulated_step / row.simulated_step - 1.0));
      }
      std::printf("%8d  %-18s  %14.3f  %13.3f  %14.3f s  %12s  %9.0f  %14s  %12s\n", workers,
                  strategy.label.c_str(), wall, row.cpu_per_step, row.simulated_step, ratio,
                  row.peak_mib, lazy_wall, lazy_step);
      std::fflush(stdout);
    }
  }
  return 0;
}
