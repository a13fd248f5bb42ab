// `ralp report`: reads the JSON documents of `ralp simulate --json`, `ralp sweep`, `ralp place
// --json` and `ralp validate`, tells them apart, and writes one Markdown report with tables and
// gnuplot plots (SVG and PNG) of what each holds.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "ralp/core/json_input.hpp"
#include "ralp/results/simulation_result.hpp"
#include "ralp/results/training_plan.hpp"

namespace ralp::reports {

enum class ResultKind { simulate, sweep, place, validate };
std::string_view to_string(ResultKind kind);

// `ralp sweep`'s document: the axes it varied and, per point, the axes' values and the results
// as `ralp simulate --json` writes them.
struct SweepAxis {
  std::string name;          // workers, bandwidth, batch, device, parameter_servers, latency, ...
  std::vector<Json> values;  // as the sweep wrote them: numbers or strings
  friend bool operator==(const SweepAxis&, const SweepAxis&) = default;
};

struct SweepPoint {
  int64_t index = 0;
  Json values;  // {"workers": 4, "bandwidth": "1Gbps"}
  std::string scenario;
  std::vector<StrategyResult> results;
  Json verdict;
  std::optional<SingleDeviceBaseline> baseline;  // one device alone, where the sweep gave it
  Json training;  // the point's training run (TrainingPlan's JSON), null where the sweep has none
  // Each result's training figures as the sweep wrote them (images_per_s_per_gpu, ...), kept to
  // write them back: the points' worker counts are not all in the document.
  std::vector<Json> figures;
  friend bool operator==(const SweepPoint&, const SweepPoint&) = default;
};

struct SweepDocument {
  std::string base;      // the scenario it varied
  std::string fidelity;  // "event" or "analytic"
  std::vector<SweepAxis> axes;
  std::vector<SweepPoint> points;
  friend bool operator==(const SweepDocument&, const SweepDocument&) = default;
};

// `ralp place --json`: each strategy's ranked cuts.
struct RankedCut {
  int64_t rank = 0;
  std::string cut;
  int64_t boundary_bytes = 0;
  int64_t activation_gradient_bytes = 0;
  int64_t head_param_bytes = 0;
  double analytic_s = 0.0;
  bool analytic_is_lower_bound = false;  // the search skipped this cut's full estimate
  std::optional<double> simulated_s;
  std::optional<double> gap;
  friend bool operator==(const RankedCut&, const RankedCut&) = default;
};

struct PlacedStrategy {
  std::string label;
  std::string kind;
  bool searched = false;
  std::optional<std::string> cut;
  double analytic_s = 0.0;
  double simulated_s = 0.0;
  std::vector<RankedCut> ranking;  // searched strategies only
  friend bool operator==(const PlacedStrategy&, const PlacedStrategy&) = default;
};

struct PlaceDocument {
  std::string scenario;
  std::string file;
  std::string model;
  int64_t workers = 0;
  int64_t parameter_servers = 0;
  Precision precision = Precision::fp32;
  int64_t top_k = 0;
  std::vector<PlacedStrategy> strategies;
  std::vector<PlacedStrategy> baselines;
  Json verdict;  // null, or {"split", "best_cut", ..., "reason"}
  friend bool operator==(const PlaceDocument&, const PlaceDocument&) = default;
};

// One input file, read and checked.
struct ResultDocument {
  std::string file;  // as named on the command line
  ResultKind kind = ResultKind::simulate;
  ScenarioResult simulation;  // simulate
  SweepDocument sweep;        // sweep
  PlaceDocument placement;    // place
  Json validation;            // validate: the document itself
};

// Which command wrote `doc`. Throws InputError naming `file` when it is none of the four (a
// measured run of `ralp cluster --json` is named as such).
ResultKind detect_result_kind(const Json& doc, const std::string& file);

// Detects the kind and reads the fields the report uses. Throws InputError naming `file`, the
// JSON path and the expectation for a malformed document.
ResultDocument parse_result_document(const Json& doc, const std::string& file);
// The same from a file; a file that is not JSON is an InputError too.
ResultDocument read_result_document(const std::filesystem::path& file);

// The documents written back, as their commands write them (for checking that reading keeps
// everything it reads).
Json to_json(const SweepDocument& sweep);
Json to_json(const PlaceDocument& place);

// Speedup in a sweep: the images/s of a strategy at W workers over its images/s at the sweep's
// smallest worker count, the other axes being equal.
struct SpeedupSeries {
  std::string title;     // "ralp, bandwidth 10Gbps"
  std::string strategy;  // "ralp"
  std::string group;     // ", bandwidth 10Gbps": the other axes the sweep varies
  std::vector<std::pair<double, double>> points;  // (workers, speedup), by workers
  friend bool operator==(const SpeedupSeries&, const SpeedupSeries&) = default;
};
// Empty without a workers axis. A series lacking the smallest worker count is left out.
std::vector<SpeedupSeries> sweep_speedups(const SweepDocument& sweep);
// The same series of images/s (`efficiency` false) or of scaling efficiency against one device
// (true; points without a baseline are left out) against the workers.
std::vector<SpeedupSeries> sweep_throughputs(const SweepDocument& sweep, bool efficiency);
// ", bandwidth 10Gbps, batch 64": a point's values of the axes other than the workers that the
// sweep varies (more than one value).
std::string axis_title(const SweepDocument& sweep, const SweepPoint& point);

struct ReportOutcome {
  std::vector<std::string> plots;            // the plots drawn, as file stems beside report.md
  std::optional<std::string> plots_skipped;  // why no plot was drawn (gnuplot missing)
};

// Writes FOLDER/report.md, and for each plot FOLDER/<stem>.{dat,gp,svg,png}. `progress` gets one
// line per plot. The same documents give the same report.md and SVG bytes.
ReportOutcome write_results_report(const std::vector<ResultDocument>& documents,
                                   const std::filesystem::path& folder,
                                   const std::function<void(const std::string&)>& progress);

}  // namespace ralp::reports
