// The SimGrid interpreter of a step schedule (schedule.hpp). Streams whose operations take a
// time fixed by their inputs are played without actors, by arithmetic on completion times:
//   device, copy    an operation starts when its stream is free and its dependencies completed,
//                   and ends its predicted time later;
//   header-only     a connection that carries only headers (ready, go, step_done, ...): a message
//   connections     leaves when both the send and the matching receive are posted and arrives
//                   the route's idle transfer time later (World::idle_transfer_seconds), without
//                   sharing links with the flows;
//   connections     likewise posted at both ends, where no end pays CPU time for its messages and
//   at wire speed   the transport reaches all of the route: a message leaves as one flow from
//                   host to host, started by the kernel (on a timer where it leaves ahead of the
//                   clock), and arrives when SimGrid reports the flow completed; no actor waits.
// Streams whose times depend on what else runs are actors:
//   device of a    executes each operation on the CPU of the shared device's first host, which
//   shared device  SimGrid divides equally among the operations running on it at once; likewise
//   or of a CPU    a CPU device where messages cost CPU time (Scenario::message_cpu): each
//   that moves     payload message executes its sender's and its receiver's share on their
//   messages       devices' CPUs while it flows, no faster than the idle route carries it
// and, since their times depend on the flows they share links with, the other connections:
//   to peer P       puts each message on the connection's mailbox, waiting for delivery
//   from peer P     gets each message from the connection's mailbox, in order
//   ring            one member of each fusion buffer's ring all-reduce (message by message, or as
//                   one flow per ring edge where that is exact)
// A completion known ahead of the clock (a device operation's end) reaches an actor as the time
// to start at. One mailbox per (sender, receiver) pair and one outstanding receive per connection
// keep each actor's pending activities few: SimGrid 3.32 keeps them in a linked list (completing
// one is linear in their number) and scans a mailbox's queue linearly, so many outstanding
// communications per actor or mailbox make a step quadratic in them. Flows the kernel starts
// share one such list (each completion scans all flows then in flight), which costs less than
// the context switches and blocking calls of two actors per message up to some ten thousand
// flows at once (kMostPlayedFlowConnections); SimGrid 3.32 cannot bound the rate of a
// host-to-host flow, so connections whose messages' CPU time or link share bounds their flows
// stay with actors.
#include "ralp/sim/step_model.hpp"

#include <algorithm>
#include <cstdint>
#include <deque>
#include <map>
#include <set>
#include <malloc.h>
#include <memory>
#include <stdexcept>

#include <simgrid/kernel/Timer.hpp>
#include <simgrid/simix.hpp>
#include <xbt/config.hpp>

#include "platform.hpp"
#include "ralp/schedule/fusion.hpp"
#include "ralp/spec/nccl_plan.hpp"
#include "ralp/sim/straggler.hpp"
#include "world.hpp"

namespace sg4 = simgrid::s4u;

namespace ralp::sim {
namespace {

using schedule::Message;
using schedule::MessageKind;
using schedule::Op;
using schedule::OpKind;
using schedule::Pass;
using schedule::RoleSchedule;
using schedule::Stream;

// Connections at wire speed are played without actors where a run has at most this many: as each
// flow the kernel started completes, SimGrid 3.32 scans the list of all those in flight, which
// outgrows the two actors per message it spares when many thousands are. Measured on VGG-16 under
// jemalloc (ralp::allocator), played against actors, same bytes out: 128 nodes of 8 with local
// aggregation and 8 servers (bench/nodes.cpp), 3,854 such connections and 1,040 flows in flight
// on average, 1.9 to 2.1 times faster; 1,024 devices on nodes without local aggregation (16,398
// connections, 4,590 in flight) 1.6 times faster; ps on a star with one server, 4,096 workers
// (8,192 connections) 1.35 times faster, 8,192 and 12,288 workers (16,384 and 24,576) as fast in
// a third less memory, 16,384 workers (32,768) 1.4 times slower.
constexpr size_t kMostPlayedFlowConnections = 24576;

// Actors' stacks: deep enough for SimGrid's internals, small enough for thousands of actors.
constexpr int kActorStackKiB = 256;
constexpr int kBytesPerKiB = 1024;

class Role;
struct Model;

// A connection played without actors: the next message's two ends, once posted. A header-only
// connection's message arrives a header's transfer time after both are; one at wire speed (flows)
// moves it as a flow, `comm`, which left at `left_at`. The previous message's flow is kept until
// the next leaves: SimGrid must not free a flow during its own completion callback.
struct Connection {
  int32_t src = -1;
  int32_t dst = -1;
  double seconds = 0.0;  // header-only: the transfer time of a header
  bool flows = false;
  double left_at = 0.0;
  sg4::CommPtr comm;
  sg4::CommPtr previous;
  Role* sender = nullptr;  // posted ends: the role, its stream, the operation, the time posted
  size_t send_stream = 0;
  uint32_t send_op = 0;
  double send_at = 0.0;
  Role* receiver = nullptr;
  size_t receive_stream = 0;
  uint32_t receive_op = 0;
  double receive_at = 0.0;
};

// A stream's operations, by index into the role's list, and where it stands in the current step.
struct StreamOps {
  Stream kind = Stream::device;
  int32_t peer = -1;  // send, receive
  std::vector<uint32_t> ops;
  Connection* connection = nullptr;  // send or receive streams of connections played
  bool played = false;  // by arithmetic (device, copy, connections played), else by an actor
  size_t next = 0;      // played: the next operation of the step
  double free_at = 0.0;  // played: when the previous operation ended
  bool posted = false;  // connections played: the next message is posted, awaiting its other end
  bool queued = false;
};

// One role's state over the run.
class Role {
 public:
  Role(Model& model, const RoleSchedule& schedule);

  [[nodiscard]] const RoleSchedule& schedule() const { return schedule_; }
  [[nodiscard]] std::vector<StreamOps>& streams() { return streams_; }
  [[nodiscard]] int64_t step() const { return step_; }
  [[nodiscard]] double ready_at(uint32_t op) const { return ready_at_[op]; }
  [[nodiscard]] bool finished_at_start() const { return schedule_.ops.empty(); }
  // How long a device operation takes alone (a worker's compute under this step's straggler
  // factor).
  [[nodiscard]] double device_seconds(const Op& op) const {
    return op.seconds * (op.kind == OpKind::compute ? slowdown_ : 1.0);
  }

