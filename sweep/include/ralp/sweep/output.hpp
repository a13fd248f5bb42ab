// A sweep's files: DIR/sweep.csv streamed in point order as points finish, DIR/sweep.points.jsonl
// beside it (each written point's JSON, what --resume reads back), and DIR/sweep.json at the end.
// docs/sweep.md describes every column and key.
#pragma once

#include <cstddef>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "ralp/core/json_input.hpp"
#include "ralp/sweep/spec.hpp"

namespace ralp::sweep {

// `point,<multiplied axes in axis order>,strategy,kind,cut,step_time_mean_s,step_time_median_s,
// images_per_s,speedup_vs_ps,speedup_vs_allreduce` (no newline).
std::string csv_header(const SweepSpec& spec);

// One row per strategy of the point's outcome (evaluate_point); numbers printed shortest
// round-trip (std::to_chars), absent speedups and cuts empty.
std::string csv_rows(const SweepPoint& point, const Json& outcome);

// {"index", "values", "scenario", "results", "verdict"}: one entry of sweep.json's "points".
Json point_json(const SweepPoint& point, const Json& outcome);

// The "sweep" object of sweep.json: base, fidelity and the axes with their values (integers as
// numbers).
Json sweep_json(const SweepSpec& spec);

// The points already written by an earlier run of the same sweep into `dir`: the longest prefix
// of points complete in both sweep.csv and sweep.points.jsonl, as their point_json. Throws
// InputError naming DIR/sweep.csv when its header or a row's point values differ from this
// sweep's. Empty when the files do not exist.
std::vector<Json> read_finished_points(const std::filesystem::path& dir, const SweepSpec& spec,
                                       const std::vector<SweepPoint>& points);

// Writes results as they arrive, in point order: a point that finishes early is held until every
// point before it is written, so sweep.csv is always a prefix of the final file.
// The ISO 4217 code of a point's training object's price_per_hour; "" without a price.
std::string price_currency(const Json& training);

class SweepWriter {
 public:
  // Starts the files in `dir` (which must exist), keeping `finished` (read_finished_points) as
  // the first points: the files are rewritten to hold exactly those. Throws std::runtime_error
  // when a file cannot be written.
  SweepWriter(std::filesystem::path dir, const SweepSpec& spec,
              const std::vector<SweepPoint>& points, std::vector<Json> finished);

  // Hands in point `index`'s outcome; writes it and any held points after it that are now next.
  void add(size_t index, const Json& outcome);
  // Points written so far.
  [[nodiscard]] size_t written() const { return entries_.size(); }
  // Each written point's JSON object (as in sweep.json's "points"), in point order.
  [[nodiscard]] std::vector<Json> entries() const;
  // Writes sweep.json; precondition: every point written.
  void finish();

 private:
  void append(const std::string& csv, const std::string& jsonl);

  std::filesystem::path dir_;
  const SweepSpec& spec_;
  const std::vector<SweepPoint>& points_;
  std::vector<std::string> entries_;      // each written point's JSON text, in order
  std::map<size_t, Json> held_;           // finished out of order
  std::ofstream csv_;
  std::ofstream jsonl_;
};

}  // namespace ralp::sweep
