// The SimGrid interpreter of a step schedule (schedule.hpp): every stream of every role is an
// actor that carries out its operations in list order, each once its dependencies completed.
//   device        sleeps for its operations' times (consecutive ones merged into one sleep where
//                 nothing else observes the points between them)
//   copy          sleeps for its copies
//   to peer P     puts each message on the connection's mailbox, waiting for delivery
//   from peer P   gets each message from the connection's mailbox, in order
//   ring          one member of each fusion buffer's ring all-reduce (message by message, or as one
//                 flow per ring edge where that is exact)
// One mailbox per (sender, receiver) pair and one outstanding receive per connection keep each
// actor's pending activities few (see ../shared/notes).
#include "ralp/sim/step_model.hpp"

#include <algorithm>
#include <cstdint>
#include <malloc.h>
#include <memory>
#include <stdexcept>

#include <xbt/config.hpp>

#include "platform.hpp"
#include "ralp/schedule/fusion.hpp"
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

// Actors' stacks: deep enough for SimGrid's internals, small enough for thousands of actors.
constexpr int kActorStackKiB = 256;
constexpr int kBytesPerKiB = 1024;

// A stream's operations, by index into the role's list.
struct StreamOps {
  Stream kind = Stream::device;
  int32_t peer = -1;  // send, receive
  std::vector<uint32_t> ops;
};

// One role's state over the run.
class Role {
 public:
  Role(World& world, const RoleSchedule& schedule) : world_(world), schedule_(schedule) {
    const size_t n = schedule.ops.size();
    dependents_.resize(n);
    in_degree_.assign(n, 0);
    external_.assign(n, false);
    for (uint32_t i = 0; i < n; ++i) {
      const Op& op = schedule.ops[i];
      for (const uint32_t a : schedule.after_of(op)) {
        dependents_[a].push_back(i);
        ++in_degree_[i];
      }
    }
    for (uint32_t i = 0; i < n; ++i) {
      const Op& op = schedule.ops[i];
      // Another stream (or the step's end) observes when this operation completes.
      external_[i] = op.ends_part;
      for (const uint32_t d : dependents_[i]) {
        if (schedule.ops[d].stream() != Stream::device) external_[i] = true;
      }
      stream_of(op).ops.push_back(i);
    }
    waiting_.assign(n, nullptr);
    for (size_t i = 0; i < streams_.size(); ++i) {
      starts_.push_back(sg4::Semaphore::create(0));
      selves_.push_back(sg4::Semaphore::create(0));
    }
    reset();
  }

  [[nodiscard]] const RoleSchedule& schedule() const { return schedule_; }
  [[nodiscard]] std::vector<StreamOps>& streams() { return streams_; }
  [[nodiscard]] bool external(uint32_t op) const { return external_[op]; }
  [[nodiscard]] bool ready(uint32_t op) const { return remaining_[op] == 0; }

  // Blocks the calling stream until step `step` of the role has begun.
  void wait_step(size_t stream, int64_t step) {
    while (step_ < step) starts_[stream]->acquire();
  }
  // Blocks until every dependency of `op` has completed.
  void wait_ready(uint32_t op, const sg4::SemaphorePtr& self) {
    while (remaining_[op] > 0) {
      waiting_[op] = self;
      self->acquire();
    }
    waiting_[op] = nullptr;
  }
  void complete(uint32_t op, int64_t step) {
    if (schedule_.ops[op].ends_part) world_.complete_part(step);
    for (const uint32_t d : dependents_[op]) {
      if (--remaining_[d] == 0 && waiting_[d]) waiting_[d]->release();
    }
    if (++completed_ < schedule_.ops.size()) return;
    // The role's whole step is done: the next begins on every stream.
    ++step_;
    reset();
    if (step_ == world_.steps) {
      world_.role_finished();
      return;
    }
    for (const auto& start : starts_) start->release();
  }
  // The semaphore that stream `stream` blocks on while its next operation is not ready.
  [[nodiscard]] const sg4::SemaphorePtr& self(size_t stream) const { return selves_[stream]; }
  [[nodiscard]] bool finished_at_start() const { return schedule_.ops.empty(); }

 private:
  StreamOps& stream_of(const Op& op) {
    const Stream kind = op.stream();
    const int32_t peer =
        kind == Stream::send || kind == Stream::receive ? op.message.peer : -1;
    for (StreamOps& s : streams_) {
      if (s.kind == kind && s.peer == peer) return s;
    }
    streams_.push_back({kind, peer, {}});
    return streams_.back();
  }
  void reset() {
    remaining_ = in_degree_;
    completed_ = 0;
  }

