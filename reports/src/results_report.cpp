// The results report: each input's kind told apart, its fields read with their JSON paths, and
// one Markdown report with a section per input, its tables and its plots.
#include "ralp/reports/results_report.hpp"

#include <algorithm>
#include <filesystem>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <limits>
#include <map>
#include <stdexcept>

#include "ralp/reports/gnuplot.hpp"
#include "ralp/reports/markdown.hpp"
#include "ralp/reports/result_io.hpp"
#include "ralp/reports/text_table.hpp"
#include "ralp/reports/validation_report.hpp"
#include "ralp/reports/verdict.hpp"
#include "ralp/results/training_figures.hpp"

namespace ralp::reports {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
// The reader's bound for "no upper bound" (its messages then say ">= 0").
constexpr double kNoMax = std::numeric_limits<double>::max();
constexpr int64_t kMaxCount = std::numeric_limits<int64_t>::max();
constexpr const char* kReadsWhat =
    "expected the JSON of `ralp simulate --json`, `ralp sweep` (sweep.json), `ralp place --json` "
    "or `ralp validate` (validation.json)";
// A cut plot labels at most this many cuts on its x axis (every k-th beyond).
constexpr size_t kMaxCutLabels = 40;
// Bars are this wide in pixels, and a plot at most this wide.
constexpr int kBarPx = 10;
constexpr int kMaxWidthPx = 4000;
// The axes of a speedup plot reach this far beyond the worker counts (a factor, log axis).
constexpr double kAxisMargin = 1.15;
const char* const kColours[] = {"#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#76b7b2",
                                "#edc948", "#b07aa1", "#ff9da7", "#9c755f", "#bab0ac"};
constexpr size_t kColourCount = sizeof kColours / sizeof kColours[0];

std::string colour(size_t i) { return kColours[i % kColourCount]; }

std::string number(double v) {
  char buffer[64];
  std::snprintf(buffer, sizeof buffer, "%.9g", v);
  return buffer;
}

// A label inside a data file: gnuplot reads "..." as one column and has no escape for '"'.
std::string data_label(const std::string& text) {
  std::string s = "\"";
  for (const char c : text) s += c == '"' ? '\'' : c;
  return s + "\"";
}

// A file stem from a label: letters, digits, '-' and '_' kept, anything else '-'.
std::string slug(const std::string& text) {
  std::string s;
  for (const char c : text) {
    const bool keep = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                      c == '-' || c == '_';
    s += keep ? c : '-';
  }
  return s.empty() ? "x" : s;
}

std::string value_text(const Json& v) { return v.is_string() ? v.get<std::string>() : v.dump(); }

std::string seconds(double s) { return format_seconds(Seconds(s)); }
std::string bytes(double b) { return format_bytes(Bytes(b)); }
std::string times(double x) { return fixed(x, 2) + "x"; }

struct Scale {
  double factor = 1.0;
  std::string unit;
};
Scale time_scale(double max_s) {
  if (max_s >= 1.0) return {1.0, "s"};
  if (max_s >= 1e-3) return {1e3, "ms"};
  return {1e6, "us"};
}
Scale byte_scale(double max_bytes) {
  if (max_bytes >= 1e9) return {1e-9, "GB"};
  if (max_bytes >= 1e6) return {1e-6, "MB"};
  if (max_bytes >= 1e3) return {1e-3, "kB"};
  return {1.0, "B"};
}

// ---- reading -------------------------------------------------------------------------------

// A string that may be empty (a scenario given as text has no file).
std::string any_string(ObjectReader& r, std::string_view key) {
  const Json& v = r.require(key, "a string");
  if (!v.is_string()) r.fail(key, "is " + describe_json(v) + ", expected a string");
  return v.get<std::string>();
}

const Json& array_at(ObjectReader& r, std::string_view key) {
  const Json& v = r.require(key, "an array");
  if (!v.is_array()) r.fail(key, "is " + describe_json(v) + ", expected an array");
  return v;
}

// The fields of one result that the report uses, checked with their paths, then the whole result
// read by its own reader.
StrategyResult read_strategy(const Json& j, const std::string& path, const std::string& file) {
  ObjectReader r(j, path, file);
  r.string("strategy");
  r.number("step_time_mean_s", 0.0, kNoMax);
  r.number("images_per_s", 0.0, kNoMax);
  const Json& hosts = array_at(r, "hosts");
  for (size_t i = 0; i < hosts.size(); ++i) {
    ObjectReader h(hosts[i], json_path(r.path_of("hosts"), i), file);
    h.string("name");
    h.number("bytes_in", 0.0, kNoMax);
    h.number("bytes_out", 0.0, kNoMax);
  }
  ObjectReader w(r.require("worker_mean", "an object"), r.path_of("worker_mean"), file);
  w.number("compute_s", 0.0, kNoMax);
  w.number("communication_s", 0.0, kNoMax);
  w.number("waiting_s", 0.0, kNoMax);
  const Json& trials = array_at(r, "cut_search");
  for (size_t i = 0; i < trials.size(); ++i) {
    ObjectReader t(trials[i], json_path(r.path_of("cut_search"), i), file);
    t.string("cut");
    t.number("step_time_mean_s", 0.0, kNoMax);
  }
  try {
    return strategy_result_from_json(j);
  } catch (const std::runtime_error& e) {
    throw InputError(
        file, path,
        std::string("is not a strategy's result as `ralp simulate --json` writes it (") + e.what() +
            ")");
  }
}

std::vector<StrategyResult> read_results(ObjectReader& r, const std::string& file) {
  const Json& results = array_at(r, "results");
  std::vector<StrategyResult> out;
  for (size_t i = 0; i < results.size(); ++i) {
    out.push_back(read_strategy(results[i], json_path(r.path_of("results"), i), file));
  }
  return out;
}

// A document's "precision"; those written before precisions existed computed in FP32.
Precision read_precision(ObjectReader& r) {
  return *parse_precision(
      r.optional_choice("precision", {precision_names().begin(), precision_names().end()})
          .value_or("fp32"));
}

ScenarioResult read_simulation(const Json& doc, const std::string& file) {
  ObjectReader r(doc, "", file);
  ObjectReader s(r.require("scenario", "an object"), r.path_of("scenario"), file);
  ScenarioResult out;
  out.scenario = s.string("name");
  out.file = any_string(s, "file");
  out.model = s.string("model");
  out.workers = s.integer("workers", 1, kMaxCount);
  out.parameter_servers = s.integer("parameter_servers", 0, kMaxCount);
  out.batch_per_worker = s.integer("batch_per_worker", 1, kMaxCount);
  out.precision = read_precision(s);
  out.network_model = s.string("network_model");
  if (const Json* baseline = s.get("baseline"); baseline != nullptr && !baseline->is_null()) {
    out.baseline = baseline_from_json(*baseline, s.path_of("baseline"), file);
  }
  if (const Json* training = s.get("training"); training != nullptr) {
    out.training = training_plan_from_json(*training, s.path_of("training"), file);
  }
  out.results = read_results(r, file);
  const Json& verdict = r.require("verdict", "an object or null");
  if (verdict.is_object()) {
    ObjectReader v(verdict, r.path_of("verdict"), file);
    out.split_threshold = v.number("split_threshold", 0.0, kNoMax);
  }
  return out;
}

// Whether a sweep axis multiplies the points: every axis but "strategies", which lists what each
// point runs and has no value in a point's "values" (docs/sweep.md).
bool multiplies_points(const SweepAxis& axis) { return axis.name != "strategies"; }

SweepDocument read_sweep(const Json& doc, const std::string& file) {
  ObjectReader r(doc, "", file);
  ObjectReader s(r.require("sweep", "an object"), r.path_of("sweep"), file);
  SweepDocument out;
  out.base = s.string("base");
  out.fidelity = s.choice("fidelity", {"event", "analytic"});
  const Json& axes = array_at(s, "axes");
  for (size_t i = 0; i < axes.size(); ++i) {
    ObjectReader a(axes[i], json_path(s.path_of("axes"), i), file);
    SweepAxis axis;
    axis.name = a.string("name");
    for (const Json& v : array_at(a, "values")) axis.values.push_back(v);
    if (axis.values.empty()) a.fail("values", "is empty, expected at least one value");
    out.axes.push_back(std::move(axis));
  }
  const Json& points = array_at(r, "points");
  for (size_t i = 0; i < points.size(); ++i) {
    const std::string path = json_path(r.path_of("points"), i);
    ObjectReader p(points[i], path, file);
    SweepPoint point;
    point.index = p.integer("index", 0, kMaxCount);
    point.values = p.require("values", "an object");
    if (!point.values.is_object()) {
      p.fail("values", "is " + describe_json(point.values) + ", expected an object");
    }
    for (const SweepAxis& axis : out.axes) {
      if (multiplies_points(axis) && !point.values.contains(axis.name)) {
        throw InputError(file, json_path(p.path_of("values"), axis.name),
                         "is missing, expected the point's value of the sweep's axis");
      }
    }
    point.scenario = p.string("scenario");
    point.results = read_results(p, file);
    point.verdict = p.has("verdict") ? *p.get("verdict") : Json(nullptr);
    if (const Json* baseline = p.get("baseline"); baseline != nullptr && !baseline->is_null()) {
      point.baseline = baseline_from_json(*baseline, p.path_of("baseline"), file);
    }
    if (const Json* training = p.get("training"); training != nullptr) {
      (void)training_plan_from_json(*training, p.path_of("training"), file);  // checks it
      point.training = *training;
    }
    for (const Json& result : *p.get("results")) {
      Json figures = Json::object();
      for (const char* key : {"images_per_s_per_gpu", "scaling_efficiency", "time_to_train_s",
                              "billed_hosts", "cost"}) {
        if (result.is_object() && result.contains(key)) figures[key] = result.at(key);
      }
      point.figures.push_back(std::move(figures));
    }
    out.points.push_back(std::move(point));
  }
  return out;
}

PlacedStrategy read_placed(const Json& j, const std::string& path, const std::string& file) {
  ObjectReader r(j, path, file);
  PlacedStrategy p;
  p.label = r.string("label");
  p.kind = r.string("strategy");
  p.searched = r.optional_boolean("searched").value_or(false);
  const Json& cut = r.require("cut", "a layer name or null");
  if (!cut.is_null()) p.cut = r.string("cut");
  p.analytic_s = r.number("analytic_step_time_s", 0.0, kNoMax);
  p.simulated_s = r.number("simulated_step_time_s", 0.0, kNoMax);
  if (r.has("ranking")) {
    const Json& ranking = array_at(r, "ranking");
    for (size_t i = 0; i < ranking.size(); ++i) {
      ObjectReader c(ranking[i], json_path(r.path_of("ranking"), i), file);
      RankedCut rc;
      rc.rank = c.integer("rank", 1, kMaxCount);
      rc.cut = c.string("cut");
      rc.boundary_bytes = c.integer("boundary_bytes", 0, kMaxCount);
      rc.activation_gradient_bytes = c.integer("activation_gradient_bytes", 0, kMaxCount);
      rc.head_param_bytes = c.integer("head_param_bytes", 0, kMaxCount);
      rc.analytic_s = c.number("analytic_step_time_s", 0.0, kNoMax);
      c.require("analytic_is_lower_bound", "true or false");
      rc.analytic_is_lower_bound = *c.optional_boolean("analytic_is_lower_bound");
      c.require("simulated_step_time_s", "a number or null");
      c.require("gap", "a number or null");
      if (!c.get("simulated_step_time_s")->is_null()) {
        rc.simulated_s = c.number("simulated_step_time_s", 0.0, kNoMax);
      }
      if (!c.get("gap")->is_null()) rc.gap = c.number("gap", -kNoMax, kNoMax);
      p.ranking.push_back(std::move(rc));
    }
  }
  return p;
}

PlaceDocument read_place(const Json& doc, const std::string& file) {
  ObjectReader r(doc, "", file);
  PlaceDocument out;
  out.scenario = r.string("scenario");
  out.file = any_string(r, "file");
  out.model = r.string("model");
  out.workers = r.integer("workers", 1, kMaxCount);
  out.parameter_servers = r.integer("parameter_servers", 0, kMaxCount);
  out.precision = read_precision(r);
  out.top_k = r.integer("top_k", 0, kMaxCount);
  const Json& strategies = array_at(r, "strategies");
  for (size_t i = 0; i < strategies.size(); ++i) {
    out.strategies.push_back(
        read_placed(strategies[i], json_path(r.path_of("strategies"), i), file));
  }
  const Json& baselines = array_at(r, "baselines");
  for (size_t i = 0; i < baselines.size(); ++i) {
    out.baselines.push_back(read_placed(baselines[i], json_path(r.path_of("baselines"), i), file));
  }
  out.verdict = r.require("verdict", "an object or null");
  if (out.verdict.is_object()) {
    ObjectReader v(out.verdict, r.path_of("verdict"), file);
    v.string("reason");
  }
  return out;
}

Json validation_checked(const Json& doc, const std::string& file) {
  // The validation report's readers name the document "validation results"; here it is a file.
  try {
    (void)validation_plot(doc);
    ObjectReader r(doc, "", file);
    for (const char* key : {"summary", "replay_summary"}) {
      if (std::string_view(key) == "replay_summary" && !r.has(key)) continue;  // older runs
      const Json& summary = array_at(r, key);
      for (size_t i = 0; i < summary.size(); ++i) {
        ObjectReader s(summary[i], json_path(r.path_of(key), i), file);
        s.string("group");
        s.integer("points", 0, kMaxCount);
        s.number("median_abs_error_pct", 0.0, kNoMax);
        s.number("max_abs_error_pct", 0.0, kNoMax);
      }
    }
  } catch (const InputError& e) {
    throw InputError(file, e.path(), e.problem());
  }
  return doc;
}

Json placed_json(const PlacedStrategy& p) {
  Json j = {{"label", p.label},
            {"strategy", p.kind},
            {"searched", p.searched},
            {"analytic_step_time_s", p.analytic_s},
            {"simulated_step_time_s", p.simulated_s}};
  j["cut"] = p.cut ? Json(*p.cut) : Json(nullptr);
  if (p.searched) {
    Json ranking = Json::array();
    for (const RankedCut& r : p.ranking) {
      ranking.push_back(
          {{"rank", r.rank},
           {"cut", r.cut},
           {"boundary_bytes", r.boundary_bytes},
           {"activation_gradient_bytes", r.activation_gradient_bytes},
           {"head_param_bytes", r.head_param_bytes},
           {"analytic_step_time_s", r.analytic_s},
           {"analytic_is_lower_bound", r.analytic_is_lower_bound},
           {"simulated_step_time_s", r.simulated_s ? Json(*r.simulated_s) : Json(nullptr)},
           {"gap", r.gap ? Json(*r.gap) : Json(nullptr)}});
    }
    j["ranking"] = std::move(ranking);
  }
  return j;
}

// ---- plots ---------------------------------------------------------------------------------

// Draws plots beside the report, one progress line each, and puts each into the document with
// links to its PNG, data and script, or says why it could not be drawn.
class Plotter {
 public:
  Plotter(std::filesystem::path folder, std::optional<std::string> skipped,
          const std::function<void(const std::string&)>& progress)
      : folder_(std::move(folder)), skipped_(std::move(skipped)), progress_(progress) {}

