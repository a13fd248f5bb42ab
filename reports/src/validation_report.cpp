// The validation report: tables and text from the run's JSON document.
#include "ralp/reports/validation_report.hpp"

#include <cmath>
#include <cstdio>
#include <fstream>
#include <vector>

#include "ralp/reports/markdown.hpp"

namespace ralp::reports {
namespace {

constexpr const char* kLabel = "validation results";
constexpr const char* kPlotName = "predicted-vs-measured";
constexpr double kMs = 1e3;
constexpr double kMB = 1e-6;

const Json& at(const Json& j, const std::string& key, const std::string& path) {
  if (!j.is_object() || !j.contains(key)) throw InputError(kLabel, path + "/" + key, "is missing");
  return j.at(key);
}
double num(const Json& j, const std::string& key, const std::string& path) {
  const Json& v = at(j, key, path);
  if (!v.is_number()) throw InputError(kLabel, path + "/" + key, "expected a number");
  return v.get<double>();
}
std::string str(const Json& j, const std::string& key, const std::string& path) {
  const Json& v = at(j, key, path);
  if (v.is_string()) return v.get<std::string>();
  if (v.is_number() || v.is_boolean()) return v.dump();
  throw InputError(kLabel, path + "/" + key, "expected a string");
}

std::string fixed(double v, int digits) {
  char buffer[64];
  std::snprintf(buffer, sizeof buffer, "%.*f", digits, v);
  return buffer;
}
std::string signed_pct(double v) {
  std::string s = v >= 0 ? "+" : "";  // appended, not concatenated: GCC 12 warns on the latter
  s += fixed(v, 1);
  return s + "%";
}

std::string ms(double s) {
  const double v = s * kMs;
  return fixed(v, v < 10 ? 2 : 1);
}

// A point's ranks' kernels, run over profile: "ps-0 1.37, worker-0 1.06"; "-" where it has none
// (ranks that shared cores, or results that predate them).
std::string kernel_ratios(const Json& p, const std::string& path) {
  if (!p.contains("kernel_speeds")) return "-";
  std::string text;
  size_t i = 0;
  for (const Json& k : at(p, "kernel_speeds", path)) {
    const std::string kp = path + "/kernel_speeds/" + std::to_string(i++);
    if (!text.empty()) text += ", ";
    text += str(k, "host", kp) + " " + fixed(num(k, "ratio", kp), 2);
  }
  return text.empty() ? "-" : text;
}

std::string split(const Json& f, const std::string& path) {
  const Json& w = at(f, "worker", path);
  const std::string p = path + "/worker";
  return ms(num(w, "compute_s", p)) + " / " + ms(num(w, "communication_s", p)) + " / " +
         ms(num(w, "waiting_s", p));
}

std::string bytes_in(const Json& f, const std::string& host, const std::string& path) {
  return fixed(num(at(f, host, path), "bytes_in", path + "/" + host) * kMB, 2);
}

// A point's step times in each pass, measured (predicted): "103.2 (99.0) / 99.1 (101.3)".
std::string pass_times(const Json& p, const std::string& path) {
  const auto times = [&](const std::string& key) {
    const Json& t = at(p, key, path);
    if (!t.is_array()) throw InputError(kLabel, path + "/" + key, "expected an array");
    std::vector<double> out;
    for (size_t i = 0; i < t.size(); ++i) {
      if (!t[i].is_number()) {
        throw InputError(kLabel, path + "/" + key + "/" + std::to_string(i), "expected a number");
      }
      out.push_back(t[i].get<double>());
    }
    return out;
  };
  const std::vector<double> measured = times("pass_step_times_s");
  const std::vector<double> predicted = times("pass_predicted_step_times_s");
  if (predicted.size() != measured.size()) {
    throw InputError(kLabel, path + "/pass_predicted_step_times_s",
                     "expected as many step times as pass_step_times_s");
  }
  std::string text;
  for (size_t i = 0; i < measured.size(); ++i) {
    if (i > 0) text += " / ";
    text += ms(measured[i]);
    text += " (" + ms(predicted[i]) + ")";
  }
  return text;
}

}  // namespace

ScatterPlot validation_plot(const Json& run) {
  ScatterPlot plot{.title = "ralp simulate against ralp cluster: step time",
                   .x_label = "measured step time (ms)",
                   .y_label = "predicted step time (ms)",
                   .log_scale = true,
                   .band_pct = 8.0};
  const Json& points = at(run, "points", "");
  size_t i = 0;
  for (const Json& p : points) {
    const std::string path = "/points/" + std::to_string(i++);
    const std::string kind = str(p, "kind", path);
    auto it = std::find_if(plot.series.begin(), plot.series.end(),
                           [&](const ScatterSeries& s) { return s.title == kind; });
    if (it == plot.series.end()) {
      plot.series.push_back({kind, {}});
      it = plot.series.end() - 1;
    }
    it->points.emplace_back(num(at(p, "measured", path), "step_time_s", path + "/measured") * kMs,
                            num(at(p, "predicted", path), "step_time_s", path + "/predicted") * kMs);
  }
  return plot;
}

// Whether this machine could judge the target (target.machine_resolves: the spread between a
// point's passes within the target), with the spread; empty for one pass and older results.
std::string resolution_sentence(const Json& run, double target_median, double target_max) {
  const Json& target = at(run, "target", "");
  if (!target.contains("machine_resolves")) return "";
  const Json& resolves = target.at("machine_resolves");
  if (!resolves.is_boolean()) {
    throw InputError(kLabel, "/target/machine_resolves", "expected true or false");
  }
  const Json& repeatability = at(run, "repeatability", "");
  if (!repeatability.is_array() || repeatability.empty()) {
    throw InputError(kLabel, "/repeatability", "expected the spread between passes");
  }
  const std::string path = "/repeatability/" + std::to_string(repeatability.size() - 1);
  const double median = num(repeatability.back(), "median_abs_error_pct", path);
  const double max = num(repeatability.back(), "max_abs_error_pct", path);
  const std::string spread = "the same point, measured again a pass later, moved by " +
                             fixed(median, 1) + "% at the median and up to " + fixed(max, 1) + "%";
  if (resolves.get<bool>()) return " This machine can judge it: " + spread + ", within the target.";
  std::string beyond;
  if (median > target_median) beyond = "the median's " + fixed(target_median, 0) + "%";
  if (max > target_max) {
    beyond += (beyond.empty() ? "the max's " : " and the max's ") + fixed(target_max, 0) + "%";
  }
  if (beyond.empty()) {
    throw InputError(kLabel, "/target/machine_resolves",
                     "is false, but the spread between passes is within the target");
  }
  return " This machine cannot judge it: " + spread + ", beyond " + beyond +
         " (see The same point, measured again); an error here is the machine's as much as the "
         "simulator's.";
}

namespace {

using Align = MarkdownDocument::Align;
using Rows = std::vector<std::vector<std::string>>;

// The run's accuracy target: median and max |error|, in percent.
struct Target {
  double median;
  double max;
};

// How the points were run and measured, and the run's command, duration and load.
void add_method(MarkdownDocument& doc, const Json& run, const std::string& mode, int64_t passes) {
  doc.paragraph(
      "Each point ran `ralp cluster` under mpirun across " +
      std::string(mode == "namespaces"
                      ? "hosts made of Linux network namespaces on one machine, each host's link "
                        "shaped in both directions with a tc token-bucket filter at the point's rate "
                        "(whose burst, the bytes that pass at once after an idle moment, the "
                        "derived scenario gives the simulator as platform.nic_burst)"
                      : "the machines of a hostfile (links not shaped)") +
      ", and `ralp simulate` on the same derived scenario file. Error = (predicted - measured) / "
      "measured step time; measured is the median of the measured steps after warm-up" +
      (passes > 1 ? " in each of " + std::to_string(passes) +
                        " passes over the grid (each pass in the same order, so that a point's "
                        "passes are a pass apart), their mean; predicted the simulator's step "
                        "time with the profile measured just before each pass, their mean."
                  : std::string(", predicted the simulator's step time.")));
  doc.paragraph("Run with `" + str(run, "command", "") + "`; " + fixed(num(run, "wall_s", ""), 0) +
                " s in all (calibration " + fixed(num(run, "calibration_s", ""), 0) +
                " s), " + str(run, "cores", "") + " cores, load average " +
                str(run, "loadavg_start", "") + " at the start and " + str(run, "loadavg_end", "") +
                " at the end.");
}

// A summary of errors (run's `key`: summary, replay_summary), one row per strategy group. With
// `all_met`, says there whether the group "all" met the target with at least one point.
Rows error_rows(const Json& run, const std::string& key, const Target& target, bool* all_met) {
  Rows rows;
  size_t i = 0;
  for (const Json& s : at(run, key, "")) {
    const std::string path = "/" + key + "/" + std::to_string(i++);
    const double med = num(s, "median_abs_error_pct", path);
    const double max = num(s, "max_abs_error_pct", path);
    const bool met = med <= target.median && max <= target.max;
    const std::string group = str(s, "group", path);
    if (all_met != nullptr && group == "all") *all_met = met && num(s, "points", path) > 0;
    rows.push_back({group == "all" ? "**all**" : group, str(s, "points", path), fixed(med, 1) + "%",
                    fixed(max, 1) + "%", met ? "met" : "not met"});
  }
  return rows;
}

void add_error_table(MarkdownDocument& doc, const Rows& rows) {
  doc.table({"strategy", "points", "median abs error", "max abs error", "target"}, rows,
            {Align::left, Align::right, Align::right, Align::right, Align::left});
}

// The errors against the target, whether it was met, and the plot.
void add_accuracy(MarkdownDocument& doc, const Json& run, const Target& target,
                  const std::string& plot, const std::optional<std::string>& plot_problem) {
  doc.heading(2, "Accuracy");
  bool overall_met = false;
  add_error_table(doc, error_rows(run, "summary", target, &overall_met));
  doc.paragraph("Target: median |error| at most " + fixed(target.median, 0) + "% and max at most " +
                fixed(target.max, 0) + "% over the grid: **" +
                (overall_met ? "met" : "not met") + "**." +
                resolution_sentence(run, target.median, target.max));
  if (plot_problem) {
    doc.paragraph("(No plot: " + *plot_problem + ".)");
  } else {
    doc.image("predicted against measured step time", plot + ".svg");
    doc.paragraph("Dashed lines: +-" + fixed(target.max, 0) + "%. The same plot as PNG: [" + plot +
                  ".png](" + plot + ".png).");
  }
}

// The errors once each point is replayed with its own run's kernel times.
void add_replayed_accuracy(MarkdownDocument& doc, const Json& run, const Target& target) {
  if (!run.contains("replay_summary")) return;
  doc.heading(3, "With the kernel times each run measured");
  add_error_table(doc, error_rows(run, "replay_summary", target, nullptr));
  doc.paragraph(
      "Each point simulated again, every device operation (layer pass, gradient sum, update) "
      "given the time it took in the point's own run instead of the profile's: the mean of its "
      "thread's CPU time over the typical measured steps (the middle half by the rank's "
      "device time), and no time-sharing slowdown on top, since a CPU time measured on a shared "
      "core holds what sharing cost it (`ralp simulate --replay`, "
      "`points/ID/replayed.json`). What error is left is the schedule's and the network "
      "model's; the difference from the table above is the kernels' times, which the machine's "
      "wandering speed moves between the calibration and the run.");
}

// How far the same point moved between passes.
void add_repeatability(MarkdownDocument& doc, const Json& run, int64_t passes) {
  if (passes <= 1 || !run.contains("repeatability")) return;
  doc.heading(3, "The same point, measured again");
  Rows rows;
  size_t i = 0;
  for (const Json& s : at(run, "repeatability", "")) {
    const std::string path = "/repeatability/" + std::to_string(i++);
    const std::string group = str(s, "group", path);
    rows.push_back({group == "all" ? "**all**" : group, str(s, "points", path),
                    fixed(num(s, "median_abs_error_pct", path), 1) + "%",
                    fixed(num(s, "max_abs_error_pct", path), 1) + "%"});
  }
  doc.table({"strategy", "points", "median spread", "max spread"}, rows,
            {Align::left, Align::right, Align::right, Align::right});
  doc.paragraph(
      "How far this machine moved its own measurements: for each point, (largest - smallest) / "
      "mean of its passes' step times, the same derived scenario run again minutes later. A "
      "prediction cannot be shown closer to a measurement than the measurement is to itself; "
      "where this spread is near the target, the target cannot be judged on this machine.");
}

// The runs' kernels against the profile's, by how busy their core was.
void add_kernel_speed(MarkdownDocument& doc, const Json& run) {
  // Older results lack it.
  if (!run.contains("kernel_speed") ||
      at(at(run, "kernel_speed", ""), "bins", "/kernel_speed").empty()) {
    return;
  }
  const Json& speed = at(run, "kernel_speed", "");
  doc.heading(3, "Kernel speed in the runs");
  Rows rows;
  size_t i = 0;
  for (const Json& b : at(speed, "bins", "/kernel_speed")) {
    const std::string path = "/kernel_speed/bins/" + std::to_string(i++);
    const double from = num(b, "busy_from", path) * 100;
    const double to = num(b, "busy_to", path) * 100;
    rows.push_back({to >= 100 ? fixed(from, 0) + "% or more"
                              : fixed(from, 0) + "-" + fixed(to, 0) + "%",
                    str(b, "hosts", path), fixed(num(b, "median_ratio", path), 2),
                    fixed(num(b, "min_ratio", path), 2) + " - " +
                        fixed(num(b, "max_ratio", path), 2)});
  }
  doc.table({"core busy, share of the step", "ranks", "run / profile, median", "range"}, rows,
            {Align::left, Align::right, Align::right, Align::right});
  doc.paragraph(
      "For each rank of a point that pinned every rank to a core of its own, with at least " +
      ms(num(speed, "min_compute_s", "/kernel_speed")) +
      " ms of predicted compute a step: the time its device operations took in the run (the "
      "replay's compute, from their CPU times) over the time the profile gives them (the "
      "prediction's compute, on the same schedule), grouped by the share of the measured step "
      "its core spent in them. The profile times kernels on a core that computes without a "
      "pause. A ratio above 1 is time the run's kernels took that the prediction could not "
      "know; one that grows as the share falls says this machine runs kernels slower on a core "
      "that mostly waits.");
}

// The device profile the run used, with its provenance and each pass's own profile.
std::vector<std::string> profile_items(const Json& run) {
  const Json& profile = at(run, "profile", "");
  std::vector<std::string> items = {
      "Kernels: device profile `" + str(profile, "name", "/profile") + "` (`" +
      str(profile, "file", "/profile") + "`, " +
      (at(profile, "reused", "/profile").get<bool>() ? "reused: measured earlier on this host"
                                                      : "measured by this run") +
      ") for workers and parameter servers."};
  const Json& prov = at(profile, "provenance", "/profile");
  for (const char* key :
       {"cpu_model", "onednn", "threads", "date", "loadavg_start", "steal_pct", "command"}) {
    if (prov.contains(key)) items.push_back(std::string(key) + ": `" + str(prov, key, "/profile/provenance") + "`");
  }
  if (run.contains("pass_profiles")) {
    size_t i = 0;
    for (const Json& p : at(run, "pass_profiles", "")) {
      const std::string path = "/pass_profiles/" + std::to_string(i++);
      const Json& pass_prov = at(p, "provenance", path);
      items.push_back("Pass " + std::to_string(i + 1) + ": `" + str(p, "name", path) + "` (`" +
                      str(p, "file", path) + "`), the same calibration measured again just before it" +
                      (pass_prov.contains("steal_pct")
                           ? "; steal_pct: `" + str(pass_prov, "steal_pct", path + "/provenance") + "`"
                           : std::string()) +
                      ".");
    }
  }
  return items;
}

// A measured link's row: its round trip, fit, factors and the CPU its messages take.
std::vector<std::string> link_row(const Json& l, const std::string& path) {
  return {str(l, "rate", path), fixed(num(l, "rtt_s", path) * 1e6, 1) + " us",
          fixed(num(l, "latency_s", path) * 1e6, 1) + " us",
          fixed(num(l, "goodput_bytes_per_s", path) * 8e-6, 1) + " Mbit/s",
          fixed(num(l, "fixed_cost_s", path) * 1e6, 0) + " us",
          fixed(num(l, "bandwidth_factor", path), 4),
          fixed(num(l, "latency_factor", path), 3),
          fixed(num(l, "residual_max", path) * 100, 1) + "%",
          l.contains("send_cpu_us_per_message")
              ? fixed(num(l, "send_cpu_us_per_message", path), 0) + " us"
              : "-",
          l.contains("send_cpu_ns_per_byte")
              ? fixed(num(l, "send_cpu_ns_per_byte", path), 3) + " ns"
              : "-",
          l.contains("receive_cpu_us_per_message")
              ? fixed(num(l, "receive_cpu_us_per_message", path), 0) + " us"
              : "-",
          l.contains("receive_cpu_ns_per_byte")
              ? fixed(num(l, "receive_cpu_ns_per_byte", path), 3) + " ns"
              : "-",
          l.contains("waiting_share")
              ? fixed(num(l, "waiting_share", path) * 100, 1) + "%"
              : "-"};
}

// The links the link probe measured, and how the scenario's link model comes from them.
void add_links(MarkdownDocument& doc, const Json& run) {
  Rows rows;
  size_t i = 0;
  for (const Json& l : at(run, "links", "")) {
    rows.push_back(link_row(l, "/links/" + std::to_string(i++)));
  }
  doc.paragraph(
      "Links, measured with `ralp link-probe` (the cluster's own transport) between two hosts: "
      "the round trip of header-only messages, and bulk transfers of growing size fitted to "
      "a + S / g. Each scenario link gets latency rtt / 2; on the star a message crosses two links, "
      "so latency_factor = max(a - rtt/2, rtt/2) / rtt and bandwidth_factor = g / rate. The "
      "same transfers again, while a thread computes on each rank's core, give the CPU time "
      "that moving a message takes from computation on the sender's and the receiver's core, "
      "fitted to c + S x s on relative residuals (c per message, s per byte): the prediction "
      "charges it (cluster.message_cpu), shared with the compute it overlaps. Then each rank in "
      "turn waits for a message the way a rank whose computation is blocked on one does, while "
      "its thread computes: the share of the core that the waiting rank's polling takes from "
      "the computation (the waiting share, the two ranks' mean), which the prediction takes "
      "from a shared core's computations for each rank sharing it that waits "
      "(cluster.message_cpu.waiting_share).");
  doc.table({"rate", "rtt", "link latency", "goodput g", "one-way fixed cost",
             "bandwidth_factor", "latency_factor", "largest fit residual", "CPU per message sent",
             "CPU per byte sent", "CPU per message received", "CPU per byte received",
             "waiting share"},
            rows, {Align::left});
}

// The machine's speed at the end of the run against the profile's, per model.
void add_speed_check(MarkdownDocument& doc, const Json& run) {
  // Null when the run's profile had no end-to-end step to compare with; older results lack it.
  if (!run.contains("speed_check") || run.at("speed_check").is_null()) return;
  const Json& prov = at(at(run, "profile", ""), "provenance", "/profile");
  const Json& check = at(run, "speed_check", "");
  Rows rows;
  size_t i = 0;
  for (const Json& c : at(check, "models", "/speed_check")) {
    const std::string path = "/speed_check/models/" + std::to_string(i++);
    rows.push_back({str(c, "model", path), str(c, "batch", path), ms(num(c, "start_s", path)),
                    ms(num(c, "end_s", path)), signed_pct(num(c, "change_pct", path))});
  }
  doc.paragraph(
      "This machine's speed during the run: the same kernel calibration again after the last "
      "point (`" + str(check, "profile", "/speed_check") +
      "`), each model's end-to-end training step (forward and backward, one core) as the "
      "run's profile measured it and after the grid. The predictions use the profile's times; "
      "a change here moves the measured compute, and the error, by about as much." +
      (prov.contains("steal_pct") && check.contains("steal_pct")
           ? " The hypervisor took " + str(prov, "steal_pct", "/profile/provenance") + "% and " +
                 str(check, "steal_pct", "/speed_check") +
                 "% of the time the cores wanted to run while the two calibrations ran "
                 "(steal, /proc/stat), which their times include."
           : std::string()));
  doc.table({"model", "batch", "profile ms", "after ms", "change"}, rows,
            {Align::left, Align::right, Align::right, Align::right, Align::right});
}

// How the points that had more ranks than cores shared them, and what the simulator knew of it.
void add_shared_cores(MarkdownDocument& doc, const Json& run) {
  const Json& profile = at(run, "profile", "");
  doc.heading(2, "Shared cores");
  int pinned = 0, shared = 0;
  for (const Json& p : at(run, "points", "")) {
    (at(p, "pinned", "/points").get<bool>() ? pinned : shared) += 1;
  }
  doc.paragraph(
      std::to_string(pinned) + " points pinned every rank to a core of its own (taskset), so no "
      "two competed; " + std::to_string(shared) +
      " points had more ranks than the machine's cores: each parameter server kept a core of its "
      "own and the workers shared the cores left, and the derived scenario's "
      "cluster.shared_devices told the simulator which ranks shared a core, so that their "
      "predictions divide a core equally between computations that overlap" +
      (profile.contains("time_sharing_slowdown")
           ? ", each of two progressing at 1 / (2 x " +
                 fixed(num(profile, "time_sharing_slowdown", "/profile"), 3) +
                 ") of the core's speed while they overlap: the profile's time_sharing_slowdown, "
                 "which `ralp calibrate` measured by stepping each model in two processes at once "
                 "on one core against one alone (switching between processes costs, and each "
                 "evicts the other's data from the caches)"
           : std::string()) +
      ", and each rank that waits meanwhile takes the link probe's waiting share of the core "
      "from them (its transport wakes thousands of times a second to poll, each wake-up "
      "slowing the kernels beside it). Workers share with workers because a rank that computes "
      "takes its equal share, while a server that mostly waits would slow the workers' kernels "
      "for most of the step.");
}

// One point's row: what ran, measured against predicted, replayed, and where the time went.
std::vector<std::string> point_row(const Json& p, const std::string& path, int64_t passes) {
  const Json& m = at(p, "measured", path);
  const Json& q = at(p, "predicted", path);
  std::vector<std::string> row = {
      str(p, "model", path), str(p, "strategy", path), str(p, "shape", path),
      str(p, "rate", path),
      str(p, "steps", path) + " + " + str(p, "warmup_steps", path),
      ms(num(m, "step_time_s", path)) + " +- " + ms(num(m, "spread_s", path)),
      ms(num(q, "step_time_s", path)), signed_pct(num(p, "error_pct", path)),
      p.contains("replayed") ? ms(num(at(p, "replayed", path), "step_time_s", path)) + " (" +
                                   signed_pct(num(p, "replay_error_pct", path)) + ")"
                             : std::string("-"),
      split(m, path + "/measured"), split(q, path + "/predicted"),
      ms(num(m, "ps_busy_s", path)) + " / " + ms(num(q, "ps_busy_s", path)),
      bytes_in(m, "ps-0", path + "/measured") + " / " + bytes_in(q, "ps-0", path + "/predicted"),
      bytes_in(m, "worker-0", path + "/measured") + " / " +
          bytes_in(q, "worker-0", path + "/predicted"),
      kernel_ratios(p, path),
      p.contains("steal_pct") && !p.at("steal_pct").is_null()
          ? fixed(num(p, "steal_pct", path), 1) + "%"
          : std::string("-")};
  if (passes > 1) row.insert(row.begin() + 6, pass_times(p, path));
  return row;
}

// Every grid point, one row each.
void add_points(MarkdownDocument& doc, const Json& run, int64_t passes) {
  doc.heading(2, "Points");
  Rows rows;
  size_t i = 0;
  for (const Json& p : at(run, "points", "")) {
    rows.push_back(point_row(p, "/points/" + std::to_string(i++), passes));
  }
  std::vector<std::string> header = {
      "model", "strategy", "shape", "rate", "steps", "measured ms (IQR)", "predicted ms", "error",
      "replayed ms (error)", "worker compute / comm / wait ms, measured", "same, predicted",
      "ps-0 busy ms m / p", "ps-0 in MB m / p", "worker-0 in MB m / p",
      "kernels, run / profile", "steal"};
  if (passes > 1) header.insert(header.begin() + 6, "each pass ms, measured (predicted)");
  doc.table(header, rows, {Align::left, Align::left, Align::left, Align::left});
  doc.paragraph(
      "Shapes: 2-node is 1 PS + 1 worker, or 2 workers for allreduce (scenarios always have ps-0, "
      "which only waits in an allreduce run); 1ps-2w is 1 PS + 2 workers. Times per step; bytes per "
      "step into the host, headers included." +
      std::string(passes > 1 ? " IQR, splits, bytes and steal: per pass, their mean over the "
                               "passes; every pass runs the first pass's steps; each pass's "
                               "files are in points/ID (the first) and points/ID/pass-N."
                             : "") +
      " Kernels, run / profile: each rank's replayed compute over its predicted compute (the "
      "run's CPU times of its device operations over the profile's), where every rank had a "
      "core of its own."
      " Steal: the share of the time the ranks' cores wanted "
      "to run that the hypervisor gave to other guests while the run ran (/proc/stat), time the "
      "kernels lost that no profile measured beforehand can know.");
}

}  // namespace

std::string validation_markdown(const Json& run, const std::string& plot,
                                const std::optional<std::string>& plot_problem) {
  MarkdownDocument doc;
  doc.heading(1, "Validation: `ralp simulate` against `ralp cluster`");
  const Json& target_json = at(run, "target", "");
  const Target target{num(target_json, "median_abs_error_pct", "/target"),
                      num(target_json, "max_abs_error_pct", "/target")};
  const std::string mode = str(run, "mode", "");
  // Runs before passes existed measured each point once.
  const int64_t passes = run.contains("passes") ? static_cast<int64_t>(num(run, "passes", "")) : 1;
  add_method(doc, run, mode, passes);
  add_accuracy(doc, run, target, plot, plot_problem);
  add_replayed_accuracy(doc, run, target);
  add_repeatability(doc, run, passes);
  add_kernel_speed(doc, run);
  doc.heading(2, "Calibration used");
  doc.bullets(profile_items(run));
  add_links(doc, run);
  add_speed_check(doc, run);
  add_shared_cores(doc, run);
  add_points(doc, run, passes);
  return doc.text();
}

std::optional<std::string> write_validation_report(const Json& run,
                                                   const std::filesystem::path& folder) {
  const auto problem = write_scatter_plot(validation_plot(run), folder / kPlotName);
  const std::string text = validation_markdown(run, kPlotName, problem);
  std::ofstream out(folder / "report.md", std::ios::binary | std::ios::trunc);
  out << text;
  if (!out) throw std::runtime_error("cannot write " + (folder / "report.md").string());
  return problem;
}

}  // namespace ralp::reports
