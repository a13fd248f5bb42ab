// The validation run: calibration, the grid of real and simulated runs, and their comparison.
#include "ralp/validate/validate_run.hpp"

#include <sched.h>
#include <signal.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>

#include "ralp/core/cpu_stat.hpp"
#include "ralp/validate/process.hpp"

namespace ralp::validate {
namespace {

namespace fs = std::filesystem;

// Link probes: payloads from 1 KiB growing 4x while one transfer takes under this long at the
// rate, at least kMinProbeSizes of them. From 1 KiB, as most of a step's messages are small (a
// batch norm's parameters, a first convolution's), and the transport sends those at once where
// it asks the receiver first for 64 KiB and more, so a small message costs the sender far less
// than a large one (the probe's CPU series gives the cost of each size).
constexpr double kProbeMaxTransferS = 0.5;
constexpr int64_t kProbeFirstSize = 1024;
constexpr size_t kMinProbeSizes = 3;
constexpr int kProbeRepetitions = 5;
constexpr int kProbeRoundTrips = 200;
// A subprocess's deadline beyond its expected time.
constexpr double kSlackS = 90.0;
constexpr double kSlackFactor = 4.0;
constexpr double kSimulateTimeoutS = 300.0;
constexpr double kCalibrateTimeoutS = 1800.0;
constexpr size_t kFailureLines = 12;
// A fitted goodput this far above the named rate is noise; beyond it, the rate is wrong.
constexpr double kMaxGoodputOverRate = 1.1;

double now_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

std::string read_loadavg() {
  std::ifstream in("/proc/loadavg");
  std::string a, b, c;
  in >> a >> b >> c;
  return a + " " + b + " " + c;
}

int affinity_cores() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) != 0) return 1;
  return std::max(1, CPU_COUNT(&set));
}

std::string fixed(double v, int digits) {
  char buffer[64];
  std::snprintf(buffer, sizeof buffer, "%.*f", digits, v);
  return buffer;
}

std::string duration(double s) {
  if (s < 60.0) return fixed(s, 0) + " s";
  const int minutes = static_cast<int>(s / 60.0);
  return std::to_string(minutes) + " min " + std::to_string(static_cast<int>(s) - 60 * minutes) + " s";
}

void write_text(const fs::path& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << text;
  if (!out) throw std::runtime_error("cannot write " + path.string());
}

std::map<std::string, std::string> string_map(const Json& j) {
  std::map<std::string, std::string> m;
  if (!j.is_object()) return m;
  for (const auto& [k, v] : j.items()) {
    if (v.is_string()) m[k] = v.get<std::string>();
  }
  return m;
}

// A profile's /measured/provenance, as strings; empty when it has none.
std::map<std::string, std::string> provenance_of(const Json& profile) {
  if (!profile.is_object() || !profile.contains("measured") || !profile.at("measured").is_object()) {
    return {};
  }
  return string_map(profile.at("measured").value("provenance", Json::object()));
}

// Why a profile cannot predict points in `precision` (it has no section of it:
// /measured/precision_fitted/<precision>), or nullopt when it can.
std::optional<std::string> lacks_precision(const Json& profile, Precision precision) {
  if (precision == Precision::fp32) return std::nullopt;
  const std::string name(to_string(precision));
  const Json* measured = profile.contains("measured") ? &profile.at("measured") : nullptr;
  if (measured != nullptr && measured->contains("precision_fitted") &&
      measured->at("precision_fitted").contains(name)) {
    return std::nullopt;
  }
  return "has no " + name + " section (precision_fitted." + name + "), expected one made by "
         "ralp calibrate --precision " + name;
}

// Whether a profile holds ralp calibrate's time-sharing measurement (/measured/time_sharing).
bool measures_time_sharing(const Json& profile) {
  return profile.is_object() && profile.contains("measured") && profile.at("measured").is_object() &&
         profile.at("measured").contains("time_sharing");
}

// The hosts a point runs on, and how to start MPI across them.
class Hosts {
 public:
  virtual ~Hosts() = default;
  virtual void shape(const LinkRate& rate) = 0;
  // mpirun's command line for `ranks` ranks with the given pins (one per rank), before the
  // program; `folder` takes the hostfile and agent script.
  virtual std::vector<std::string> mpirun(int ranks, const std::vector<std::optional<int>>& pins,
                                          const fs::path& folder) = 0;
  // Kills whatever a failed run left on the hosts.
  virtual void sweep() = 0;
  [[nodiscard]] virtual int capacity() const = 0;
};

std::vector<std::string> common_mca(const std::string& network) {
  std::vector<std::string> a = {"--mca", "pml", "ob1", "--mca", "btl", "tcp,self",
                                "--mca", "mpi_yield_when_idle", "1", "--bind-to", "none"};
  if (!network.empty()) {
    a.insert(a.end(), {"--mca", "btl_tcp_if_include", network, "--mca", "oob_tcp_if_include",
                       network});
  }
  if (std::getenv("RALP_CLUSTER_FAULT") != nullptr) a.insert(a.end(), {"-x", "RALP_CLUSTER_FAULT"});
  return a;
}

