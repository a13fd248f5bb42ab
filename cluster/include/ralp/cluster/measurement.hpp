// What a real run measured: each rank's per-step record (and its JSON form, in which ranks send it
// to rank 0), and the summary of a strategy in the simulator's terms (results/measured_result.hpp:
// step time, images/s, bytes in and out of every host, each worker's compute / communication /
// waiting split).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "ralp/core/json_input.hpp"
#include "ralp/results/measured_result.hpp"
#include "ralp/results/step_result.hpp"
#include "ralp/spec/nodes.hpp"
#include "ralp/spec/scenario.hpp"

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
  // The last step's operations on the common clock (host left 0): device work when it ran,
  // a send from its posting to its completion, a receive from when both ends had posted it to
  // its arrival, each ring phase as a send and a receive.
  std::vector<Activity> timeline;
  // Its device operations (index in the role's list, label), in the order the device stream runs
  // them, and per step the time each took (DeviceOpTime says which time).
  std::vector<std::pair<int32_t, std::string>> device_ops;
  std::vector<std::vector<double>> device_seconds;
  // Per step, the bytes sent to each rank (as long as the highest rank it sent to).
  std::vector<std::vector<double>> bytes_to;
  friend bool operator==(const RankRecord&, const RankRecord&) = default;
};

Json to_json(const RankRecord& record);
// Throws std::runtime_error on a malformed record.
RankRecord rank_record_from_json(const Json& j);

// Summarises one strategy's rank records (indexed by rank: the parameter servers, then the
// workers). Step k ends when the last part of it is done (the latest part_done[k] over ranks, as
// the simulator closes a step); step 0 starts when the last rank started. Throws
// std::invalid_argument when records disagree on the step count, a step has no part, or
// warmup_steps leaves no measured step.
MeasuredResult summarise(const std::vector<RankRecord>& records, int64_t parameter_servers,
                         int64_t warmup_steps, int64_t batch_per_worker);

// Adds each node's NIC and interconnect bytes per step (over the measured steps) from the
// records' bytes sent to each rank, where the layout has nodes (several devices, or co-located
// servers); the ranks are the layout's hosts.
void add_node_traffic(MeasuredResult& result, const std::vector<RankRecord>& records,
                      const NodeLayout& layout, int64_t warmup_steps);

// A rank's device times from step `first_measured` on: each operation's mean over the steps whose
// device time (the sum of the step's operations) is in the middle half (core middle_half), so
// that the operations sum to a typical step. Empty when the rank recorded none.
std::vector<DeviceOpTime> typical_device_times(const RankRecord& record, size_t first_measured);

}  // namespace ralp::cluster