  void draw(MarkdownDocument& doc, const std::string& stem, const std::string& title,
            const std::function<std::optional<std::string>(const std::filesystem::path&)>& write) {
    if (skipped_) return;
    if (progress_) progress_("ralp report: plot " + stem + ".svg, " + stem + ".png");
    const std::optional<std::string> problem = write(folder_ / stem);
    if (problem) {
      doc.paragraph("Plot " + title + " could not be drawn: " + *problem + ".");
      return;
    }
    drawn_.push_back(stem);
    doc.image(title, stem + ".svg");
    doc.paragraph("[PNG](" + stem + ".png), [data](" + stem + ".dat), [gnuplot script](" + stem +
                  ".gp)");
  }
  void draw(MarkdownDocument& doc, const std::string& stem, const std::string& title,
            const GnuplotFigure& figure) {
    draw(doc, stem, title,
         [&](const std::filesystem::path& base) { return write_plot(figure, base); });
  }

  [[nodiscard]] const std::vector<std::string>& drawn() const { return drawn_; }

 private:
  std::filesystem::path folder_;
  std::optional<std::string> skipped_;
  const std::function<void(const std::string&)>& progress_;
  std::vector<std::string> drawn_;
};

std::string settings(const std::string& title, const std::string& x_label,
                     const std::string& y_label) {
  return "set title " + gnuplot_quoted(title) + "\nset xlabel " + gnuplot_quoted(x_label) +
         "\nset ylabel " + gnuplot_quoted(y_label) + "\nset grid ytics\n";
}

std::string histogram_settings(bool stacked) {
  return std::string("set style data histograms\nset style histogram ") +
         (stacked ? "rowstacked" : "clustered gap 1") +
         "\nset style fill solid 0.85 border -1\nset boxwidth 0.7 relative\nset yrange [0:*]\n"
         "set xtics rotate by -30 nomirror\nset key outside right top\n";
}

int bars_width(size_t bars) {
  return std::clamp(static_cast<int>(bars) * kBarPx + 300, kPlotWidthPx, kMaxWidthPx);
}

GnuplotFigure breakdown_figure(const ScenarioResult& s) {
  double max = 0.0;
  for (const auto& r : s.results) {
    max =
        std::max(max, r.worker_mean.compute + r.worker_mean.communication + r.worker_mean.waiting);
  }
  const Scale scale = time_scale(max);
  GnuplotFigure f;
  f.enhanced = false;
  f.data = "# strategy compute communication waiting (" + scale.unit + " per step, worker mean)\n";
  for (const auto& r : s.results) {
    f.data += data_label(r.label) + " " + number(r.worker_mean.compute * scale.factor) + " " +
              number(r.worker_mean.communication * scale.factor) + " " +
              number(r.worker_mean.waiting * scale.factor) + "\n";
  }
  f.settings = settings(s.scenario + ": where a worker's step goes", "strategy",
                        "time per step, worker mean (" + scale.unit + ")") +
               histogram_settings(true);
  f.plot = "data using 2:xtic(1) title \"compute\" lc rgb \"" + colour(0) +
           "\", '' using 3 title \"communication\" lc rgb \"" + colour(1) +
           "\", '' using 4 title \"waiting\" lc rgb \"" + colour(9) + "\"";
  f.width_px = bars_width(s.results.size() * 4);
  return f;
}

// Hosts in the order of the first result that has them, then any others in their order.
std::vector<std::string> host_names(const ScenarioResult& s) {
  std::vector<std::string> names;
  for (const auto& r : s.results) {
    for (const auto& h : r.hosts) {
      if (std::find(names.begin(), names.end(), h.name) == names.end()) names.push_back(h.name);
    }
  }
  return names;
}

const HostTraffic* find_host(const StrategyResult& r, const std::string& name) {
  for (const auto& h : r.hosts) {
    if (h.name == name) return &h;
  }
  return nullptr;
}

GnuplotFigure traffic_figure(const ScenarioResult& s) {
  const std::vector<std::string> hosts = host_names(s);
  double max = 0.0;
  for (const auto& r : s.results) {
    for (const auto& h : r.hosts) max = std::max({max, h.bytes_in, h.bytes_out});
  }
  const Scale scale = byte_scale(max);
  GnuplotFigure f;
  f.enhanced = false;
  f.data = "# host, then per strategy bytes in and out per step (" + scale.unit + "):";
  for (const auto& r : s.results) {
    f.data += ' ';
    f.data += r.label;
  }
  f.data += "\n";
  for (const std::string& name : hosts) {
    f.data += data_label(name);
    for (const auto& r : s.results) {
      const HostTraffic* h = find_host(r, name);
      // Appended piece by piece: GCC 12 warns (-Wrestrict) on the concatenation.
      f.data += ' ';
      f.data += number(h ? h->bytes_in * scale.factor : 0.0);
      f.data += ' ';
      f.data += number(h ? h->bytes_out * scale.factor : 0.0);
    }
    f.data += "\n";
  }
  f.settings = settings(s.scenario + ": traffic per host and step", "host",
                        "bytes per step (" + scale.unit + ")") +
               histogram_settings(false);
  for (size_t i = 0; i < s.results.size(); ++i) {
    const std::string in = std::to_string(2 + 2 * i);
    const std::string out = std::to_string(3 + 2 * i);
    if (i > 0) f.plot += ", ";
    f.plot += (i == 0 ? "data using " + in + ":xtic(1)" : "'' using " + in) + " title " +
              gnuplot_quoted(s.results[i].label + " in") + " lc rgb \"" + colour(i) +
              "\" fs solid 0.85, '' using " + out + " title " +
              gnuplot_quoted(s.results[i].label + " out") + " lc rgb \"" + colour(i) +
              "\" fs pattern 4";
  }
  f.width_px = bars_width(hosts.size() * (2 * s.results.size() + 1));
  return f;
}

// The x tic labels of n cuts read from column 2: every cut when few, else every k-th.
std::string cut_tics(size_t n) {
  const size_t every = std::max<size_t>((n + kMaxCutLabels - 1) / kMaxCutLabels, 1);
  return "xtic(int($0) % " + std::to_string(every) + " == 0 ? stringcolumn(2) : \"\")";
}

GnuplotFigure cut_search_figure(const std::string& scenario, const StrategyResult& r) {
  double max = 0.0;
  for (const auto& t : r.cut_search) max = std::max(max, t.step_time_mean_s);
  const Scale scale = time_scale(max);
  GnuplotFigure f;
  f.enhanced = false;
  f.data = "# position, cut, simulated step time (" + scale.unit + ")\n";
  for (size_t i = 0; i < r.cut_search.size(); ++i) {
    const auto& t = r.cut_search[i];
    f.data += std::to_string(i + 1) + " " + data_label(t.cut) + " " +
              number(t.step_time_mean_s * scale.factor) + "\n";
  }
  f.settings = settings(scenario + ", " + r.label + ": step time against the cut",
                        "first layer of the head (cuts in the order simulated)",
                        "simulated step time (" + scale.unit + ")") +
               "set xtics rotate by -60 nomirror\nset key top right\nset yrange [0:*]\nset offsets "
               "0.5, 0.5, 0, 0\n";
  f.plot = "data using 1:3:" + cut_tics(r.cut_search.size()) + " with linespoints pt 7 lc rgb \"" +
           colour(0) + "\" title \"simulated\"";
  f.width_px = bars_width(r.cut_search.size() * 2);
  return f;
}

GnuplotFigure ranking_figure(const PlaceDocument& p, const PlacedStrategy& s) {
  double max = 0.0;
  for (const auto& c : s.ranking) max = std::max({max, c.analytic_s, c.simulated_s.value_or(0.0)});
  const Scale scale = time_scale(max);
  GnuplotFigure f;
  f.enhanced = false;
  f.data = "# rank, cut, analytic estimate, analytic lower bound, simulated step time (" +
           scale.unit + "; NaN: not estimated, only bounded, or not simulated)\n";
  bool bounds = false;
  for (const RankedCut& c : s.ranking) {
    const std::string analytic = number(c.analytic_s * scale.factor);
    f.data += std::to_string(c.rank) + " " + data_label(c.cut) + " " +
              (c.analytic_is_lower_bound ? "NaN" : analytic) + " " +
              (c.analytic_is_lower_bound ? analytic : "NaN") + " " +
              (c.simulated_s ? number(*c.simulated_s * scale.factor) : "NaN") + "\n";
    bounds = bounds || c.analytic_is_lower_bound;
  }
  f.settings = settings(p.scenario + ", " + s.label + ": step time against the cut",
                        "first layer of the head (cuts ranked by the analytic model)",
                        "step time (" + scale.unit + ")") +
               "set xtics rotate by -60 nomirror\nset key top left\nset yrange [0:*]\nset offsets "
               "0.5, 0.5, 0, 0\n";
  f.plot = "data using 1:3:" + cut_tics(s.ranking.size()) +
           " with points pt 7 ps 0.6 lc rgb \"" + colour(0) + "\" title \"analytic\", " +
           (bounds ? "'' using 1:4 with points pt 6 ps 0.6 lc rgb \"" + colour(0) +
                         "\" title \"analytic lower bound (estimate skipped)\", "
                   : std::string()) +
           "'' using 1:5 with points pt 9 ps 1.6 lc rgb \"" + colour(1) + "\" title \"simulated\"";
  f.width_px = bars_width(s.ranking.size() * 2);
  return f;
}

// "sweep of resnet50-dgx-a100-8x8.json": the base's file name, which fits a plot's title.
std::string sweep_title(const SweepDocument& sweep) {
  return "sweep of " + std::filesystem::path(sweep.base).filename().string();
}

// A colour per strategy and a dash pattern per value of the other axes, for each series.
void add_series(GnuplotFigure& f, const std::vector<SpeedupSeries>& series, size_t first_index) {
  std::vector<std::string> strategies;
  std::vector<std::string> groups;
  const auto position = [](std::vector<std::string>& list, const std::string& item) {
    const auto it = std::find(list.begin(), list.end(), item);
    if (it != list.end()) return static_cast<size_t>(it - list.begin());
    list.push_back(item);
    return list.size() - 1;
  };
  for (size_t i = 0; i < series.size(); ++i) {
    const size_t c = position(strategies, series[i].strategy);
    const size_t g = position(groups, series[i].group);
    f.plot += std::string(f.plot.empty() ? "" : ", ") + "data index " +
              std::to_string(first_index + i) + " using 1:2 with linespoints pt " +
              std::to_string(7 + 2 * (g % 3)) + " dt " + std::to_string(1 + g % 5) +
              " lc rgb \"" + colour(c) + "\" title " + gnuplot_quoted(series[i].title);
  }
}

// Images/s (with linear scaling from one device where every point has the same baseline) or
// scaling efficiency against the workers.
GnuplotFigure throughput_figure(const SweepDocument& sweep, const std::vector<SpeedupSeries>& series,
                                bool efficiency) {
  double smallest = kInf;
  double largest = 0.0;
  double top = 0.0;
  for (const auto& s : series) {
    for (const auto& [w, x] : s.points) {
      smallest = std::min(smallest, w);
      largest = std::max(largest, w);
      top = std::max(top, x);
    }
  }
  GnuplotFigure f;
  f.enhanced = false;
  for (size_t i = 0; i < series.size(); ++i) {
    if (i > 0) f.data += "\n\n";
    f.data += "# " + series[i].title + ": workers, " +
              (efficiency ? "scaling efficiency (%)" : "images/s") + "\n";
    for (const auto& [w, x] : series[i].points) {
      f.data += number(w) + " " + number(efficiency ? 100.0 * x : x) + "\n";
    }
  }
  const std::string range = "set logscale x 2\nset xrange [" + number(smallest / kAxisMargin) +
                            ":" + number(largest * kAxisMargin) + "]\nset grid xtics\n" +
                            "set key bottom left font \",9\" spacing 0.9\n";
  if (efficiency) {
    f.settings = settings(sweep_title(sweep) + ": scaling efficiency against workers", "workers",
                          "images/s per GPU / one GPU alone (%)") +
                 range + "set yrange [0:" + number(std::max(110.0, 100.0 * top * kAxisMargin)) +
                 "]\n";
    f.plot = "100 title \"linear scaling\" with lines dt 2 lc rgb \"#888888\"";
  } else {
    std::optional<double> one;
    bool same = true;
    for (const SweepPoint& p : sweep.points) {
      if (!p.baseline) continue;
      if (one && *one != p.baseline->images_per_s) same = false;
      one = p.baseline->images_per_s;
    }
    f.settings = settings(sweep_title(sweep) + ": images/s against workers", "workers",
                          "images/s") +
                 range + "set logscale y 2\nset yrange [*:" +
                 number(std::max(top, one && same ? *one * largest : 0.0) * kAxisMargin) + "]\n";
    if (one && same) {
      f.plot = number(*one) + "*x title \"linear (W x one GPU alone)\" with lines dt 2 lc rgb "
               "\"#888888\"";
    }
  }
  add_series(f, series, 0);
  f.width_px = kPlotWidthPx;
  return f;
}

GnuplotFigure speedup_figure(const SweepDocument& sweep, const std::vector<SpeedupSeries>& series,
                             double smallest) {
  double largest = smallest;
  for (const auto& s : series) {
    for (const auto& [w, x] : s.points) largest = std::max(largest, w);
  }
  GnuplotFigure f;
  f.enhanced = false;
  for (size_t i = 0; i < series.size(); ++i) {
    if (i > 0) f.data += "\n\n";
    f.data += "# " + series[i].title + ": workers, speedup\n";
    for (const auto& [w, x] : series[i].points) f.data += number(w) + " " + number(x) + "\n";
  }
  const std::string w0 = number(smallest);
  // Log on both axes: linear scaling is the diagonal and every strategy keeps its share of the
  // height, however far the sweep reaches.
  f.settings = settings(sweep_title(sweep) + ": speedup against workers", "workers",
                        "speedup over " + w0 + " worker" + (smallest == 1.0 ? "" : "s") +
                            " (images/s ratio)") +
               "set logscale xy 2\nset xrange [" + number(smallest / kAxisMargin) + ":" +
               number(largest * kAxisMargin) + "]\nset yrange [" + number(1.0 / kAxisMargin) +
               ":" + number(largest / smallest * kAxisMargin) +
               "]\nset grid xtics\nset key top left font \",9\" spacing 0.9\n";
  f.plot = "x/" + w0 + " title \"linear (W / " + w0 + ")\" with lines dt 2 lc rgb \"#888888\"";
  add_series(f, series, 0);
  f.width_px = kPlotWidthPx;
  return f;
}

// ---- sections ------------------------------------------------------------------------------

using Align = MarkdownDocument::Align;

std::string optional_times(const std::optional<double>& x) { return x ? times(*x) : "-"; }

void simulate_section(MarkdownDocument& doc, Plotter& plots, const ResultDocument& d, size_t n) {
  const ScenarioResult& s = d.simulation;
  const std::string stem = "simulate-" + std::to_string(n);
  doc.heading(2, "Simulation: " + s.scenario);
  doc.paragraph("From `" + d.file + "` (`ralp simulate --json`): " + s.model + ", " +
                std::to_string(s.workers) + " workers x batch " +
                std::to_string(s.batch_per_worker) + " in " + std::string(to_string(s.precision)) +
                ", " + std::to_string(s.parameter_servers) + " PS, " + s.network_model +
                " network model.");
  std::vector<std::vector<std::string>> rows;
  for (const auto& r : s.results) {
    const TrainingFigures f = training_figures(r, s.workers, s.training, s.baseline);
    rows.push_back({r.label, r.cut.value_or("-"), seconds(r.step_time_mean_s),
                    fixed(r.images_per_s, 1), fixed(f.images_per_s_per_gpu, 1),
                    f.scaling_efficiency ? format_efficiency(*f.scaling_efficiency) : "-",
                    optional_times(r.speedup_vs_ps), optional_times(r.speedup_vs_allreduce),
                    seconds(r.worker_mean.compute), seconds(r.worker_mean.communication),
                    seconds(r.worker_mean.waiting)});
  }
  doc.table({"strategy", "cut", "step time", "images/s", "images/s per GPU",
             "scaling efficiency", "vs ps", "vs allreduce", "compute", "communication",
             "waiting"},
            rows, {Align::left, Align::left});
  if (s.baseline) {
    doc.paragraph("Scaling efficiency: images/s per GPU against one " + s.baseline->device +
                  " alone at batch " + std::to_string(s.baseline->batch) + " (" +
                  fixed(s.baseline->images_per_s, 1) + " images/s, the analytic model).");
  }
  doc.paragraph(
      "Compute / communication / waiting is a worker's mean per step: its device busy, "
      "else a transfer of its own in flight, else neither; the three add up to the step "
      "time.");
  if (!s.results.empty()) {
    std::vector<std::string> verdict;
    for (const std::string& line : verdict_lines(make_verdict(s, s.split_threshold))) {
      verdict.push_back(line.substr(std::min(line.find_first_not_of(' '), line.size())));
    }
    doc.bullets(verdict);
    plots.draw(doc, stem + "-breakdown", s.scenario + ": step-time breakdown", breakdown_figure(s));
  }

  doc.heading(3, "Traffic per host");
  std::vector<std::vector<std::string>> traffic;
  const std::vector<std::string> hosts = host_names(s);
  for (const std::string& name : hosts) {
    std::vector<std::string> row{name};
    for (const auto& r : s.results) {
      const HostTraffic* h = find_host(r, name);
      row.push_back(h ? bytes(h->bytes_in) + " / " + bytes(h->bytes_out) : "-");
    }
    traffic.push_back(std::move(row));
  }
  std::vector<std::string> header{"host"};
  for (const auto& r : s.results) header.push_back(r.label + " in / out");
  doc.table(header, traffic, {Align::left});
  doc.paragraph("Bytes per step, message headers included.");
  if (!hosts.empty() && !s.results.empty()) {
    plots.draw(doc, stem + "-traffic", s.scenario + ": traffic per host", traffic_figure(s));
  }

  for (const auto& r : s.results) {
    if (r.cut_search.empty()) continue;
    doc.heading(3, "Cut search: " + r.label);
    doc.paragraph(std::to_string(r.cut_search.size()) + " cuts simulated; the chosen cut, " +
                  r.cut.value_or("-") + ", took " + seconds(r.step_time_mean_s) + " per step.");
    plots.draw(doc, stem + "-cuts-" + slug(r.label),
               s.scenario + ", " + r.label + ": step time against the cut",
               cut_search_figure(s.scenario, r));
  }
}

}  // namespace