class NamespaceHosts final : public Hosts {
 public:
  explicit NamespaceHosts(int hosts, const std::string& mpirun)
      : testbed_(own_prefix(), hosts), mpirun_(mpirun) {}
  void shape(const LinkRate& rate) override { testbed_.shape(rate); }
  int capacity() const override { return testbed_.hosts(); }
  std::vector<std::string> mpirun(int ranks, const std::vector<std::optional<int>>& pins,
                                  const fs::path& folder) override {
    const fs::path hostfile = folder / "hosts";
    const fs::path agent = folder / "agent.sh";
    std::string hosts, cases;
    for (int r = 0; r < ranks; ++r) {
      hosts += testbed_.address(r) + " slots=1\n";
      const std::string pin =
          pins.at(static_cast<size_t>(r)) ? "taskset -c " + std::to_string(*pins[r]) + " " : "";
      cases += "  " + testbed_.address(r) + ") ns=" + testbed_.host_namespace(r) + "; name=host" +
               std::to_string(r) + "; pin=\"" + pin + "\";;\n";
    }
    write_text(hostfile, hosts);
    write_text(agent,
               "#!/bin/sh\n"
               "# mpirun's rsh agent: runs a command on the namespace host whose address it names,\n"
               "# with that host's own host name and, where the run pins ranks, its core.\n"
               "while [ \"${1#-}\" != \"$1\" ]; do shift; done\n"
               "host=\"$1\"; shift\n"
               "case \"$host\" in\n" +
                   cases +
                   "  *) echo \"agent.sh: unknown host $host\" >&2; exit 1;;\n"
                   "esac\n"
                   "exec ip netns exec \"$ns\" unshare --uts $pin sh -c \"hostname $name; $*\"\n");
    fs::permissions(agent, fs::perms::owner_all | fs::perms::group_read | fs::perms::others_read);
    std::vector<std::string> argv = in_namespace(testbed_.bridge_namespace());
    argv.insert(argv.end(), {mpirun_, "--hostfile", hostfile.string(), "-np", std::to_string(ranks),
                             "--mca", "plm_rsh_agent", fs::absolute(agent).string(), "--mca",
                             "plm_rsh_no_tree_spawn", "1"});
    const auto mca = common_mca(NamespaceTestbed::cidr());
    argv.insert(argv.end(), mca.begin(), mca.end());
    return argv;
  }
  void sweep() override {
    // Processes a failed run left behind: kill them, keeping the namespaces.
    for (const auto& ns : testbed_.namespaces()) {
      ProcessResult pids = run_process({"ip", "netns", "pids", ns},
                                       {.timeout_s = 30.0, .uninterruptible = true});
      std::istringstream in(pids.output);
      long pid = 0;
      while (in >> pid) {
        if (pid > 1) kill(static_cast<pid_t>(pid), SIGKILL);
      }
    }
  }

 private:
  NamespaceTestbed testbed_;
  std::string mpirun_;
};

class HostfileHosts final : public Hosts {
 public:
  HostfileHosts(const fs::path& hostfile, const std::string& network, const std::string& mpirun)
      : network_(network), mpirun_(mpirun) {
    std::ifstream in(hostfile);
    if (!in) throw InputError(hostfile.string(), "", "cannot be read");
    std::string line;
    while (std::getline(in, line)) {
      const size_t hash = line.find('#');
      if (hash != std::string::npos) line.erase(hash);
      std::istringstream words(line);
      std::string host;
      if (words >> host) hosts_.push_back(host);
    }
    if (hosts_.empty()) throw InputError(hostfile.string(), "", "lists no hosts");
  }
  void shape(const LinkRate&) override {}
  int capacity() const override { return static_cast<int>(hosts_.size()); }
  std::vector<std::string> mpirun(int ranks, const std::vector<std::optional<int>>&,
                                  const fs::path& folder) override {
    // One line per distinct host with its slot count: Open MPI refuses a host listed twice.
    std::vector<std::pair<std::string, int>> slots;
    for (int r = 0; r < ranks; ++r) {
      const std::string& host = hosts_.at(static_cast<size_t>(r));
      auto it = std::find_if(slots.begin(), slots.end(), [&](const auto& s) { return s.first == host; });
      if (it == slots.end()) {
        slots.emplace_back(host, 1);
      } else {
        ++it->second;
      }
    }
    std::string text;
    for (const auto& [host, n] : slots) text += host + " slots=" + std::to_string(n) + "\n";
    const fs::path hostfile = folder / "hosts";
    write_text(hostfile, text);
    std::vector<std::string> argv = {mpirun_, "--hostfile", hostfile.string(), "-np",
                                     std::to_string(ranks), "--map-by", "node"};
    const auto mca = common_mca(network_);
    argv.insert(argv.end(), mca.begin(), mca.end());
    return argv;
  }
  void sweep() override {}

 private:
  std::vector<std::string> hosts_;
  std::string network_;
  std::string mpirun_;
};

const std::map<std::string, std::string> kMpiEnv = {{"OMPI_ALLOW_RUN_AS_ROOT", "1"},
                                                     {"OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1"}};

std::vector<int64_t> probe_sizes(const LinkRate& rate) {
  std::vector<int64_t> sizes;
  for (int64_t s = kProbeFirstSize;; s *= 4) {
    const bool fits = static_cast<double>(s) / rate.bytes_per_s() <= kProbeMaxTransferS;
    if (!fits && sizes.size() >= kMinProbeSizes) break;
    sizes.push_back(s);
  }
  return sizes;
}

// The models of a grid, each with its batch per worker, in the order of the grid's points.
using ModelBatches = std::vector<std::pair<std::string, int64_t>>;

// What the grid asks of the run: the models to calibrate, and the most ranks a point takes.
struct GridNeeds {
  ModelBatches models;
  int max_ranks = 2;
};

class Runner {
 public:
  explicit Runner(const ValidateOptions& o) : o_(o) {}

  ValidationRun run();

