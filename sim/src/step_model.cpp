// The actors of one training step, for every strategy (DESIGN.md section 4), and the engine run.
//
// Actors, per worker w and shard s (all loops run warmup_steps + steps times):
//   worker w          forward, [boundary to the head PS and back], backward; pushes or marks
//                     gradients ready as backward produces them; after all-reduce, the update.
//   puller (s, w)     on worker w: receives shard s's pulls in forward order, copies them to the
//                     device, and tells worker w which layers' variables arrived.
//   pusher (s, w)     on worker w: sends worker w's gradients for shard s, in backward order.
//   shard (s, w)      on ps-s: sends the pulls once the previous step is complete, receives the
//                     pushes and sums them; the last of the W sums of a variable group updates it.
//   head (w)          on ps-0: runs the head for worker w's micro-batch, returns the activation
//                     gradient, accumulates the head's gradients; the last updates the head.
//   coordinator       Horovod's background loop: each cycle, fuses the gradients that every
//                     worker has produced into buffers and ring all-reduces them, one by one.
//   ring member (w)   daemon on worker w: its part of each ring all-reduce.
// One connection per (sender, receiver) pair, one outstanding receive per connection, and the
// PS device as a FIFO lock keep each actor's pending activities few (see ../shared/notes).
#include "ralp/sim/step_model.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <deque>
#include <memory>

#include <xbt/config.hpp>

#include "platform.hpp"
#include "ralp/sim/straggler.hpp"
#include "world.hpp"

namespace sg4 = simgrid::s4u;

