// Points per second of a 1,000-point sweep (VGG-16 and ResNet-50, 1 to 125 workers, 1/10/25/100
// Gbps, ps, ralp, allreduce and hybrid with cut "auto", analytic fidelity), in-process against one
// process per point, with the load average and the date. Usage: bench/sweep [--jobs N]
#include <sys/utsname.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "ralp/sweep/output.hpp"
#include "ralp/sweep/run.hpp"
#include "ralp/sweep/spec.hpp"

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

std::string load_average() {
  double load[3] = {0, 0, 0};
  if (getloadavg(load, 3) != 3) return "unknown";
  char text[64];
  std::snprintf(text, sizeof text, "%.2f %.2f %.2f", load[0], load[1], load[2]);
  return text;
}

std::string read_all(const std::filesystem::path& file) {
  std::ifstream in(file, std::ios::binary);
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

struct Sweep {
  ralp::sweep::SweepSpec spec;
  std::vector<ralp::sweep::SweepPoint> points;
};

// Runs every sweep's points into its own folder under `dir`; returns the seconds taken.
double run_all(const std::vector<Sweep>& sweeps, const std::filesystem::path& dir,
               const ralp::sweep::PoolOptions& pool) {
  const auto start = Clock::now();
  for (size_t s = 0; s < sweeps.size(); ++s) {
    const std::filesystem::path out = dir / std::to_string(s);
    std::filesystem::create_directories(out);
    ralp::sweep::SweepWriter writer(out, sweeps[s].spec, sweeps[s].points, {});
    std::vector<size_t> all(sweeps[s].points.size());
    for (size_t i = 0; i < all.size(); ++i) all[i] = i;
    ralp::sweep::run_points(sweeps[s].points, all, sweeps[s].spec.fidelity, pool,
                            [&](size_t index, const ralp::Json& outcome) {
                              writer.add(index, outcome);
                            });
    writer.finish();
  }
  return seconds_since(start);
}

}  // namespace

int main(int argc, char** argv) {
  int jobs = ralp::sweep::default_jobs();
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--jobs" && i + 1 < argc) {
      jobs = std::atoi(argv[++i]);
    } else {
      std::cerr << "usage: sweep [--jobs N]\n";
      return 2;
    }
  }
  const std::filesystem::path source = RALP_SOURCE_DIR;
  const std::vector<std::string> files{"scenarios/sweeps/vgg16-workers-bandwidth.sweep",
                                       "scenarios/sweeps/resnet50-workers-bandwidth.sweep"};
  const std::time_t now = std::time(nullptr);
  char date[64];
  std::strftime(date, sizeof date, "%Y-%m-%d %H:%M UTC", std::gmtime(&now));
  utsname host{};
  uname(&host);
  std::cout << "bench/sweep: " << date << ", " << host.machine << ", "
            << sysconf(_SC_NPROCESSORS_ONLN) << " CPUs, load average " << load_average() << "\n";

  const auto prepare_start = Clock::now();
  std::vector<Sweep> sweeps;
  size_t points = 0;
  size_t rows = 0;
  for (const std::string& f : files) {
    Sweep s;
    s.spec = ralp::sweep::read_sweep_file(source / f);
    s.points = ralp::sweep::make_points(s.spec);
    points += s.points.size();
    for (const auto& p : s.points) rows += p.scenario.strategies.size();
    std::cout << "  " << f << ": " << s.points.size() << " points, fidelity " << s.spec.fidelity
              << "\n";
    sweeps.push_back(std::move(s));
  }
  const double prepare_s = seconds_since(prepare_start);
  std::cout << points << " points (" << rows << " strategy rows); reading and validating every "
            << "point's scenario: " << prepare_s << " s\n";

  char name[] = "/tmp/ralp-bench-sweep-XXXXXX";
  const std::filesystem::path dir = mkdtemp(name);
  struct Mode {
    std::string name;
    ralp::sweep::PoolOptions pool;
  };
  using ralp::sweep::Isolation;
  const std::string j = std::to_string(jobs);
  std::vector<Mode> modes{
      {"in-process, one after another", {1, Isolation::in_process, {}}},
      {"a fresh process per point, 1 at a time", {1, Isolation::process_per_point, {}}},
      {"a fresh process per point, " + j + " at a time", {jobs, Isolation::process_per_point, {}}},
      {"1 worker process", {1, Isolation::workers, {}}},
      {j + " worker processes (ralp sweep --jobs " + j + ")", {jobs, Isolation::workers, {}}}};
  std::vector<double> times;
  std::vector<std::string> outputs;
  for (size_t m = 0; m < modes.size(); ++m) {
    const std::filesystem::path out = dir / std::to_string(m);
    const double t = run_all(sweeps, out, modes[m].pool);
    times.push_back(t);
    std::string bytes;
    for (size_t s = 0; s < sweeps.size(); ++s) {
      bytes += read_all(out / std::to_string(s) / "sweep.csv");
      bytes += read_all(out / std::to_string(s) / "sweep.json");
    }
    outputs.push_back(std::move(bytes));
    char line[256];
    std::snprintf(line, sizeof line, "  %-48s %8.2f s  %8.1f points/s  (load %s)",
                  modes[m].name.c_str(), t, static_cast<double>(points) / t,
                  load_average().c_str());
    std::cout << line << "\n";
  }
  const double per_point_ms = (times[1] - times[0]) / static_cast<double>(points) * 1e3;
  const double worker_ms = (times[3] - times[0]) / static_cast<double>(points) * 1e3;
  char line[256];
  std::snprintf(line, sizeof line,
                "overhead against in-process: a fresh process per point %.2f ms per point, a "
                "worker process %.2f ms per point",
                per_point_ms, worker_ms);
  std::cout << line << "\n";
  bool same = true;
  for (const auto& o : outputs) same = same && o == outputs.front();
  std::cout << "identical sweep.csv and sweep.json in every mode: " << (same ? "yes" : "NO")
            << "\nend load average " << load_average() << "\n";
  std::filesystem::remove_all(dir);
  return same ? 0 : 1;
}