 private:
  void say(const std::string& line) const {
    if (o_.progress) o_.progress(line);
  }
  ProfileChoice choose_profile(const std::vector<std::pair<std::string, int64_t>>& models);
  // Runs `ralp calibrate` on the models into `file`, with its progress lines.
  void calibrate_kernels(const std::vector<std::pair<std::string, int64_t>>& models,
                         const std::string& name, const fs::path& file);
  // Runs `ralp link-probe` across two hosts shaped at `rate`.
  LinkProbe probe_link(const LinkRate& rate);
  // Fits a rate's probe (`per_message`: the CPU times per message to keep), writes and reports it.
  NetworkFit fit_link(const LinkRate& rate, const LinkProbe& probe,
                      const std::optional<MessageCosts>& per_message);
  // `pass` counts from 0: the first pass's files go to points/ID, a later one's to
  // points/ID/pass-N. `steps`: the measured steps, or 0 to plan them from the prediction
  // (plan_steps); later passes run as many as the first, so that every pass measures alike.
  PointComparison run_point(const GridPoint& point, const NetworkFit& fit, const fs::path& profile,
                            int pass, int steps);
  // ralp simulate on a derived scenario; also writes its Chrome trace when `trace` is not empty,
  // and plays the device times a run measured when `replay` names its JSON.
  Json simulate(const fs::path& scenario, const fs::path& json, const std::string& label,
                const fs::path& trace = {}, const fs::path& replay = {});

  // The steps of run(), in order.
  GridNeeds needs_of(const std::vector<GridPoint>& grid) const;
  void open_hosts(int max_ranks);
  void calibrate_links(ValidationRun& run);
  // Every pass over the grid; per point, its comparison in each pass.
  std::vector<std::vector<PointComparison>> run_passes(const std::vector<GridPoint>& grid,
                                                       const ModelBatches& models,
                                                       ValidationRun& run);
  // The profile that predicts pass `pass`; for a later pass, measured now (unless --profile).
  fs::path profile_for_pass(int pass, const ModelBatches& models, ValidationRun& run);
  void check_speed(const ModelBatches& models, ValidationRun& run);

  const ValidateOptions& o_;
  std::unique_ptr<Hosts> hosts_;
  int cores_ = 1;
};

ProfileChoice Runner::choose_profile(const std::vector<std::pair<std::string, int64_t>>& models) {
  // Where a profile comes from: --profile named it, it was found in --out, or this run has just
  // measured it (then a load average above the cores, which lags the load by a minute, only
  // earns a warning).
  enum class Origin { named, found, fresh };
  auto usable = [&](const fs::path& file, Origin origin) -> std::optional<ProfileChoice> {
    const Json p = read_json_file(file);
    if (auto why = provenance_mismatch(o_.host, p, file.string())) {
      if (origin == Origin::named) {
        throw InputError(file.string(), "/measured/provenance",
                         "was measured on another host or software (" + *why +
                             "); calibrate here instead (leave out --profile)");
      }
      say("ralp validate: not reusing " + file.string() + ": " + *why);
      return std::nullopt;
    }
    if (auto load = measured_under_load(p, cores_); load && origin != Origin::named) {
      if (origin == Origin::found) {
        say("ralp validate: not reusing " + file.string() + ": " + *load);
        return std::nullopt;
      }
      say("ralp validate: warning: " + file.string() + " was " + *load +
          "; other work on this machine may have slowed its kernels");
    }
    if (const auto missing = lacks_precision(p, o_.precision)) {
      if (origin == Origin::named) throw InputError(file.string(), "/measured", *missing);
      say("ralp validate: not reusing " + file.string() + ": " + *missing);
      return std::nullopt;
    }
    if (origin != Origin::named && !profile_covers(p, models)) {
      say("ralp validate: not reusing " + file.string() + ": it lacks a model of the grid");
      return std::nullopt;
    }
    if (origin == Origin::found) {
      if (auto why = provenance_mismatch(calibration_settings(o_), p, file.string())) {
        say("ralp validate: not reusing " + file.string() + ": measured otherwise (" + *why + ")");
        return std::nullopt;
      }
      if (o_.threads == 1 && !measures_time_sharing(p)) {
        say("ralp validate: not reusing " + file.string() +
            ": it lacks the time-sharing measurement (made by an older ralp calibrate)");
        return std::nullopt;
      }
    }
    return ProfileChoice{.file = file,
                         .name = p.value("name", file.stem().string()),
                         .reused = true,
                         .provenance = provenance_of(p),
                         .time_sharing_slowdown = p.value("time_sharing_slowdown", 1.0)};
  };
  if (o_.profile) return *usable(*o_.profile, Origin::named);
  const std::string name = "validate-cpu-" + std::to_string(o_.threads) + "t";
  const fs::path file = o_.out / (name + ".json");
  if (fs::exists(file)) {
    if (auto choice = usable(file, Origin::found)) {
      say("ralp validate: reusing " + file.string() + " (measured on this host)");
      return *choice;
    }
  }
  calibrate_kernels(models, name, file);
  auto choice = usable(file, Origin::fresh);
  if (!choice) throw std::runtime_error(file.string() + ": the fresh profile does not match this host");
  choice->reused = false;
  return *choice;
}

void Runner::calibrate_kernels(const std::vector<std::pair<std::string, int64_t>>& models,
                               const std::string& name, const fs::path& file) {
  std::vector<std::string> argv = {o_.ralp.string(), "calibrate", "--device", "cpu", "--threads",
                                   std::to_string(o_.threads), "--name", name, "--out",
                                   file.string(), "--repetitions",
                                   std::to_string(o_.calibrate_repetitions), "--min-time",
                                   fixed(o_.calibrate_min_time_s, 3), "--model-steps",
                                   std::to_string(o_.calibrate_model_steps)};
  for (const auto& [model, batch] : models) {
    argv.insert(argv.end(), {"--model", model + ":" + std::to_string(batch)});
  }
  const auto run = [&](const std::vector<std::string>& command) {
    say("ralp validate: calibrating kernels: " + shell_quote(command));
    const ProcessResult r = run_process(
        command, {.timeout_s = kCalibrateTimeoutS,
                  .on_line = [this](const std::string& line) { say("  " + line); }});
    if (r.status != 0) {
      throw std::runtime_error("ralp calibrate failed (status " + std::to_string(r.status) +
                               "): " + last_lines(r.output, 3));
    }
  };
  run(argv);
  if (o_.precision == Precision::fp32) return;
  // The points' precision: its section, measured the same way and added to the same file.
  std::vector<std::string> section = argv;
  section.insert(section.begin() + 2, {"--precision", std::string(to_string(o_.precision)),
                                       "--profile", file.string()});
  run(section);
}

