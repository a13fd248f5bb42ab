// What one synchronous training step is made of, for one strategy: per-layer compute times on
// the workers and the head PS, the variables and their shards, message sizes, and the PS and
// compression costs: the inputs of the step schedule (schedule.hpp). Pure.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "ralp/devices/cost_model.hpp"
#include "ralp/devices/nccl_tuning.hpp"
#include "ralp/results/compute_sources.hpp"
#include "ralp/spec/scenario.hpp"
#include "ralp/spec/sharding.hpp"

namespace ralp::schedule {

// One gradient tensor for ring all-reduce (a weight or a bias).
struct Tensor {
  LayerId layer = 0;
  int64_t bytes = 0;
  friend bool operator==(const Tensor&, const Tensor&) = default;
};

// Times of the tail layers on a worker at the per-worker batch.
struct LayerTimes {
  Seconds forward;
  Seconds backward_data;
  Seconds backward_weight;
};

struct StepPlan {
  StrategySpec strategy;
  int64_t workers = 0;
  int64_t shards = 0;  // parameter servers; 0 for allreduce
  int64_t batch = 0;   // per worker
  int64_t devices_per_node = 1;  // workers are grouped into nodes in order (spec/nodes.hpp)

  // Tail: layers [0, tail_end) run data-parallel on the workers. tail_end = size() without a cut.
  LayerId tail_end = 0;
  std::optional<LayerId> cut;  // first head layer (ralp, hybrid)
  std::vector<std::string> layer_names;
  std::vector<LayerTimes> worker;  // one per tail layer
  // ps, ralp: the tail's variables on shards (spec/sharding.hpp); groups_by_layer[l] lists layer
  // l's messages, each one layer's variables on one shard: a pull before the layer's forward, a
  // push as soon as its backward produced the gradients.
  std::vector<std::vector<VariableGroup>> groups_by_layer;
  ShardPlan shard_plan;  // the same groups with their variables (ps, ralp)
  // allreduce, hybrid: the tail's gradient tensors in model order.
  std::vector<Tensor> tensors;
  int64_t tail_param_bytes = 0;

  // Head (ralp, hybrid), on ps-0. A micro-batch is one worker's batch, or with the head's
  // boundaries gathered on nodes (gathers_boundaries) one node's: micro_batch_devices workers'.
  int64_t micro_batch_devices = 1;
  Seconds head_micro_batch;  // forward + backward of one micro-batch (batch micro_batch_devices*B)
  Seconds head_full_batch;   // forward + backward of all W micro-batches at once (batch W*B)
  int64_t head_param_bytes = 0;
  // Sent by one worker per step (batch B): every boundary activation, the images when a head
  // layer reads the model input, and the labels.
  int64_t boundary_bytes = 0;
  // Returned to each worker: the gradients of the boundary activations that need one (those of
  // layers with parameters or whose input needs a gradient; never the model input's).
  int64_t activation_grad_bytes = 0;

  // Device rates.
  BytesPerSecond worker_update_rate;
  BytesPerSecond worker_sum_rate;  // ring all-reduce's reductions
  BytesPerSecond ps_sum_rate;
  BytesPerSecond ps_update_rate;
  std::optional<BytesPerSecond> worker_pcie;  // host-device copies (GPU workers, pcie_copies on)
  std::optional<BytesPerSecond> ps_pcie;

  // allreduce, hybrid: a ring hop's bandwidth and latency between workers, the network model's
  // factors applied, for estimating how long a buffer's ring all-reduce takes when planning the
  // fusion cycles (ring_seconds).
  BytesPerSecond ring_bandwidth;
  Seconds ring_hop_latency;
  // Where the all-reduce follows NCCL's tuning model (spec/nccl_plan.hpp): the machine NCCL
  // sees and the algorithm the strategy forces; ring_seconds is then NCCL's time.
  std::optional<NcclMachine> nccl;
  std::optional<NcclAlgorithm> nccl_forced;

  // Gradient compression: compressed size of a gradient message and its encode/decode times.
  CompressionKind compression = CompressionKind::none;
  double topk_ratio = 0.0;
  BytesPerSecond worker_encode_rate;
  BytesPerSecond ps_encode_rate;

  ComputeSources worker_sources;
  std::optional<ComputeSources> ps_sources;  // strategies that compute on a PS

