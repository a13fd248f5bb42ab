// The step schedule: for one strategy, what every role (each PS shard, the head PS, each worker)
// does in one synchronous training step, as an ordered list of operations with their bytes, their
// predicted device times and what each must wait for. Each strategy's semantics are written here
// once; the simulator (sim/) and the real cluster (cluster/) only carry the operations out, so a
// prediction and the run that checks it send the same messages. Pure: no SimGrid, CUDA or MPI.
//
// How a role carries out its list (both interpreters follow these rules):
// - Every operation belongs to one stream of its role, and a stream runs its operations in list
//   order, one at a time:
//     device        compute, aggregate, update, encode, decode: the role's processor or GPU;
//     copy          host-device copies over PCIe (a GPU's copy engine);
//     to peer P     sends to P, in order, as over one TCP connection;
//     from peer P   receives from P, posted in order;
//     ring          ring all-reduces of fusion buffers among the workers, one after another.
// - An operation starts when the previous operation of its stream has finished and every
//   operation in its `after` list has completed. A send completes when the peer has the message;
//   a receive when the message has arrived.
// - A role starts step k + 1 when every operation of its step k has completed.
// - A step ends when the last operation marked `ends_part` (an update) of any role completes.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "ralp/results/measured_result.hpp"
#include "ralp/results/step_result.hpp"
#include "ralp/schedule/step_plan.hpp"

namespace ralp::schedule {

// What a message carries. Each kind is its own MPI tag in the real run.
enum class MessageKind : int {
  pull = 4,             // a variable group's values, PS shard -> worker
  push,                 // a variable group's gradients, worker -> PS shard
  activations,          // boundary activations (and labels, and images if read), worker -> head
  activation_gradient,  // the boundary activations' gradients, head -> worker
  ready,                // a worker produced a fusion buffer's gradients, -> the coordinator
  go,                   // the coordinator: every worker has the buffer, all-reduce it
  ring,                 // a ring all-reduce chunk, worker -> next worker
  step_done,            // a PS shard finished its part of the step, -> ps-0
  step_complete,        // ps-0: every shard is done, -> the other shards
  reduce,     // hierarchical all-reduce: a fusion buffer's gradients, -> the node's first device
  broadcast,  // hierarchical all-reduce: the all-reduced buffer, -> the node's other devices
  enqueue,    // ps with token queues: a token for another server, worker -> the variable's shard
  dequeue,    // ps with token queues: the other servers' tokens, shard -> worker
};
std::string_view to_string(MessageKind kind);

enum class OpKind {
  compute,    // a layer's pass on a worker, or the head's on the head PS
  aggregate,  // summing one worker's gradient of a variable group into the shard's sum
  update,     // applying summed gradients (a shard's group, the head, a worker's tail)
  encode,     // compressing a gradient before it is sent
  decode,     // decompressing a received gradient
  copy,       // a host-device copy over PCIe
  send,
  receive,
  allreduce,  // one fusion buffer, ring all-reduced among the workers
};
std::string_view to_string(OpKind kind);

enum class Pass {
  none,
  forward,   // worker: layer `layer`'s forward
  backward,  // worker: layer `layer`'s backward (data, then weights)
  head,      // head PS: forward and backward of the head for one worker's micro-batch
  head_all,  // head PS: forward and backward of the head for every worker's micro-batch at once
};
std::string_view to_string(Pass pass);

enum class Stream { device, copy, send, receive, ring };

struct Message {
  MessageKind kind = MessageKind::pull;
  int32_t peer = -1;  // the role at the other end (a host index: ps-s is s, worker-w is P + w)
  // What it carries: the layer (pull, push), the worker (activations, activation gradient), the
  // fusion buffer (ready, go), the phase (ring), the step (step_done, step_complete), or the
  // variable (enqueue, dequeue: an index into StepPlan::shard_plan.variables).
  int64_t item = 0;
  int64_t payload_bytes = 0;
  [[nodiscard]] int64_t wire_bytes() const { return payload_bytes + kHeaderBytes; }
  friend bool operator==(const Message&, const Message&) = default;
};

struct Op {
  OpKind kind = OpKind::compute;
  Pass pass = Pass::none;
  LayerId layer = 0;   // compute: the layer (the first head layer for head passes)
  int32_t group = -1;  // pulls, pushes, aggregate, update, encode, decode, copy: the variable group
                       // (index into Schedule::groups), or -1 for the head / the whole tail
  int32_t worker = -1; // whose data: a head pass's micro-batch, a push or pull on a shard
  int32_t buffer = -1; // allreduce, ready, go: the fusion buffer
  Message message;     // send, receive
  double seconds = 0.0;  // predicted time on its stream (device ops, copies, encodes of a ring)
  int64_t bytes = 0;     // bytes the operation touches (aggregate, update, copy, allreduce)
  bool ends_part = false;  // completing it completes a part of the step
  uint32_t after_begin = 0;  // its dependencies: RoleSchedule::after[after_begin, after_end)
  uint32_t after_end = 0;
  [[nodiscard]] Stream stream() const;
};

struct RoleSchedule {
  int32_t host = 0;
  std::string name;  // "ps-0", "worker-3"
  std::vector<Op> ops;
  std::vector<uint32_t> after;  // dependency lists of ops, indices into ops (ops may share one)
  [[nodiscard]] std::span<const uint32_t> after_of(const Op& op) const {
    return {after.data() + op.after_begin, after.data() + op.after_end};
  }
};

// One fusion buffer of ring all-reduce: tensors (indices into StepPlan::tensors) in the order
// every worker produces them, reduced together.
struct FusionBuffer {
  std::vector<size_t> tensors;
  int64_t bytes = 0;      // raw float32 bytes
  int64_t wire_bytes = 0;  // after compression
  LayerId last_layer = 0;  // the layer whose backward produces its last tensor
  friend bool operator==(const FusionBuffer&, const FusionBuffer&) = default;
};

struct Schedule {
  StepPlan plan;
  int64_t parameter_servers = 0;  // hosts ps-0.. (roles with empty lists when idle)
  int64_t workers = 0;
  std::vector<RoleSchedule> roles;  // by host index: ps-0.., then worker-0..
  std::vector<VariableGroup> groups;  // ps, ralp: the tail's variable groups, forward order
  std::vector<FusionBuffer> buffers;  // allreduce, hybrid
  int64_t parts_per_step = 0;  // ops marked ends_part over all roles
  // allreduce, hybrid: the ring's members (host indices) in ring order: every worker, or with the
  // hierarchical algorithm each node's first device.
  std::vector<int32_t> ring_hosts;