LinkProbe Runner::probe_link(const LinkRate& rate) {
  hosts_->shape(rate);
  const fs::path folder = o_.out / ("link-" + rate.text);
  fs::create_directories(folder);
  const fs::path json = fs::absolute(folder / "probe.json");
  // Ranks pinned as a 2-node point's are, so that each rank's computing thread in the probe's CPU
  // series shares its core with the rank's messages, as a worker's kernels do, and runs below
  // them, as the points' kernels do (--compute-yields).
  const auto pins = o_.hostfile ? std::vector<std::optional<int>>(2)
                                : pin_ranks(layout_of(Shape::two_node, "ps"), cores_);
  std::vector<std::string> argv = hosts_->mpirun(2, pins, folder);
  argv.insert(argv.end(), {o_.ralp.string(), "link-probe", "--json", json.string(),
                           "--compute-yields", "--round-trips", std::to_string(kProbeRoundTrips),
                           "--repetitions", std::to_string(kProbeRepetitions), "--sizes"});
  double expected = 0.0;
  for (const int64_t s : probe_sizes(rate)) {
    argv.push_back(std::to_string(s));
    // Twice: the timed series, and the series with a thread computing on each rank's core.
    expected += 2 * (kProbeRepetitions + 1) * static_cast<double>(s) / rate.bytes_per_s();
  }
  const ProcessResult r =
      run_process(argv, {.timeout_s = kSlackS + kSlackFactor * expected, .env = kMpiEnv});
  hosts_->sweep();
  if (r.status != 0 || r.timed_out) {
    throw std::runtime_error("the link probe at " + rate.text + " failed (status " +
                             std::to_string(r.status) + (r.timed_out ? ", timed out" : "") +
                             "): " + last_lines(r.output, kFailureLines));
  }
  return parse_link_probe(read_json_file(json), json.string());
}

NetworkFit Runner::fit_link(const LinkRate& rate, const LinkProbe& probe,
                            const std::optional<MessageCosts>& per_message) {
  const fs::path folder = o_.out / ("link-" + rate.text);
  NetworkFit fit = per_message ? fit_network(probe, rate.bytes_per_s(), *per_message)
                               : fit_network(probe, rate.bytes_per_s());
  if (fit.bandwidth_factor > 1.0 && fit.bandwidth_factor <= kMaxGoodputOverRate) {
    // Timing noise (and the token bucket's burst) can put a shaped link's fitted goodput a little
    // above its rate; SimGrid takes factors up to 1.
    say("ralp validate: link at " + rate.text + ": fitted bandwidth_factor " +
        fixed(fit.bandwidth_factor, 4) + " is above 1; using 1");
    fit.bandwidth_factor = 1.0;
  }
  write_text(folder / "fit.json", to_json(fit).dump(2) + "\n");
  if (fit.bandwidth_factor > 1.0) {
    throw InputError("--rates", "",
                     "has " + rate.text + ", but the link probe moved " +
                         fixed(fit.goodput_bytes_per_s * 8e-6, 0) +
                         " Mbit/s: name the links' real rate");
  }
  say("ralp validate: link at " + rate.text + ": rtt " + fixed(fit.rtt_s * 1e6, 1) +
      " us, goodput " + fixed(fit.goodput_bytes_per_s * 8e-6, 1) + " Mbit/s (bandwidth_factor " +
      fixed(fit.bandwidth_factor, 4) + ", latency_factor " + fixed(fit.latency_factor, 3) +
      "); message CPU " + fixed(fit.send_cpu_s_per_message * 1e6, 0) + " us + " +
      fixed(fit.send_cpu_s_per_byte * 1e9, 3) + " ns per byte sent, " +
      fixed(fit.receive_cpu_s_per_message * 1e6, 0) + " us + " +
      fixed(fit.receive_cpu_s_per_byte * 1e9, 3) + " ns per byte received" +
      (per_message ? " (the costs per message the fastest rate's)" : "") + "; waiting share " +
      fixed(fit.waiting_share * 100, 1) + "%");
  return fit;
}

Json Runner::simulate(const fs::path& scenario, const fs::path& json, const std::string& label,
                      const fs::path& trace, const fs::path& replay) {
  std::vector<std::string> argv = {o_.ralp.string(), "simulate", scenario.string(), "--json",
                                   json.string(),    "--quiet",  "--jobs",          "1"};
  if (!trace.empty()) argv.insert(argv.end(), {"--trace", trace.string()});
  if (!replay.empty()) argv.insert(argv.end(), {"--replay", replay.string()});
  const ProcessResult r = run_process(argv, {.timeout_s = kSimulateTimeoutS});
  if (r.status != 0) {
    throw std::runtime_error("ralp simulate " + scenario.string() + " failed (status " +
                             std::to_string(r.status) + "): " + last_lines(r.output, 3));
  }
  return only_result(read_json_file(json), label);
}

