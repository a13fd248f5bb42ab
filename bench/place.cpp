// Benchmark: the placement search's speed. For each zoo model (16 workers, 10 Gbps star) and a
// synthetic 1,000-layer residual DAG: how many suffixes and candidate heads it has, the analytic
// ranking of every candidate, the whole "auto" search (ranking, then the best 3 simulated) and
// brute force (every suffix simulated), side by side; the
// shipped ResNet-50 (16 workers) and Inception-v3 (8 workers) searches; each zoo model's ps
// variables on 4 shards round-robin, greedy and balanced; and one analytic step of VGG-16 on
// 65,536 workers per strategy.
//
// With --shipped, also every shipped scenario's cut "auto" searched and brute-forced (every
// candidate head simulated); with
// --model NAME, only that zoo model's row of the first table.
//
//   build/bench/place [--jobs N] [--no-brute] [--brute-dag] [--shipped]
#include <sys/utsname.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <functional>
#include <optional>
#include <string>
#include <thread>

#include "ralp/model/model_zoo.hpp"
#include "ralp/placement/analytic.hpp"
#include "ralp/placement/heads.hpp"
#include "ralp/placement/search.hpp"
#include "ralp/placement/shards.hpp"
#include "ralp/placement/sim_evaluator.hpp"
#include "ralp/spec/scenario.hpp"

namespace {

using ralp::Scenario;

double seconds_of(const std::function<void()>& work) {
  const auto start = std::chrono::steady_clock::now();
  work();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

Scenario scenario(const std::string& model, int64_t workers, const std::string& strategies) {
  const std::string text = R"({"name": "bench", "model": )" + model +
                           R"(, "batch_per_worker": 32, "cluster": {"workers": )" +
                           std::to_string(workers) + R"(, "worker_device": "gtx1080ti",
      "platform": {"kind": "star", "nic_bandwidth": "10Gbps", "latency": "50us"}},
      "network_model": "tcp", "strategies": [)" + strategies + R"(], "steps": 2})";
  return ralp::parse_scenario(ralp::parse_json_text(text, "bench"), "bench", ".");
}

// input -> conv -> 248 residual blocks (conv, relu, conv, add) -> pool -> flatten -> fc -> loss.
std::string residual_dag() {
  std::string layers = R"({"name": "stem", "type": "conv2d", "out_channels": 16, "kernel": 3, "padding": 1})";
  std::string previous = "stem";
  for (int b = 0; b < 248; ++b) {
    const std::string n = std::to_string(b);
    layers += R"(, {"name": "c)" + n + R"(a", "type": "conv2d", "out_channels": 16, "kernel": 3, "padding": 1, "inputs": [")" + previous + R"("]})";
    layers += R"(, {"name": "r)" + n + R"(", "type": "relu"})";
    layers += R"(, {"name": "c)" + n + R"(b", "type": "conv2d", "out_channels": 16, "kernel": 3, "padding": 1})";
    layers += R"(, {"name": "a)" + n + R"(", "type": "add", "inputs": [")" + previous + R"(", "c)" + n + R"(b"]})";
    previous = "a" + n;
  }
  layers += R"(, {"name": "pool", "type": "max_pool", "kernel": 2, "stride": 2})";
  layers += R"(, {"name": "flat", "type": "flatten"}, {"name": "fc", "type": "fc", "out_features": 1000})";
  layers += R"(, {"name": "loss", "type": "softmax_cross_entropy"})";
  return R"({"name": "residual1000", "input": [16, 32, 32], "layers": [)" + layers + "]}";
}

// The ranking as the search makes it: exact for its best K.
void rank_all(const Scenario& s) {
  (void)ralp::placement::rank_cuts(s, s.strategies[0],
                                   static_cast<size_t>(ralp::placement::PlaceOptions{}.top_k));
}

struct BenchOptions {
  int jobs = static_cast<int>(std::thread::hardware_concurrency());
  bool brute = true;
  bool brute_dag = false;
  bool shipped = false;
  std::string only;  // one zoo model's row
};

// Reads the command line; nullopt for a bad one.
std::optional<BenchOptions> parse_options(int argc, char** argv) {
  BenchOptions o;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--jobs") == 0 && i + 1 < argc) {
      o.jobs = std::atoi(argv[++i]);
    } else if (std::strcmp(argv[i], "--no-brute") == 0) {
      o.brute = false;
    } else if (std::strcmp(argv[i], "--brute-dag") == 0) {
      o.brute_dag = true;
    } else if (std::strcmp(argv[i], "--shipped") == 0) {
      o.shipped = true;
    } else if (std::strcmp(argv[i], "--model") == 0 && i + 1 < argc) {
      o.only = argv[++i];
    } else {
      return std::nullopt;
    }
  }
  return o;
}