  [[nodiscard]] bool has_head() const { return cut.has_value(); }
  [[nodiscard]] bool uses_ring() const {
    return strategy.kind == StrategyKind::allreduce || strategy.kind == StrategyKind::hybrid;
  }
  [[nodiscard]] bool uses_shards() const {
    return strategy.kind == StrategyKind::ps || strategy.kind == StrategyKind::ralp;
  }
  // ps, ralp with local aggregation on nodes of several devices: each node's first device pulls
  // and pushes for the node, summing the others' gradients first (schedule.hpp).
  [[nodiscard]] bool aggregates_locally() const {
    return uses_shards() && strategy.local_aggregation && devices_per_node > 1;
  }
  // ralp, hybrid with local aggregation on nodes of several devices: each node's first device
  // gathers its node's boundaries and sends them to the head as one micro-batch, and passes each
  // device its part of the head's reply (schedule.hpp).
  [[nodiscard]] bool gathers_boundaries() const {
    return has_head() && strategy.local_aggregation && devices_per_node > 1;
  }
  // The micro-batches the head takes per step: one per worker, or per node.
  [[nodiscard]] int64_t micro_batches() const { return workers / micro_batch_devices; }
  // allreduce, hybrid with the hierarchical algorithm on nodes of several devices: each node's
  // devices send their buffers to its first device, which sums them, all-reduces them in a ring of
  // the nodes' first devices and sends the result back (schedule.hpp).
  [[nodiscard]] bool hierarchical() const {
    return uses_ring() && strategy.algorithm == AllreduceAlgorithm::hierarchical &&
           devices_per_node > 1;
  }
  // The estimated time of ring all-reducing `bytes` among the workers: 2 (W - 1) hops of a chunk,
  // each at the ring's bandwidth and latency or the strategy's transport's, whichever is slower.
  [[nodiscard]] double ring_seconds(int64_t bytes) const;
  // The head PS's pass for micro-batch k (per_worker): forward and backward, and for every
  // micro-batch after the first, adding the weight gradients it computed to those the earlier
  // micro-batches left (a sum of head_param_bytes at the PS's gradient-sum rate), as the real
  // head does.
  [[nodiscard]] double head_pass_seconds(int64_t k) const;
  // Size on the wire of a gradient of `bytes` after compression (rounded up to whole bytes).
  [[nodiscard]] int64_t compressed(int64_t bytes) const;
};

// Labels are 32-bit integers, one per image.
inline constexpr int64_t kLabelBytes = 4;

// Every message carries a header (the step, the item, the sender's posting time on the reference
// clock) in front of its payload; the bytes on the wire and in every count include it.
inline constexpr int64_t kHeaderBytes = 24;

// What crosses a cut each step for one worker's micro-batch of `batch` images: the boundary it
// sends (activations, images when a head layer reads the model input, labels) and the gradients
// it gets back (of the boundary tensors that need one). Activations, their gradients and images
// travel in the step's precision (2 bytes a value in fp16 and bf16); labels as 32-bit integers.
struct BoundaryBytes {
  int64_t sent = 0;
  int64_t returned = 0;
};
BoundaryBytes boundary_bytes(const LayerGraph& graph, LayerId cut, int64_t batch,
                             Precision precision = Precision::fp32);

// The load of each shard in one step that balanced sharding minimises, from the plan's workers,
// rates and head and the scenario's PS link under its network model's factors: per group of b
// bytes, W pulls and W pushes (headers included) over the PS's link, the W copies, decodes and
// sums, and the update; ps-0 also carries ralp's head (W boundaries in, W replies out, the head's
// passes and update). Reads every field make_step_plan sets except the groups.
ShardLoadModel shard_load_model(const Scenario& scenario, const StepPlan& plan);

// Sets plan.shard_plan and plan.groups_by_layer for the plan's tail (ps and ralp; nothing for
// allreduce and hybrid), with the strategy's sharding (balanced under shard_load_model).
void place_shards(const Scenario& scenario, StepPlan& plan);

// Builds the plan of `strategy` with the first head layer `cut` (ralp and hybrid; ignored by ps
// and allreduce). Throws std::invalid_argument when a ralp/hybrid plan has no cut.
StepPlan make_step_plan(const Scenario& scenario, const StrategySpec& strategy,
                        std::optional<LayerId> cut);

}  // namespace ralp::schedule