// The values of a point's axes other than the workers, where the sweep varies them.
std::string axis_title(const SweepDocument& sweep, const SweepPoint& p) {
  std::string title;
  for (const SweepAxis& axis : sweep.axes) {
    if (axis.name == "workers" || !multiplies_points(axis) || axis.values.size() < 2) continue;
    title += ", " + axis.name + " " + value_text(p.values.at(axis.name));
  }
  return title;
}

namespace {

void sweep_section(MarkdownDocument& doc, Plotter& plots, const ResultDocument& d, size_t n) {
  const SweepDocument& sw = d.sweep;
  doc.heading(2, "Sweep of " + sw.base);
  std::vector<std::string> axes;
  for (const SweepAxis& a : sw.axes) {
    std::string values;
    for (const Json& v : a.values) values += (values.empty() ? "" : ", ") + value_text(v);
    axes.push_back(a.name + ": " + values);
  }
  doc.paragraph("From `" + d.file + "` (`ralp sweep`, " + sw.fidelity +
                " fidelity): " + std::to_string(sw.points.size()) + " points over these axes:");
  doc.bullets(axes);
  const std::vector<SpeedupSeries> series = sweep_speedups(sw);
  const auto workers = std::find_if(sw.axes.begin(), sw.axes.end(),
                                    [](const SweepAxis& a) { return a.name == "workers"; });
  double smallest = 0.0;
  if (workers != sw.axes.end()) {
    smallest = kInf;
    for (const Json& v : workers->values) {
      if (v.is_number()) smallest = std::min(smallest, v.get<double>());
    }
  }
  if (workers == sw.axes.end()) {
    doc.paragraph("The sweep does not vary the workers, so it has no speedup plot.");
  } else {
    doc.paragraph("Speedup at W workers = the strategy's images/s at W over its images/s at " +
                  number(smallest) + (smallest == 1.0 ? " worker" : " workers") +
                  " (the sweep's smallest count), every other axis the same; linear scaling is "
                  "W / " +
                  number(smallest) + ".");
    if (!series.empty()) {
      plots.draw(doc, "sweep-" + std::to_string(n) + "-speedup", "speedup against workers",
                 speedup_figure(sw, series, smallest));
    }
    const std::vector<SpeedupSeries> images = sweep_throughputs(sw, false);
    if (!images.empty()) {
      plots.draw(doc, "sweep-" + std::to_string(n) + "-images", "images/s against workers",
                 throughput_figure(sw, images, false));
    }
    const std::vector<SpeedupSeries> efficiency = sweep_throughputs(sw, true);
    if (!efficiency.empty()) {
      doc.paragraph("Scaling efficiency at W workers = images/s / (W x the images/s of one of the "
                    "workers' devices alone at the same batch), the analytic model's one-device "
                    "step.");
      plots.draw(doc, "sweep-" + std::to_string(n) + "-efficiency",
                 "scaling efficiency against workers", throughput_figure(sw, efficiency, true));
    }
  }
  // Speedup of each row, looked up in the series it belongs to.
  std::map<std::pair<std::string, double>, double> speedup;
  for (const auto& s : series) {
    for (const auto& [w, x] : s.points) speedup[{s.title, w}] = x;
  }
  std::vector<SweepAxis> multiplied;
  std::copy_if(sw.axes.begin(), sw.axes.end(), std::back_inserter(multiplied), multiplies_points);
  std::vector<std::string> header;
  for (const SweepAxis& a : multiplied) header.push_back(a.name);
  for (const char* h : {"strategy", "cut", "step time", "images/s", "speedup", "efficiency"}) {
    header.push_back(h);
  }
  std::vector<std::vector<std::string>> rows;
  for (const SweepPoint& p : sw.points) {
    for (const auto& r : p.results) {
      std::vector<std::string> row;
      for (const SweepAxis& a : multiplied) row.push_back(value_text(p.values.at(a.name)));
      row.push_back(r.label);
      row.push_back(r.cut.value_or("-"));
      row.push_back(seconds(r.step_time_mean_s));
      row.push_back(fixed(r.images_per_s, 1));
      std::string x = "-";
      if (workers != sw.axes.end() && p.values.at("workers").is_number()) {
        const auto it =
            speedup.find({r.label + axis_title(sw, p), p.values.at("workers").get<double>()});
        if (it != speedup.end()) x = times(it->second);
      }
      row.push_back(x);
      std::string efficiency = "-";
      const auto w = p.values.find("workers");
      if (p.baseline && p.baseline->images_per_s > 0.0 && w != p.values.end() && w->is_number()) {
        efficiency =
            format_efficiency(r.images_per_s / (w->get<double>() * p.baseline->images_per_s));
      }
      row.push_back(efficiency);
      rows.push_back(std::move(row));
    }
  }
  std::vector<Align> align(multiplied.size(), Align::left);
  align.push_back(Align::left);
  align.push_back(Align::left);
  doc.table(header, rows, align);
}

void place_section(MarkdownDocument& doc, Plotter& plots, const ResultDocument& d, size_t n) {
  const PlaceDocument& p = d.placement;
  doc.heading(2, "Placement: " + p.scenario);
  doc.paragraph("From `" + d.file + "` (`ralp place --json`): " + p.model + ", " +
                std::to_string(p.workers) + " workers, " + std::to_string(p.parameter_servers) +
                " PS; every cut ranked by the analytic model, the best " + std::to_string(p.top_k) +
                " simulated.");
  std::vector<std::vector<std::string>> rows;
  for (const auto* list : {&p.strategies, &p.baselines}) {
    for (const PlacedStrategy& s : *list) {
      rows.push_back(
          {s.label, s.kind, s.cut.value_or("-"), seconds(s.analytic_s), seconds(s.simulated_s)});
    }
  }
  doc.table({"strategy", "kind", "cut", "analytic", "simulated"}, rows,
            {Align::left, Align::left, Align::left});
  if (p.verdict.is_object()) doc.paragraph("Verdict: " + p.verdict.at("reason").get<std::string>());
  for (const PlacedStrategy& s : p.strategies) {
    if (!s.searched || s.ranking.empty()) continue;
    doc.heading(3, "Cuts of " + s.label);
    std::vector<std::vector<std::string>> cuts;
    for (const RankedCut& c : s.ranking) {
      if (!c.simulated_s) continue;
      cuts.push_back({std::to_string(c.rank), c.cut, bytes(static_cast<double>(c.boundary_bytes)),
                      bytes(static_cast<double>(c.head_param_bytes)), seconds(c.analytic_s),
                      seconds(*c.simulated_s),
                      c.gap ? (*c.gap >= 0 ? "+" : "") + fixed(100.0 * *c.gap, 1) + "%" : "-"});
    }
    doc.paragraph(std::to_string(s.ranking.size()) + " cuts ranked; the simulated ones:");
    doc.table({"rank", "cut", "boundary", "head params", "analytic", "simulated", "gap"}, cuts,
              {Align::right, Align::left});
    plots.draw(doc, "place-" + std::to_string(n) + "-cuts-" + slug(s.label),
               p.scenario + ", " + s.label + ": step time against the cut", ranking_figure(p, s));
  }
}

void validate_section(MarkdownDocument& doc, Plotter& plots, const ResultDocument& d, size_t n) {
  const Json& v = d.validation;
  doc.heading(2, "Validation: predicted against measured");
  doc.paragraph("From `" + d.file +
                "` (`ralp validate`): " + std::to_string(v.at("points").size()) +
                " points, each `ralp simulate` against a real `ralp cluster` run of the same "
                "scenario; error = (predicted - measured) / measured step time.");
  // With the replays' errors beside, when the run has them (each point simulated again with its
  // run's own kernel times).
  const auto percent = [](const Json& s, const char* key) {
    return fixed(s.at(key).get<double>(), 1) + "%";
  };
  const bool replayed = v.contains("replay_summary");
  std::vector<std::vector<std::string>> rows;
  for (const Json& s : v.at("summary")) {
    std::vector<std::string> row = {s.at("group").get<std::string>(),
                                    std::to_string(s.at("points").get<int64_t>()),
                                    percent(s, "median_abs_error_pct"),
                                    percent(s, "max_abs_error_pct")};
    if (replayed) {
      const Json& all = v.at("replay_summary");
      const auto r = std::find_if(all.begin(), all.end(),
                                  [&](const Json& x) { return x.at("group") == s.at("group"); });
      row.push_back(r == all.end() ? "-" : percent(*r, "median_abs_error_pct"));
      row.push_back(r == all.end() ? "-" : percent(*r, "max_abs_error_pct"));
    }
    rows.push_back(std::move(row));
  }
  std::vector<std::string> header = {"strategy", "points", "median abs error", "max abs error"};
  if (replayed) header.insert(header.end(), {"replayed: median", "replayed: max"});
  doc.table(header, rows, {Align::left});
  if (replayed) {
    doc.paragraph("Replayed: each point simulated again with the kernel times its run measured "
                  "(`ralp simulate --replay`), the error left to the schedule and the network "
                  "model.");
  }
  plots.draw(doc, "validate-" + std::to_string(n) + "-predicted-vs-measured",
             "predicted against measured step time", [&](const std::filesystem::path& base) {
               return write_scatter_plot(validation_plot(v), base);
             });
}

}  // namespace

