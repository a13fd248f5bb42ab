// Benchmark: measured step time and bytes per step of ps, ralp, allreduce and hybrid on the two
// CIFAR zoo nets with 1 PS + 2 workers, ranks on loopback, one kernel thread per rank; each
// strategy in its own mpirun (scenarios/cluster/). The reference measured in the same run is ps:
// "vs ps" is its step time over the strategy's. Prints where the numbers came from, and the
// machine's load before and after each net, since other jobs on a shared machine move them.
//
//   build/bench/cluster_steps [--steps K] [--nets alexnet,allconv]
#include <sys/utsname.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "ralp/core/json_input.hpp"

namespace {

std::string loadavg() {
  std::ifstream in("/proc/loadavg");
  std::string a, b, c;
  in >> a >> b >> c;
  return a + " " + b + " " + c;
}

std::string cpu_model() {
  std::ifstream in("/proc/cpuinfo");
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("model name", 0) == 0) return line.substr(line.find(':') + 2);
  }
  return "unknown CPU";
}

std::string first_line_of(const std::string& command) {
  std::string out;
  if (FILE* pipe = popen(command.c_str(), "r")) {
    char buffer[256];
    if (fgets(buffer, sizeof buffer, pipe) != nullptr) out = buffer;
    pclose(pipe);
  }
  while (!out.empty() && (out.back() == '\n' || out.back() == '\r')) out.pop_back();
  return out;
}

std::string megabytes(double bytes) {
  char text[32];
  std::snprintf(text, sizeof text, "%.3f", bytes / 1e6);
  return text;
}

double bytes_of(const ralp::Json& result, const std::string& host, const char* direction) {
  for (const auto& h : result["hosts"]) {
    if (h["name"] == host) return h[direction].get<double>();
  }
  return 0.0;
}

}  // namespace

int main(int argc, char** argv) {
  std::string steps;
  std::vector<std::string> nets = {"alexnet", "allconv"};
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--steps" && i + 1 < argc) {
      steps = argv[++i];
    } else if (arg == "--nets" && i + 1 < argc) {
      nets.clear();
      std::stringstream list(argv[++i]);
      for (std::string net; std::getline(list, net, ',');) nets.push_back(net);
    } else {
      std::fprintf(stderr, "usage: cluster_steps [--steps K] [--nets alexnet,allconv]\n");
      return 2;
    }
  }
  const std::string mpirun =
      std::string("OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 ") + RALP_MPIEXEC +
      " --oversubscribe --mca btl self,tcp --mca btl_tcp_if_include lo"
      " --mca oob_tcp_if_include lo --mca mpi_yield_when_idle 1 -np 3 ";
  utsname host{};
  uname(&host);
  const std::time_t now = std::time(nullptr);
  char date[32];
  std::strftime(date, sizeof date, "%Y-%m-%d %H:%M", std::localtime(&now));
  std::printf("cluster_steps: %s, %s, %s %s, %ld CPUs, %s, one kernel thread per rank\n", date,
              cpu_model().c_str(), host.sysname, host.release, sysconf(_SC_NPROCESSORS_ONLN),
              first_line_of(std::string(RALP_MPIEXEC) + " --version").c_str());
  std::printf("%-9s %-11s %11s %11s %9s %6s %16s %16s\n", "net", "strategy", "step (ms)",
              "spread (ms)", "images/s", "vs ps", "ps-0 MB in/out", "worker-0 MB in/out");

  const std::string json = "/tmp/ralp-cluster-steps-" + std::to_string(getpid()) + ".json";
  for (const std::string& net : nets) {
    const std::string scenario =
        std::string(RALP_SOURCE_DIR) + "/scenarios/cluster/cifar-" + net + "-1ps-2w.json";
    const std::string before = loadavg();
    double ps_step = 0.0;
    for (const std::string strategy : {"ps", "ralp", "allreduce", "hybrid"}) {
      const std::string command = mpirun + RALP_BINARY + " cluster " + scenario + " --strategy " +
                                  strategy + " --quiet --json " + json +
                                  (steps.empty() ? "" : " --steps " + steps) + " >/dev/null";
      if (std::system(command.c_str()) != 0) {
        std::fprintf(stderr, "cluster_steps: failed: %s\n", command.c_str());
        return 1;
      }
      const ralp::Json run = ralp::read_json_file(json);
      const ralp::Json& r = run["results"][0];
      const double step = r["step_time_s"].get<double>();
      if (strategy == "ps") ps_step = step;
      std::printf("%-9s %-11s %11.2f %11.2f %9.1f %5.2fx %16s %16s\n", net.c_str(),
                  r["strategy"].get<std::string>().c_str(), 1e3 * step,
                  1e3 * r["step_time_spread_s"].get<double>(), r["images_per_s"].get<double>(),
                  ps_step / step,
                  (megabytes(bytes_of(r, "ps-0", "bytes_in")) + "/" +
                   megabytes(bytes_of(r, "ps-0", "bytes_out")))
                      .c_str(),
                  (megabytes(bytes_of(r, "worker-0", "bytes_in")) + "/" +
                   megabytes(bytes_of(r, "worker-0", "bytes_out")))
                      .c_str());
      std::fflush(stdout);
    }
    std::printf("%-9s load average before %s, after %s\n", net.c_str(), before.c_str(),
                loadavg().c_str());
  }
  std::remove(json.c_str());
  std::printf(
      "Step: median of the measured steps; spread: their interquartile range; bytes per "
      "step. Batch 32 per worker; scenarios/cluster/ gives the rest.\n");
  return 0;
}