PointComparison Runner::run_point(const GridPoint& point, const NetworkFit& fit,
                                  const fs::path& profile, int pass, int steps) {
  fs::path folder = o_.out / "points" / point.id();
  if (pass > 0) folder /= "pass-" + std::to_string(pass + 1);
  fs::create_directories(folder);
  const Json base = read_json_file(point.scenario_file);
  const fs::path base_dir = point.scenario_file.has_parent_path()
                                ? point.scenario_file.parent_path()
                                : fs::path(".");
  const Layout layout = layout_of(point.shape, point.strategy.kind);
  DerivedSettings settings{.profile = profile, .network = fit, .steps = o_.max_steps,
                           .warmup_steps = o_.warmup_steps, .precision = o_.precision};
  // Namespace hosts run on this machine's cores: ranks that share one are told to the simulator,
  // and so are the token buckets that shape their links.
  if (!o_.hostfile) {
    settings.shared_devices = shared_cores(layout, cores_);
    settings.nic_burst_bytes = tbf_burst_bytes(point.rate);
  }
  const fs::path scenario = folder / "scenario.json";
  const fs::path predicted_json = folder / "predicted.json";
  if (steps > 0) {
    settings.steps = steps;
  } else {
    write_text(scenario, derived_scenario(base, base_dir, point, settings).dump(2) + "\n");
    const double first_prediction =
        predicted_step_time_s(simulate(scenario, predicted_json, predicted_json.string()),
                              predicted_json.string());
    settings.steps = plan_steps(first_prediction, o_.point_budget_s, o_.min_steps, o_.max_steps);
  }
  write_text(scenario, derived_scenario(base, base_dir, point, settings).dump(2) + "\n");
  const Json predicted = simulate(scenario, predicted_json, predicted_json.string(),
                                  folder / "predicted-trace.json");

  const auto pins = hosts_ ? pin_ranks(layout, cores_) : std::vector<std::optional<int>>{};
  const bool pinned = o_.hostfile ? true : fits_cores(layout, cores_);
  const fs::path measured_json = fs::absolute(folder / "measured.json");
  std::vector<std::string> argv =
      hosts_->mpirun(ranks_of(layout), o_.hostfile ? std::vector<std::optional<int>>(
                                                         static_cast<size_t>(ranks_of(layout)))
                                                   : pins,
                     folder);
  // The kernels run below the threads that move messages, which the simulator assumes answer at
  // once (docs/cluster.md); each rank has its core, or shares it only with other workers.
  argv.insert(argv.end(), {o_.ralp.string(), "cluster", fs::absolute(scenario).string(), "--json",
                           measured_json.string(), "--trace",
                           fs::absolute(folder / "measured-trace.json").string(), "--quiet",
                           "--compute-yields", "--step-timeout",
                           fixed(o_.step_timeout_s, 0) + "s"});
  write_text(folder / "command.sh", shell_quote(argv) + "\n");
  // The ranks' cores, whose steal time the run's is compared with.
  std::vector<int> cores;
  for (const auto& pin : pins) {
    if (pin && std::find(cores.begin(), cores.end(), *pin) == cores.end()) cores.push_back(*pin);
  }
  const auto cpu_before = read_cpu_times();
  const double expected = (settings.steps + settings.warmup_steps) *
                          predicted_step_time_s(predicted, predicted_json.string());
  const ProcessResult r =
      run_process(argv, {.timeout_s = kSlackS + kSlackFactor * expected, .env = kMpiEnv});
  const auto cpu_after = read_cpu_times();
  write_text(folder / "cluster.log", r.output);
  hosts_->sweep();
  if (r.status != 0 || r.timed_out) {
    std::string why = describe_failure(r.output, layout);
    if (why.empty()) why = last_lines(r.output, kFailureLines);
    throw std::runtime_error("ralp cluster on " + point.id() + " failed (status " +
                             std::to_string(r.status) + (r.timed_out ? ", timed out" : "") +
                             "): " + why + " (log: " + (folder / "cluster.log").string() + ")");
  }
  const Json measured = only_result(read_json_file(measured_json), measured_json.string());
  const fs::path replayed_json = folder / "replayed.json";
  const Json replayed = simulate(scenario, replayed_json, replayed_json.string(),
                                 folder / "replayed-trace.json", measured_json);
  PointComparison c{.id = point.id(),
                    .scenario = point.scenario_name,
                    .model = point.model,
                    .strategy = point.strategy.label,
                    .kind = point.strategy.kind,
                    .rate = point.rate.text,
                    .shape = to_string(point.shape),
                    .parameter_servers = layout.parameter_servers,
                    .workers = layout.workers,
                    .pinned = pinned,
                    .steps = settings.steps,
                    .warmup_steps = settings.warmup_steps};
  c.measured = measured_figures(measured, measured_json.string());
  c.predicted = predicted_figures(predicted, predicted_json.string());
  c.replayed = predicted_figures(replayed, replayed_json.string());
  if (!o_.hostfile && !cores.empty()) c.steal_pct = steal_pct(cpu_before, cpu_after, cores);
  return c;
}

GridNeeds Runner::needs_of(const std::vector<GridPoint>& grid) const {
  GridNeeds needs;
  for (const auto& p : grid) {
    const Json base = read_json_file(p.scenario_file);
    const auto batch = base.value("batch_per_worker", int64_t{0});
    std::pair<std::string, int64_t> m{p.model, batch};
    if (std::find(needs.models.begin(), needs.models.end(), m) == needs.models.end()) {
      needs.models.push_back(m);
    }
    needs.max_ranks = std::max(needs.max_ranks, ranks_of(layout_of(p.shape, p.strategy.kind)));
  }
  return needs;
}

void Runner::open_hosts(int max_ranks) {
  if (o_.hostfile) {
    hosts_ = std::make_unique<HostfileHosts>(*o_.hostfile, o_.hostfile_network, o_.mpirun);
    if (hosts_->capacity() < max_ranks) {
      throw InputError(o_.hostfile->string(), "",
                       "lists " + std::to_string(hosts_->capacity()) + " hosts, the grid needs " +
                           std::to_string(max_ranks));
    }
    return;
  }
  for (const auto& ns : remove_stale_namespaces()) {
    say("ralp validate: removed " + ns + ", left by an earlier run that was killed");
  }
  hosts_ = std::make_unique<NamespaceHosts>(max_ranks, o_.mpirun);
}