  World& world_;
  const RoleSchedule& schedule_;
  std::vector<std::vector<uint32_t>> dependents_;
  std::vector<int32_t> in_degree_;
  std::vector<int32_t> remaining_;
  std::vector<bool> external_;
  std::vector<sg4::SemaphorePtr> waiting_;
  std::vector<sg4::SemaphorePtr> starts_;  // per stream
  std::vector<sg4::SemaphorePtr> selves_;  // per stream
  std::vector<StreamOps> streams_;
  size_t completed_ = 0;
  int64_t step_ = 0;
};

struct Model {
  World& world;
  const schedule::Schedule& schedule;
  std::vector<std::unique_ptr<Role>> roles;
  bool coalesced = false;
  double latency_factor = 1.0;
};

// What the timeline calls an operation.
std::string label_of(const Model& m, int32_t host, const Op& op) {
  const auto layer = [&](LayerId id) { return m.world.scenario.model.layer(id).name(); };
  const auto group_layer = [&](int32_t g) {
    return g < 0 ? std::string("head") : layer(m.schedule.groups[static_cast<size_t>(g)].layer);
  };
  switch (op.kind) {
    case OpKind::compute:
      switch (op.pass) {
        case Pass::forward:
          return layer(op.layer);
        case Pass::backward:
          return "grad " + layer(op.layer);
        case Pass::head:
          return "head " + m.world.host_name(m.schedule.worker_host(op.worker));
        case Pass::head_all:
          return "head all workers";
        case Pass::none:
          break;
      }
      return "compute";
    case OpKind::aggregate:
      return "sum " + group_layer(op.group) + " of " +
             m.world.host_name(m.schedule.worker_host(op.worker));
    case OpKind::update:
      if (op.group >= 0) return "update " + group_layer(op.group);
      return m.schedule.is_worker(host) ? "update" : "update head";
    case OpKind::encode:
      return "encode " + group_layer(op.group);
    case OpKind::decode:
      return "decode " + group_layer(op.group);
    case OpKind::copy:
      return "copy " + group_layer(op.group);
    case OpKind::send:
    case OpKind::receive: {
      std::string text(schedule::to_string(op.message.kind));
      if (op.message.kind == MessageKind::pull || op.message.kind == MessageKind::push) {
        text += " " + layer(static_cast<LayerId>(op.message.item));
      } else if (op.message.kind == MessageKind::ready || op.message.kind == MessageKind::go) {
        text += " buffer " + std::to_string(op.message.item);
      }
      return text;
    }
    case OpKind::allreduce:
      return "all-reduce " + std::to_string(op.buffer);
  }
  return "op";
}

ActivityKind activity_of(OpKind kind) {
  switch (kind) {
    case OpKind::update:
      return ActivityKind::update;
    case OpKind::aggregate:
      return ActivityKind::aggregate;
    case OpKind::encode:
    case OpKind::decode:
      return ActivityKind::encode;
    case OpKind::copy:
      return ActivityKind::copy;
    default:
      return ActivityKind::compute;
  }
}

void device_actor(Model& m, Role& role, size_t stream) {
  World& world = m.world;
  const RoleSchedule& rs = role.schedule();
  const StreamOps& ops = role.streams()[stream];
  const sg4::SemaphorePtr& self = role.self(stream);
  const bool worker = m.schedule.is_worker(rs.host);
  const int64_t w = rs.host - m.schedule.parameter_servers;
  struct Pending {
    uint32_t op;
    double seconds;
  };
  std::vector<Pending> pending;
  for (int64_t k = 0; k < world.steps; ++k) {
    role.wait_step(stream, k);
    const double slowdown =
        worker ? straggler_factor(world.scenario.stragglers, world.scenario.seed, k, w) : 1.0;
    const auto flush = [&] {
      double total = 0.0;
      for (const Pending& p : pending) total += p.seconds;
      const double start = sg4::Engine::get_clock();
      if (total > 0.0) sg4::this_actor::sleep_for(total);
      double at = start;
      for (const Pending& p : pending) {
        const Op& op = rs.ops[p.op];
        if (world.measured(k) && p.seconds > 0.0) {
          world.record_work(rs.host, -1, activity_of(op.kind), k,
                            world.traced(k) ? label_of(m, rs.host, op) : std::string(), at,
                            at + p.seconds);
        }
        at += p.seconds;
        role.complete(p.op, k);
      }
      pending.clear();
    };
    for (const uint32_t i : ops.ops) {
      if (!role.ready(i)) {
        flush();
        role.wait_ready(i, self);
      }
      const Op& op = rs.ops[i];
      const double scale = op.kind == OpKind::compute ? slowdown : 1.0;
      pending.push_back({i, op.seconds * scale});
      if (role.external(i)) flush();
    }
    flush();
  }
}

