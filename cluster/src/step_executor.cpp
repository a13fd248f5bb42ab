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

}  // namespace

struct StepExecutor::State {
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

StepExecutor::StepExecutor(StrategyContext& context, const schedule::Schedule& schedule,
                           RoleActions& actions)
    : ctx_(context),
      schedule_(schedule),
      role_(schedule.roles.at(static_cast<size_t>(context.transport.rank()))),
      actions_(actions) {}

void StepExecutor::run() {
  const auto& ops = role_.ops;
  const size_t n = ops.size();
  if (n == 0) return;
  Transport& t = ctx_.transport;
  RankRecord& record = ctx_.record;

  std::vector<std::vector<uint32_t>> dependents(n);
  std::vector<int32_t> in_degree(n, 0);
  std::vector<uint32_t> device_ops;
  // The MPI thread's streams: sends and receives per peer, copies, the ring.
  struct Lane {
    Stream kind;
    int32_t peer;
    std::vector<uint32_t> ops;
    size_t next = 0;
  };
  std::vector<Lane> lanes;
  for (uint32_t i = 0; i < n; ++i) {
    for (const uint32_t a : role_.after_of(ops[i])) {
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
      lanes.push_back({kind, peer, {}, 0});
      lane = lanes.end() - 1;
    }
    lane->ops.push_back(i);
  }

  // Per op, its device dependencies (which the compute thread releases), and whether it also
  // waits for one of the MPI thread's operations.
  std::vector<int32_t> device_in_degree(n, 0);
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
  // notice: `urgent` below), or the step's last device operation (after which the step can
  // end). Otherwise the compute thread goes on without waking it: handing every operation to the
  // MPI thread and back cost two thread switches on the rank's core per operation.
  std::vector<bool> wakes_mpi(n, false);
  for (const uint32_t i : device_ops) {
    wakes_mpi[i] = i == device_ops.back() ||
                   std::any_of(dependents[i].begin(), dependents[i].end(), [&](uint32_t d) {
                     return ops[d].stream() != Stream::device || waits_on_mpi[d];
                   });
  }

  State state;
  state.remaining = in_degree;
  state.device_remaining = device_in_degree;
  state.device_seconds.assign(static_cast<size_t>(ctx_.steps),
                              std::vector<double>(device_ops.size(), 0.0));
  // A kernel's own time: on a CPU the compute thread's CPU time, which leaves out the moments the
  // message threads took its core; on a GPU the wall time to the device's completion.
  const bool cpu_time = ctx_.backend.kind() == kernels::BackendKind::cpu;
  // The last step's activities, on the record's timeline.
  const auto trace = [&](ActivityKind kind, int32_t peer, int64_t step, std::string label,
                         double start, double end, int64_t bytes) {
    record.timeline.push_back({0, peer, kind, static_cast<int32_t>(step), std::move(label), start,
                               end, static_cast<double>(bytes)});
  };
  const auto label = [&](const Op& op) {
    return schedule::op_label(schedule_, ctx_.scenario.model, role_.host, op);
  };
  const auto now_reference = [&t] { return t.now_reference(); };

  // The compute thread: the device stream, in list order, one step after another. On a CPU, with
  // compute_yields, it yields the core to the threads that move messages as soon as they wake
  // (compute_priority.hpp).
  std::thread compute([&] {
    if (ctx_.compute_yields && ctx_.backend.kind() == kernels::BackendKind::cpu) {
      static std::atomic<bool> warned{false};  // once per process, not per strategy
      const std::string why = run_below_communication();
      if (!why.empty() && !warned.exchange(true)) {
        std::cerr << "ralp cluster: " << role_.name << ": " << why << std::endl;
      }
    }
    try {
      for (int64_t k = 0; k < ctx_.steps; ++k) {
        for (size_t position = 0; position < device_ops.size(); ++position) {
          const uint32_t i = device_ops[position];
          {
            std::unique_lock lock(state.mutex);
            const auto ready = [&] {
              return state.stop || (state.step == k && state.remaining[i] == 0);
            };
            if (!ready()) {
              // Whatever it waits for now matters at once: the MPI thread looks (`urgent`).
              state.blocked_on = i;
              state.mpi_news = true;
              state.news.notify_one();
              state.changed.wait(lock, ready);
              state.blocked_on = -1;
            }
            if (state.stop) return;
            state.computing = true;
          }
          const Op& op = ops[i];
          if (const char* phase = fault_phase(op)) ctx_.faults.at(phase, k);
          const double start = now_reference();
          const double cpu_start = cpu_time ? cpu_seconds() : 0.0;
          actions_.run_device(op, k);
          ctx_.backend.synchronize();
          const double end = now_reference();
          const double own = cpu_time ? cpu_seconds() - cpu_start : end - start;
          {
            std::lock_guard lock(state.mutex);
            state.computing = false;
            state.device_seconds[static_cast<size_t>(k)][position] = own;
            state.device_intervals.push_back({start, end, k, true});
            if (k + 1 == ctx_.steps) state.last_step_device.emplace_back(i, start, end);
            for (const uint32_t d : dependents[i]) {
              --state.remaining[d];
              --state.device_remaining[d];
            }
            state.device_done.emplace_back(i, end);
            state.mpi_news = state.mpi_news || wakes_mpi[i];
          }
          if (wakes_mpi[i]) state.news.notify_one();
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
  });
  // Between checks for messages, the MPI thread sleeps until the compute thread finishes an
  // operation that wakes it (wakes_mpi), begins to wait for one, or the pause ends
  // (Transport::backoff: longer pauses while the compute thread runs than while it waits): every
  // wake-up of the MPI thread takes CPU time from computation on the same core (polling every
  // 50 us made the kernels 30% slower on one core), while a message that arrives is noticed at
  // most one pause late. Other operations' ends do not wake it, nor start its pauses over from
  // the shortest: they are counted when it next looks.
  // Sleeps until the compute thread has news (mpi_news) or fails, or `interval` passes.
  const auto await_news = [&state](std::unique_lock<std::mutex>& lock,
                                    std::chrono::microseconds interval) {
    state.news.wait_for(lock, interval, [&state] {
      return state.mpi_news || state.error;
    });
  };
  const Transport::Pause pause = [&state, &await_news](int round) {
    std::unique_lock lock(state.mutex);
    await_news(lock, Transport::backoff(round, state.computing));
  };
  // With no message in flight and no ring in progress, nothing MPI does can complete an
  // operation: the MPI thread sleeps until the compute thread wakes it, waking every
  // kComputeWaitCheck only to check the step's timeout. Polling meanwhile, with the pauses above,
  // slowed the kernels on the same core: cifar_allconv's forward took 7.2 ms a step against
  // 6.5 ms without it, and its backward 16.6 ms against 13.9 ms in a hybrid step.
  const Transport::Pause await_compute = [&state, &await_news](int) {
    std::unique_lock lock(state.mutex);
    await_news(lock, kComputeWaitCheck);
  };
  const auto stop_compute = [&] {
    {
      std::lock_guard lock(state.mutex);
      state.stop = true;
    }
    state.changed.notify_all();
    compute.join();
  };

  // The ring's fused buffer and its landing area for chunks to reduce, kept from step to step:
  // allocating them afresh each step made the MPI thread fault in their pages (tens of MB for
  // a large model) while the compute thread ran backward on the same core, which delayed the
  // ring's first phase by 60 ms of cifar_alexnet's 250 ms step.
  std::vector<float> fused_store, incoming_store;
  try {
    const int64_t member = role_.host - schedule_.parameter_servers;
    const int64_t members = schedule_.workers;
    for (int64_t k = 0; k < ctx_.steps; ++k) {
      const bool last_step = k + 1 == ctx_.steps;
      actions_.begin_step(k);
      if (k == 0) record.start = now_reference();
      size_t completed = 0;
      std::optional<double> part_done;
      // An operation completed at `at` (reference seconds): counts it, and for one of the MPI
      // thread's, releases its dependents. Called with the state's mutex held.
      const auto count = [&](uint32_t i, double at) {
        ++completed;
        if (ops[i].ends_part) part_done = std::max(part_done.value_or(0.0), at);
      };
      const auto complete = [&](uint32_t i) {
        count(i, now_reference());
        for (const uint32_t d : dependents[i]) --state.remaining[d];
      };
      for (Lane& lane : lanes) lane.next = 0;
      {
        std::lock_guard lock(state.mutex);
        state.remaining = in_degree;
        state.device_remaining = device_in_degree;
        state.step = k;
      }
      state.changed.notify_all();

      struct InFlight {
        Transport::Handle handle;
        uint32_t op;
      };
      std::vector<InFlight> in_flight;
      // The ring all-reduce in progress, if any.
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
      std::optional<Ring> ring;

      const auto post_phase = [&](Ring& r) {
        const auto elements = static_cast<int64_t>(r.fused.size());
        const schedule::RingPhase p = schedule::ring_phase(member, members, r.phase);
        const schedule::ChunkRange out = schedule::chunk_range(elements, members, p.send_chunk);
        const schedule::ChunkRange in = schedule::chunk_range(elements, members, p.receive_chunk);
        float* landing = p.reduce ? incoming_store.data() : r.fused.data() + in.begin;
        const int next = schedule_.worker_host((member + 1) % members);
        const int previous = schedule_.worker_host((member + members - 1) % members);
        r.receive = t.receive(previous, MessageKind::ring, k,
                              {{landing, static_cast<size_t>(in.size()) * sizeof(float)}});
        const size_t bytes = static_cast<size_t>(out.size()) * sizeof(float);
        r.phase_start = now_reference();
        r.phase_bytes = static_cast<int64_t>(bytes);
        r.send = t.send(next, MessageKind::ring, k, r.phase, {{r.fused.data() + out.begin, bytes}});
        if (last_step) {
          record.sent.push_back({std::string(schedule::to_string(schedule::MessageKind::ring)),
                                 schedule_.host_name(next), r.phase,
                                 static_cast<int64_t>(bytes)});
        }
      };
      const auto start_ring = [&](uint32_t i) {
        Ring r;
        r.op = i;
        r.start = now_reference();
        r.tensors = actions_.ring_tensors(static_cast<size_t>(ops[i].buffer));
        size_t elements = 0;
        for (const auto& tensor : r.tensors) elements += tensor.size();
        if (fused_store.size() < elements) {
          fused_store.resize(elements);
          // A reduce-scatter phase lands one chunk; the first is the largest.
          incoming_store.resize(static_cast<size_t>(
              schedule::chunk_range(static_cast<int64_t>(elements), members, 0).size()));
        }
        r.fused = std::span<float>(fused_store.data(), elements);
        r.next = schedule_.worker_host((member + 1) % members);
        r.previous = schedule_.worker_host((member + members - 1) % members);
        size_t offset = 0;
        for (const auto& tensor : r.tensors) {
          std::copy(tensor.begin(), tensor.end(), r.fused.begin() + static_cast<std::ptrdiff_t>(offset));
          offset += tensor.size();
        }
        if (ctx_.allreduce == AllreduceImplementation::mpi) {
          MPI_Request request = MPI_REQUEST_NULL;
          MPI_Iallreduce(MPI_IN_PLACE, r.fused.data(), static_cast<int>(r.fused.size()), MPI_FLOAT,
                         MPI_SUM, ctx_.workers_comm, &request);
          r.receive = t.track(request, MessageKind::ring, k);
          // Counted as a ring would move them; the library's algorithm may move more or less.
          double bytes = 0.0;
          for (const Message& m : schedule::ring_messages(schedule_, static_cast<size_t>(ops[i].buffer), member)) {
            bytes += static_cast<double>(m.wire_bytes());
          }
          t.count(k, bytes, bytes);
        } else {
          post_phase(r);
        }
        ring = std::move(r);
      };
      // Advances the ring; returns whether it moved.
      const auto advance_ring = [&]() -> bool {
        if (!ring) return false;
        Ring& r = *ring;
        if (ctx_.allreduce == AllreduceImplementation::mpi) {
          if (!t.done(r.receive)) return false;
          if (last_step) {
            // The library's algorithm is its own: the whole all-reduce, on the ring's tracks.
            const double end = now_reference();
            trace(ActivityKind::send, r.next, k, label(ops[r.op]), r.start, end, 0);
            trace(ActivityKind::receive, r.previous, k, label(ops[r.op]), r.start, end, 0);
          }
          t.release(r.receive);
        } else {
          if (!t.done(r.send) || !t.done(r.receive)) return false;
          if (last_step) {
            const double end = now_reference();
            const std::string name = label(ops[r.op]);
            trace(ActivityKind::send, r.next, k, name, r.phase_start, end,
                  r.phase_bytes + schedule::kHeaderBytes);
            trace(ActivityKind::receive, r.previous, k, name,
                  std::max(r.phase_start, t.header(r.receive).posted_at), end,
                  r.phase_bytes + schedule::kHeaderBytes);
          }
          t.release(r.send);
          t.release(r.receive);
          const schedule::RingPhase p = schedule::ring_phase(member, members, r.phase);
          if (p.reduce) {
            const schedule::ChunkRange in = schedule::chunk_range(
                static_cast<int64_t>(r.fused.size()), members, p.receive_chunk);
            float* own = r.fused.data() + in.begin;
            for (int64_t e = 0; e < in.size(); ++e) own[e] += incoming_store[static_cast<size_t>(e)];
          }
          if (++r.phase < 2 * (members - 1)) {
            post_phase(r);
            return true;
          }
        }
        size_t offset = 0;
        for (const auto& tensor : r.tensors) {
          std::memcpy(tensor.data(), r.fused.data() + offset, tensor.size_bytes());
          offset += tensor.size();
        }
        record.intervals.push_back({r.start, now_reference(), k, false});
        const uint32_t op = r.op;
        ring.reset();
        std::lock_guard lock(state.mutex);
        complete(op);
        return true;
      };

      while (completed < n) {
        bool moved = false;
        // Launch what is ready on each lane, in list order.
        for (Lane& lane : lanes) {
          while (lane.next < lane.ops.size()) {
            const uint32_t i = lane.ops[lane.next];
            {
              std::lock_guard lock(state.mutex);
              if (state.remaining[i] > 0) break;
            }
            const Op& op = ops[i];
            if (lane.kind == Stream::ring) {
              if (ring) break;  // one buffer at a time
              ctx_.faults.at("ring", k);
              start_ring(i);
            } else if (lane.kind == Stream::copy) {
              // Host-device copies happen inside the operations that produce or consume the data.
              std::lock_guard lock(state.mutex);
              complete(i);
            } else if (lane.kind == Stream::send) {
              if (const char* phase = fault_phase(op)) ctx_.faults.at(phase, k);
              in_flight.push_back({t.send(op.message.peer, transport_kind(op.message.kind), k,
                                          op.message.item, actions_.send_pieces(op)),
                                   i});
              if (last_step) {
                record.sent.push_back({std::string(schedule::to_string(op.message.kind)),
                                       schedule_.host_name(op.message.peer), op.message.item,
                                       op.message.payload_bytes});
              }
            } else {
              in_flight.push_back({t.receive(op.message.peer, transport_kind(op.message.kind), k,
                                             actions_.receive_pieces(op)),
                                   i});
            }
            ++lane.next;
            moved = true;
          }
        }
        t.progress();
        for (size_t f = in_flight.size(); f-- > 0;) {
          const InFlight flight = in_flight[f];
          if (!t.done(flight.handle)) continue;
          const Op& op = ops[flight.op];
          double start = t.to_reference(t.posted_at(flight.handle));
          if (op.kind == OpKind::receive) {
            const MessageHeader& h = t.header(flight.handle);
            if (h.item != op.message.item) {
              throw t.failure("expected " + std::string(schedule::to_string(op.message.kind)) +
                              " " + std::to_string(op.message.item) + " from " +
                              schedule_.host_name(op.message.peer) + " and got item " +
                              std::to_string(h.item));
            }
            start = std::max(start, h.posted_at);
          }
          const double end = now_reference();
          record.intervals.push_back({start, end, k, false});
          if (last_step) {
            trace(op.kind == OpKind::send ? ActivityKind::send : ActivityKind::receive,
                  op.message.peer, k, label(op), start, end, op.message.wire_bytes());
          }
          t.release(flight.handle);
          in_flight.erase(in_flight.begin() + static_cast<std::ptrdiff_t>(f));
          std::lock_guard lock(state.mutex);
          complete(flight.op);
          moved = true;
        }
        moved = advance_ring() || moved;
        {
          std::lock_guard lock(state.mutex);
          if (state.error) std::rethrow_exception(state.error);
          for (const auto& [i, end] : state.device_done) count(i, end);
          moved = moved || !state.device_done.empty();
          state.device_done.clear();
          state.mpi_news = false;
        }
        state.changed.notify_all();
        if (moved || completed == n) continue;
        // Whether noticing a completion soon can matter: a ring or a send in progress, or a
        // receive that nothing waits for, that a device operation the compute thread waits for
        // now waits for, or that another stream's operation waits for with all its device
        // dependencies done. A receive whose dependents still wait for the compute thread is
        // noticed when that thread wakes this one (wakes_mpi), or begins to wait for one of
        // them (blocked_on). In allreduce the receives of the ring's coordination are posted at
        // the start of a step, and polling for them kept the MPI thread waking 2,900 times a
        // second, taking 11% of the core from the kernels; in hybrid the receive of the head's
        // gradient, posted at the start too, had its first backward layer's device dependencies
        // done all through the forward (they come in stream order, not as dependencies), and
        // polling for it woke the MPI thread about 1,000 times a second while the kernels ran.
        const auto urgent = [&] {
          if (ring) return true;
          std::lock_guard lock(state.mutex);
          return std::any_of(in_flight.begin(), in_flight.end(), [&](const InFlight& f) {
            if (ops[f.op].kind != OpKind::receive || dependents[f.op].empty()) return true;
            return std::any_of(dependents[f.op].begin(), dependents[f.op].end(), [&](uint32_t d) {
              if (ops[d].stream() == Stream::device) return state.blocked_on == d;
              return state.device_remaining[d] == 0;
            });
          });
        };
        // Nothing to do until a message completes or the compute thread has news (mpi_news).
        t.wait_until([&] {
          std::lock_guard lock(state.mutex);
          if (state.mpi_news || state.error) return true;
          for (const InFlight& f : in_flight) {
            if (t.done(f.handle)) return true;
          }
          if (ring && ctx_.allreduce == AllreduceImplementation::ring) {
            return t.done(ring->send) && t.done(ring->receive);
          }
          return ring && t.done(ring->receive);
        }, 0.0, urgent() ? pause : await_compute);
      }
      record.part_done[static_cast<size_t>(k)] = part_done;
    }
  } catch (...) {
    stop_compute();
    throw;
  }
  stop_compute();
  std::lock_guard lock(state.mutex);
  record.intervals.insert(record.intervals.end(), state.device_intervals.begin(),
                          state.device_intervals.end());
  for (const auto& [i, start, end] : state.last_step_device) {
    trace(schedule::activity_of(ops[i].kind), -1, ctx_.steps - 1, label(ops[i]), start, end, 0);
  }
  for (const uint32_t i : device_ops) record.device_ops.emplace_back(i, label(ops[i]));
  record.device_seconds = std::move(state.device_seconds);
}

}  // namespace ralp::cluster