std::string_view to_string(ResultKind kind) {
  switch (kind) {
    case ResultKind::simulate:
      return "simulate";
    case ResultKind::sweep:
      return "sweep";
    case ResultKind::place:
      return "place";
    case ResultKind::validate:
      return "validate";
  }
  return "?";
}

ResultKind detect_result_kind(const Json& doc, const std::string& file) {
  if (!doc.is_object()) {
    throw InputError(file, "", "is " + describe_json(doc) + ", " + kReadsWhat);
  }
  if (doc.contains("sweep")) return ResultKind::sweep;
  if (doc.contains("points") && doc.contains("summary")) return ResultKind::validate;
  if (doc.contains("strategies") && doc.contains("baselines")) return ResultKind::place;
  if (doc.contains("scenario") && doc.contains("results")) {
    const Json& s = doc.at("scenario");
    if (s.is_object() && s.contains("mode") && s.at("mode") == "measured") {
      throw InputError(file, "/scenario/mode",
                       "is \"measured\": a real run of `ralp cluster --json`, which ralp report "
                       "does not read; " +
                           std::string(kReadsWhat));
    }
    return ResultKind::simulate;
  }
  throw InputError(file, "", std::string("is a JSON object of no known kind, ") + kReadsWhat);
}

ResultDocument parse_result_document(const Json& doc, const std::string& file) {
  ResultDocument d;
  d.file = file;
  d.kind = detect_result_kind(doc, file);
  switch (d.kind) {
    case ResultKind::simulate:
      d.simulation = read_simulation(doc, file);
      break;
    case ResultKind::sweep:
      d.sweep = read_sweep(doc, file);
      break;
    case ResultKind::place:
      d.placement = read_place(doc, file);
      break;
    case ResultKind::validate:
      d.validation = validation_checked(doc, file);
      break;
  }
  return d;
}