void copy_actor(Model& m, Role& role, size_t stream) {
  World& world = m.world;
  const RoleSchedule& rs = role.schedule();
  const StreamOps& ops = role.streams()[stream];
  const sg4::SemaphorePtr& self = role.self(stream);
  for (int64_t k = 0; k < world.steps; ++k) {
    role.wait_step(stream, k);
    for (const uint32_t i : ops.ops) {
      role.wait_ready(i, self);
      const Op& op = rs.ops[i];
      const double start = sg4::Engine::get_clock();
      if (op.seconds > 0.0) sg4::this_actor::sleep_for(op.seconds);
      world.record_work(rs.host, -1, ActivityKind::copy, k,
                        world.traced(k) ? label_of(m, rs.host, op) : std::string(), start,
                        sg4::Engine::get_clock());
      role.complete(i, k);
    }
  }
}

void send_actor(Model& m, Role& role, size_t stream) {
  World& world = m.world;
  const RoleSchedule& rs = role.schedule();
  const StreamOps& ops = role.streams()[stream];
  const sg4::SemaphorePtr& self = role.self(stream);
  sg4::Mailbox* box = world.mailbox("msg", rs.host, ops.peer);
  for (int64_t k = 0; k < world.steps; ++k) {
    role.wait_step(stream, k);
    for (const uint32_t i : ops.ops) {
      role.wait_ready(i, self);
      const Op& op = rs.ops[i];
      world.log_message(rs.host, k, op.message);
      const double start = sg4::Engine::get_clock();
      box->put(const_cast<Message*>(&op.message), static_cast<uint64_t>(op.message.wire_bytes()));
      world.record_transfer(rs.host, ops.peer, op.message.wire_bytes(), k,
                            world.traced(k) ? label_of(m, rs.host, op) : std::string(), start);
      role.complete(i, k);
    }
  }
}

void receive_actor(Model& m, Role& role, size_t stream) {
  World& world = m.world;
  const RoleSchedule& rs = role.schedule();
  const StreamOps& ops = role.streams()[stream];
  const sg4::SemaphorePtr& self = role.self(stream);
  sg4::Mailbox* box = world.mailbox("msg", ops.peer, rs.host);
  for (int64_t k = 0; k < world.steps; ++k) {
    role.wait_step(stream, k);
    for (const uint32_t i : ops.ops) {
      role.wait_ready(i, self);
      const Op& op = rs.ops[i];
      const auto* got = box->get<Message>();
      if (got->kind != op.message.kind || got->item != op.message.item ||
          got->payload_bytes != op.message.payload_bytes) {
        throw std::logic_error(world.host_name(rs.host) + " expected " +
                               std::string(schedule::to_string(op.message.kind)) + " " +
                               std::to_string(op.message.item) + " from " +
                               world.host_name(ops.peer) + " and got " +
                               std::string(schedule::to_string(got->kind)) + " " +
                               std::to_string(got->item));
      }
      role.complete(i, k);
    }
  }
}