// Probes and fits each rate's link into run.links.
void Runner::calibrate_links(ValidationRun& run) {
  std::vector<LinkProbe> probes;
  for (const auto& rate : o_.rates) {
    check_interrupted();
    probes.push_back(probe_link(rate));
  }
  // The CPU time per message is fitted at the fastest rate and kept at the others (fit_network).
  const auto fastest = static_cast<size_t>(
      std::max_element(o_.rates.begin(), o_.rates.end(),
                       [](const LinkRate& a, const LinkRate& b) {
                         return a.bytes_per_s() < b.bytes_per_s();
                       }) -
      o_.rates.begin());
  const NetworkFit first = fit_link(o_.rates[fastest], probes[fastest], std::nullopt);
  const MessageCosts per_message{first.send_cpu_s_per_message, first.receive_cpu_s_per_message};
  for (size_t i = 0; i < o_.rates.size(); ++i) {
    run.links.push_back(
        {o_.rates[i], i == fastest ? first : fit_link(o_.rates[i], probes[i], per_message)});
  }
}

// Each pass is predicted with a calibration measured just before it: the machine's speed moves
// within minutes, and one moment's profile would weigh on every point.
fs::path Runner::profile_for_pass(int pass, const ModelBatches& models, ValidationRun& run) {
  if (pass == 0 || o_.profile) return run.profile.file;
  const std::string name =
      "validate-cpu-" + std::to_string(o_.threads) + "t-pass-" + std::to_string(pass + 1);
  fs::path profile = o_.out / (name + ".json");
  say("ralp validate: measuring the kernels again for pass " + std::to_string(pass + 1));
  calibrate_kernels(models, name, profile);
  const Json pass_profile = read_json_file(profile);
  run.pass_profiles.push_back({.file = profile,
                               .name = name,
                               .reused = false,
                               .provenance = provenance_of(pass_profile),
                               .time_sharing_slowdown =
                                   pass_profile.value("time_sharing_slowdown", 1.0)});
  return profile;
}

// A point's progress line: where the run is, the point's errors, and the time left.
std::string point_line(size_t done, size_t total, int pass, int passes, const GridPoint& point,
                       const PointComparison& c, double eta_s) {
  // Appended piece by piece: GCC 12 warns (-Wrestrict) on one long concatenation here.
  std::string line = "[";
  line += std::to_string(done) + "/" + std::to_string(total) + "] ";
  if (passes > 1) {
    line += "pass ";
    line += std::to_string(pass + 1) + "/" + std::to_string(passes) + " ";
  }
  return line + point.id() + ": measured " + fixed(c.measured.step_time_s * 1e3, 1) +
         " ms, predicted " + fixed(c.predicted.step_time_s * 1e3, 1) + " ms (" +
         (c.error_pct() >= 0 ? "+" : "") + fixed(c.error_pct(), 1) + "%), replayed " +
         fixed(c.replayed.step_time_s * 1e3, 1) + " ms (" +
         (c.replay_error_pct() >= 0 ? "+" : "") + fixed(c.replay_error_pct(), 1) + "%)" +
         (c.steal_pct ? ", steal " + fixed(*c.steal_pct, 1) + "%" : std::string()) + "; ETA " +
         duration(eta_s);
}

std::vector<std::vector<PointComparison>> Runner::run_passes(const std::vector<GridPoint>& grid,
                                                             const ModelBatches& models,
                                                             ValidationRun& run) {
  const double grid_start = now_s();
  const int passes = std::max(1, o_.passes);
  const size_t total = grid.size() * static_cast<size_t>(passes);
  std::vector<std::vector<PointComparison>> measured(grid.size());
  size_t done = 0;
  double calibrating_s = 0.0;  // within the grid, left out of the ETA's time per point
  for (int pass = 0; pass < passes; ++pass) {
    const double calibration_start = now_s();
    const fs::path profile = profile_for_pass(pass, models, run);
    calibrating_s += now_s() - calibration_start;
    // Every pass in the same order, so that a point's passes are a whole pass apart, longer than
    // the moments this machine runs slowly; a pass in reverse order measured the points around
    // the turn twice within seconds, and a slow moment there caught both.
    for (size_t i = 0; i < grid.size(); ++i) {
      check_interrupted();
      const GridPoint& point = grid[i];
      const auto link = std::find_if(run.links.begin(), run.links.end(),
                                     [&](const RateCalibration& l) { return l.rate == point.rate; });
      hosts_->shape(point.rate);
      const int steps = measured[i].empty() ? 0 : measured[i].front().steps;
      const PointComparison c = run_point(point, link->fit, profile, pass, steps);
      measured[i].push_back(c);
      ++done;
      const double per_point = (now_s() - grid_start - calibrating_s) / static_cast<double>(done);
      say(point_line(done, total, pass, passes, point, c,
                     per_point * static_cast<double>(total - done)));
    }
  }
  return measured;
}

// This machine's speed can move within minutes; the same kernels measured again after the last
// point say by how much it moved while the points ran.
void Runner::check_speed(const ModelBatches& models, ValidationRun& run) {
  if (!profile_covers(read_json_file(run.profile.file), models)) {
    say("ralp validate: no speed check: " + run.profile.file.string() +
        " has no end-to-end step of every model of the grid to compare with");
    return;
  }
  say("ralp validate: measuring the kernels again, to see whether this machine's speed moved "
      "during the run");
  const std::string name = "validate-cpu-" + std::to_string(o_.threads) + "t-end";
  run.speed_check_profile = o_.out / (name + ".json");
  calibrate_kernels(models, name, run.speed_check_profile);
  const Json end = read_json_file(run.speed_check_profile);
  run.speed_checks = compare_end_to_end(read_json_file(run.profile.file), end,
                                        run.speed_check_profile.string());
  run.speed_check_steal_pct = provenance_of(end)["steal_pct"];
}