ResultDocument read_result_document(const std::filesystem::path& file) {
  return parse_result_document(read_json_file(file), file.string());
}

Json to_json(const SweepDocument& sweep) {
  Json axes = Json::array();
  for (const SweepAxis& a : sweep.axes) axes.push_back({{"name", a.name}, {"values", a.values}});
  Json points = Json::array();
  for (const SweepPoint& p : sweep.points) {
    Json results = Json::array();
    for (size_t i = 0; i < p.results.size(); ++i) {
      Json r = to_json(p.results[i], false);
      if (i < p.figures.size()) r.update(p.figures[i]);
      results.push_back(std::move(r));
    }
    Json point = {{"index", p.index},
                  {"values", p.values},
                  {"scenario", p.scenario},
                  {"results", std::move(results)},
                  {"verdict", p.verdict}};
    if (p.baseline) point["baseline"] = to_json(*p.baseline);
    if (!p.training.is_null()) point["training"] = p.training;
    points.push_back(std::move(point));
  }
  return {{"sweep", {{"base", sweep.base}, {"fidelity", sweep.fidelity}, {"axes", axes}}},
          {"points", std::move(points)}};
}

Json to_json(const PlaceDocument& place) {
  Json strategies = Json::array();
  for (const auto& s : place.strategies) strategies.push_back(placed_json(s));
  Json baselines = Json::array();
  for (const auto& s : place.baselines) baselines.push_back(placed_json(s));
  return {{"scenario", place.scenario},
          {"file", place.file},
          {"model", place.model},
          {"workers", place.workers},
          {"parameter_servers", place.parameter_servers},
          {"precision", std::string(to_string(place.precision))},
          {"top_k", place.top_k},
          {"strategies", std::move(strategies)},
          {"baselines", std::move(baselines)},
          {"verdict", place.verdict}};
}

