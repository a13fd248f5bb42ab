// `ralp sweep`: a scenario over axes of workers, bandwidth, batch, device, PS count and latency,
// the points in worker processes (and across MPI ranks under mpirun), streamed to CSV in point
// order and gathered into JSON.
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <map>
#include <memory>

#include "commands.hpp"
#include "ralp/results/training_figures.hpp"
#include "ralp/sweep/output.hpp"
#include "ralp/sweep/ranking.hpp"
#include "ralp/sweep/ranks.hpp"
#include "ralp/sweep/run.hpp"
#include "ralp/sweep/spec.hpp"

namespace ralp::cli {
namespace {

struct SweepCommandOptions {
  std::string input;
  std::string out = "sweep-out";
  std::string fidelity = "event";
  CLI::Option* fidelity_option = nullptr;
  int jobs = 0;
  bool resume = false;
  bool quiet = false;
  std::string deadline;
  std::map<std::string, std::string> lists;
  std::vector<std::pair<std::string, CLI::Option*>> axis_options;
};

std::string option_name(const std::string& axis) {
  std::string out = axis;
  for (char& c : out) c = c == '_' ? '-' : c;
  return "--" + out;
}

sweep::SweepSpec read_spec(const SweepCommandOptions& o) {
  sweep::SweepSpec spec;
  const Json document = read_json_file(o.input);
  if (sweep::is_sweep_file(document)) {
    spec = sweep::read_sweep_file(o.input);
  } else {
    spec.base = o.input;
    spec.base_path = o.input;
  }
  for (const auto& [axis, option] : o.axis_options) {
    if (option->count() == 0) continue;
    sweep::set_axis(spec, {axis, sweep::expand_axis_list(axis, o.lists.at(axis), "",
                                                         option_name(axis))});
  }
  if (o.fidelity_option->count() > 0) spec.fidelity = o.fidelity;
  return spec;
}

// Progress on stderr: rewritten in place on a terminal, else a line every few seconds.
class Progress {
 public:
  Progress(bool enabled, size_t total)
      : enabled_(enabled && total > 0), tty_(isatty(STDERR_FILENO) != 0), total_(total) {}

  void point_done(const sweep::SweepPoint& point) {
    ++done_;
    if (!enabled_) return;
    const auto now = std::chrono::steady_clock::now();
    const double elapsed = std::chrono::duration<double>(now - start_).count();
    if (!tty_ && done_ < total_ &&
        std::chrono::duration<double>(now - last_).count() < kLineInterval) {
      return;
    }
    last_ = now;
    const double eta =
        elapsed / static_cast<double>(done_) * static_cast<double>(total_ - done_);
    char line[512];
    std::snprintf(line, sizeof line,
                  "sweep: %zu/%zu points, last point %zu (%s), %.0f s elapsed, about %.0f s left",
                  done_, total_, point.index, point.describe().c_str(), elapsed, eta);
    if (tty_) {
      std::cerr << "\r" << line << "\033[K" << std::flush;
    } else {
      std::cerr << line << '\n' << std::flush;
    }
  }

  void finish() const {
    if (enabled_ && tty_) std::cerr << "\r\033[K" << std::flush;
  }

