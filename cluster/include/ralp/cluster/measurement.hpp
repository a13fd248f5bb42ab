// What a real run measured: each rank's per-step record, and the summary of a strategy in the
// simulator's terms (step time, images/s, bytes in and out of every host, each worker's compute /
// communication / waiting split), with the JSON form whose field names match `ralp simulate`'s.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "ralp/core/json_input.hpp"
#include "ralp/core/scenario.hpp"
#include "ralp/core/step_result.hpp"

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
  std::string name;                      // "ps-0", "worker-1"
  double start = 0.0;                    // when the rank began the strategy's first step
  std::vector<BusyInterval> intervals;   // its device operations and transfers in flight
  std::vector<double> bytes_in;          // per step: bytes received and sent (headers included)
  std::vector<double> bytes_out;
  // Per step: when this rank finished its part of the step (a shard's last update, the head's
  // update, a worker's update after all-reduce), or nullopt when it has none.
  std::vector<std::optional<double>> part_done;
  std::vector<LossSample> losses;
  std::vector<SentMessage> sent;  // in the last step, in the order they were posted
  friend bool operator==(const RankRecord&, const RankRecord&) = default;
};

Json to_json(const RankRecord& record);
// Throws std::runtime_error on a malformed record.
RankRecord rank_record_from_json(const Json& j);

// A measured strategy: the fields it shares with a predicted one (core/step_result.hpp), and what
// only a real run has.
struct MeasuredResult : StepResult {
  std::vector<double> loss;  // per step, mean over the workers' micro-batches
  std::string ring;          // "message" or "mpi_allreduce" where gradients are all-reduced
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

// Summarises one strategy's rank records (indexed by rank: the parameter servers, then the
// workers). Step k ends when the last part of it is done (the latest part_done[k] over ranks, as
// the simulator closes a step); step 0 starts when the last rank started. Throws
// std::invalid_argument when records disagree on the step count, a step has no part, or
// warmup_steps leaves no measured step.
MeasuredResult summarise(const std::vector<RankRecord>& records, int64_t parameter_servers,
                         int64_t warmup_steps, int64_t batch_per_worker);

Json to_json(const MeasuredRun& run);

}  // namespace ralp::cluster