namespace ralp::sim {
namespace {

// Actors' stacks: deep enough for SimGrid's internals, small enough for thousands of actors.
constexpr int kActorStackKiB = 256;

// Per-worker state shared between the worker actor and its helpers.
struct WorkerState {
  sg4::MutexPtr mutex = sg4::Mutex::create();
  sg4::ConditionVariablePtr arrived_cv = sg4::ConditionVariable::create();
  std::vector<int64_t> arrived;                     // variable groups pulled so far, per layer
  std::vector<sg4::SemaphorePtr> gradients_ready;  // per shard: one release per gradient group
};

// Ring all-reduce shared by the coordinator and the ring members.
struct Ring {
  bool coalesced = false;
  double latency_factor = 1.0;
  // The current job.
  int64_t step = 0;
  int64_t raw_bytes = 0;
  int64_t wire_bytes = 0;
  int64_t job = 0;
  int64_t done = 0;
  std::vector<sg4::SemaphorePtr> start;
  sg4::MutexPtr mutex = sg4::Mutex::create();
  sg4::ConditionVariablePtr done_cv = sg4::ConditionVariable::create();
  // Gradient readiness across workers.
  std::vector<int64_t> ready_count;  // per tensor, cumulative over steps
  std::deque<size_t> ready_queue;    // tensors every worker has produced, not yet reduced
  sg4::ConditionVariablePtr ready_cv = sg4::ConditionVariable::create();
  int64_t reduced_step = -1;
  sg4::ConditionVariablePtr reduced_cv = sg4::ConditionVariable::create();
};

struct Model {
  World& world;
  const StepPlan& plan;
  std::vector<std::unique_ptr<WorkerState>> workers;
  std::unique_ptr<Ring> ring;
  // Per tail layer: whether it has gradients to all-reduce.
  std::vector<bool> ring_layers;
  // Per shard: its variable groups in forward order.
  std::vector<std::vector<VariableGroup>> shard_groups;
  // Per shard and group position: W sums, counted over all steps.
  std::vector<std::vector<int64_t>> sums;
  // Head PS.
  int64_t head_arrived = 0;        // all_workers mode, cumulative over steps
  int64_t head_batch_done = -1;    // last step whose batched head pass ran
  int64_t head_returned = 0;       // per-worker passes finished, cumulative
  sg4::MutexPtr head_mutex = sg4::Mutex::create();
  sg4::ConditionVariablePtr head_cv = sg4::ConditionVariable::create();
};

// Messages carry this token: the simulator moves sizes, not data.
int g_token = 0;

double seconds(int64_t bytes, BytesPerSecond rate) {
  return static_cast<double>(bytes) / rate.value();
}

// Labels are built only for the traced (last) step.
std::string label_of(const World& world, int64_t step, const std::string& prefix,
                     const std::string& name) {
  return world.traced(step) ? prefix + name : std::string();
}

// ---------------------------------------------------------------- parameter-server side

// Sums worker w's gradient for shard s's group i into the accumulator; the W-th sum of the step
// applies the update and completes that part of the step.
void aggregate_group(Model& m, int64_t s, int64_t w, int64_t k, size_t i) {
  World& world = m.world;
  const int32_t ps = world.ps_index(s);
  const VariableGroup& g = m.shard_groups[static_cast<size_t>(s)][i];
  const int64_t wire = m.plan.compressed(g.bytes);
  const std::string& name = m.plan.layer_names[g.layer];
  if (m.plan.ps_pcie) {
    world.busy_wait(ps, world.worker_index(w), ActivityKind::copy, k,
                    label_of(world, k, "copy ", name), seconds(wire, *m.plan.ps_pcie));
  }
  std::vector<World::Work> work;
  if (m.plan.compression != CompressionKind::none) {
    work.push_back({ActivityKind::encode, label_of(world, k, "decode ", name),
                    seconds(g.bytes, m.plan.ps_encode_rate)});
  }
  work.push_back({ActivityKind::aggregate, label_of(world, k, "sum ", name),
                  seconds(g.bytes, m.plan.ps_sum_rate)});
  world.run_on_ps(s, k, work);
  if (++m.sums[static_cast<size_t>(s)][i] == (k + 1) * world.workers) {
    world.run_on_ps(s, k, {{ActivityKind::update, label_of(world, k, "update ", name),
                            seconds(g.bytes, m.plan.ps_update_rate)}});
    world.complete_part(k);
  }
}

void shard_actor(Model& m, int64_t s, int64_t w) {
  World& world = m.world;
  const auto& groups = m.shard_groups[static_cast<size_t>(s)];
  const int32_t ps = world.ps_index(s);
  const int32_t worker = world.worker_index(w);
  sg4::Mailbox* pulls = world.mailbox("pull", ps, worker);
  sg4::Mailbox* pushes = world.mailbox("push", worker, ps);
  for (int64_t k = 0; k < world.steps; ++k) {
    if (k > 0) world.wait_step_complete(k - 1);
    for (const auto& g : groups) {
      world.send(pulls, ps, worker, g.bytes, k,
                 label_of(world, k, "pull ", m.plan.layer_names[g.layer]));
    }
    // Pushes arrive in backward order, several groups per message when they queued up at the
    // worker; keep the next receive posted while summing this one's groups.
    void* count = nullptr;
    sg4::CommPtr next = groups.empty() ? nullptr : pushes->get_async(&count);
    size_t remaining = groups.size();
    while (remaining > 0) {
      next->wait();
      const auto in_message = static_cast<size_t>(reinterpret_cast<uintptr_t>(count));
      next = remaining > in_message ? pushes->get_async(&count) : nullptr;
      for (size_t j = 0; j < in_message; ++j) aggregate_group(m, s, w, k, --remaining);
    }
  }
}

void head_actor(Model& m, int64_t w) {
  World& world = m.world;
  const StepPlan& plan = m.plan;
  const int32_t ps = world.ps_index(0);
  const int32_t worker = world.worker_index(w);
  sg4::Mailbox* activations = world.mailbox("act", worker, ps);
  sg4::Mailbox* gradients = world.mailbox("grad", ps, worker);
  const bool per_worker = plan.strategy.head_mode == HeadMode::per_worker;
  for (int64_t k = 0; k < world.steps; ++k) {
    activations->get<int>();
    if (plan.ps_pcie) {
      world.busy_wait(ps, worker, ActivityKind::copy, k,
                      label_of(world, k, "copy in ", world.host_name(worker)),
                      seconds(plan.boundary_bytes, *plan.ps_pcie));
    }
    if (per_worker) {
      world.run_on_ps(0, k, {{ActivityKind::compute,
                              label_of(world, k, "head ", world.host_name(worker)),
                              plan.head_micro_batch.value()}});
    } else {
      std::unique_lock lock(*m.head_mutex);
      if (++m.head_arrived == (k + 1) * world.workers) {
        lock.unlock();
        world.run_on_ps(0, k, {{ActivityKind::compute, label_of(world, k, "head ", "all workers"),
                                plan.head_full_batch.value()}});
        lock.lock();
        m.head_batch_done = k;
        m.head_cv->notify_all();
      }
      while (m.head_batch_done < k) m.head_cv->wait(lock);
    }
    if (plan.ps_pcie) {
      world.busy_wait(ps, worker, ActivityKind::copy, k,
                      label_of(world, k, "copy out ", world.host_name(worker)),
                      seconds(plan.activation_grad_bytes, *plan.ps_pcie));
    }
    const double start = sg4::Engine::get_clock();
    sg4::CommPtr reply = gradients->put_async(&g_token, static_cast<uint64_t>(plan.activation_grad_bytes));
    if (per_worker) {
      world.run_on_ps(0, k, {{ActivityKind::aggregate,
                              label_of(world, k, "sum head ", world.host_name(worker)),
                              seconds(plan.head_param_bytes, plan.ps_sum_rate)}});
    }
    reply->wait();
    world.record_transfer(ps, worker, plan.activation_grad_bytes, k,
                          label_of(world, k, "activation gradient ", world.host_name(worker)), start);
    if (++m.head_returned == (k + 1) * world.workers) {
      world.run_on_ps(0, k, {{ActivityKind::update, label_of(world, k, "update ", "head"),
                              seconds(plan.head_param_bytes, plan.ps_update_rate)}});
      world.complete_part(k);
    }
  }
}

// ---------------------------------------------------------------- worker side

void puller_actor(Model& m, int64_t s, int64_t w) {
  World& world = m.world;
  const auto& groups = m.shard_groups[static_cast<size_t>(s)];
  if (groups.empty()) return;
  const int32_t worker = world.worker_index(w);
  sg4::Mailbox* pulls = world.mailbox("pull", world.ps_index(s), worker);
  WorkerState& state = *m.workers[static_cast<size_t>(w)];
  int* payload = nullptr;
  sg4::CommPtr next = pulls->get_async(&payload);
  for (int64_t k = 0; k < world.steps; ++k) {
    for (size_t i = 0; i < groups.size(); ++i) {
      next->wait();
      const bool last = k == world.steps - 1 && i + 1 == groups.size();
      next = last ? nullptr : pulls->get_async(&payload);
      const VariableGroup& g = groups[i];
      if (m.plan.worker_pcie) {
        world.busy_wait(worker, world.ps_index(s), ActivityKind::copy, k,
                        label_of(world, k, "copy ", m.plan.layer_names[g.layer]),
                        seconds(g.bytes, *m.plan.worker_pcie));
      }
      std::unique_lock lock(*state.mutex);
      ++state.arrived[g.layer];
      state.arrived_cv->notify_all();
    }
  }
}

// Gradients that are ready when the connection frees up leave as one stream, as pipelined
// messages on one TCP connection do; each is still summed on its own at the PS.
void pusher_actor(Model& m, int64_t s, int64_t w) {
  World& world = m.world;
  const auto& groups = m.shard_groups[static_cast<size_t>(s)];
  if (groups.empty()) return;
  const int32_t worker = world.worker_index(w);
  const int32_t ps = world.ps_index(s);
  sg4::Mailbox* pushes = world.mailbox("push", worker, ps);
  WorkerState& state = *m.workers[static_cast<size_t>(w)];
  const sg4::SemaphorePtr& ready = state.gradients_ready[static_cast<size_t>(s)];
  for (int64_t k = 0; k < world.steps; ++k) {
    size_t remaining = groups.size();
    while (remaining > 0) {
      ready->acquire();
      size_t count = 1;
      while (count < remaining && !ready->would_block()) {
        ready->acquire();
        ++count;
      }
      int64_t wire = 0;
      for (size_t j = 0; j < count; ++j) wire += m.plan.compressed(groups[remaining - 1 - j].bytes);
      std::string label;
      if (world.traced(k)) {
        label = "push " + m.plan.layer_names[groups[remaining - 1].layer];
        if (count > 1) label += ".." + m.plan.layer_names[groups[remaining - count].layer];
      }
      if (m.plan.worker_pcie) {
        world.busy_wait(worker, ps, ActivityKind::copy, k, label,
                        seconds(wire, *m.plan.worker_pcie));
      }
      const double start = sg4::Engine::get_clock();
      pushes->put(reinterpret_cast<void*>(static_cast<uintptr_t>(count)),
                  static_cast<uint64_t>(wire));
      world.record_transfer(worker, ps, wire, k, label, start);
      remaining -= count;
    }
  }
}

void mark_gradients_ready(Model& m, LayerId layer, int64_t step) {
  Ring& ring = *m.ring;
  std::unique_lock lock(*ring.mutex);
  for (size_t t = 0; t < m.plan.tensors.size(); ++t) {
    if (m.plan.tensors[t].layer != layer) continue;
    if (++ring.ready_count[t] == (step + 1) * m.world.workers) {
      ring.ready_queue.push_back(t);
      ring.ready_cv->notify_all();
    }
  }
}

// Compute between two communication points runs as one block (World::run_on_worker): the
// pending work is flushed before the worker waits for variables, sends, or hands gradients over.
void worker_actor(Model& m, int64_t w) {
  World& world = m.world;
  const StepPlan& plan = m.plan;
  const int32_t self = world.worker_index(w);
  WorkerState& state = *m.workers[static_cast<size_t>(w)];
  const Scenario& scenario = world.scenario;
  std::vector<World::Work> pending;
  const auto flush = [&](int64_t k) {
    world.run_on_worker(self, k, pending);
    pending.clear();
  };
  for (int64_t k = 0; k < world.steps; ++k) {
    const double slowdown = straggler_factor(scenario.stragglers, scenario.seed, k, w);
    for (LayerId l = 0; l < plan.tail_end; ++l) {
      const auto& groups = plan.groups_by_layer[l];
      if (!groups.empty()) {
        const int64_t needed = (k + 1) * static_cast<int64_t>(groups.size());
        std::unique_lock lock(*state.mutex);
        if (state.arrived[l] < needed) {
          lock.unlock();
          flush(k);
          lock.lock();
          while (state.arrived[l] < needed) state.arrived_cv->wait(lock);
        }
      }
      pending.push_back({ActivityKind::compute, label_of(world, k, "", plan.layer_names[l]),
                         slowdown * plan.worker[l].forward.value()});
    }
    flush(k);
    if (plan.has_head()) {
      const int32_t ps = world.ps_index(0);
      if (plan.worker_pcie) {
        world.busy_wait(self, ps, ActivityKind::copy, k, label_of(world, k, "copy ", "activations"),
                        seconds(plan.boundary_bytes, *plan.worker_pcie));
      }
      world.send(world.mailbox("act", self, ps), self, ps, plan.boundary_bytes, k,
                 label_of(world, k, "", "activations and labels"));
      world.mailbox("grad", ps, self)->get<int>();
      if (plan.worker_pcie) {
        world.busy_wait(self, ps, ActivityKind::copy, k,
                        label_of(world, k, "copy ", "activation gradient"),
                        seconds(plan.activation_grad_bytes, *plan.worker_pcie));
      }
    }
    for (LayerId l = plan.tail_end; l-- > 0;) {
      const std::string& name = plan.layer_names[l];
      pending.push_back({ActivityKind::compute, label_of(world, k, "grad ", name),
                         slowdown * plan.worker[l].backward_weight.value()});
      const auto& groups = plan.groups_by_layer[l];
      const bool ring_layer = m.ring_layers[l];
      if (!groups.empty() || ring_layer) {
        if (plan.compression != CompressionKind::none) {
          int64_t bytes = 0;
          for (const auto& g : groups) bytes += g.bytes;
          for (const auto& t : plan.tensors) bytes += t.layer == l ? t.bytes : 0;
          pending.push_back({ActivityKind::encode, label_of(world, k, "encode ", name),
                             seconds(bytes, plan.worker_encode_rate)});
        }
        flush(k);
        for (const auto& g : groups) state.gradients_ready[static_cast<size_t>(g.shard)]->release();
        if (ring_layer) mark_gradients_ready(m, l, k);
      }
      pending.push_back({ActivityKind::compute, label_of(world, k, "grad input ", name),
                         slowdown * plan.worker[l].backward_data.value()});
    }
    flush(k);
    if (plan.uses_ring()) {
      {
        Ring& ring = *m.ring;
        std::unique_lock lock(*ring.mutex);
        while (ring.reduced_step < k) ring.reduced_cv->wait(lock);
      }
      world.run_on_worker(self, k, {{ActivityKind::update, label_of(world, k, "", "update"),
                                     seconds(plan.tail_param_bytes, plan.worker_update_rate)}});
      world.complete_part(k);
    }
  }
  world.worker_finished();
}

// ---------------------------------------------------------------- ring all-reduce

void ring_member_actor(Model& m, int64_t w) {
  World& world = m.world;
  Ring& ring = *m.ring;
  const int64_t n = world.workers;
  const int32_t self = world.worker_index(w);
  const int32_t next = world.worker_index((w + 1) % n);
  const int32_t previous = world.worker_index((w + n - 1) % n);
  sg4::Mailbox* out = world.mailbox("ring", self, next);
  sg4::Mailbox* in = world.mailbox("ring", previous, self);
  std::vector<sg4::Link*> links;
  double route_latency = 0.0;
  world.host(self)->route_to(world.host(next), links, &route_latency);
  const int64_t phases = 2 * (n - 1);
  int* payload = nullptr;
  for (;;) {
    ring.start[static_cast<size_t>(w)]->acquire();
    const int64_t k = ring.step;
    const int64_t chunk = (ring.wire_bytes + n - 1) / n;
    const double reduce_seconds = seconds(chunk, world.plan.worker_sum_rate);
    const std::string label = label_of(world, k, "all-reduce ", std::to_string(ring.job));
    const double job_start = sg4::Engine::get_clock();
    if (world.plan.compression != CompressionKind::none) {
      world.busy_wait(self, next, ActivityKind::encode, k, label,
                      seconds(ring.raw_bytes, world.plan.worker_encode_rate));
    }
    if (ring.coalesced) {
      // Every phase of a homogeneous ring moves the same chunks over the same routes at the same
      // rates, so one flow per edge carrying all phases' bytes, plus the latency of the phases
      // it merges and their reductions, takes exactly as long (tested against the message form).
      sg4::this_actor::sleep_for(static_cast<double>(phases - 1) * ring.latency_factor *
                                 route_latency);
      const double start = sg4::Engine::get_clock();
      sg4::CommPtr send = out->put_async(&g_token, static_cast<uint64_t>(phases * chunk));
      sg4::CommPtr receive = in->get_async(&payload);
      send->wait();
      world.record_transfer(self, next, phases * chunk, k, label, start);
      receive->wait();
      sg4::this_actor::sleep_for(static_cast<double>(n - 1) * reduce_seconds);
    } else {
      for (int64_t phase = 0; phase < phases; ++phase) {
        const double start = sg4::Engine::get_clock();
        sg4::CommPtr send = out->put_async(&g_token, static_cast<uint64_t>(chunk));
        sg4::CommPtr receive = in->get_async(&payload);
        send->wait();
        world.record_transfer(self, next, chunk, k, label, start);
        receive->wait();
        if (phase < n - 1) sg4::this_actor::sleep_for(reduce_seconds);
      }
    }
    if (world.plan.compression != CompressionKind::none) {
      world.busy_wait(self, next, ActivityKind::encode, k, label,
                      seconds(ring.raw_bytes, world.plan.worker_encode_rate));
    }
    world.record_busy(self, k, job_start, sg4::Engine::get_clock(), false);
    std::unique_lock lock(*ring.mutex);
    if (++ring.done == n) ring.done_cv->notify_all();
  }
}

void run_ring(Model& m, int64_t step, int64_t raw_bytes) {
  if (m.world.workers == 1) return;  // one worker holds the sum already
  Ring& ring = *m.ring;
  {
    std::unique_lock lock(*ring.mutex);
    ring.step = step;
    ring.raw_bytes = raw_bytes;
    ring.wire_bytes = m.plan.compressed(raw_bytes);
    ring.done = 0;
    ++ring.job;
  }
  for (const auto& start : ring.start) start->release();
  std::unique_lock lock(*ring.mutex);
  while (ring.done < m.world.workers) ring.done_cv->wait(lock);
}

// Horovod's background loop: a cycle starts at least cycle_time after the previous one; it takes
// every tensor that all workers have produced, fuses them in order into buffers of at most
// fusion_threshold bytes (a larger tensor alone), and all-reduces the buffers one after another.
void coordinator_actor(Model& m) {
  World& world = m.world;
  Ring& ring = *m.ring;
  const StepPlan& plan = m.plan;
  const double cycle = plan.strategy.cycle_time.value();
  const double threshold = plan.strategy.fusion_threshold.value();
  double next_tick = 0.0;
  for (int64_t k = 0; k < world.steps; ++k) {
    size_t reduced = 0;
    while (reduced < plan.tensors.size()) {
      {
        std::unique_lock lock(*ring.mutex);
        while (ring.ready_queue.empty()) ring.ready_cv->wait(lock);
      }
      const double now = sg4::Engine::get_clock();
      if (cycle > 0.0 && next_tick < now) next_tick += cycle * std::ceil((now - next_tick) / cycle);
      if (next_tick > now) sg4::this_actor::sleep_until(next_tick);
      const double tick = sg4::Engine::get_clock();
      std::vector<size_t> batch(ring.ready_queue.begin(), ring.ready_queue.end());
      ring.ready_queue.clear();
      int64_t buffer = 0;
      for (const size_t t : batch) {
        const int64_t bytes = plan.tensors[t].bytes;
        if (buffer > 0 && static_cast<double>(buffer + bytes) > threshold) {
          run_ring(m, k, buffer);
          buffer = 0;
        }
        buffer += bytes;
      }
      if (buffer > 0) run_ring(m, k, buffer);
      reduced += batch.size();
      next_tick = std::max(tick + cycle, sg4::Engine::get_clock());
    }
    std::unique_lock lock(*ring.mutex);
    ring.reduced_step = k;
    ring.reduced_cv->notify_all();
  }
}

// The exact one-flow-per-edge ring applies where every edge sees the same rates: a star platform
// whose workers share one NIC setting, and no PS traffic competing with the ring.
bool ring_is_homogeneous(const Scenario& s, const StepPlan& plan) {
  return s.platform.kind == PlatformKind::star && plan.strategy.kind == StrategyKind::allreduce;
}

}  // namespace

StrategyResult run_step_model(const Scenario& scenario, const StepPlan& plan) {
  int argc = 2;
  char program[] = "ralp";
  char quiet[] = "--log=root.thres:critical";
  char* argv[] = {program, quiet, nullptr};
  sg4::Engine engine(&argc, argv);
  sg4::Engine::set_config("contexts/stack-size", kActorStackKiB);
  configure_network_model(scenario.network_model);
  World world(scenario, plan, build_platform(engine, scenario));

  Model m{world, plan, {}, nullptr, std::vector<bool>(plan.tail_end, false), {}, {}};
  for (const Tensor& t : plan.tensors) {
    if (t.layer < plan.tail_end) m.ring_layers[t.layer] = true;
  }
  const int64_t shards = plan.uses_shards() ? plan.shards : 0;
  m.shard_groups.resize(static_cast<size_t>(shards));
  for (const auto& groups : plan.groups_by_layer) {
    for (const auto& g : groups) m.shard_groups[static_cast<size_t>(g.shard)].push_back(g);
  }
  int64_t groups_total = 0;
  for (const auto& groups : m.shard_groups) {
    m.sums.emplace_back(groups.size(), 0);
    groups_total += static_cast<int64_t>(groups.size());
  }
  for (int64_t w = 0; w < world.workers; ++w) {
    auto state = std::make_unique<WorkerState>();
    state->arrived.assign(plan.tail_end, 0);
    for (int64_t s = 0; s < shards; ++s) state->gradients_ready.push_back(sg4::Semaphore::create(0));
    m.workers.push_back(std::move(state));
  }

  int64_t parts = 0;
  if (plan.uses_shards()) parts += groups_total;
  if (plan.uses_ring()) parts += world.workers;
  if (plan.has_head()) parts += 1;
  world.set_parts_per_step(parts);

  // Actors are created in a fixed order: SimGrid runs them deterministically from it.
  for (int64_t w = 0; w < world.workers; ++w) {
    sg4::Host* host = world.host(world.worker_index(w));
    sg4::Actor::create("worker-" + std::to_string(w), host, [&m, w] { worker_actor(m, w); });
    for (int64_t s = 0; s < shards; ++s) {
      sg4::Actor::create("puller", host, [&m, s, w] { puller_actor(m, s, w); });
      sg4::Actor::create("pusher", host, [&m, s, w] { pusher_actor(m, s, w); });
      sg4::Actor::create("shard", world.host(world.ps_index(s)),
                         [&m, s, w] { shard_actor(m, s, w); });
    }
    if (plan.has_head()) {
      sg4::Actor::create("head", world.host(world.ps_index(0)), [&m, w] { head_actor(m, w); });
    }
  }
  if (plan.uses_ring()) {
    m.ring = std::make_unique<Ring>();
    const RingModel model = plan.strategy.ring_model;
    m.ring->coalesced = model == RingModel::coalesced ||
                        (model == RingModel::automatic && ring_is_homogeneous(scenario, plan));
    m.ring->latency_factor = simgrid::config::get_value<double>("network/latency-factor");
    m.ring->ready_count.assign(plan.tensors.size(), 0);
    for (int64_t w = 0; w < world.workers; ++w) m.ring->start.push_back(sg4::Semaphore::create(0));
    if (world.workers > 1) {
      for (int64_t w = 0; w < world.workers; ++w) {
        sg4::Actor::create("ring", world.host(world.worker_index(w)),
                           [&m, w] { ring_member_actor(m, w); })
            ->daemonize();
      }
    }
    sg4::Actor::create("coordinator", world.host(world.worker_index(0)),
                       [&m] { coordinator_actor(m); });
  }
  engine.run();
  StrategyResult result = world.collect();
  if (m.ring) result.ring_model = m.ring->coalesced ? "coalesced" : "message";
  return result;
}

}  // namespace ralp::sim