ValidationRun Runner::run() {
  const double start = now_s();
  ValidationRun run;
  run.loadavg_start = read_loadavg();
  run.mode = o_.hostfile ? "hostfile" : "namespaces";
  cores_ = o_.cores > 0 ? o_.cores : affinity_cores();
  run.cores = cores_;
  fs::create_directories(o_.out);

  const auto grid = make_grid(o_.scenarios, o_.shapes, o_.rates, o_.strategies);
  if (grid.empty()) throw InputError("ralp validate", "", "the grid has no points");
  const GridNeeds needs = needs_of(grid);
  open_hosts(needs.max_ranks);
  run.profile = choose_profile(needs.models);
  say("ralp validate: profile " + run.profile.name + " (" + run.profile.file.string() + ")");
  calibrate_links(run);
  run.calibration_s = now_s() - start;

  const std::vector<std::vector<PointComparison>> measured = run_passes(grid, needs.models, run);
  for (const auto& point_passes : measured) run.points.push_back(combine_passes(point_passes));
  run.passes = std::max(1, o_.passes);
  hosts_.reset();  // the namespaces go now, before the report is written
  run.summary = summarise(run.points);
  run.replay_summary = summarise(run.points, &PointComparison::replay_error_pct);
  if (run.passes > 1) run.repeatability = summarise(run.points, &PointComparison::pass_spread_pct);
  run.kernel_speed = kernel_speed(run.points);

  check_interrupted();
  check_speed(needs.models, run);
  run.loadavg_end = read_loadavg();
  run.wall_s = now_s() - start;
  return run;
}

}  // namespace

std::optional<std::string> provenance_mismatch(const std::map<std::string, std::string>& host,
                                               const Json& profile, const std::string& label) {
  if (!profile.is_object() || !profile.contains("measured") ||
      !profile.at("measured").is_object() || !profile.at("measured").contains("provenance")) {
    return label + " is not a measured profile (no /measured/provenance)";
  }
  const auto provenance = string_map(profile.at("measured").at("provenance"));
  for (const auto& [key, value] : host) {
    const auto it = provenance.find(key);
    if (it == provenance.end()) return key + " is not recorded";
    if (it->second != value) {
      return key + " is '" + value + "' here, '" + it->second + "' in the profile";
    }
  }
  return std::nullopt;
}

std::map<std::string, std::string> calibration_settings(const ValidateOptions& o) {
  return {{"repetitions", std::to_string(o.calibrate_repetitions)},
          {"min_time_s", std::to_string(o.calibrate_min_time_s)},
          {"model_steps", std::to_string(o.calibrate_model_steps)}};
}

std::optional<std::string> measured_under_load(const Json& profile, int cores) {
  if (!profile.is_object() || !profile.contains("measured") ||
      !profile.at("measured").is_object()) {
    return std::nullopt;
  }
  const Json provenance = profile.at("measured").value("provenance", Json::object());
  if (!provenance.is_object() || !provenance.contains("loadavg_start") ||
      !provenance.at("loadavg_start").is_string()) {
    return std::nullopt;
  }
  const std::string text = provenance.at("loadavg_start").get<std::string>();
  double one_minute = 0.0;
  if (std::sscanf(text.c_str(), "%lf", &one_minute) != 1 || one_minute <= cores) return std::nullopt;
  return "measured under load average " + text.substr(0, text.find(' ')) + " on " +
         std::to_string(cores) + (cores == 1 ? " core" : " cores");
}

bool profile_covers(const Json& profile,
                    const std::vector<std::pair<std::string, int64_t>>& models) {
  if (!profile.contains("measured") || !profile.at("measured").is_object()) return false;
  const Json& e2e = profile.at("measured").value("end_to_end", Json::array());
  for (const auto& [model, batch] : models) {
    bool found = false;
    for (const Json& e : e2e) {
      if (e.is_object() && e.value("model", "") == model && e.value("batch", int64_t{0}) == batch) {
        found = true;
      }
    }
    if (!found) return false;
  }
  return true;
}

std::vector<SpeedCheck> compare_end_to_end(const Json& start, const Json& end,
                                           const std::string& end_label) {
  const auto runs = [](const Json& profile) {
    std::vector<SpeedCheck> out;
    if (!profile.is_object() || !profile.contains("measured") ||
        !profile.at("measured").is_object()) {
      return out;
    }
    for (const Json& e : profile.at("measured").value("end_to_end", Json::array())) {
      if (!e.is_object() || !e.contains("model") || !e.at("model").is_string() ||
          !e.contains("batch") || !e.at("batch").is_number_integer() || !e.contains("measured") ||
          !e.at("measured").is_number() || !(e.at("measured").get<double>() > 0.0)) {
        continue;
      }
      out.push_back({e.at("model").get<std::string>(), e.at("batch").get<int64_t>(),
                     e.at("measured").get<double>(), 0.0});
    }
    return out;
  };
  const std::vector<SpeedCheck> after = runs(end);
  if (after.empty()) {
    throw InputError(end_label, "/measured/end_to_end", "expected end-to-end step times");
  }
  std::vector<SpeedCheck> out;
  for (SpeedCheck c : runs(start)) {
    const auto it = std::find_if(after.begin(), after.end(), [&](const SpeedCheck& a) {
      return a.model == c.model && a.batch == c.batch;
    });
    if (it == after.end()) continue;
    c.end_s = it->start_s;
    out.push_back(c);
  }
  return out;
}

std::string rank_role(const Layout& layout, int rank) {
  const int ps = scenario_parameter_servers(layout);
  return rank < ps ? "ps-" + std::to_string(rank) : "worker-" + std::to_string(rank - ps);
}