  // Blocks the calling actor's stream until step `step` of the role has begun.
  void wait_step(size_t stream, int64_t step) {
    while (step_ < step) starts_[stream]->acquire();
  }
  // Blocks until every dependency of `op` has completed (possibly at a later time, ready_at).
  void wait_ready(uint32_t op, size_t stream) {
    while (remaining_[op] > 0) {
      waiting_[op] = selves_[stream];
      selves_[stream]->acquire();
    }
    waiting_[op] = nullptr;
  }
  // `op` completed at time `at` (now, or later for a played operation).
  void complete(uint32_t op, double at);
  // Plays stream `stream` forward as far as its dependencies are known.
  void advance(size_t stream);
  // A header-only message matched: its end on this role completes at `at`.
  void complete_message(size_t stream, double at);
  void enqueue(size_t stream);

 private:
  void reset();

  Model& model_;
  World& world_;
  const RoleSchedule& schedule_;
  struct Join {
    int32_t size = 0;  // dependencies
    std::vector<uint32_t> ops;  // the operations waiting on them
    int32_t remaining = 0;
  };
  std::vector<std::vector<int32_t>> dependents_;  // per operation: the joins it counts in
  std::vector<Join> joins_;
  std::vector<double> join_ready_at_;
  std::vector<int32_t> join_of_;    // per operation, -1 without dependencies
  std::vector<int32_t> remaining_;  // per operation: 1 while its join is open
  std::vector<double> ready_at_;
  std::vector<uint32_t> stream_of_;
  std::vector<sg4::SemaphorePtr> waiting_;
  std::vector<sg4::SemaphorePtr> starts_;  // per stream played by an actor
  std::vector<sg4::SemaphorePtr> selves_;  // per stream played by an actor
  std::vector<StreamOps> streams_;
  size_t completed_ = 0;
  int64_t step_ = 0;
  double step_start_ = 0.0;
  double step_end_ = 0.0;
  double slowdown_ = 1.0;  // this step's straggler factor on a worker's compute
};

struct Model {
  World& world;
  const schedule::Schedule& schedule;
  std::vector<std::unique_ptr<Role>> roles;
  std::map<std::pair<int32_t, int32_t>, Connection> connections;  // those played, by (src, dst)
  std::deque<std::pair<Role*, size_t>> queue;  // played streams with news
  bool draining = false;
  bool coalesced = false;
  double latency_factor = 1.0;
  // Per host: the host whose CPU runs its device operations when it shares its device with
  // others (Scenario::shared_devices) or when its messages cost CPU time on it (a CPU device and
  // Scenario::message_cpu), else -1 (its device stream is played by arithmetic).
  std::vector<int32_t> device_host;
  // Per host: whether its messages cost CPU time on its device's CPU (charged), and whether they
  // cost CPU time at all (priced: a charged host, or any host under a transport, on a core of its
  // own where its device is not a CPU).
  std::vector<bool> charged;
  std::vector<bool> priced;
  // Per charged host: the cores its messages' CPU time spreads over (1 but under a named
  // transport: min(the connections it serves, its CPU's cores); see threads_of).
  std::vector<double> threads;
  MessageCpuSpec message_cpu;
  // The transport's share of a route between two nodes that one connection reaches (1: all).
  double link_share = 1.0;
  NodeLayout layout;
  Message ring_token{MessageKind::ring};  // what a coalesced ring's flow carries
  // NCCL's tuning model (spec/nccl_plan.hpp), where the strategy's all-reduce follows it: the
  // machine NCCL sees, the algorithm forced, and per host the flows of its channels.
  bool nccl = false;
  NcclMachine nccl_machine;
  std::optional<NcclAlgorithm> nccl_forced;
  std::map<int32_t, std::vector<std::pair<int32_t, double>>> nccl_out;  // host -> (to, share)
  std::map<int32_t, std::vector<int32_t>> nccl_in;                      // host -> senders