// The context line: the machine, the jobs, the load and the date.
void print_context(int jobs) {
  utsname u{};
  uname(&u);
  const std::time_t now = std::time(nullptr);
  char date[32];
  std::strftime(date, sizeof date, "%Y-%m-%d %H:%M UTC", std::gmtime(&now));
  std::string load;
  {
    std::ifstream in("/proc/loadavg");
    std::getline(in, load);
  }
  std::printf("bench/place: %s %s, %u hardware threads, %d simulation jobs, load %s, %s\n",
              u.sysname, u.machine, std::thread::hardware_concurrency(), jobs, load.c_str(), date);
}

// One row of the search table: the ranking's, the search's and brute force's times, and the
// search's cut against brute force's.
void print_search_row(const std::string& name, const Scenario& s, bool with_brute,
                      const ralp::sim::SimulateOptions& options) {
  const double rank = seconds_of([&] { rank_all(s); });
  ralp::sim::ResolvedStrategy chosen;
  const double search = seconds_of([&] { chosen = ralp::placement::resolve_cuts(s, options).front(); });
  const std::string name_chosen = ralp::head_name(s.model, *chosen.cut);
  double chosen_s = 0.0;
  for (const auto& t : chosen.search) {
    if (t.cut == name_chosen) chosen_s = t.step_time_mean_s;
  }
  std::string brute_text = "-";
  std::string cuts = name_chosen;
  if (with_brute) {
    ralp::sim::ResolvedStrategy best;
    const double b = seconds_of([&] { best = ralp::sim::resolve_cuts(s, options).front(); });
    double best_s = best.search.front().step_time_mean_s;
    for (const auto& t : best.search) best_s = std::min(best_s, t.step_time_mean_s);
    char t[32];
    std::snprintf(t, sizeof t, "%.3f s", b);
    brute_text = t;
    char gap[64];
    std::snprintf(gap, sizeof gap, " (%+.2f%%)", 100.0 * (chosen_s - best_s) / best_s);
    cuts += " / " + ralp::head_name(s.model, *best.cut) + gap;
  }
  std::printf("%-14s %8zu %6zu %10.3f s %10.3f s %12s  %s\n", name.c_str(),
              s.model.cut_points().size(), ralp::placement::candidate_heads(s.model).size(), rank,
              search, brute_text.c_str(), cuts.c_str());
  std::fflush(stdout);
}

// Shard assignment: ps on 4 shards (16 workers), the busiest shard's analytic load and the
// analytic step under each assignment, and how long the balanced one took to find.
void print_shards() {
  std::printf("\nshards: ps on 4 PS, 16 workers; busiest shard's load / analytic step\n");
  std::printf("%-14s %22s %22s %22s %10s\n", "model", "round_robin", "greedy", "balanced", "balancing");
  for (const auto& entry : ralp::zoo_entries()) {
    Scenario s = scenario("\"" + entry.name + "\"", 16, R"("ps")");
    s.parameter_servers = 4;
    std::vector<ralp::placement::ShardingOption> o;
    const double t = seconds_of([&] { o = ralp::placement::compare_shardings(s, s.strategies[0], std::nullopt); });
    const auto cell = [](const ralp::placement::ShardingOption& x) {
      char text[48];
      std::snprintf(text, sizeof text, "%.1f / %.1f ms", 1e3 * x.busiest_s, 1e3 * x.analytic_s);
      return std::string(text);
    };
    std::printf("%-14s %22s %22s %22s %8.3f s\n", entry.name.c_str(), cell(o[0]).c_str(),
                cell(o[1]).c_str(), cell(o[2]).c_str(), t);
    std::fflush(stdout);
  }
}

// The shipped scenarios' files, sorted.
std::vector<std::filesystem::path> shipped_scenarios() {
  std::vector<std::filesystem::path> files;
  for (const char* folder : {"scenarios/paper", "scenarios/modern"}) {
    for (const auto& e : std::filesystem::directory_iterator(std::filesystem::path(RALP_SOURCE_DIR) / folder)) {
      files.push_back(e.path());
    }
  }
  std::sort(files.begin(), files.end());
  return files;
}