std::string describe_failure(const std::string& output, const Layout& layout) {
  // mpirun: "Process name: [[12345,1],2]" then "Exit code:    3".
  static const std::regex process(R"(Process name:\s*\[\[\d+,\d+\],(\d+)\])");
  static const std::regex code(R"(Exit code:\s*(-?\d+))");
  static const std::regex signal(R"(exited on signal (\d+) \(([^)]*)\))");
  // mpirun, for a rank killed by a signal: "process rank 1 with PID 0 on node host1 exited on
  // signal 9 (Killed)".
  static const std::regex killed(
      R"(process rank (\d+) with PID \d+ on node \S+ exited on signal (\d+) \(([^)]*)\))");
  std::smatch m;
  if (std::regex_search(output, m, killed)) {
    const int rank = std::stoi(m[1].str());
    return "rank " + std::to_string(rank) + " (" + rank_role(layout, rank) +
           ") was killed by signal " + m[2].str() + " (" + m[3].str() + ")";
  }
  if (std::regex_search(output, m, process)) {
    const int rank = std::stoi(m[1].str());
    std::string what = "rank " + std::to_string(rank) + " (" + rank_role(layout, rank) + ")";
    std::smatch c;
    if (std::regex_search(output, c, code)) return what + " exited with status " + c[1].str();
    if (std::regex_search(output, c, signal)) {
      return what + " was killed by signal " + c[1].str() + " (" + c[2].str() + ")";
    }
    return what + " failed";
  }
  std::istringstream in(output);
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("error: rank", 0) == 0) return line.substr(7);
  }
  // Open MPI's TCP transport, when a peer's end of a connection vanished: "[host0][[18346,1],0]
  // [btl_tcp_frag.c:135:mca_btl_tcp_frag_send] mca_btl_tcp_frag_send: writev failed: Connection
  // reset by peer (104)". The rank that reports it aborts at once, and mpirun may then report
  // neither it nor the rank that ended first (a rank killed while the other sent to it).
  static const std::regex reset(
      R"(\[\[\d+,\d+\],(\d+)\][^\n]*(Connection reset by peer|Broken pipe))");
  if (std::regex_search(output, m, reset)) {
    const int rank = std::stoi(m[1].str());
    const std::string reporter = "rank " + std::to_string(rank) + " (" + rank_role(layout, rank) + ")";
    if (ranks_of(layout) == 2) {
      const int peer = 1 - rank;
      return "rank " + std::to_string(peer) + " (" + rank_role(layout, peer) + ") ended: " +
             reporter + " found its connection to it gone (" + m[2].str() + ")";
    }
    return reporter + " found a peer's connection gone (" + m[2].str() + "): a peer ended";
  }
  return "";
}

ValidationRun run_validation(const ValidateOptions& options) {
  InterruptGuard guard;
  Runner runner(options);
  return runner.run();
}

Json to_json(const ValidationRun& run) {
  Json links = Json::array();
  for (const auto& l : run.links) {
    Json j = to_json(l.fit);
    j["rate"] = l.rate.text;
    links.push_back(j);
  }
  Json points = Json::array();
  for (const auto& p : run.points) points.push_back(to_json(p));
  Json summary = Json::array();
  for (const auto& s : run.summary) summary.push_back(to_json(s));
  Json replay_summary = Json::array();
  for (const auto& s : run.replay_summary) replay_summary.push_back(to_json(s));
  Json repeatability = Json::array();
  for (const auto& s : run.repeatability) repeatability.push_back(to_json(s));
  Json kernel_speed = {{"min_compute_s", kKernelSpeedMinComputeS}, {"bins", Json::array()}};
  for (const auto& b : run.kernel_speed) kernel_speed["bins"].push_back(to_json(b));
  const auto profile_json = [](const ProfileChoice& p) {
    Json provenance = Json::object();
    for (const auto& [k, v] : p.provenance) provenance[k] = v;
    return Json{{"name", p.name},
                {"file", p.file.filename().string()},
                {"reused", p.reused},
                {"provenance", provenance},
                {"time_sharing_slowdown", p.time_sharing_slowdown}};
  };
  Json pass_profiles = Json::array();
  for (const auto& p : run.pass_profiles) pass_profiles.push_back(profile_json(p));
  Json speed = Json::array();
  for (const auto& c : run.speed_checks) {
    speed.push_back({{"model", c.model},
                     {"batch", c.batch},
                     {"start_s", c.start_s},
                     {"end_s", c.end_s},
                     {"change_pct", c.change_pct()}});
  }
  Json speed_check = nullptr;
  if (!run.speed_check_profile.empty()) {
    speed_check = {{"profile", run.speed_check_profile.filename().string()}, {"models", speed}};
    if (!run.speed_check_steal_pct.empty()) speed_check["steal_pct"] = run.speed_check_steal_pct;
  }
  Json target = {{"median_abs_error_pct", kTargetMedianPct}, {"max_abs_error_pct", kTargetMaxPct}};
  if (const auto resolves = machine_resolves_target(run.repeatability)) {
    target["machine_resolves"] = *resolves;
  }
  return {{"mode", run.mode},
          {"cores", run.cores},
          {"command", run.command},
          {"profile", profile_json(run.profile)},
          {"pass_profiles", pass_profiles},
          {"links", links},
          {"speed_check", speed_check},
          {"points", points},
          {"summary", summary},
          {"replay_summary", replay_summary},
          {"passes", run.passes},
          {"repeatability", repeatability},
          {"kernel_speed", kernel_speed},
          {"target", target},
          {"loadavg_start", run.loadavg_start},
          {"loadavg_end", run.loadavg_end},
          {"calibration_s", run.calibration_s},
          {"wall_s", run.wall_s}};
}

}  // namespace ralp::validate