 private:
  static constexpr double kLineInterval = 5.0;
  bool enabled_;
  bool tty_;
  size_t total_;
  size_t done_ = 0;
  std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
  std::chrono::steady_clock::time_point last_ = start_;
};

// `started` turns true once every rank has begun running points.
// Rows a ranking table shows; sweep.csv holds every row.
constexpr size_t kRankedRows = 10;

std::string cost_text(const sweep::SweepRow& row) {
  return row.cost ? with_commas(std::llround(*row.cost)) + " " + row.currency : "-";
}

void print_ranked(const std::vector<sweep::SweepRow>& rows, const std::vector<size_t>& order,
                  const std::string& title) {
  std::cout << title << " (" << std::min(order.size(), kRankedRows) << " of " << rows.size()
            << " rows; every row in sweep.csv):\n";
  TextTable table({{"rank"},
                   {"point"},
                   {"values", TextTable::Align::left},
                   {"strategy", TextTable::Align::left},
                   {"GPUs"},
                   {"images/s"},
                   {"efficiency"},
                   {"time to train"},
                   {"cost"}});
  for (size_t k = 0; k < order.size() && k < kRankedRows; ++k) {
    const sweep::SweepRow& r = rows[order[k]];
    table.add_row({std::to_string(k + 1), std::to_string(r.point), r.values, r.strategy,
                   std::to_string(r.gpus), with_commas(std::llround(r.images_per_s)),
                   r.scaling_efficiency ? format_efficiency(*r.scaling_efficiency) : "-",
                   format_seconds(Seconds(r.time_to_train_s)), cost_text(r)});
  }
  table.print(std::cout);
}

// The sweep's answer for a buyer: its rows by time and by cost to train, and the cheapest (or,
// without prices, the fastest) that trains within the deadline.
void print_ranking(const std::vector<sweep::SweepRow>& rows, std::optional<double> deadline) {
  if (rows.empty()) return;
  const sweep::SweepRanking ranking = sweep::rank_rows(rows, deadline);
  print_ranked(rows, ranking.by_time, "fastest to train");
  if (!ranking.by_cost.empty()) {
    print_ranked(rows, ranking.by_cost, "cheapest to train");
  } else {
    std::cout << "cost: no cluster.price_per_hour in the scenario (--price-per-hour on simulate "
                 "sets one)\n";
  }
  if (!deadline) return;
  const std::string within = "within " + format_seconds(Seconds(*deadline));
  if (!ranking.within_deadline) {
    const sweep::SweepRow& fastest = rows[ranking.by_time.front()];
    std::cout << "no row trains " << within << "; the fastest, point " << fastest.point << " ("
              << fastest.values << ") " << fastest.strategy << ", takes "
              << format_seconds(Seconds(fastest.time_to_train_s)) << '\n';
    return;
  }
  const sweep::SweepRow& r = rows[*ranking.within_deadline];
  std::cout << (r.cost ? "cheapest " : "fastest ") << within << ": point " << r.point << " ("
            << r.values << ") " << r.strategy << ", " << r.gpus << " GPUs, "
            << format_seconds(Seconds(r.time_to_train_s)) << ", " << cost_text(r);
  if (r.scaling_efficiency) {
    std::cout << ", " << format_efficiency(*r.scaling_efficiency) << " scaling efficiency";
  }
  std::cout << '\n';
}

int run_sweep(const SweepCommandOptions& o, sweep::Ranks& ranks, bool& started) {
  std::optional<double> deadline;
  if (!o.deadline.empty()) {
    const auto parsed = parse_seconds(o.deadline);
    if (!parsed || parsed->value() <= 0.0) {
      throw InputError("", "--deadline",
                       "is \"" + o.deadline + "\", expected a duration such as \"8h\", \"90min\" "
                       "or \"3d\"");
    }
    deadline = parsed->value();
  }
  const sweep::SweepSpec spec = read_spec(o);
  const std::vector<sweep::SweepPoint> points = sweep::make_points(spec);
  const std::filesystem::path dir = o.out;
  // Rank 0 prepares the folder and reads what a resumed run already has; every rank learns how
  // many points are done (or -1: rank 0 refused and reports why).
  std::vector<Json> finished;
  if (ranks.rank() == 0) {
    try {
      std::error_code ec;
      std::filesystem::create_directories(dir, ec);
      if (!std::filesystem::is_directory(dir, ec) || access(dir.c_str(), W_OK) != 0) {
        throw InputError("", "--out", "names " + dir.string() +
                                          ", which is not a writable folder and cannot be made one");
      }
      if (o.resume) finished = sweep::read_finished_points(dir, spec, points);
    } catch (...) {
      ranks.broadcast(-1);
      throw;
    }
  }
  const int64_t skipped = ranks.broadcast(static_cast<int64_t>(finished.size()));
  if (skipped < 0) return kExitBadInput;
  started = true;
  std::vector<size_t> mine;
  for (size_t i = static_cast<size_t>(skipped); i < points.size(); ++i) {
    if (static_cast<int>(i % static_cast<size_t>(ranks.size())) == ranks.rank()) mine.push_back(i);
  }
  sweep::PoolOptions pool;
  pool.jobs = o.jobs;
  if (ranks.rank() != 0) {
    sweep::run_points(points, mine, spec.fidelity, pool, [&](size_t index, const Json& outcome) {
      ranks.send_result(index, outcome.dump());
    });
    return kExitOk;
  }
  const size_t skipped_points = finished.size();
  sweep::SweepWriter writer(dir, spec, points, std::move(finished));
  Progress progress(!o.quiet, points.size() - skipped_points);
  const auto accept = [&](size_t index, const Json& outcome) {
    writer.add(index, outcome);
    progress.point_done(points.at(index));
  };
  const auto receive = [&](bool wait) {
    while (auto message = ranks.receive_result(wait)) {
      accept(message->first, Json::parse(message->second));
      if (wait) break;
    }
  };
  if (ranks.size() > 1) pool.idle = [&] { receive(false); };
  sweep::run_points(points, mine, spec.fidelity, pool, accept);
  while (writer.written() < points.size()) receive(true);
  writer.finish();
  progress.finish();
  size_t rows = 0;
  for (const auto& p : points) rows += p.scenario.strategies.size();
  std::cout << "sweep: " << points.size() << " points (" << skipped_points << " resumed), "
            << rows << " rows, " << spec.fidelity << " fidelity: wrote "
            << (dir / "sweep.csv").string() << " and " << (dir / "sweep.json").string() << '\n';
  print_ranking(sweep::sweep_rows(points, writer.entries()), deadline);
  return kExitOk;
}

}  // namespace

void add_sweep_command(CLI::App& app, Action& action) {
  auto options = std::make_shared<SweepCommandOptions>();
  auto* cmd = app.add_subcommand(
      "sweep",
      "Run a scenario over axes of workers, bandwidth, batch and more.\n"
      "Run a scenario over axes of workers, bandwidth, batch, device, parameter servers, "
      "latency, devices per node and transport (the cartesian product, in that order), points "
      "in parallel "
      "worker processes, and "
      "write DIR/sweep.csv (in point order, as points finish) and DIR/sweep.json "
      "(docs/sweep.md); under mpirun the points are divided among the ranks");
  cmd->add_option("input", options->input,
                  "A scenario file, or a sweep file (a base scenario and its axes, docs/sweep.md)")
      ->required();
  const std::map<std::string, std::string> helps{
      {"workers", "Worker counts: 1,2,4..64 (A..B doubles from A to B; A-B every integer; A-B:S "
                  "every S-th)"},
      {"bandwidth", "NIC bandwidths: 1Gbps,10Gbps"},
      {"batch", "Batches per worker, as --workers"},
      {"device", "Worker device profiles: gtx1080ti,v100"},
      {"parameter_servers", "Parameter server counts, as --workers"},
      {"latency", "Link latencies: 5us,50us"},
      {"devices_per_node", "Devices per node (workers grouped in order), as --workers"},
      {"transport", "Transports every strategy moves its bytes with: ideal,tf-grpc (ralp "
                    "transport list)"},
      {"precision", "Precisions the steps compute in: fp32,tf32,fp16,bf16"},
      {"strategies", "The strategies every point runs: ps,ralp,allreduce,hybrid (a label of the "
                     "scenario, else a kind with default options)"}};
  for (const std::string& axis : sweep::axis_names()) {
    CLI::Option* option = cmd->add_option(option_name(axis), options->lists[axis], helps.at(axis))
                              ->type_name("LIST")
                              ->group("Axes");
    options->axis_options.emplace_back(axis, option);
  }
  options->fidelity_option =
      cmd->add_option("--fidelity", options->fidelity,
                      "event: SimGrid's event simulation (default); analytic: the closed-form "
                      "step model, as simulate --fidelity analytic")
          ->check(CLI::IsMember({"event", "analytic"}));
  cmd->add_option("--out", options->out, "Folder for sweep.csv and sweep.json (default sweep-out)");
  cmd->add_option("--jobs", options->jobs, "Points at once, in as many worker processes (default: "
                                           "one per CPU; per rank under mpirun)")
      ->check(CLI::Range(1, 1024));
  cmd->add_option("--deadline", options->deadline,
                  "Name the cheapest point and strategy that trains within this time, e.g. 8h "
                  "(the fastest within it where the scenario has no cluster.price_per_hour)")
      ->type_name("TIME");
  cmd->add_flag("--resume", options->resume,
                "Keep the points DIR/sweep.csv already holds (same sweep only) and run the rest");
  cmd->add_flag("--quiet", options->quiet, "No progress lines on stderr");
  cmd->callback([&action, options] {
    action = [options] {
      sweep::Ranks& ranks = sweep::Ranks::world();
      bool started = false;
      if (ranks.size() == 1) return run_sweep(*options, ranks, started);
      // Bad input found before the points start is the same on every rank (they read the same
      // files): rank 0 reports it, the others stay silent. A failure once points run stops
      // every rank.
      try {
        return run_sweep(*options, ranks, started);
      } catch (const InputError& e) {
        if (!started && ranks.rank() != 0) return kExitBadInput;
        if (!started) throw;
        std::cerr << "error: " << e.what() << '\n';
        ranks.abort(kExitBadInput);
      } catch (const std::exception& e) {
        std::cerr << "error: rank " << ranks.rank() << ": " << e.what() << '\n';
        ranks.abort(kExitFailure);
      }
    };
  });
}

}  // namespace ralp::cli