// One member's part of a fusion buffer's ring all-reduce.
void ring_all_reduce(Model& m, int32_t host, const Op& op, int64_t k) {
  World& world = m.world;
  const int64_t n = m.schedule.workers;
  const int64_t member = host - m.schedule.parameter_servers;
  const int32_t next = m.schedule.worker_host((member + 1) % n);
  const int32_t previous = m.schedule.worker_host((member + n - 1) % n);
  sg4::Mailbox* out = world.mailbox("ring", host, next);
  sg4::Mailbox* in = world.mailbox("ring", previous, host);
  const auto buffer = static_cast<size_t>(op.buffer);
  const std::vector<Message> sends = schedule::ring_messages(m.schedule, buffer, member);
  const std::vector<Message> receives =
      schedule::ring_messages(m.schedule, buffer, (member + n - 1) % n);
  const BytesPerSecond sum_rate = m.schedule.plan.worker_sum_rate;
  const std::string label =
      world.traced(k) ? "all-reduce " + std::to_string(op.buffer) : std::string();
  const double job_start = sg4::Engine::get_clock();
  if (op.seconds > 0.0) {
    sg4::this_actor::sleep_for(op.seconds);  // encode the buffer once
    world.record_work(host, next, ActivityKind::encode, k, label, job_start,
                      sg4::Engine::get_clock());
  }
  for (const Message& s : sends) world.log_message(host, k, s);
  int64_t reduced_bytes = 0;  // received in reduce-scatter phases
  for (size_t p = 0; p + 1 < static_cast<size_t>(n); ++p) reduced_bytes += receives[p].payload_bytes;
  Message* payload = nullptr;
  if (m.coalesced) {
    // Every phase of a homogeneous ring moves its chunks over the same routes at the same rates,
    // so one flow per edge carrying all phases' bytes, plus the latency of the phases it merges
    // and their reductions, takes as long (tested against the message form).
    std::vector<sg4::Link*> links;
    double route_latency = 0.0;
    world.host(host)->route_to(world.host(next), links, &route_latency);
    int64_t wire = 0;
    for (const Message& s : sends) wire += s.wire_bytes();
    sg4::this_actor::sleep_for(static_cast<double>(sends.size() - 1) * m.latency_factor *
                               route_latency);
    const double start = sg4::Engine::get_clock();
    sg4::CommPtr send = out->put_async(const_cast<Message*>(&sends.front()),
                                       static_cast<uint64_t>(wire));
    sg4::CommPtr receive = in->get_async(&payload);
    send->wait();
    world.record_transfer(host, next, wire, k, label, start);
    receive->wait();
    sg4::this_actor::sleep_for(static_cast<double>(reduced_bytes) / sum_rate.value());
  } else {
    for (size_t phase = 0; phase < sends.size(); ++phase) {
      const double start = sg4::Engine::get_clock();
      sg4::CommPtr send = out->put_async(const_cast<Message*>(&sends[phase]),
                                         static_cast<uint64_t>(sends[phase].wire_bytes()));
      sg4::CommPtr receive = in->get_async(&payload);
      send->wait();
      world.record_transfer(host, next, sends[phase].wire_bytes(), k, label, start);
      receive->wait();
      if (phase + 1 < static_cast<size_t>(n)) {
        sg4::this_actor::sleep_for(static_cast<double>(receives[phase].payload_bytes) /
                                   sum_rate.value());
      }
    }
  }
  if (op.seconds > 0.0) {
    const double start = sg4::Engine::get_clock();
    sg4::this_actor::sleep_for(op.seconds);  // and decode it once
    world.record_work(host, next, ActivityKind::encode, k, label, start, sg4::Engine::get_clock());
  }
  world.record_busy(host, k, job_start, sg4::Engine::get_clock(), false);
}

void ring_actor(Model& m, Role& role, size_t stream) {
  World& world = m.world;
  const RoleSchedule& rs = role.schedule();
  const StreamOps& ops = role.streams()[stream];
  const sg4::SemaphorePtr& self = role.self(stream);
  for (int64_t k = 0; k < world.steps; ++k) {
    role.wait_step(stream, k);
    for (const uint32_t i : ops.ops) {
      role.wait_ready(i, self);
      ring_all_reduce(m, rs.host, rs.ops[i], k);
      role.complete(i, k);
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
  World world(scenario, schedule, build_platform(engine, scenario), options);

  Model m{world, schedule, {}, false, 1.0};
  const StepPlan& plan = schedule.plan;
  if (plan.uses_ring()) {
    const RingModel model = plan.strategy.ring_model;
    m.coalesced = model == RingModel::coalesced ||
                  (model == RingModel::automatic && ring_is_homogeneous(scenario, plan));
    m.latency_factor = simgrid::config::get_value<double>("network/latency-factor");
  }
  for (const RoleSchedule& rs : schedule.roles) m.roles.push_back(std::make_unique<Role>(world, rs));

  // Actors are created in a fixed order: SimGrid runs them deterministically from it.
  for (auto& role : m.roles) {
    if (role->finished_at_start()) {
      world.role_finished();
      continue;
    }
    sg4::Host* host = world.host(role->schedule().host);
    Role* r = role.get();
    for (size_t s = 0; s < r->streams().size(); ++s) {
      const std::string name = r->schedule().name;
      switch (r->streams()[s].kind) {
        case Stream::device:
          sg4::Actor::create(name, host, [&m, r, s] { device_actor(m, *r, s); });
          break;
        case Stream::copy:
          sg4::Actor::create(name + "-copy", host, [&m, r, s] { copy_actor(m, *r, s); });
          break;
        case Stream::send:
          sg4::Actor::create(name + "-send", host, [&m, r, s] { send_actor(m, *r, s); });
          break;
        case Stream::receive:
          sg4::Actor::create(name + "-receive", host, [&m, r, s] { receive_actor(m, *r, s); });
          break;
        case Stream::ring:
          sg4::Actor::create(name + "-ring", host, [&m, r, s] { ring_actor(m, *r, s); });
          break;
      }
    }
  }
  engine.run();
  StrategyResult result = world.collect();
  if (plan.uses_ring() && schedule.workers > 1) result.ring_model = m.coalesced ? "coalesced" : "message";
  return result;
}

}  // namespace ralp::sim
