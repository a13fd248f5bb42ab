// Carrying out one rank's step schedule: the compute thread's device stream, and the MPI thread's
// sends, receives, copies and ring all-reduces.
#include "step_executor.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <exception>
#include <iostream>
#include <mutex>
#include <optional>
#include <thread>
#include <tuple>

#include "compute_priority.hpp"
#include "ralp/schedule/fusion.hpp"

namespace ralp::cluster {
namespace {

using schedule::Message;
using schedule::Op;
using schedule::OpKind;
using schedule::Pass;
using schedule::Stream;

// How often an MPI thread that only waits for the compute thread checks the step's timeout.
constexpr std::chrono::milliseconds kComputeWaitCheck{20};

// The fault-injection phase an operation enters, or null.
const char* fault_phase(const Op& op) {
  switch (op.kind) {
    case OpKind::compute:
      switch (op.pass) {
        case Pass::forward:
          return "forward";
        case Pass::backward:
          return "backward";
        case Pass::head:
        case Pass::head_all:
          return "head";
        case Pass::none:
          return nullptr;
      }
      return nullptr;
    case OpKind::aggregate:
      return "aggregate";
    case OpKind::update:
      return "update";
    case OpKind::send:
      switch (op.message.kind) {
        case schedule::MessageKind::pull:
          return "pull";
        case schedule::MessageKind::push:
          return "push";
        case schedule::MessageKind::activations:
          return "activations";
        default:
          return nullptr;
      }
    case OpKind::allreduce:
      return "ring";
    default:
      return nullptr;
  }
}

// A message in flight on one of the MPI thread's lanes.
struct InFlight {
  Transport::Handle handle;
  uint32_t op;
};

// The ring all-reduce in progress on the MPI thread.
struct Ring {
  uint32_t op = 0;
  std::vector<std::span<float>> tensors;
  std::span<float> fused;
  int64_t phase = 0;
  Transport::Handle send = 0, receive = 0;
  double start = 0.0;
  double phase_start = 0.0;  // when the current phase was posted
  int64_t phase_bytes = 0;   // its chunk's payload bytes, sent and received
  int32_t next = -1, previous = -1;  // the ring's neighbours' hosts
};

}  // namespace

// What the rank's list implies for every step, worked out once before the first: each
// operation's dependents, the device stream, the MPI thread's lanes, and which device operations
// wake the MPI thread.
struct StepExecutor::Plan {
  // One of the MPI thread's streams: sends or receives for one peer, copies, the ring.
  struct Lane {
    Stream kind;
    int32_t peer;
    std::vector<uint32_t> ops;  // in list order
  };

  explicit Plan(const schedule::RoleSchedule& role);

  std::vector<std::vector<uint32_t>> dependents;
  std::vector<int32_t> in_degree;         // per op: its dependencies
  std::vector<int32_t> device_in_degree;  // per op: the device operations among them
  std::vector<uint32_t> device_ops;       // the device stream, in list order
  std::vector<Lane> lanes;
  std::vector<bool> wakes_mpi;            // per op: see mark_mpi_wakers

