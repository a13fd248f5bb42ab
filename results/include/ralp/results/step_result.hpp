// What one strategy's step came to, predicted (ralp simulate) or measured (ralp cluster): the
// same fields under the same names, so that a prediction and the run that checks it sit side by
// side. The simulator's and the real cluster's result types extend it.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "ralp/core/json_input.hpp"
#include "ralp/spec/scenario.hpp"
#include "ralp/spec/sharding.hpp"

namespace ralp {

struct HostTraffic {
  std::string name;        // "ps-0", "worker-3"
  double bytes_in = 0.0;   // per step, mean over the measured steps, message headers included
  double bytes_out = 0.0;
  friend bool operator==(const HostTraffic&, const HostTraffic&) = default;
};

// One node's traffic per step (mean over the measured steps, headers included): in and out of its
// NICs, and moved between its own devices and co-located servers over its interconnect.
struct NodeBytes {
  std::string name;  // "node-0"
  double nic_in = 0.0;
  double nic_out = 0.0;
  double interconnect = 0.0;
  friend bool operator==(const NodeBytes&, const NodeBytes&) = default;
};

// Where a host's step went, in seconds per step (mean over the measured steps): computing (its
// device busy), communicating (not computing, some transfer of its own in flight), waiting
// (neither). The three add up to the step time.
struct TimeSplit {
  double compute = 0.0;
  double communication = 0.0;
  double waiting = 0.0;
  friend bool operator==(const TimeSplit&, const TimeSplit&) = default;
};

// A busy interval of a host in one step, for time_split().
struct BusyInterval {
  double start = 0.0;
  double end = 0.0;
  int64_t step = 0;
  bool compute = false;  // device work; else a transfer in flight
  friend bool operator==(const BusyInterval&, const BusyInterval&) = default;
};

// The split of the measured steps [warmup, steps) whose boundaries are step_ends (step k runs from
// step_ends[k - 1], or `start` for k = 0, to step_ends[k]); intervals are clipped to their step.
TimeSplit time_split(const std::vector<BusyInterval>& intervals,
                     const std::vector<double>& step_ends, double start, int64_t warmup);

// One message a host sent in a step, as it went out: for checking that two runs sent the same.
struct SentMessage {
  std::string kind;  // schedule::to_string(MessageKind)
  std::string peer;  // host name
  int64_t item = 0;
  int64_t payload_bytes = 0;
  friend bool operator==(const SentMessage&, const SentMessage&) = default;
};

enum class ActivityKind {
  compute,    // a layer's forward or backward on a worker or on the head PS
  update,     // applying gradients (PS shard, head PS, or a worker after all-reduce)
  aggregate,  // summing a worker's gradient into a PS shard's or the head's accumulator
  encode,     // gradient compression or decompression
  copy,       // host-device copy over PCIe
  send,       // a transfer, on the sender's track
  receive,    // the same transfer, on the receiver's track
};
std::string_view to_string(ActivityKind kind);
// Throws std::runtime_error for a name that is not an ActivityKind's.
ActivityKind activity_kind_from_string(const std::string& name);

// One interval of a host's timeline.
struct Activity {
  int32_t host = 0;  // index into StepResult::hosts
  int32_t peer = -1; // other end of a transfer
  ActivityKind kind = ActivityKind::compute;
  int32_t step = 0;
  std::string label;  // layer name, "pull conv1", "ring 3/14", ...
  double start = 0.0;  // seconds: simulated, or on the real run's common clock
  double end = 0.0;
  double bytes = 0.0;
  friend bool operator==(const Activity&, const Activity&) = default;
};

struct StepResult {
  std::string label;
  StrategyKind kind = StrategyKind::ps;
  std::optional<std::string> cut;  // the head's name (ralp, hybrid): its first layer for a suffix
  // A head that is not a suffix of the model file's order: its layers, in that order.
  std::vector<std::string> head_layers;
  std::vector<double> step_times;  // every step, warm-up included, seconds
  int64_t warmup_steps = 0;
  // Over the measured steps (after warm-up): mean, median, interquartile range.
  double step_time_mean_s = 0.0;
  double step_time_median_s = 0.0;
  double step_time_spread_s = 0.0;
  double images_per_s = 0.0;  // workers x batch / step_time_mean_s
  std::vector<HostTraffic> hosts;  // ps-0.., worker-0..
  std::vector<TimeSplit> splits;   // indexed like hosts
  // Nodes of several devices or with co-located servers (spec/nodes.hpp): node-0.. (JSON "nodes",
  // only when there are some).
  std::vector<NodeBytes> nodes;
  TimeSplit worker_mean;           // over the workers
  double ps_busy_s = 0.0;          // ps-0's device busy time per step
  // ps and ralp with several shards: the bytes and layers each shard holds (JSON "shards", only
  // when there are some).
  std::vector<ShardShare> shards;
  // When asked for: each host's sent messages in the last step, by host index.
  std::vector<std::vector<SentMessage>> messages;
  // When asked for: the last step's activities, every host's (ralp simulate --trace, ralp
  // cluster --trace).
  std::vector<Activity> timeline;
  friend bool operator==(const StepResult&, const StepResult&) = default;
};

// Fills step_times, warmup_steps, the three statistics and images_per_s. Throws
// std::invalid_argument when no step is left after the warm-up.
void set_step_times(StepResult& result, std::vector<double> step_times, int64_t warmup_steps,
                    int64_t images_per_step);

// The median and the interquartile range (linear interpolation between order statistics) of a
// non-empty sample.
double median(std::vector<double> values);
double interquartile_range(std::vector<double> values);

// The indices, in increasing order, of the middle half of `values` by size: the lowest and the
// highest quarter (rounded down) left out. Averaging a step's parts over the steps whose totals
// are in the middle half gives parts that sum to the totals' interquartile mean, a typical step:
// medians taken part by part sum to less where each step is slowed in a few random parts.
std::vector<size_t> middle_half(const std::vector<double>& values);

// The shared fields as JSON, and back; the readers throw std::runtime_error on a malformed
// document.
Json to_json(const TimeSplit& split);
TimeSplit time_split_from_json(const Json& json);
void write_step_fields(const StepResult& result, Json& out);
void read_step_fields(const Json& json, StepResult& result);
StrategyKind strategy_kind_from_string(const std::string& name);

}  // namespace ralp