std::vector<SpeedupSeries> sweep_throughputs(const SweepDocument& sweep, bool efficiency) {
  std::vector<SpeedupSeries> series;
  std::map<std::string, size_t> index;
  for (const SweepPoint& p : sweep.points) {
    const auto w = p.values.find("workers");
    if (w == p.values.end() || !w->is_number()) continue;
    const double workers = w->get<double>();
    if (efficiency && (!p.baseline || p.baseline->images_per_s <= 0.0)) continue;
    for (const auto& r : p.results) {
      const std::string title = r.label + axis_title(sweep, p);
      if (!index.contains(title)) {
        index[title] = series.size();
        series.push_back({title, r.label, axis_title(sweep, p), {}});
      }
      const double value =
          efficiency ? r.images_per_s / (workers * p.baseline->images_per_s) : r.images_per_s;
      series[index.at(title)].points.emplace_back(workers, value);
    }
  }
  for (SpeedupSeries& s : series) std::sort(s.points.begin(), s.points.end());
  return series;
}

std::vector<SpeedupSeries> sweep_speedups(const SweepDocument& sweep) {
  const auto workers = std::find_if(sweep.axes.begin(), sweep.axes.end(),
                                    [](const SweepAxis& a) { return a.name == "workers"; });
  if (workers == sweep.axes.end()) return {};
  double smallest = kInf;
  for (const Json& v : workers->values) {
    if (v.is_number()) smallest = std::min(smallest, v.get<double>());
  }
  // Series in the order their first point appears; points by worker count.
  std::vector<SpeedupSeries> series;
  std::map<std::string, std::map<double, double>> images;  // title -> workers -> images/s
  for (const SweepPoint& p : sweep.points) {
    const Json& w = p.values.at("workers");
    if (!w.is_number()) continue;
    for (const auto& r : p.results) {
      const std::string title = r.label + axis_title(sweep, p);
      if (!images.contains(title)) series.push_back({title, r.label, axis_title(sweep, p), {}});
      images[title][w.get<double>()] = r.images_per_s;
    }
  }
  std::vector<SpeedupSeries> out;
  for (SpeedupSeries& s : series) {
    const auto& by_workers = images.at(s.title);
    const auto base = by_workers.find(smallest);
    if (base == by_workers.end() || base->second <= 0.0) continue;
    for (const auto& [w, x] : by_workers) s.points.emplace_back(w, x / base->second);
    out.push_back(std::move(s));
  }
  return out;
}