// Each shipped scenario's cut "auto" strategies: the search's cut against brute force (every
// candidate head the search ranks, simulated).
void print_shipped_against_brute_force(const ralp::sim::SimulateOptions& options) {
  std::printf("\nshipped scenarios, cut \"auto\": the search's cut against brute force\n");
  for (const auto& file : shipped_scenarios()) {
    Scenario s = ralp::load_scenario(file);
    std::erase_if(s.strategies, [](const ralp::StrategySpec& spec) {
      return !(spec.kind == ralp::StrategyKind::ralp || spec.kind == ralp::StrategyKind::hybrid) ||
             spec.cut;
    });
    if (s.strategies.empty()) continue;
    const auto searched = ralp::placement::resolve_cuts(s, options);
    for (size_t i = 0; i < s.strategies.size(); ++i) {
      const auto candidates = ralp::placement::candidates(s, s.strategies[i]);
      std::vector<std::optional<ralp::Head>> heads;
      for (const auto& c : candidates) heads.emplace_back(c.head);
      ralp::placement::SimulatedEvaluator evaluator(options);
      const std::vector<double> times = evaluator.step_times(s, s.strategies[i], heads);
      const std::string chosen_name = ralp::head_name(s.model, *searched[i].cut);
      size_t best = 0;
      double chosen = 0.0;
      for (size_t k = 0; k < candidates.size(); ++k) {
        if (times[k] < times[best]) best = k;
        if (candidates[k].name == chosen_name) chosen = times[k];
      }
      std::printf("  %-30s %-8s %4zu heads: brute force %10.3f ms (%s), search %10.3f ms (%+.2f%%, %s)\n",
                  file.stem().c_str(), s.strategies[i].label.c_str(), candidates.size(),
                  1e3 * times[best], candidates[best].name.c_str(), 1e3 * chosen,
                  100.0 * (chosen - times[best]) / times[best], chosen_name.c_str());
      std::fflush(stdout);
    }
  }
}

// One analytic step of VGG-16 on 65,536 workers per strategy, and how long it took to compute.
void print_large_analytic() {
  std::printf("\nanalytic step of VGG-16 on 65,536 workers:\n");
  const Scenario big = scenario("\"vgg16\"", 65536,
                                R"("ps", {"name": "ralp", "cut": "fc6"}, "allreduce", {"name": "hybrid", "cut": "fc6"})");
  for (const auto& spec : big.strategies) {
    const auto cut = spec.cut ? big.model.find(*spec.cut) : std::nullopt;
    double step = 0.0;
    const double t = seconds_of([&] { step = ralp::placement::estimate_strategy(big, spec, cut).step_time_s; });
    std::printf("  %-10s step %10.3f s, computed in %.3f ms\n", spec.label.c_str(), step, 1e3 * t);
  }
}

}  // namespace

int main(int argc, char** argv) {
  const std::optional<BenchOptions> o = parse_options(argc, argv);
  if (!o) {
    std::fprintf(stderr,
                 "usage: place [--jobs N] [--no-brute] [--brute-dag] [--shipped] [--model NAME]\n");
    return 2;
  }
  print_context(o->jobs);
  const ralp::sim::SimulateOptions options{.jobs = o->jobs};

  // heads: every candidate the search ranks (placement/heads.hpp); suffixes: those that are
  // suffixes of the file order (the brute force simulates every suffix).
  std::printf("\n%-14s %8s %6s %12s %12s %12s  %s\n", "model", "suffixes", "heads", "ranking",
              "search", "brute force", "search's cut / brute force's");
  for (const auto& entry : ralp::zoo_entries()) {
    if (!o->only.empty() && entry.name != o->only) continue;
    print_search_row(entry.name,
                     scenario("\"" + entry.name + "\"", 16, R"({"name": "ralp", "cut": "auto"})"),
                     o->brute, options);
  }
  if (!o->only.empty()) return 0;
  print_search_row("residual1000", scenario(residual_dag(), 16, R"({"name": "ralp", "cut": "auto"})"),
                   o->brute_dag, options);
  print_shards();

  std::printf("\nwhole \"auto\" search of a shipped scenario (every auto strategy):\n");
  for (const char* file : {"scenarios/paper/resnet50-10gbe-16w-b32.json",
                           "scenarios/paper/inception_v3-10gbe-8w-b32.json"}) {
    const Scenario s = ralp::load_scenario(std::string(RALP_SOURCE_DIR) + "/" + file);
    const double t = seconds_of([&] { (void)ralp::placement::resolve_cuts(s, options); });
    std::printf("  %-48s %.3f s\n", file, t);
  }

  if (o->shipped) print_shipped_against_brute_force(options);
  print_large_analytic();
  return 0;
}