 private:
  void mark_mpi_wakers(const std::vector<Op>& ops);
};

StepExecutor::Plan::Plan(const schedule::RoleSchedule& role)
    : dependents(role.ops.size()), in_degree(role.ops.size(), 0) {
  const auto& ops = role.ops;
  const size_t n = ops.size();
  for (uint32_t i = 0; i < n; ++i) {
    for (const uint32_t a : role.after_of(ops[i])) {
      dependents[a].push_back(i);
      ++in_degree[i];
    }
    const Stream kind = ops[i].stream();
    if (kind == Stream::device) {
      device_ops.push_back(i);
      continue;
    }
    const int32_t peer = kind == Stream::send || kind == Stream::receive ? ops[i].message.peer : -1;
    auto lane = std::find_if(lanes.begin(), lanes.end(),
                             [&](const Lane& l) { return l.kind == kind && l.peer == peer; });
    if (lane == lanes.end()) {
      lanes.push_back({kind, peer, {}});
      lane = lanes.end() - 1;
    }
    lane->ops.push_back(i);
  }
  mark_mpi_wakers(ops);
}

void StepExecutor::Plan::mark_mpi_wakers(const std::vector<Op>& ops) {
  const size_t n = ops.size();
  // Per op, its device dependencies (which the compute thread releases), and whether it also
  // waits for one of the MPI thread's operations.
  device_in_degree.assign(n, 0);
  std::vector<bool> waits_on_mpi(n, false);
  for (uint32_t i = 0; i < n; ++i) {
    for (const uint32_t d : dependents[i]) {
      if (ops[i].stream() == Stream::device) {
        ++device_in_degree[d];
      } else {
        waits_on_mpi[d] = true;
      }
    }
  }
  // Whether the MPI thread has work when device operation i completes: a dependent of another
  // stream, a dependent that also waits for a message (which the MPI thread may now need to
  // notice: MpiThread::urgent), or the step's last device operation (after which the step can
  // end). Otherwise the compute thread goes on without waking it: handing every operation to the
  // MPI thread and back cost two thread switches on the rank's core per operation.
  wakes_mpi.assign(n, false);
  for (const uint32_t i : device_ops) {
    wakes_mpi[i] = i == device_ops.back() ||
                   std::any_of(dependents[i].begin(), dependents[i].end(), [&](uint32_t d) {
                     return ops[d].stream() != Stream::device || waits_on_mpi[d];
                   });
  }
}

struct StepExecutor::State {
  State(const Plan& plan, int64_t steps)
      : remaining(plan.in_degree),
        device_remaining(plan.device_in_degree),
        device_seconds(static_cast<size_t>(steps),
                       std::vector<double>(plan.device_ops.size(), 0.0)) {}

  std::mutex mutex;
  std::condition_variable changed;  // for the compute thread: the step or dependencies moved
  std::condition_variable news;     // for the MPI thread: an operation completed, or an error
  bool computing = false;           // the compute thread is running an operation
  // The device operation the compute thread waits for (-1: none).
  int64_t blocked_on = -1;
  // Whether, since the MPI thread last looked, the compute thread finished an operation that
  // wakes it (wakes_mpi) or began to wait for one.
  bool mpi_news = false;
  std::vector<int32_t> remaining;  // per op: dependencies not yet complete
  std::vector<int32_t> device_remaining;  // per op: device operations among them
  int64_t step = -1;               // the step whose device stream may run
  // Completed on the compute thread (which already released their dependents), with their end
  // times, not yet counted by the MPI thread.
  std::vector<std::pair<uint32_t, double>> device_done;
  std::vector<BusyInterval> device_intervals;
  // The last step's device operations: op, start, end (for the record's timeline).
  std::vector<std::tuple<uint32_t, double, double>> last_step_device;
  // Per step, the time of each device operation, in the order of device_ops (RankRecord).
  std::vector<std::vector<double>> device_seconds;
  std::exception_ptr error;
  bool stop = false;
};

// The calling thread's side of the steps: it posts each lane's messages as their dependencies
// complete, drives the ring all-reduce, counts the compute thread's completions, and sleeps
// between checks without taking the rank's core from the kernels.
class StepExecutor::MpiThread {
 public:
  MpiThread(StepExecutor& executor, const Plan& plan, State& state);
  MpiThread(const MpiThread&) = delete;
  MpiThread& operator=(const MpiThread&) = delete;

  // Carries out step k's operations other than the device stream's, and returns when all of the
  // step's operations completed; rethrows the compute thread's failure.
  void run_step(int64_t k);

 private:
  void begin_step(int64_t k);
  bool launch_ready();
  bool collect_messages();
  bool collect_device();
  void start_ring(uint32_t i);
  void post_phase(Ring& r);
  bool advance_ring();
  bool finish_ring_phase(Ring& r);
  [[nodiscard]] bool urgent();
  void wait_for_news();
  void count(uint32_t i, double at);
  void complete(uint32_t i);
  void await_news(std::unique_lock<std::mutex>& lock, std::chrono::microseconds interval);
  [[nodiscard]] double now_reference() const { return transport_.now_reference(); }