ReportOutcome write_results_report(const std::vector<ResultDocument>& documents,
                                   const std::filesystem::path& folder,
                                   const std::function<void(const std::string&)>& progress) {
  ReportOutcome outcome;
  outcome.plots_skipped = gnuplot_problem();
  Plotter plots(folder, outcome.plots_skipped, progress);
  MarkdownDocument doc;
  doc.heading(1, "ralp report");
  std::vector<std::string> inputs;
  for (const ResultDocument& d : documents) {
    inputs.push_back("`" + d.file + "`: " + std::string(to_string(d.kind)));
  }
  doc.paragraph("Inputs:");
  doc.bullets(inputs);
  if (outcome.plots_skipped) {
    doc.paragraph("Plots skipped: " + *outcome.plots_skipped + "; the tables hold the figures.");
  }
  std::map<ResultKind, size_t> count;
  for (const ResultDocument& d : documents) {
    const size_t n = ++count[d.kind];
    switch (d.kind) {
      case ResultKind::simulate:
        simulate_section(doc, plots, d, n);
        break;
      case ResultKind::sweep:
        sweep_section(doc, plots, d, n);
        break;
      case ResultKind::place:
        place_section(doc, plots, d, n);
        break;
      case ResultKind::validate:
        validate_section(doc, plots, d, n);
        break;
    }
  }
  const std::filesystem::path report = folder / "report.md";
  std::ofstream out(report, std::ios::binary | std::ios::trunc);
  out << doc.text();
  if (!out) throw std::runtime_error("cannot write " + report.string());
  outcome.plots = plots.drawn();
  return outcome;
}

}  // namespace ralp::reports