  [[nodiscard]] int32_t ps_host(int64_t shard) const { return static_cast<int32_t>(shard); }
  [[nodiscard]] int32_t worker_host(int64_t w) const {
    return static_cast<int32_t>(parameter_servers + w);
  }
  [[nodiscard]] bool is_worker(int32_t host) const { return host >= parameter_servers; }
  [[nodiscard]] int64_t ring_members() const { return static_cast<int64_t>(ring_hosts.size()); }
  // A host's place in the ring, or -1 when it is not a member.
  [[nodiscard]] int64_t ring_position(int32_t host) const;
  [[nodiscard]] const std::string& host_name(int32_t host) const { return roles[host].name; }
};

// The fusion buffers of an allreduce or hybrid plan (none for ps and ralp): the tail's gradients
// in production order (layers from the last, each layer's tensors in model order), fused by
// plan_fusion (fusion.hpp) on their predicted readiness after backward starts.
std::vector<FusionBuffer> fusion_buffers(const StepPlan& plan);

// ps with token queues (StrategySpec::token_queues), as tf_cnn_benchmarks' distributed_replicated
// update runs (tensorflow/benchmarks, scripts/tf_cnn_benchmarks/variable_mgr.py and
// tf_cnn_benchmarks.py, commit c0df5c2): W servers push (each worker, or each node's first device
// with local aggregation), and the shard applies each server's gradient to the variable on its
// own: W updates of the group, no sums. Then every variable ends in a barrier of token queues:
// each server enqueues a token for each of the W - 1 others (W - 1 enqueue messages of
// kTokenBytes to the variable's shard, after its push), and the shard answers each server's
// dequeue of W - 1 tokens (a dequeue message of W - 1 tokens) once every update of the variable
// is done and the other servers' tokens are in: per variable and step, W (W - 1) enqueues and W
// dequeues. The queues sit on the variable's own shard (tf_cnn_benchmarks puts them on the PS
// tasks round robin, which spreads the same load over the same tasks).
inline constexpr int64_t kTokenBytes = 1;  // a DT_BOOL token

// Builds the schedule of `plan` for its scenario: parameter_servers and workers from the
// scenario. Throws std::invalid_argument when the plan needs parameter servers that the scenario
// does not have.
Schedule build_schedule(const StepPlan& plan, int64_t parameter_servers);

// The messages a role sends in one step, in list order, and the bytes each host sends and
// receives per step (headers included), for checks of either interpreter.
std::vector<Message> sends_of(const RoleSchedule& role);
struct HostBytes {
  int64_t in = 0;
  int64_t out = 0;
  friend bool operator==(const HostBytes&, const HostBytes&) = default;
};
std::vector<HostBytes> bytes_per_host(const Schedule& schedule);

// Ring all-reduce of one buffer among Schedule::ring_hosts: the chunk messages the member at ring
// position `member` sends, phase by phase (2 (N - 1) of them, each a chunk of the buffer cut as fusion.hpp's chunk_range cuts it).
std::vector<Message> ring_messages(const Schedule& schedule, size_t buffer, int64_t member);

// The same ring's sums for one member, without listing its messages (constant time, for rings
// of thousands): what ring_messages(schedule, buffer, member) adds up to, and the payload bytes
// the member receives in the reduce-scatter phases (those it sums), and how many of the messages
// it sends and receives carry a payload (a chunk can be empty where the buffer has fewer elements
// than the ring has members).
struct RingTotals {
  int64_t messages = 0;
  int64_t wire_bytes = 0;      // sent, headers included
  int64_t reduced_bytes = 0;   // received in the first W - 1 phases
  int64_t sent_payloads = 0;
  int64_t received_payloads = 0;
};
RingTotals ring_totals(const Schedule& schedule, size_t buffer, int64_t member);

// What a timeline calls an operation of `host`'s list: its layer ("conv1", "grad conv1",
// "head worker-0"), its message ("pull conv1", "activations", "go buffer 2") or its buffer
// ("all-reduce 2"). A simulated and a measured trace use the same words.
std::string op_label(const Schedule& schedule, const LayerGraph& model, int32_t host,
                     const Op& op);
// The timeline's kind for a device or copy operation (transfers are sends and receives).
ActivityKind activity_of(OpKind kind);

// Gives the device operations the times a real run of this schedule measured
// (results/measured_result.hpp). Each entry must name a host of the schedule, the index of one of
// its device operations and that operation's label (op_label); every device operation of every
// host gets exactly one. On the first entry that does not fit, returns its index (times.size()
// when one is missing) and the problem, leaving the schedule partly changed.
struct ReplayMismatch {
  size_t entry = 0;
  std::string problem;
};
std::optional<ReplayMismatch> replay_device_times(Schedule& schedule, const LayerGraph& model,
                                                  std::span<const DeviceOpTime> times);

}  // namespace ralp::schedule