  StepExecutor& exec_;
  const std::vector<Op>& ops_;
  const Plan& plan_;
  State& state_;
  Transport& transport_;
  RankRecord& record_;
  // The ring member `position` places on (modulo the ring), as a rank.
  [[nodiscard]] int ring_host(int64_t position) const {
    return exec_.schedule_.ring_hosts[static_cast<size_t>(position % members_)];
  }
  const int64_t member_;   // this worker's place in the ring
  const int64_t members_;  // the ring's workers
  Transport::Pause pause_;          // while messages are in flight
  Transport::Pause await_compute_;  // while only the compute thread can move
  // The ring's fused buffer and its landing area for chunks to reduce, kept from step to step:
  // allocating them afresh each step made the MPI thread fault in their pages (tens of MB for
  // a large model) while the compute thread ran backward on the same core, which delayed the
  // ring's first phase by a good share of the step (bench/cluster_steps' allreduce rows).
  std::vector<float> fused_store_, incoming_store_;

  // The step in progress.
  int64_t step_ = -1;
  bool last_step_ = false;
  size_t completed_ = 0;
  std::optional<double> part_done_;
  std::vector<size_t> lane_next_;  // per lane: its next operation to launch
  std::vector<InFlight> in_flight_;
  std::optional<Ring> ring_;
};

StepExecutor::StepExecutor(StrategyContext& context, const schedule::Schedule& schedule,
                           RoleActions& actions)
    : ctx_(context),
      schedule_(schedule),
      role_(schedule.roles.at(static_cast<size_t>(context.transport.rank()))),
      actions_(actions) {}

void StepExecutor::run() {
  if (role_.ops.empty()) return;
  const Plan plan(role_);
  State state(plan, ctx_.steps);
  MpiThread mpi(*this, plan, state);
  std::thread compute([&] { run_device_stream(plan, state); });
  const auto stop_compute = [&] {
    {
      std::lock_guard lock(state.mutex);
      state.stop = true;
    }
    state.changed.notify_all();
    compute.join();
  };
  try {
    for (int64_t k = 0; k < ctx_.steps; ++k) mpi.run_step(k);
  } catch (...) {
    stop_compute();
    throw;
  }
  stop_compute();
  record_device_stream(plan, state);
}

std::string StepExecutor::label(const Op& op) const {
  return schedule::op_label(schedule_, ctx_.scenario.model, role_.host, op);
}

void StepExecutor::trace(ActivityKind kind, int32_t peer, int64_t step, std::string label,
                         double start, double end, int64_t bytes) {
  ctx_.record.timeline.push_back({0, peer, kind, static_cast<int32_t>(step), std::move(label),
                                  start, end, static_cast<double>(bytes)});
}

// The compute thread: the device stream, in list order, one step after another. On a CPU, with
// compute_yields, it yields the core to the threads that move messages as soon as they wake
// (compute_priority.hpp).
void StepExecutor::run_device_stream(const Plan& plan, State& state) {
  if (ctx_.compute_yields && ctx_.backend.kind() == kernels::BackendKind::cpu) {
    static std::atomic<bool> warned{false};  // once per process, not per strategy
    const std::string why = run_below_communication();
    if (!why.empty() && !warned.exchange(true)) {
      std::cerr << "ralp cluster: " << role_.name << ": " << why << std::endl;
    }
  }
  try {
    for (int64_t k = 0; k < ctx_.steps; ++k) {
      for (size_t position = 0; position < plan.device_ops.size(); ++position) {
        if (!await_turn(plan.device_ops[position], k, state)) return;
        run_device_op(plan, position, k, state);
      }
    }
  } catch (...) {
    {
      std::lock_guard lock(state.mutex);
      state.error = std::current_exception();
      state.stop = true;
    }
    state.news.notify_one();
  }
}

bool StepExecutor::await_turn(uint32_t i, int64_t k, State& state) {
  std::unique_lock lock(state.mutex);
  const auto ready = [&] { return state.stop || (state.step == k && state.remaining[i] == 0); };
  if (!ready()) {
    // Whatever it waits for now matters at once: the MPI thread looks (MpiThread::urgent).
    state.blocked_on = i;
    state.mpi_news = true;
    state.news.notify_one();
    state.changed.wait(lock, ready);
    state.blocked_on = -1;
  }
  if (state.stop) return false;
  state.computing = true;
  return true;
}

void StepExecutor::run_device_op(const Plan& plan, size_t position, int64_t k, State& state) {
  // A kernel's own time: on a CPU the compute thread's CPU time, which leaves out the moments the
  // message threads took its core; on a GPU the wall time to the device's completion.
  const bool cpu_time = ctx_.backend.kind() == kernels::BackendKind::cpu;
  Transport& t = ctx_.transport;
  const uint32_t i = plan.device_ops[position];
  const Op& op = role_.ops[i];
  if (const char* phase = fault_phase(op)) ctx_.faults.at(phase, k);
  const double start = t.now_reference();
  const double cpu_start = cpu_time ? cpu_seconds() : 0.0;
  actions_.run_device(op, k);
  ctx_.backend.synchronize();
  const double end = t.now_reference();
  const double own = cpu_time ? cpu_seconds() - cpu_start : end - start;
  {
    std::lock_guard lock(state.mutex);
    state.computing = false;
    state.device_seconds[static_cast<size_t>(k)][position] = own;
    state.device_intervals.push_back({start, end, k, true});
    if (k + 1 == ctx_.steps) state.last_step_device.emplace_back(i, start, end);
    for (const uint32_t d : plan.dependents[i]) {
      --state.remaining[d];
      --state.device_remaining[d];
    }
    state.device_done.emplace_back(i, end);
    state.mpi_news = state.mpi_news || plan.wakes_mpi[i];
  }
  if (plan.wakes_mpi[i]) state.news.notify_one();
}

// After the steps, with the compute thread joined: its intervals, the last step's device
// operations on the timeline, and each device operation's name and times.
void StepExecutor::record_device_stream(const Plan& plan, State& state) {
  RankRecord& record = ctx_.record;
  std::lock_guard lock(state.mutex);
  record.intervals.insert(record.intervals.end(), state.device_intervals.begin(),
                          state.device_intervals.end());
  for (const auto& [i, start, end] : state.last_step_device) {
    trace(schedule::activity_of(role_.ops[i].kind), -1, ctx_.steps - 1, label(role_.ops[i]),
          start, end, 0);
  }
  for (const uint32_t i : plan.device_ops) record.device_ops.emplace_back(i, label(role_.ops[i]));
  record.device_seconds = std::move(state.device_seconds);
}

// Between checks for messages, the MPI thread sleeps until the compute thread finishes an
// operation that wakes it (wakes_mpi), begins to wait for one, or the pause ends
// (Transport::backoff: longer pauses while the compute thread runs than while it waits): every
// wake-up of the MPI thread takes CPU time from computation on the same core (the validation
// report's "Kernel speed in the runs" shows what the runs' kernels lose), while a message that
// arrives is noticed at most one pause late. Other operations' ends do not wake it, nor start
// its pauses over from the shortest: they are counted when it next looks.
// With no message in flight and no ring in progress, nothing MPI does can complete an
// operation: the MPI thread sleeps until the compute thread wakes it, waking every
// kComputeWaitCheck only to check the step's timeout. Polling meanwhile, with the pauses above,
// slowed the kernels on the same core (each rank's device times, in `ralp cluster --json`).
StepExecutor::MpiThread::MpiThread(StepExecutor& executor, const Plan& plan, State& state)
    : exec_(executor),
      ops_(executor.role_.ops),
      plan_(plan),
      state_(state),
      transport_(executor.ctx_.transport),
      record_(executor.ctx_.record),
      member_(executor.schedule_.ring_position(executor.role_.host)),
      members_(executor.schedule_.ring_members()),
      pause_([this](int round) {
        std::unique_lock lock(state_.mutex);
        await_news(lock, Transport::backoff(round, state_.computing));
      }),
      await_compute_([this](int) {
        std::unique_lock lock(state_.mutex);
        await_news(lock, kComputeWaitCheck);
      }),
      lane_next_(plan.lanes.size(), 0) {}

// Sleeps until the compute thread has news (mpi_news) or fails, or `interval` passes.
void StepExecutor::MpiThread::await_news(std::unique_lock<std::mutex>& lock,
                                         std::chrono::microseconds interval) {
  state_.news.wait_for(lock, interval, [this] { return state_.mpi_news || state_.error; });
}

void StepExecutor::MpiThread::run_step(int64_t k) {
  begin_step(k);
  const size_t n = ops_.size();
  while (completed_ < n) {
    bool moved = launch_ready();
    transport_.progress();
    moved = collect_messages() || moved;
    moved = advance_ring() || moved;
    moved = collect_device() || moved;
    state_.changed.notify_all();
    if (moved || completed_ == n) continue;
    wait_for_news();
  }
  record_.part_done[static_cast<size_t>(k)] = part_done_;
}

void StepExecutor::MpiThread::begin_step(int64_t k) {
  step_ = k;
  last_step_ = k + 1 == exec_.ctx_.steps;
  exec_.actions_.begin_step(k);
  if (k == 0) record_.start = now_reference();
  completed_ = 0;
  part_done_.reset();
  std::fill(lane_next_.begin(), lane_next_.end(), 0);
  in_flight_.clear();
  ring_.reset();
  {
    std::lock_guard lock(state_.mutex);
    state_.remaining = plan_.in_degree;
    state_.device_remaining = plan_.device_in_degree;
    state_.step = k;
  }
  state_.changed.notify_all();
}

// An operation completed at `at` (reference seconds): counts it. Called with the state's mutex
// held.
void StepExecutor::MpiThread::count(uint32_t i, double at) {
  ++completed_;
  if (ops_[i].ends_part) part_done_ = std::max(part_done_.value_or(0.0), at);
}

// One of the MPI thread's operations completed now: counts it and releases its dependents.
// Called with the state's mutex held.
void StepExecutor::MpiThread::complete(uint32_t i) {
  count(i, now_reference());
  for (const uint32_t d : plan_.dependents[i]) --state_.remaining[d];
}

// Launches what is ready on each lane, in list order; returns whether anything was launched.
bool StepExecutor::MpiThread::launch_ready() {
  StrategyContext& ctx = exec_.ctx_;
  const int64_t k = step_;
  bool moved = false;
  for (size_t l = 0; l < plan_.lanes.size(); ++l) {
    const Plan::Lane& lane = plan_.lanes[l];
    size_t& next = lane_next_[l];
    while (next < lane.ops.size()) {
      const uint32_t i = lane.ops[next];
      {
        std::lock_guard lock(state_.mutex);
        if (state_.remaining[i] > 0) break;
      }
      const Op& op = ops_[i];
      if (lane.kind == Stream::ring) {
        if (ring_) break;  // one buffer at a time
        ctx.faults.at("ring", k);
        start_ring(i);
      } else if (lane.kind == Stream::copy) {
        // Host-device copies happen inside the operations that produce or consume the data.
        std::lock_guard lock(state_.mutex);
        complete(i);
      } else if (lane.kind == Stream::send) {
        if (const char* phase = fault_phase(op)) ctx.faults.at(phase, k);
        in_flight_.push_back({transport_.send(op.message.peer, transport_kind(op.message.kind), k,
                                              op.message.item, exec_.actions_.send_pieces(op)),
                              i});
        if (last_step_) {
          record_.sent.push_back({std::string(schedule::to_string(op.message.kind)),
                                  exec_.schedule_.host_name(op.message.peer), op.message.item,
                                  op.message.payload_bytes});
        }
      } else {
        in_flight_.push_back({transport_.receive(op.message.peer, transport_kind(op.message.kind),
                                                 k, exec_.actions_.receive_pieces(op)),
                              i});
      }
      ++next;
      moved = true;
    }
  }
  return moved;
}

// Completes the sends and receives that MPI finished; returns whether any did.
bool StepExecutor::MpiThread::collect_messages() {
  bool moved = false;
  for (size_t f = in_flight_.size(); f-- > 0;) {
    const InFlight flight = in_flight_[f];
    if (!transport_.done(flight.handle)) continue;
    const Op& op = ops_[flight.op];
    double start = transport_.to_reference(transport_.posted_at(flight.handle));
    if (op.kind == OpKind::receive) {
      const MessageHeader& h = transport_.header(flight.handle);
      if (h.item != op.message.item) {
        throw transport_.failure("expected " + std::string(schedule::to_string(op.message.kind)) +
                                 " " + std::to_string(op.message.item) + " from " +
                                 exec_.schedule_.host_name(op.message.peer) + " and got item " +
                                 std::to_string(h.item));
      }
      start = std::max(start, h.posted_at);
    }
    const double end = now_reference();
    record_.intervals.push_back({start, end, step_, false});
    if (last_step_) {
      exec_.trace(op.kind == OpKind::send ? ActivityKind::send : ActivityKind::receive,
                  op.message.peer, step_, exec_.label(op), start, end, op.message.wire_bytes());
    }
    transport_.release(flight.handle);
    in_flight_.erase(in_flight_.begin() + static_cast<std::ptrdiff_t>(f));
    std::lock_guard lock(state_.mutex);
    complete(flight.op);
    moved = true;
  }
  return moved;
}

// Counts what the compute thread completed since the last look, and rethrows its failure;
// returns whether it completed anything.
bool StepExecutor::MpiThread::collect_device() {
  std::lock_guard lock(state_.mutex);
  if (state_.error) std::rethrow_exception(state_.error);
  for (const auto& [i, end] : state_.device_done) count(i, end);
  const bool moved = !state_.device_done.empty();
  state_.device_done.clear();
  state_.mpi_news = false;
  return moved;
}

void StepExecutor::MpiThread::post_phase(Ring& r) {
  const int64_t k = step_;
  const auto elements = static_cast<int64_t>(r.fused.size());
  const schedule::RingPhase p = schedule::ring_phase(member_, members_, r.phase);
  const schedule::ChunkRange out = schedule::chunk_range(elements, members_, p.send_chunk);
  const schedule::ChunkRange in = schedule::chunk_range(elements, members_, p.receive_chunk);
  float* landing = p.reduce ? incoming_store_.data() : r.fused.data() + in.begin;
  const int next = ring_host(member_ + 1);
  const int previous = ring_host(member_ + members_ - 1);
  r.receive = transport_.receive(previous, MessageKind::ring, k,
                                 {{landing, static_cast<size_t>(in.size()) * sizeof(float)}});
  const size_t bytes = static_cast<size_t>(out.size()) * sizeof(float);
  r.phase_start = now_reference();
  r.phase_bytes = static_cast<int64_t>(bytes);
  r.send = transport_.send(next, MessageKind::ring, k, r.phase,
                           {{r.fused.data() + out.begin, bytes}});
  if (last_step_) {
    record_.sent.push_back({std::string(schedule::to_string(schedule::MessageKind::ring)),
                            exec_.schedule_.host_name(next), r.phase,
                            static_cast<int64_t>(bytes)});
  }
}

void StepExecutor::MpiThread::start_ring(uint32_t i) {
  const int64_t k = step_;
  Ring r;
  r.op = i;
  r.start = now_reference();
  r.tensors = exec_.actions_.ring_tensors(static_cast<size_t>(ops_[i].buffer));
  size_t elements = 0;
  for (const auto& tensor : r.tensors) elements += tensor.size();
  if (fused_store_.size() < elements) {
    fused_store_.resize(elements);
    // A reduce-scatter phase lands one chunk; the first is the largest.
    incoming_store_.resize(static_cast<size_t>(
        schedule::chunk_range(static_cast<int64_t>(elements), members_, 0).size()));
  }
  r.fused = std::span<float>(fused_store_.data(), elements);
  r.next = ring_host(member_ + 1);
  r.previous = ring_host(member_ + members_ - 1);
  size_t offset = 0;
  for (const auto& tensor : r.tensors) {
    std::copy(tensor.begin(), tensor.end(), r.fused.begin() + static_cast<std::ptrdiff_t>(offset));
    offset += tensor.size();
  }
  // MPI's all-reduce runs among all the workers; a hierarchical ring has only the nodes' first.
  if (exec_.ctx_.allreduce == AllreduceImplementation::mpi && !exec_.schedule_.plan.hierarchical()) {
    MPI_Request request = MPI_REQUEST_NULL;
    MPI_Iallreduce(MPI_IN_PLACE, r.fused.data(), static_cast<int>(r.fused.size()), MPI_FLOAT,
                   MPI_SUM, exec_.ctx_.workers_comm, &request);
    r.receive = transport_.track(request, MessageKind::ring, k);
    // Counted as a ring would move them; the library's algorithm may move more or less.
    double bytes = 0.0;
    for (const Message& m : schedule::ring_messages(
             exec_.schedule_, static_cast<size_t>(ops_[i].buffer), member_)) {
      bytes += static_cast<double>(m.wire_bytes());
    }
    transport_.count(k, bytes, bytes, ring_host(member_ + 1));
  } else {
    post_phase(r);
  }
  ring_ = std::move(r);
}

// The ring's current phase, if both its messages are done: records them, reduces the chunk that
// came in, and posts the next phase. Returns whether the ring goes on (false: it has ended).
bool StepExecutor::MpiThread::finish_ring_phase(Ring& r) {
  if (last_step_) {
    const double end = now_reference();
    const std::string name = exec_.label(ops_[r.op]);
    exec_.trace(ActivityKind::send, r.next, step_, name, r.phase_start, end,
                r.phase_bytes + schedule::kHeaderBytes);
    exec_.trace(ActivityKind::receive, r.previous, step_, name,
                std::max(r.phase_start, transport_.header(r.receive).posted_at), end,
                r.phase_bytes + schedule::kHeaderBytes);
  }
  transport_.release(r.send);
  transport_.release(r.receive);
  const schedule::RingPhase p = schedule::ring_phase(member_, members_, r.phase);
  if (p.reduce) {
    const schedule::ChunkRange in = schedule::chunk_range(static_cast<int64_t>(r.fused.size()),
                                                          members_, p.receive_chunk);
    float* own = r.fused.data() + in.begin;
    for (int64_t e = 0; e < in.size(); ++e) own[e] += incoming_store_[static_cast<size_t>(e)];
  }
  if (++r.phase < 2 * (members_ - 1)) {
    post_phase(r);
    return true;
  }
  return false;
}

// Advances the ring; returns whether it moved.
bool StepExecutor::MpiThread::advance_ring() {
  if (!ring_) return false;
  Ring& r = *ring_;
  if (exec_.ctx_.allreduce == AllreduceImplementation::mpi) {
    if (!transport_.done(r.receive)) return false;
    if (last_step_) {
      // The library's algorithm is its own: the whole all-reduce, on the ring's tracks.
      const double end = now_reference();
      exec_.trace(ActivityKind::send, r.next, step_, exec_.label(ops_[r.op]), r.start, end, 0);
      exec_.trace(ActivityKind::receive, r.previous, step_, exec_.label(ops_[r.op]), r.start, end,
                  0);
    }
    transport_.release(r.receive);
  } else {
    if (!transport_.done(r.send) || !transport_.done(r.receive)) return false;
    if (finish_ring_phase(r)) return true;
  }
  size_t offset = 0;
  for (const auto& tensor : r.tensors) {
    std::memcpy(tensor.data(), r.fused.data() + offset, tensor.size_bytes());
    offset += tensor.size();
  }
  record_.intervals.push_back({r.start, now_reference(), step_, false});
  const uint32_t op = r.op;
  ring_.reset();
  std::lock_guard lock(state_.mutex);
  complete(op);
  return true;
}

// Whether noticing a completion soon can matter: a ring or a send in progress, or a receive that
// nothing waits for, that a device operation the compute thread waits for now waits for, or that
// another stream's operation waits for with all its device dependencies done. A receive whose
// dependents still wait for the compute thread is noticed when that thread wakes this one
// (wakes_mpi), or begins to wait for one of them (blocked_on). In allreduce the receives of the
// ring's coordination are posted at the start of a step, and polling for them kept the MPI
// thread waking at every pause all step long, taking a share of the core from the kernels; in
// hybrid the receive of the head's gradient, posted at the start too, had its first backward
// layer's device dependencies done all through the forward (they come in stream order, not as
// dependencies), and polling for it woke the MPI thread all through the forward's kernels.
bool StepExecutor::MpiThread::urgent() {
  if (ring_) return true;
  std::lock_guard lock(state_.mutex);
  return std::any_of(in_flight_.begin(), in_flight_.end(), [&](const InFlight& f) {
    const auto& dependents = plan_.dependents[f.op];
    if (ops_[f.op].kind != OpKind::receive || dependents.empty()) return true;
    return std::any_of(dependents.begin(), dependents.end(), [&](uint32_t d) {
      if (ops_[d].stream() == Stream::device) return state_.blocked_on == d;
      return state_.device_remaining[d] == 0;
    });
  });
}

// Nothing to do until a message completes or the compute thread has news (mpi_news).
void StepExecutor::MpiThread::wait_for_news() {
  const bool own_ring = exec_.ctx_.allreduce == AllreduceImplementation::ring;
  transport_.wait_until([&] {
    std::lock_guard lock(state_.mutex);
    if (state_.mpi_news || state_.error) return true;
    for (const InFlight& f : in_flight_) {
      if (transport_.done(f.handle)) return true;
    }
    if (ring_ && own_ring) return transport_.done(ring_->send) && transport_.done(ring_->receive);
    return ring_ && transport_.done(ring_->receive);
  }, 0.0, urgent() ? pause_ : await_compute_);
}

}  // namespace ralp::cluster
