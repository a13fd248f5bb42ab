// What a real run measured: each rank's per-step record, and the summary of a strategy in the
// simulator's terms (step time, images/s, bytes in and out of every host, each worker's compute /
// communication / waiting split), with the JSON form whose field names match `ralp simulate`'s.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "ralp/cluster/phase_clock.hpp"
#include "ralp/core/json_input.hpp"
#include "ralp/core/scenario.hpp"

namespace ralp::cluster {

struct LossSample {
  int64_t step = 0;
  int64_t worker = 0;
  double loss = 0.0;  // the mean cross-entropy of that worker's micro-batch
  friend bool operator==(const LossSample&, const LossSample&) = default;
};

// One rank's measurements over every step of one strategy, warm-up included. Times are seconds on
// the reference clock (rank 0's), so that records of different ranks compare.
struct RankRecord {
  std::string name;                // "ps-0", "worker-1"
  double start = 0.0;              // when the rank began the strategy's first step
  std::vector<PhaseTimes> phases;  // per step: where the rank's time went
  std::vector<double> bytes_in;    // per step: bytes received and sent (headers included)
  std::vector<double> bytes_out;
  // Per step: when this rank finished its part of the step (a shard's last update, the head's
  // update, a worker's update after all-reduce), or nullopt when it has none.
  std::vector<std::optional<double>> part_done;
  std::vector<LossSample> losses;
  friend bool operator==(const RankRecord&, const RankRecord&) = default;
};

Json to_json(const RankRecord& record);
// Throws std::runtime_error on a malformed record.
RankRecord rank_record_from_json(const Json& j);

struct HostBytes {
  std::string name;
  double bytes_in = 0.0;  // per step, mean over the measured steps
  double bytes_out = 0.0;
  friend bool operator==(const HostBytes&, const HostBytes&) = default;
};

// A worker's step split as the simulator reports it: compute (kernels, updates, reductions),
// communication (sending and receiving) and waiting.
struct WorkerSplit {
  double compute = 0.0;
  double communication = 0.0;
  double waiting = 0.0;
  friend bool operator==(const WorkerSplit&, const WorkerSplit&) = default;
};

struct RankPhases {
  std::string name;
  PhaseTimes mean;  // per step, mean over the measured steps
  friend bool operator==(const RankPhases&, const RankPhases&) = default;
};

struct MeasuredResult {
  std::string label;
  StrategyKind kind = StrategyKind::ps;
  std::optional<std::string> cut;
  std::vector<double> step_times;  // every step, warm-up included
  int64_t warmup_steps = 0;
  double step_time_s = 0.0;         // median of the measured steps
  double step_time_spread_s = 0.0;  // interquartile range of the measured steps
  double images_per_s = 0.0;        // workers x batch / step_time_s
  std::vector<HostBytes> hosts;     // ranks in order: ps-0.., worker-0..
  WorkerSplit worker_mean;
  std::vector<WorkerSplit> workers;
  std::vector<RankPhases> ranks;
  double ps_busy_s = 0.0;    // ps-0's compute and aggregation per step
  std::vector<double> loss;  // per step, mean over the workers' micro-batches
  std::string ring;          // "ring" or "mpi_allreduce" where gradients are all-reduced
  std::string backend;       // the kernels' device, "AMD EPYC 9R14 (1 thread)"
  int threads = 1;
  friend bool operator==(const MeasuredResult&, const MeasuredResult&) = default;
};

struct MeasuredRun {
  std::string scenario;
  std::string file;
  std::string model;
  int64_t workers = 0;
  int64_t parameter_servers = 0;
  int64_t batch_per_worker = 0;
  std::vector<MeasuredResult> results;
};

// The median and the interquartile range (linear interpolation between order statistics) of a
// non-empty sample.
double median(std::vector<double> values);
double interquartile_range(std::vector<double> values);

// Summarises one strategy's rank records (indexed by rank: the parameter servers, then the
// workers). Step k ends when the last part of it is done (the latest part_done[k] over ranks, as
// the simulator closes a step); step 0 starts when the last rank started. Throws
// std::invalid_argument when records disagree on the step count, a step has no part, or
// warmup_steps leaves no measured step.
MeasuredResult summarise(const std::vector<RankRecord>& records, int64_t parameter_servers,
                         int64_t warmup_steps, int64_t batch_per_worker);

Json to_json(const MeasuredRun& run);

}  // namespace ralp::cluster
