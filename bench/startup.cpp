// Start-up time of `ralp --version` and `ralp scenario check scenarios/paper/*.json`: the median
// wall time of repeated runs, beside /bin/true and an empty C++ program measured in the same run,
// with the CPU time (user + system, which other processes on the machine disturb less than the
// wall time), the minor page faults (the cost of mapping libraries) and the load average.
// Usage: startup [--runs N]   (default 30 runs of each command after 3 unrecorded ones)
#include <fcntl.h>
#include <spawn.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <stdexcept>
#include <string>
#include <vector>

extern char** environ;

namespace {

using Clock = std::chrono::steady_clock;

constexpr int kWarmupRuns = 3;
constexpr int kDefaultRuns = 30;
// The start-up the issue asks of every command on a machine without a GPU.
constexpr double kTargetSeconds = 0.1;

struct Run {
  double seconds = 0.0;
  double cpu_seconds = 0.0;
  long minor_faults = 0;
};

double to_seconds(const timeval& t) { return static_cast<double>(t.tv_sec) + t.tv_usec * 1e-6; }

// Runs `argv` with stdout and stderr sent to /dev/null and waits for it.
Run run_once(const std::vector<std::string>& argv) {
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, "/dev/null", O_WRONLY, 0);
  posix_spawn_file_actions_addopen(&actions, STDERR_FILENO, "/dev/null", O_WRONLY, 0);
  const auto start = Clock::now();
  pid_t pid = -1;
  const int error = posix_spawn(&pid, args[0], &actions, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (error != 0) throw std::runtime_error("cannot run " + argv[0]);
  int status = 0;
  rusage usage{};
  if (wait4(pid, &status, 0, &usage) != pid) throw std::runtime_error("wait4 failed");
  const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    throw std::runtime_error(argv[0] + " " + (argv.size() > 1 ? argv[1] : "") + " failed");
  }
  return {seconds, to_seconds(usage.ru_utime) + to_seconds(usage.ru_stime), usage.ru_minflt};
}

double median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  const size_t n = values.size();
  return n % 2 == 1 ? values[n / 2] : 0.5 * (values[n / 2 - 1] + values[n / 2]);
}

struct Summary {
  double median_s = 0.0, min_s = 0.0, max_s = 0.0;
  double median_cpu_s = 0.0;
  long minor_faults = 0;
};

Summary measure(const std::vector<std::string>& argv, int runs) {
  for (int i = 0; i < kWarmupRuns; ++i) run_once(argv);
  std::vector<double> times, cpu_times;
  long faults = 0;
  for (int i = 0; i < runs; ++i) {
    const Run r = run_once(argv);
    times.push_back(r.seconds);
    cpu_times.push_back(r.cpu_seconds);
    faults = r.minor_faults;
  }
  return {median(times), *std::min_element(times.begin(), times.end()),
          *std::max_element(times.begin(), times.end()), median(cpu_times), faults};
}

std::string load_average() {
  double load[3] = {0, 0, 0};
  if (getloadavg(load, 3) != 3) return "unknown";
  char text[64];
  std::snprintf(text, sizeof text, "%.2f %.2f %.2f", load[0], load[1], load[2]);
  return text;
}

std::string today() {
  const std::time_t now = std::time(nullptr);
  char text[32];
  std::strftime(text, sizeof text, "%Y-%m-%d %H:%M", std::localtime(&now));
  return text;
}

std::vector<std::string> paper_scenarios() {
  std::vector<std::string> files;
  for (const auto& entry :
       std::filesystem::directory_iterator(std::filesystem::path(RALP_SOURCE_DIR) / "scenarios/paper")) {
    if (entry.path().extension() == ".json") files.push_back(entry.path().string());
  }
  std::sort(files.begin(), files.end());
  return files;
}

void print_row(const std::string& label, const Summary& s) {
  std::printf("%-40s %8.1f %8.1f %8.1f %8.1f %8ld\n", label.c_str(), s.median_s * 1e3,
              s.min_s * 1e3, s.max_s * 1e3, s.median_cpu_s * 1e3, s.minor_faults);
}

}  // namespace

int main(int argc, char** argv) {
  int runs = kDefaultRuns;
  if (argc == 3 && std::string(argv[1]) == "--runs") runs = std::atoi(argv[2]);
  if (runs < 1 || (argc != 1 && argc != 3)) {
    std::fprintf(stderr, "usage: startup [--runs N]   (N >= 1)\n");
    return 2;
  }
  try {
    const std::vector<std::string> scenarios = paper_scenarios();
    std::vector<std::string> check = {RALP_BINARY, "scenario", "check"};
    check.insert(check.end(), scenarios.begin(), scenarios.end());
    std::printf("startup: %d runs of each command after %d unrecorded; %ld CPUs online, load "
                "average %s, %s\n\n",
                runs, kWarmupRuns, sysconf(_SC_NPROCESSORS_ONLN), load_average().c_str(),
                today().c_str());
    std::printf("%-40s %8s %8s %8s %8s %8s\n", "command", "median", "min", "max", "cpu", "minor");
    std::printf("%-40s %8s %8s %8s %8s %8s\n", "", "wall ms", "wall ms", "wall ms", "ms",
                "faults");
    print_row("/bin/true", measure({"/bin/true"}, runs));
    print_row("empty C++ program", measure({RALP_EMPTY_PROGRAM}, runs));
    const Summary version = measure({RALP_BINARY, "--version"}, runs);
    print_row("ralp --version", version);
    const Summary checked = measure(check, runs);
    print_row("ralp scenario check (" + std::to_string(scenarios.size()) + " paper files)",
              checked);
    std::printf("\nmedian cpu is the median of user + system time; minor faults are the last "
                "run's.\ntarget: a median wall time under %.0f ms each: --version %s, scenario "
                "check %s\n",
                kTargetSeconds * 1e3, version.median_s < kTargetSeconds ? "meets it" : "misses it",
                checked.median_s < kTargetSeconds ? "meets it" : "misses it");
  } catch (const std::exception& e) {
    std::fprintf(stderr, "startup: %s\n", e.what());
    return 1;
  }
  return 0;
}
