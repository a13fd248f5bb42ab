// Benchmark: wall time per simulated step of VGG-16 under ps, ralp (cut at fc6) and allreduce on
// a 10 Gbps star, for 8 to 1024 workers; each simulation in its own process, as ralp runs them.
// The reference measured in the same run is the message-level ring beside the coalesced one.
//
//   build/bench/sim_steps [--max-workers N] [--steps K] [--network tcp|ideal]
#include <sys/utsname.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>

#include "ralp/core/scenario.hpp"
#include "ralp/sim/simulate.hpp"

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

}  // namespace

int main(int argc, char** argv) {
  int max_workers = 1024;
  int steps = 2;
  std::string network = "tcp";
  for (int i = 1; i + 1 < argc; i += 2) {
    if (std::strcmp(argv[i], "--max-workers") == 0) max_workers = std::atoi(argv[i + 1]);
    if (std::strcmp(argv[i], "--steps") == 0) steps = std::atoi(argv[i + 1]);
    if (std::strcmp(argv[i], "--network") == 0) network = argv[i + 1];
  }
  utsname host{};
  uname(&host);
  std::printf("sim_steps: VGG-16, batch 32, v100 datasheet, 10 Gbps star, %s network model\n",
              network.c_str());
  std::printf("machine: %s %s, load %s; %d simulated steps (1 warm-up + %d) per run\n",
              host.sysname, host.machine, loadavg().c_str(), steps + 1, steps);
  std::printf("%8s  %-18s  %14s  %16s  %10s\n", "workers", "strategy", "wall/step (s)",
              "simulated step", "vs coalesced");
  for (int workers = 8; workers <= max_workers; workers *= (workers < 64 ? 8 : 4)) {
    const ralp::Scenario s = scenario(workers, steps, network);
    double coalesced = 0.0;
    for (size_t i = 0; i < s.strategies.size(); ++i) {
      const auto& strategy = s.strategies[i];
      // The message-level ring costs 2(W-1) messages per worker and buffer: skip it past 256.
      if (strategy.label == "allreduce-message" && workers > 256) continue;
      const auto cut = strategy.kind == ralp::StrategyKind::ralp ? s.model.find("fc6")
                                                                 : std::nullopt;
      const auto start = std::chrono::steady_clock::now();
      const auto r = ralp::sim::simulate_isolated(s, strategy, cut, {});
      const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
                              .count() / static_cast<double>(steps + 1);
      if (strategy.label == "allreduce") coalesced = wall;
      char ratio[32] = "";
      if (strategy.label == "allreduce-message") std::snprintf(ratio, sizeof ratio, "%.1fx", wall / coalesced);
      std::printf("%8d  %-18s  %14.3f  %14.3f s  %10s\n", workers, strategy.label.c_str(), wall,
                  r.step_time_mean_s, ratio);
      std::fflush(stdout);
    }
  }
  return 0;
}