  // Plays every queued stream; the streams it reaches are queued in turn, so that a chain of
  // completions is a loop and not a recursion as deep as the cluster.
  void drain() {
    if (draining) return;
    draining = true;
    while (!queue.empty()) {
      const auto [role, stream] = queue.front();
      queue.pop_front();
      role->advance(stream);
    }
    draining = false;
  }
  // Once both ends of `c`'s next message are posted: plays a header-only message, or has the
  // kernel start its flow (launch) when it leaves; deliver completes both ends when it arrives.
  void match(Connection& c);
  void launch(Connection& c);
  void deliver(Connection& c);
};

std::string label_of(const Model& m, int32_t host, const Op& op);

Role::Role(Model& model, const RoleSchedule& schedule)
    : model_(model), world_(model.world), schedule_(schedule) {
  const size_t n = schedule.ops.size();
  dependents_.resize(n);
  join_of_.assign(n, -1);
  stream_of_.assign(n, 0);
  // One join per distinct dependency list: operations that share a list (schedule.hpp) wait on
  // one counter.
  std::map<std::pair<uint32_t, uint32_t>, int32_t> join_index;
  for (uint32_t i = 0; i < n; ++i) {
    const Op& op = schedule.ops[i];
    if (op.after_begin == op.after_end) continue;
    const auto [it, added] = join_index.try_emplace({op.after_begin, op.after_end},
                                                    static_cast<int32_t>(joins_.size()));
    if (added) {
      joins_.push_back({static_cast<int32_t>(op.after_end - op.after_begin), {}});
      for (const uint32_t a : schedule.after_of(op)) dependents_[a].push_back(it->second);
    }
    joins_[static_cast<size_t>(it->second)].ops.push_back(i);
    join_of_[i] = it->second;
  }
  std::map<std::pair<Stream, int32_t>, size_t> index;  // (kind, peer) -> stream
  for (uint32_t i = 0; i < n; ++i) {
    const Op& op = schedule.ops[i];
    const Stream kind = op.stream();
    const int32_t peer = kind == Stream::send || kind == Stream::receive ? op.message.peer : -1;
    const auto [it, added] = index.try_emplace({kind, peer}, streams_.size());
    const size_t s = it->second;
    if (added) streams_.push_back({kind, peer});
    streams_[s].ops.push_back(i);
    stream_of_[i] = static_cast<uint32_t>(s);
  }
  for (StreamOps& st : streams_) {
    if (st.kind == Stream::copy) st.played = true;
    if (st.kind == Stream::device) st.played = model.device_host[schedule.host] < 0;
    if (st.kind == Stream::send || st.kind == Stream::receive) {
      const auto key = st.kind == Stream::send ? std::pair{schedule.host, st.peer}
                                               : std::pair{st.peer, schedule.host};
      if (const auto it = model.connections.find(key); it != model.connections.end()) {
        st.played = true;
        st.connection = &it->second;
      }
    }
  }
  waiting_.assign(n, nullptr);
  remaining_.assign(n, 0);
  for (const StreamOps& st : streams_) {  // an actor's stream blocks on them; none elsewhere
    starts_.push_back(st.played ? nullptr : sg4::Semaphore::create(0));
    selves_.push_back(st.played ? nullptr : sg4::Semaphore::create(0));
  }
  reset();
}

void Role::reset() {
  for (size_t i = 0; i < schedule_.ops.size(); ++i) remaining_[i] = join_of_[i] < 0 ? 0 : 1;
  for (Join& j : joins_) {
    j.remaining = j.size;
  }
  join_ready_at_.assign(joins_.size(), step_start_);
  ready_at_.assign(schedule_.ops.size(), step_start_);
  completed_ = 0;
  step_end_ = step_start_;
  for (StreamOps& st : streams_) {
    st.next = 0;
    st.free_at = step_start_;
    st.posted = false;
  }
  const bool worker = model_.schedule.is_worker(schedule_.host);
  const int64_t w = schedule_.host - model_.schedule.parameter_servers;
  slowdown_ = worker && step_ < world_.steps
                  ? straggler_factor(world_.scenario.stragglers, world_.scenario.seed, step_, w)
                  : 1.0;
}

void Role::enqueue(size_t stream) {
  StreamOps& st = streams_[stream];
  if (st.queued) return;
  st.queued = true;
  model_.queue.emplace_back(this, stream);
}

void Role::complete(uint32_t op, double at) {
  step_end_ = std::max(step_end_, at);
  if (schedule_.ops[op].ends_part) world_.complete_part(step_, at);
  for (const int32_t j : dependents_[op]) {
    Join& join = joins_[static_cast<size_t>(j)];
    double& ready = join_ready_at_[static_cast<size_t>(j)];
    ready = std::max(ready, at);
    if (--join.remaining > 0) continue;
    for (const uint32_t d : join.ops) {
      ready_at_[d] = ready;
      remaining_[d] = 0;
      const size_t s = stream_of_[d];
      if (streams_[s].played) {
        enqueue(s);
      } else if (waiting_[d]) {
        waiting_[d]->release();
      }
    }
  }
  if (++completed_ < schedule_.ops.size()) return;
  // The role's whole step is done: the next begins on every stream when its last operation ends.
  ++step_;
  step_start_ = step_end_;
  reset();
  if (step_ == world_.steps) {
    world_.role_finished();
    return;
  }
  for (size_t s = 0; s < streams_.size(); ++s) {
    if (streams_[s].played) {
      enqueue(s);
    } else {
      starts_[s]->release();
    }
  }
}

void Role::advance(size_t stream) {
  StreamOps& st = streams_[stream];
  st.queued = false;
  const int64_t k = step_;
  while (step_ == k && k < world_.steps && !st.posted && st.next < st.ops.size()) {
    const uint32_t i = st.ops[st.next];
    if (remaining_[i] > 0) return;  // queued again when its last dependency completes
    const Op& op = schedule_.ops[i];
    const double start = std::max(ready_at_[i], st.free_at);
    if (st.connection) {
      Connection& c = *st.connection;
      st.posted = true;
      if (st.kind == Stream::send) {
        c.sender = this;
        c.send_stream = stream;
        c.send_op = i;
        c.send_at = start;
      } else {
        c.receiver = this;
        c.receive_stream = stream;
        c.receive_op = i;
        c.receive_at = start;
      }
      model_.match(c);
      return;
    }
    const double seconds = device_seconds(op);
    const double end = start + seconds;
    if (world_.measured(k) && seconds > 0.0) {
      world_.record_work(schedule_.host, -1, schedule::activity_of(op.kind), k,
                         world_.traced(k) ? label_of(model_, schedule_.host, op) : std::string(),
                         start, end);
    }
    st.free_at = end;
    ++st.next;
    complete(i, end);
  }
}

void Role::complete_message(size_t stream, double at) {
  StreamOps& st = streams_[stream];
  const uint32_t i = st.ops[st.next];
  st.posted = false;
  st.free_at = at;
  ++st.next;
  enqueue(stream);
  complete(i, at);
}

void Model::match(Connection& c) {
  if (!c.sender || !c.receiver) return;
  Role& from = *c.sender;
  Role& to = *c.receiver;
  const Op& send = from.schedule().ops[c.send_op];
  const Op& receive = to.schedule().ops[c.receive_op];
  if (send.message.kind != receive.message.kind || send.message.item != receive.message.item) {
    throw std::logic_error(world.host_name(c.dst) + " expected " +
                           std::string(schedule::to_string(receive.message.kind)) + " " +
                           std::to_string(receive.message.item) + " from " +
                           world.host_name(c.src) + " and got " +
                           std::string(schedule::to_string(send.message.kind)) + " " +
                           std::to_string(send.message.item));
  }
  const double start = std::max(c.send_at, c.receive_at);
  if (c.flows) {
    // In the kernel, which reports the completion of the activities it starts (not an actor's).
    simgrid::kernel::actor::simcall_answered([this, &c, start] {
      if (start <= sg4::Engine::get_clock()) {
        launch(c);
      } else {
        simgrid::kernel::timer::Timer::set(start, [this, &c] { launch(c); });
      }
    });
    return;
  }
  c.sender = nullptr;
  c.receiver = nullptr;
  const int64_t k = from.step();
  const double end = start + c.seconds;
  world.log_message(c.src, k, send.message);
  world.record_transfer(c.src, c.dst, send.message.wire_bytes(), k,
                        world.traced(k) ? label_of(*this, c.src, send) : std::string(), start, end);
  from.complete_message(c.send_stream, end);
  to.complete_message(c.receive_stream, end);
}

// Starts the flow of the message posted at both ends of `c` (at wire speed), now. Bytes that the
// NICs' token buckets pass at once (World::start_flow) leave the flow.
void Model::launch(Connection& c) {
  const Message& message = c.sender->schedule().ops[c.send_op].message;
  c.left_at = sg4::Engine::get_clock();
  world.log_message(c.src, c.sender->step(), message);
  const int64_t flow = world.start_flow(c.src, c.dst, message.wire_bytes(), c.left_at);
  c.previous = std::move(c.comm);
  c.comm = sg4::Comm::sendto_init(world.host(c.src), world.host(c.dst));
  c.comm->set_payload_size(static_cast<uint64_t>(flow));
  c.comm->set_data(&c);
  c.comm->start();
}

void Model::deliver(Connection& c) {
  const double end = sg4::Engine::get_clock();
  world.end_flow(c.src, c.dst, end);
  Role& from = *c.sender;
  Role& to = *c.receiver;
  c.sender = nullptr;
  c.receiver = nullptr;
  const Op& op = from.schedule().ops[c.send_op];
  const int64_t k = from.step();
  world.record_transfer(c.src, c.dst, op.message.wire_bytes(), k,
                        world.traced(k) ? label_of(*this, c.src, op) : std::string(), c.left_at,
                        end);
  from.complete_message(c.send_stream, end);
  to.complete_message(c.receive_stream, end);
  drain();
}

// The run whose connections' flows SimGrid reports completed (one per process).
Model* running_model = nullptr;

void on_activity_completed(const sg4::Activity& activity) {
  auto* c = activity.get_data<Connection>();
  if (c != nullptr && running_model != nullptr) running_model->deliver(*c);
}

std::string label_of(const Model& m, int32_t host, const Op& op) {
  return schedule::op_label(m.schedule, m.world.scenario.model, host, op);
}

// The CPU time that moving `payloads` payload messages of `bytes` on the wire in all takes at one
// end on `host`'s device CPU, at `s_per_message` and `s_per_byte`; 0 where the host's messages
// cost nothing.
double message_cpu_seconds(const Model& m, int32_t host, double s_per_message, double s_per_byte,
                           int64_t payloads, int64_t bytes) {
  if (!m.priced[static_cast<size_t>(host)]) return 0.0;
  return s_per_message * static_cast<double>(payloads) + s_per_byte * static_cast<double>(bytes);
}
double send_cpu_seconds(const Model& m, int32_t host, int64_t payloads, int64_t bytes) {
  return message_cpu_seconds(m, host, m.message_cpu.send_s_per_message,
                             m.message_cpu.send_s_per_byte, payloads, bytes);
}
double receive_cpu_seconds(const Model& m, int32_t host, int64_t payloads, int64_t bytes) {
  return message_cpu_seconds(m, host, m.message_cpu.receive_s_per_message,
                             m.message_cpu.receive_s_per_byte, payloads, bytes);
}
// Caps `comm`'s rate so that its `flow` bytes take at least `seconds` (none where 0).
void limit_rate(const sg4::CommPtr& comm, int64_t flow, double seconds) {
  if (flow > 0 && seconds > 0.0) comm->set_rate(static_cast<double>(flow) / seconds);
}

// The least time one end lets a connection take: a charged end moves the bytes no faster than
// its per-byte time (its per-message time is an execution the message waits for); an end on a
// core of its own, no faster than all its CPU time.
double end_floor(const Model& m, int32_t host, double all_s, double bytes_s) {
  return m.charged[static_cast<size_t>(host)] ? bytes_s : all_s;
}

// The least time `flow` bytes take from `src` to `dst` under the transport's link share: between
// two nodes, one connection reaches that share of the idle route's bandwidth.
double share_floor(const Model& m, int32_t src, int32_t dst, int64_t flow) {
  if (m.link_share >= 1.0 || flow <= 0 || m.layout.same_node(src, dst)) return 0.0;
  const double wire =
      m.world.idle_transfer_seconds(src, dst, flow) - m.world.idle_transfer_seconds(src, dst, 0);
  return wire / m.link_share;
}

// Starts `seconds` (alone) of execution on `cpu`, spread over at least `spread` seconds.
sg4::ExecPtr start_on(sg4::Host* cpu, double seconds, double spread = 0.0) {
  const double flops = seconds * cpu->get_speed();
  sg4::ExecPtr exec = sg4::this_actor::exec_init(flops);
  exec->set_host(cpu);
  if (spread > seconds) exec->set_bound(flops / spread);
  exec->start();
  return exec;
}

// Starts `seconds` of CPU time on `host`'s device CPU, spread over at least `spread` seconds:
// moving bytes costs the CPU as they flow. Returns nullptr for no time.
sg4::ExecPtr start_message_cpu(const Model& m, int32_t host, double seconds, double spread) {
  if (seconds <= 0.0 || !m.charged[static_cast<size_t>(host)]) return nullptr;
  const double threads = m.threads[static_cast<size_t>(host)];
  return start_on(m.world.host(m.device_host[static_cast<size_t>(host)]), seconds / threads,
                  spread);
}

// Puts a message of `bytes` on the wire on `box` from `src` to `dst` and waits for it, with its
// CPU time on both ends where they are charged (a header-only message's is its bytes' only): the
// flow is no faster than the busier end alone moves the bytes, and the message is sent once both
// ends' CPU time, per message and per byte, is spent too. Bytes that the NICs' token buckets pass
// at once (World::start_flow) leave the flow, not the CPU time.
void put_message(Model& m, sg4::Mailbox* box, void* payload, int32_t src, int32_t dst,
                 int64_t bytes) {
  const int64_t flow = m.world.start_flow(src, dst, bytes, sg4::Engine::get_clock());
  const int64_t payloads = bytes > schedule::kHeaderBytes ? 1 : 0;
  const double send_s = send_cpu_seconds(m, src, payloads, bytes);
  const double receive_s = receive_cpu_seconds(m, dst, payloads, bytes);
  const double share_s = share_floor(m, src, dst, flow);
  if (send_s <= 0.0 && receive_s <= 0.0 && share_s <= 0.0) {
    box->put(payload, static_cast<uint64_t>(flow));
    m.world.end_flow(src, dst, sg4::Engine::get_clock());
    return;
  }
  const double spread = m.world.idle_transfer_seconds(src, dst, flow);
  const sg4::ExecPtr sender = start_message_cpu(m, src, send_s, spread);
  const sg4::ExecPtr receiver = start_message_cpu(m, dst, receive_s, spread);
  sg4::CommPtr comm = box->put_init(payload, static_cast<uint64_t>(flow));
  limit_rate(comm, flow,
             std::max({end_floor(m, src, send_s, send_cpu_seconds(m, src, 0, bytes)),
                       end_floor(m, dst, receive_s, receive_cpu_seconds(m, dst, 0, bytes)),
                       share_s}));
  comm->start();
  comm->wait();
  m.world.end_flow(src, dst, sg4::Engine::get_clock());
  if (sender) sender->wait();
  if (receiver) receiver->wait();
}

// A named transport's threads on a host that computes on a CPU: a gRPC server runs its calls on a
// pool of threads, so the CPU time of the connections it serves at once spreads over up to as
// many cores as there are connections, and no more than the CPU has (its profile's cores, or the
// threads a measured profile ran on; 1 when the profile states neither). Each connection still
// moves its bytes no faster than one core does (end_floor).
std::vector<double> threads_of(const Scenario& scenario, const schedule::Schedule& schedule) {
  std::vector<std::set<int32_t>> peers(schedule.roles.size());
  for (const RoleSchedule& rs : schedule.roles) {
    for (const Op& op : rs.ops) {
      if (op.kind != OpKind::send || op.message.payload_bytes == 0) continue;
      peers[static_cast<size_t>(rs.host)].insert(op.message.peer);
      peers[static_cast<size_t>(op.message.peer)].insert(rs.host);
    }
  }
  std::vector<double> out(schedule.roles.size(), 1.0);
  for (size_t h = 0; h < out.size(); ++h) {
    const DeviceProfile& device = static_cast<int64_t>(h) < schedule.parameter_servers
                                      ? scenario.ps_device
                                      : scenario.worker_device;
    const int cores = device.cores > 0 ? device.cores : device.host ? device.host->threads : 0;
    out[h] = static_cast<double>(
        std::max<int64_t>(1, std::min<int64_t>(static_cast<int64_t>(peers[h].size()), cores)));
  }
  return out;
}

// What messages cost beyond the wire: the strategy's transport where it names one, else the
// scenario's message_cpu (the real cluster's Open MPI, fitted by ralp link-probe). Hosts that
// compute on a CPU pay it there, as actors that share that CPU with their computation; others pay
// it on a core of their own (transport only).
void price_messages(Model& m, const Scenario& scenario, const schedule::Schedule& schedule) {
  const Transport& transport = schedule.plan.strategy.transport;
  // Under NCCL's tuning model the transport's fitted socket costs do not apply.
  const bool nccl = uses_nccl_model(scenario, schedule.plan.strategy);
  const bool named = !transport.is_ideal() && !nccl;
  m.message_cpu = scenario.message_cpu;
  if (named) {
    m.message_cpu = {transport.s_per_byte, transport.s_per_byte, transport.message_s,
                     transport.message_s, scenario.message_cpu.waiting_share};
  }
  m.link_share = nccl ? 1.0 : transport.link_share;
  m.layout = node_layout(scenario);
  const auto hosts = m.device_host.size();
  m.charged.assign(hosts, false);
  m.priced.assign(hosts, false);
  m.threads.assign(hosts, 1.0);
  if (named) m.threads = threads_of(scenario, schedule);
  for (size_t h = 0; h < hosts; ++h) {
    const DeviceProfile& device = static_cast<int64_t>(h) < schedule.parameter_servers
                                      ? scenario.ps_device
                                      : scenario.worker_device;
    if (!m.message_cpu.charged()) continue;
    m.priced[h] = device.kind == DeviceKind::cpu || named;
    if (device.kind != DeviceKind::cpu) continue;
    m.charged[h] = true;
    if (m.device_host[h] < 0) m.device_host[h] = static_cast<int32_t>(h);
  }
}

// The connections played without actors: those that carry only headers, and those whose messages
// flow at wire speed (no CPU time at either end, and all of the route's bandwidth) where
// `played_flows` and they are few enough. Needs price_messages first.
void play_connections(Model& m, const schedule::Schedule& schedule, bool played_flows) {
  std::map<std::pair<int32_t, int32_t>, bool> header_only;
  for (const RoleSchedule& rs : schedule.roles) {
    for (const Op& op : rs.ops) {
      if (op.kind != OpKind::send) continue;
      auto [it, added] = header_only.try_emplace({rs.host, op.message.peer}, true);
      it->second = it->second && op.message.payload_bytes == 0;
    }
  }
  std::vector<std::pair<int32_t, int32_t>> wire_speed;
  for (const auto& [key, only_headers] : header_only) {
    const auto [src, dst] = key;
    if (only_headers) {
      m.connections[key] = {src, dst,
                            m.world.idle_transfer_seconds(src, dst, schedule::kHeaderBytes)};
    } else if (!m.priced[static_cast<size_t>(src)] && !m.priced[static_cast<size_t>(dst)] &&
               (m.link_share >= 1.0 || m.layout.same_node(src, dst))) {
      wire_speed.push_back(key);
    }
  }
  if (played_flows && wire_speed.size() <= kMostPlayedFlowConnections) {
    for (const auto& [src, dst] : wire_speed) m.connections[{src, dst}] = {src, dst, 0.0, true};
  }
}

// A member's work between ring phases (reductions, encoding): on its device's CPU where the
// device stream executes there, shared with the computation that overlaps it; else it takes its
// time alone.
void ring_work(Model& m, int32_t host, double seconds) {
  if (seconds <= 0.0) return;
  const int32_t device = m.device_host[static_cast<size_t>(host)];
  if (device < 0) {
    sg4::this_actor::sleep_for(seconds);
    return;
  }
  start_on(m.world.host(device), seconds)->wait();
}

// Waits until operation `i` of the actor's stream may start: its dependencies completed, and the
// clock at the latest of their times.
void wait_start(Role& role, size_t stream, uint32_t i) {
  role.wait_ready(i, stream);
  if (role.ready_at(i) > sg4::Engine::get_clock()) sg4::this_actor::sleep_until(role.ready_at(i));
}

// An actor's stream, step after step: each operation once it may start, by `body(op index,
// step)`, which returns the time the operation completed.
template <class Body>
void play_stream(Model& m, Role& role, size_t stream, Body body) {
  for (int64_t k = 0; k < m.world.steps; ++k) {
    role.wait_step(stream, k);
    for (const uint32_t i : role.streams()[stream].ops) {
      wait_start(role, stream, i);
      role.complete(i, body(i, k));
      m.drain();
    }
  }
}

void send_actor(Model& m, Role& role, size_t stream) {
  World& world = m.world;
  const RoleSchedule& rs = role.schedule();
  const int32_t peer = role.streams()[stream].peer;
  sg4::Mailbox* box = world.mailbox("msg", rs.host, peer);
  play_stream(m, role, stream, [&](uint32_t i, int64_t k) {
    const Op& op = rs.ops[i];
    world.log_message(rs.host, k, op.message);
    const double start = sg4::Engine::get_clock();
    put_message(m, box, const_cast<Message*>(&op.message), rs.host, peer,
                op.message.wire_bytes());
    const double end = sg4::Engine::get_clock();
    world.record_transfer(rs.host, peer, op.message.wire_bytes(), k,
                          world.traced(k) ? label_of(m, rs.host, op) : std::string(), start, end);
    return end;
  });
}

void receive_actor(Model& m, Role& role, size_t stream) {
  World& world = m.world;
  const RoleSchedule& rs = role.schedule();
  const int32_t peer = role.streams()[stream].peer;
  sg4::Mailbox* box = world.mailbox("msg", peer, rs.host);
  play_stream(m, role, stream, [&](uint32_t i, int64_t /*step*/) {
    const Op& op = rs.ops[i];
    const auto* got = box->get<Message>();
    if (got->kind != op.message.kind || got->item != op.message.item ||
        got->payload_bytes != op.message.payload_bytes) {
      throw std::logic_error(world.host_name(rs.host) + " expected " +
                             std::string(schedule::to_string(op.message.kind)) + " " +
                             std::to_string(op.message.item) + " from " + world.host_name(peer) +
                             " and got " + std::string(schedule::to_string(got->kind)) + " " +
                             std::to_string(got->item));
    }
    return sg4::Engine::get_clock();
  });
}

// A shared device's stream: each operation executes on the device host's CPU, which divides
// itself equally among the operations running at once (SimGrid's CPU model).
void device_actor(Model& m, Role& role, size_t stream, sg4::Host* device) {
  World& world = m.world;
  const RoleSchedule& rs = role.schedule();
  play_stream(m, role, stream, [&](uint32_t i, int64_t k) {
    const Op& op = rs.ops[i];
    const double seconds = role.device_seconds(op);
    const double start = sg4::Engine::get_clock();
    if (seconds > 0.0) start_on(device, seconds)->wait();
    const double end = sg4::Engine::get_clock();
    if (world.measured(k) && seconds > 0.0) {
      world.record_work(rs.host, -1, schedule::activity_of(op.kind), k,
                        world.traced(k) ? label_of(m, rs.host, op) : std::string(), start, end);
    }
    return end;
  });
}

// One member's part of a fusion buffer's all-reduce as NCCL runs it (docs/fabrics.md): the
// latency of the algorithm and protocol NCCL's tuning model picks for the buffer, then the bytes
// the member sends in the ring, split over its channels' flows (to its successors inside the node
// and in the next node), each no faster than the chosen protocol's share of the ring's bandwidth
// (LL moves half, LL128 15/16 of what Simple moves); its sums as in the ring.
void nccl_all_reduce(Model& m, int32_t host, const Op& op, int64_t k, const std::string& label) {
  World& world = m.world;
  const auto buffer = static_cast<size_t>(op.buffer);
  const int64_t member = m.schedule.ring_position(host);
  const schedule::RingTotals totals = schedule::ring_totals(m.schedule, buffer, member);
  const int64_t bytes = m.schedule.plan.compressed(m.schedule.buffers[buffer].bytes);
  const NcclCost cost = nccl_allreduce_choice(m.nccl_machine, bytes, m.nccl_forced);
  const double efficiency = nccl_efficiency(m.nccl_machine, cost, bytes);
  sg4::this_actor::sleep_for(cost.time(0).value());
  const double start = sg4::Engine::get_clock();
  std::vector<sg4::CommPtr> sends;
  std::vector<std::pair<int32_t, int64_t>> sent;
  int64_t left = totals.wire_bytes;
  const auto& out = m.nccl_out.at(host);
  for (size_t i = 0; i < out.size(); ++i) {
    const auto [to, share] = out[i];
    const int64_t part = i + 1 == out.size()
                             ? left
                             : static_cast<int64_t>(std::llround(share * static_cast<double>(totals.wire_bytes)));
    left -= part;
    // A protocol that moves a byte at a share of the rate puts that much more on the links (LL
    // sends a flag with every 4 bytes of data): the flow carries the bytes over the share.
    const auto carried = static_cast<int64_t>(std::llround(static_cast<double>(part) / efficiency));
    const int64_t flow = world.start_flow(host, to, carried, start);
    sg4::CommPtr send = world.mailbox("ring", host, to)->put_init(&m.ring_token, static_cast<uint64_t>(flow));
    send->start();
    sends.push_back(send);
    sent.emplace_back(to, part);
  }
  std::vector<sg4::CommPtr> receives;
  std::vector<Message*> payloads(m.nccl_in.at(host).size(), nullptr);
  for (size_t i = 0; i < payloads.size(); ++i) {
    receives.push_back(world.mailbox("ring", m.nccl_in.at(host)[i], host)->get_async(&payloads[i]));
  }
  for (size_t i = 0; i < sends.size(); ++i) {
    sends[i]->wait();
    world.end_flow(host, sent[i].first, sg4::Engine::get_clock());
    world.record_transfer(host, sent[i].first, sent[i].second, k, label, start, sg4::Engine::get_clock());
  }
  for (const auto& r : receives) r->wait();
  ring_work(m, host, static_cast<double>(totals.reduced_bytes) / m.schedule.plan.worker_sum_rate.value());
}

// One member's part of a fusion buffer's ring all-reduce.
void ring_all_reduce(Model& m, int32_t host, const Op& op, int64_t k) {
  World& world = m.world;
  const int64_t n = m.schedule.ring_members();
  const int64_t member = m.schedule.ring_position(host);
  const int32_t next = m.schedule.ring_hosts[static_cast<size_t>((member + 1) % n)];
  const int32_t previous = m.schedule.ring_hosts[static_cast<size_t>((member + n - 1) % n)];
  sg4::Mailbox* out = world.mailbox("ring", host, next);
  sg4::Mailbox* in = world.mailbox("ring", previous, host);
  const auto buffer = static_cast<size_t>(op.buffer);
  const BytesPerSecond sum_rate = m.schedule.plan.worker_sum_rate;
  const std::string label =
      world.traced(k) ? "all-reduce " + std::to_string(op.buffer) : std::string();
  const double job_start = sg4::Engine::get_clock();
  if (op.seconds > 0.0) {
    ring_work(m, host, op.seconds);  // encode the buffer once
    world.record_work(host, next, ActivityKind::encode, k, label, job_start,
                      sg4::Engine::get_clock());
  }
  // The phases' messages are listed only where each is its own flow or is logged: a member's
  // list is as long as the ring.
  std::vector<Message> sends;
  std::vector<Message> receives;
  if ((!m.coalesced && !m.nccl) || world.logs_messages(k)) {
    sends = schedule::ring_messages(m.schedule, buffer, member);
    receives = schedule::ring_messages(m.schedule, buffer, (member + n - 1) % n);
  }
  for (const Message& s : sends) world.log_message(host, k, s);
  const schedule::RingTotals totals = schedule::ring_totals(m.schedule, buffer, member);
  Message* payload = nullptr;
  if (m.nccl) {
    nccl_all_reduce(m, host, op, k, label);
  } else if (m.coalesced) {
    // Every phase of a homogeneous ring moves its chunks over the same routes at the same rates,
    // so one flow per edge carrying all phases' bytes, plus the latency of the phases it merges
    // and their reductions, takes as long (tested against the message form).
    std::vector<sg4::Link*> links;
    double route_latency = 0.0;
    world.host(host)->route_to(world.host(next), links, &route_latency);
    const int64_t wire = totals.wire_bytes;
    const int64_t reduced_bytes = totals.reduced_bytes;
    sg4::this_actor::sleep_for(static_cast<double>(totals.messages - 1) * m.latency_factor *
                               route_latency);
    const double start = sg4::Engine::get_clock();
    // A member's CPU moves its outgoing and its incoming bytes at once (as many as it sends).
    const double bytes_s = send_cpu_seconds(m, host, 0, wire) + receive_cpu_seconds(m, host, 0, wire);
    const double cpu_s = bytes_s + send_cpu_seconds(m, host, totals.sent_payloads, 0) +
                         receive_cpu_seconds(m, host, totals.received_payloads, 0);
    // Spread over what flows: the bytes that the token bucket passes at once take no time.
    const int64_t flow = world.start_flow(host, next, wire, start);
    const sg4::ExecPtr cpu =
        start_message_cpu(m, host, cpu_s, world.idle_transfer_seconds(host, next, flow));
    sg4::CommPtr send = out->put_init(&m.ring_token, static_cast<uint64_t>(flow));
    limit_rate(send, flow,
               std::max(end_floor(m, host, cpu_s, bytes_s), share_floor(m, host, next, flow)));
    send->start();
    sg4::CommPtr receive = in->get_async(&payload);
    send->wait();
    world.end_flow(host, next, sg4::Engine::get_clock());
    world.record_transfer(host, next, wire, k, label, start, sg4::Engine::get_clock());
    receive->wait();
    if (cpu) cpu->wait();
    ring_work(m, host, static_cast<double>(reduced_bytes) / sum_rate.value());
  } else {
    for (size_t phase = 0; phase < sends.size(); ++phase) {
      const double start = sg4::Engine::get_clock();
      const int64_t wire = sends[phase].wire_bytes();
      const int64_t received = receives[phase].wire_bytes();
      const double bytes_s =
          send_cpu_seconds(m, host, 0, wire) + receive_cpu_seconds(m, host, 0, received);
      const double cpu_s =
          bytes_s + send_cpu_seconds(m, host, sends[phase].payload_bytes > 0 ? 1 : 0, 0) +
          receive_cpu_seconds(m, host, receives[phase].payload_bytes > 0 ? 1 : 0, 0);
      const int64_t flow = world.start_flow(host, next, wire, start);
      const sg4::ExecPtr cpu =
          start_message_cpu(m, host, cpu_s, world.idle_transfer_seconds(host, next, flow));
      sg4::CommPtr send =
          out->put_init(const_cast<Message*>(&sends[phase]), static_cast<uint64_t>(flow));
      limit_rate(send, flow,
                 std::max(end_floor(m, host, cpu_s, bytes_s), share_floor(m, host, next, flow)));
      send->start();
      sg4::CommPtr receive = in->get_async(&payload);
      send->wait();
      world.end_flow(host, next, sg4::Engine::get_clock());
      world.record_transfer(host, next, wire, k, label, start, sg4::Engine::get_clock());
      receive->wait();
      if (cpu) cpu->wait();
      if (phase + 1 < static_cast<size_t>(n)) {
        ring_work(m, host, static_cast<double>(receives[phase].payload_bytes) / sum_rate.value());
      }
    }
  }
  if (op.seconds > 0.0) {
    const double start = sg4::Engine::get_clock();
    ring_work(m, host, op.seconds);  // and decode it once
    world.record_work(host, next, ActivityKind::encode, k, label, start, sg4::Engine::get_clock());
  }
  world.record_busy(host, k, job_start, sg4::Engine::get_clock(), false);
}

void ring_actor(Model& m, Role& role, size_t stream) {
  const RoleSchedule& rs = role.schedule();
  play_stream(m, role, stream, [&](uint32_t i, int64_t k) {
    ring_all_reduce(m, rs.host, rs.ops[i], k);
    return sg4::Engine::get_clock();
  });
}

// NCCL's machine and its channels' flows between the ring's members (every worker).
void plan_nccl(Model& m, const Scenario& scenario) {
  m.nccl = true;
  m.nccl_machine = nccl_machine_of(scenario);
  m.nccl_forced = forced_nccl_algorithm(m.schedule.plan.strategy);
  const auto flows = nccl_channel_flows(scenario);
  const auto first = static_cast<int32_t>(m.schedule.parameter_servers);
  for (size_t w = 0; w < flows.size(); ++w) {
    const int32_t host = first + static_cast<int32_t>(w);
    m.nccl_out[host];
    m.nccl_in[host];
  }
  for (size_t w = 0; w < flows.size(); ++w) {
    const int32_t host = first + static_cast<int32_t>(w);
    for (const NcclFlow& f : flows[w]) {
      const int32_t to = first + static_cast<int32_t>(f.to);
      m.nccl_out[host].emplace_back(to, f.share);
      m.nccl_in[to].push_back(host);
    }
  }
}

// The exact one-flow-per-edge ring applies where every edge sees the same rates: a star platform
// whose workers share one NIC setting, and no PS traffic competing with the ring.
bool ring_is_homogeneous(const Scenario& s, const StepPlan& plan) {
  return s.platform.kind == PlatformKind::star && plan.strategy.kind == StrategyKind::allreduce;
}

}  // namespace

StrategyResult run_step_model(const Scenario& scenario, const schedule::Schedule& schedule,
                              const RunOptions& options) {
  int argc = 2;
  char program[] = "ralp";
  char quiet[] = "--log=root.thres:critical";
  char* argv[] = {program, quiet, nullptr};
  sg4::Engine engine(&argc, argv);
  sg4::Engine::set_config("contexts/stack-size", kActorStackKiB);
  // A guarded stack costs the kernel two memory mappings, and vm.max_map_count (65,530 by
  // default) then stops the run near 32,000 actors. Unguarded stacks come from calloc: at or
  // above glibc's mmap threshold, fixed here, each is a fresh zero mapping whose pages are
  // touched only as used (and which the kernel merges with its neighbours), instead of zeroed
  // heap memory.
  sg4::Engine::set_config("contexts/guard-size", 0);
  mallopt(M_MMAP_THRESHOLD, kActorStackKiB * kBytesPerKiB);
  configure_network_model(scenario.network_model);
  // SimGrid 3.32's lazy update of flow shares (its default) gives flows wrong shares when several
  // with latency start at one instant (tests/sim/closed_form_test.cpp: three PS shards' pushes
  // 24% faster than their NICs carry); the full update re-solves every share at every event.
  sg4::Engine::set_config(options.lazy_network_update ? "network/optim:Lazy"
                                                      : "network/optim:Full");
  World world(scenario, schedule, build_platform(engine, scenario), options);

  Model m{world, schedule};
  const StepPlan& plan = schedule.plan;
  if (plan.uses_ring()) {
    const RingModel model = plan.strategy.ring_model;
    m.coalesced = model == RingModel::coalesced ||
                  (model == RingModel::automatic && ring_is_homogeneous(scenario, plan));
    m.latency_factor = simgrid::config::get_value<double>("network/latency-factor");
    if (uses_nccl_model(scenario, plan.strategy) && schedule.workers > 1) plan_nccl(m, scenario);
  }
  // Hosts that share a device run their device operations on the CPU of the group's first host.
  const auto hosts = static_cast<size_t>(schedule.parameter_servers + schedule.workers);
  m.device_host.assign(hosts, -1);
  // While two or more operations run on it at once, the shared CPU loses what switching between
  // the processes costs (DeviceProfile::time_sharing_slowdown; the slowest member's). While fewer
  // operations run than the group has members, each member that waits takes
  // message_cpu.waiting_share of a shared CPU from them (its transport polls).
  for (const std::vector<int64_t>& group : shared_device_groups(scenario)) {
    double slowdown = 1.0;
    bool cpu = true;
    for (const int64_t h : group) {
      m.device_host[static_cast<size_t>(h)] = static_cast<int32_t>(group.front());
      const DeviceProfile& device =
          h < schedule.parameter_servers ? scenario.ps_device : scenario.worker_device;
      slowdown = std::max(slowdown, device.time_sharing_slowdown);
      cpu = cpu && device.kind == DeviceKind::cpu;
    }
    const double waiting = cpu ? scenario.message_cpu.waiting_share : 0.0;
    const auto members = static_cast<int>(group.size());
    if (slowdown > 1.0 || waiting > 0.0) {
      world.host(static_cast<int32_t>(group.front()))
          ->set_sharing_policy(sg4::Host::SharingPolicy::NONLINEAR,
                               [slowdown, waiting, members](double capacity, int running) {
                                 const int waiters = std::max(0, members - running);
                                 return (running > 1 ? capacity / slowdown : capacity) *
                                        std::max(0.0, 1.0 - waiting * waiters);
                               });
    }
  }
  price_messages(m, scenario, schedule);
  play_connections(m, schedule, options.played_flows);
  for (const RoleSchedule& rs : schedule.roles) m.roles.push_back(std::make_unique<Role>(m, rs));

  // Actors are created in a fixed order: SimGrid runs them deterministically from it. The first
  // plays what needs no actor up to where the actors' first completions are needed.
  sg4::Actor::create("start", world.host(0), [&m] {
    for (auto& role : m.roles) {
      if (role->finished_at_start()) continue;
      for (size_t s = 0; s < role->streams().size(); ++s) {
        if (role->streams()[s].played) role->enqueue(s);
      }
    }
    m.drain();
  });
  for (auto& role : m.roles) {
    if (role->finished_at_start()) {
      world.role_finished();
      continue;
    }
    sg4::Host* host = world.host(role->schedule().host);
    Role* r = role.get();
    for (size_t s = 0; s < r->streams().size(); ++s) {
      if (r->streams()[s].played) continue;
      const std::string name = r->schedule().name;
      switch (r->streams()[s].kind) {
        case Stream::send:
          sg4::Actor::create(name + "-send", host, [&m, r, s] { send_actor(m, *r, s); });
          break;
        case Stream::receive:
          sg4::Actor::create(name + "-receive", host, [&m, r, s] { receive_actor(m, *r, s); });
          break;
        case Stream::ring:
          sg4::Actor::create(name + "-ring", host, [&m, r, s] { ring_actor(m, *r, s); });
          break;
        case Stream::device: {
          sg4::Host* device = world.host(m.device_host[static_cast<size_t>(r->schedule().host)]);
          sg4::Actor::create(name + "-device", host,
                             [&m, r, s, device] { device_actor(m, *r, s, device); });
          break;
        }
        case Stream::copy:
          break;
      }
    }
  }
  // SimGrid reports every completion to the callbacks of the process.
  static const bool connected = (sg4::Activity::on_completion_cb(on_activity_completed), true);
  (void)connected;
  struct Running {
    explicit Running(Model& model) { running_model = &model; }
    Running(const Running&) = delete;
    Running& operator=(const Running&) = delete;
    ~Running() { running_model = nullptr; }
  } running(m);
  engine.run();
  StrategyResult result = world.collect();
  if (plan.uses_ring() && schedule.workers > 1) result.ring_model = m.coalesced ? "coalesced" : "message";
  return result;
}

}  // namespace ralp::sim
