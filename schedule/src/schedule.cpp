// Building each strategy's step schedule: the one place where ps, ralp, allreduce and hybrid are
// defined operation by operation.
#include "ralp/schedule/schedule.hpp"

#include <algorithm>
#include <stdexcept>

#include "ralp/schedule/fusion.hpp"

namespace ralp::schedule {
namespace {

using OpIndex = uint32_t;

double seconds_for(int64_t bytes, BytesPerSecond rate) {
  return static_cast<double>(bytes) / rate.value();
}

// Appends operations to one role's list.
class RoleBuilder {
 public:
  explicit RoleBuilder(RoleSchedule& role) : role_(role) {}

  // Consecutive operations with the same dependencies share one list (the coordinator's go to
  // each of W workers waits for the same W readies: W lists would cost W squared).
  OpIndex add(Op op, const std::vector<OpIndex>& after = {}) {
    const bool same = !role_.ops.empty() && !after.empty() &&
                      std::ranges::equal(role_.after_of(role_.ops.back()), after);
    if (same) {
      op.after_begin = role_.ops.back().after_begin;
      op.after_end = role_.ops.back().after_end;
    } else {
      op.after_begin = static_cast<uint32_t>(role_.after.size());
      for (const OpIndex a : after) role_.after.push_back(a);
      op.after_end = static_cast<uint32_t>(role_.after.size());
    }
    role_.ops.push_back(op);
    return static_cast<OpIndex>(role_.ops.size() - 1);
  }
  OpIndex send(MessageKind kind, int32_t peer, int64_t item, int64_t payload,
               const std::vector<OpIndex>& after = {}) {
    Op op;
    op.kind = OpKind::send;
    op.message = {kind, peer, item, payload};
    return add(op, after);
  }
  OpIndex receive(MessageKind kind, int32_t peer, int64_t item, int64_t payload,
                  const std::vector<OpIndex>& after = {}) {
    Op op;
    op.kind = OpKind::receive;
    op.message = {kind, peer, item, payload};
    return add(op, after);
  }
  OpIndex device(OpKind kind, double seconds, int64_t bytes, int32_t group,
                 const std::vector<OpIndex>& after = {}) {
    Op op;
    op.kind = kind;
    op.seconds = seconds;
    op.bytes = bytes;
    op.group = group;
    return add(op, after);
  }
  // A copy over PCIe when the device has one in the plan; else nothing, and `after` stands in.
  std::vector<OpIndex> copy(const std::optional<BytesPerSecond>& pcie, int64_t bytes,
                            int32_t group, const std::vector<OpIndex>& after) {
    if (!pcie) return after;
    return {device(OpKind::copy, seconds_for(bytes, *pcie), bytes, group, after)};
  }
  [[nodiscard]] Op& op(OpIndex i) { return role_.ops[i]; }

 private:
  RoleSchedule& role_;
};

struct Builder {
  const StepPlan& plan;
  Schedule& s;

  [[nodiscard]] int64_t workers() const { return s.workers; }
  [[nodiscard]] int32_t head_host() const { return s.ps_host(0); }
  // Where a node acts as one (`grouped`): the first device of w's node, which speaks for it;
  // else w.
  [[nodiscard]] int64_t first_of(int64_t w, bool grouped) const {
    return grouped ? w - w % plan.devices_per_node : w;
  }
  // The node's other devices when w speaks for it; else none.
  [[nodiscard]] std::vector<int64_t> others_of(int64_t w, bool grouped) const {
    std::vector<int64_t> out;
    if (!grouped || first_of(w, grouped) != w) return out;
    for (int64_t m = w + 1; m < w + plan.devices_per_node; ++m) out.push_back(m);
    return out;
  }
  // Every worker, or each node's first device.
  [[nodiscard]] std::vector<int64_t> speakers(bool grouped) const {
    std::vector<int64_t> out;
    for (int64_t w = 0; w < workers(); ++w) {
      if (first_of(w, grouped) == w) out.push_back(w);
    }
    return out;
  }
  // With local aggregation the node's first device talks to the shards for the node.
  [[nodiscard]] int64_t leader_of(int64_t w) const {
    return first_of(w, plan.aggregates_locally());
  }
  [[nodiscard]] std::vector<int64_t> members_of(int64_t w) const {
    return others_of(w, plan.aggregates_locally());
  }
  [[nodiscard]] std::vector<int64_t> pushers() const { return speakers(plan.aggregates_locally()); }
  // With the head's boundaries gathered on nodes it sends the head the node's micro-batch.
  [[nodiscard]] int64_t head_leader_of(int64_t w) const {
    return first_of(w, plan.gathers_boundaries());
  }
  [[nodiscard]] std::vector<int64_t> head_members_of(int64_t w) const {
    return others_of(w, plan.gathers_boundaries());
  }
  [[nodiscard]] std::vector<int64_t> head_senders() const {
    return speakers(plan.gathers_boundaries());
  }

  // Per group index of s.groups: the groups of each layer.
  std::vector<std::vector<int32_t>> groups_of_layer;

  [[nodiscard]] bool token_queues() const {
    return plan.strategy.kind == StrategyKind::ps && plan.strategy.token_queues;
  }
  [[nodiscard]] int64_t servers() const { return static_cast<int64_t>(pushers().size()); }

  // Token queues: a server's dequeues of every variable's tokens, posted at the step's start
  // after the pulls, in the order its shards answer (backward, each group's variables in order).
  void post_dequeues(RoleBuilder& r, int64_t w) {
    if (!token_queues() || leader_of(w) != w) return;
    for (LayerId l = plan.tail_end; l-- > 0;) {
      for (const int32_t g : groups_of_layer[l]) {
        const VariableGroup& group = s.groups[static_cast<size_t>(g)];
        for (const size_t v : group.variables) {
          const OpIndex got = r.receive(MessageKind::dequeue, s.ps_host(group.shard),
                                        static_cast<int64_t>(v), servers() - 1);
          r.op(got).group = g;
        }
      }
    }
  }
  // Token queues: after its push of group g, a server's token for each other server, per
  // variable of the group.
  void enqueue_tokens(RoleBuilder& r, int32_t g, OpIndex pushed) {
    if (!token_queues()) return;
    const VariableGroup& group = s.groups[static_cast<size_t>(g)];
    for (const size_t v : group.variables) {
      for (int64_t other = 1; other < servers(); ++other) {
        const OpIndex sent = r.send(MessageKind::enqueue, s.ps_host(group.shard),
                                    static_cast<int64_t>(v), kTokenBytes, {pushed});
        r.op(sent).group = g;
      }
    }
  }

  // ps, ralp: the pulls of every variable group, posted at the step's start, in forward order;
  // per layer, what its forward waits for. With local aggregation a node's first device pulls
  // from the shards and passes the values on to the node's other devices over the interconnect.
  std::vector<std::vector<OpIndex>> pulls(RoleBuilder& r, int64_t w) {
    std::vector<std::vector<OpIndex>> pulled(plan.tail_end);
    const int64_t leader = leader_of(w);
    for (LayerId l = 0; l < plan.tail_end; ++l) {
      for (const int32_t g : groups_of_layer[l]) {
        const VariableGroup& group = s.groups[static_cast<size_t>(g)];
        const auto layer = static_cast<int64_t>(group.layer);
        if (leader != w) {
          const OpIndex got = r.receive(MessageKind::pull, s.worker_host(leader), layer, group.bytes);
          r.op(got).group = g;
          pulled[l].push_back(got);
          continue;
        }
        const OpIndex got = r.receive(MessageKind::pull, s.ps_host(group.shard), layer, group.bytes);
        r.op(got).group = g;
        for (const OpIndex i : r.copy(plan.worker_pcie, group.bytes, g, {got})) {
          pulled[l].push_back(i);
        }
        for (const int64_t m : members_of(w)) {
          const OpIndex passed =
              r.send(MessageKind::pull, s.worker_host(m), layer, group.bytes, pulled[l]);
          r.op(passed).group = g;
          r.op(passed).worker = static_cast<int32_t>(m);
        }
      }
    }
    return pulled;
  }

  // With local aggregation, a node's first device receives every group's gradients from the
  // node's other devices, posted at the step's start in backward order: per group, one receive
  // per other device.
  std::vector<std::vector<OpIndex>> member_pushes(RoleBuilder& r, int64_t w) {
    std::vector<std::vector<OpIndex>> received(s.groups.size());
    for (const int64_t m : members_of(w)) {
      for (LayerId l = plan.tail_end; l-- > 0;) {
        for (const int32_t g : groups_of_layer[l]) {
          const VariableGroup& group = s.groups[static_cast<size_t>(g)];
          const OpIndex got = r.receive(MessageKind::push, s.worker_host(m),
                                        static_cast<int64_t>(l), group.bytes);
          r.op(got).group = g;
          r.op(got).worker = static_cast<int32_t>(m);
          received[static_cast<size_t>(g)].push_back(got);
        }
      }
    }
    return received;
  }

  // Group g's gradients once backward produced them (`done`): to the shard, or with local
  // aggregation to the node's first device, which sums the node's gradients before it pushes.
  void push(RoleBuilder& r, int64_t w, int32_t g, OpIndex done,
            const std::vector<std::vector<OpIndex>>& from_members) {
    const VariableGroup& group = s.groups[static_cast<size_t>(g)];
    const auto layer = static_cast<int64_t>(group.layer);
    const int64_t leader = leader_of(w);
    if (leader != w) {
      const OpIndex sent = r.send(MessageKind::push, s.worker_host(leader), layer, group.bytes, {done});
      r.op(sent).group = g;
      return;
    }
    std::vector<OpIndex> staged = {done};
    const std::vector<int64_t> members = members_of(w);
    for (size_t i = 0; i < members.size(); ++i) {
      const OpIndex summed =
          r.device(OpKind::aggregate, seconds_for(group.bytes, plan.worker_sum_rate), group.bytes, g,
                   {from_members[static_cast<size_t>(g)][i]});
      r.op(summed).worker = static_cast<int32_t>(members[i]);
      staged = {summed};
    }
    const int64_t wire = plan.compressed(group.bytes);
    if (plan.compression != CompressionKind::none) {
      staged = {r.device(OpKind::encode, seconds_for(group.bytes, plan.worker_encode_rate),
                         group.bytes, g, staged)};
    }
    staged = r.copy(plan.worker_pcie, wire, g, staged);
    const OpIndex sent = r.send(MessageKind::push, s.ps_host(group.shard), layer, wire, staged);
    r.op(sent).group = g;
    enqueue_tokens(r, g, sent);
  }

  // allreduce, hybrid: what a worker posts at the step's start for the ring: the coordinator's go
  // for each buffer (every ring member but the first), every other member's ready (the first),
  // and with the hierarchical algorithm the node's other devices' buffers (a node's first device)
  // or the all-reduced buffer coming back (the others).
  struct RingPosts {
    std::vector<OpIndex> go;
    std::vector<std::vector<OpIndex>> ready;
    std::vector<std::vector<OpIndex>> reduce;  // per buffer, per other device of the node
    std::vector<OpIndex> broadcast;
  };
  RingPosts ring_posts(RoleBuilder& r, int64_t w) {
    const size_t buffers = s.buffers.size();
    RingPosts p{std::vector<OpIndex>(buffers), std::vector<std::vector<OpIndex>>(buffers),
                std::vector<std::vector<OpIndex>>(buffers), std::vector<OpIndex>(buffers)};
    if (!plan.uses_ring()) return p;
    const int64_t position = s.ring_position(s.worker_host(w));
    const bool negotiates = position >= 0 && s.ring_members() > 1;
    if (negotiates && position != 0) {
      for (size_t b = 0; b < buffers; ++b) {
        p.go[b] = r.receive(MessageKind::go, s.ring_hosts[0], static_cast<int64_t>(b), 0);
      }
    }
    if (negotiates && position == 0) {
      for (int64_t other = 1; other < s.ring_members(); ++other) {
        for (size_t b = 0; b < buffers; ++b) {
          p.ready[b].push_back(r.receive(MessageKind::ready, s.ring_hosts[other],
                                         static_cast<int64_t>(b), 0));
        }
      }
    }
    if (!plan.hierarchical()) return p;
    const int64_t first = w - w % plan.devices_per_node;
    for (size_t b = 0; b < buffers; ++b) {
      const auto item = static_cast<int64_t>(b);
      if (position < 0) {
        p.broadcast[b] =
            r.receive(MessageKind::broadcast, s.worker_host(first), item, s.buffers[b].bytes);
      }
      for (int64_t m = w + 1; position >= 0 && m < w + plan.devices_per_node; ++m) {
        p.reduce[b].push_back(
            r.receive(MessageKind::reduce, s.worker_host(m), item, s.buffers[b].bytes));
      }
    }
    return p;
  }

  // Buffer b once backward produced it (`done`): ring all-reduced among the workers, after the
  // coordinator's go. Hierarchical: a node's other devices send it to the node's first device and
  // wait for the sum; the first device adds theirs to its own, all-reduces it among the nodes'
  // first devices and sends it back. `reduced` gets what the worker's update waits for.
  void ring_buffer(RoleBuilder& r, int64_t w, size_t b, OpIndex done, const RingPosts& posts,
                   std::vector<OpIndex>& reduced) {
    const FusionBuffer& buffer = s.buffers[b];
    const auto item = static_cast<int64_t>(b);
    const int64_t position = s.ring_position(s.worker_host(w));
    if (position < 0) {
      const int64_t first = w - w % plan.devices_per_node;
      const OpIndex sent =
          r.send(MessageKind::reduce, s.worker_host(first), item, buffer.bytes, {done});
      r.op(sent).buffer = static_cast<int32_t>(b);
      reduced.push_back(posts.broadcast[b]);
      return;
    }
    std::vector<OpIndex> start = {done};
    for (size_t i = 0; i < posts.reduce[b].size(); ++i) {
      const OpIndex summed = r.device(OpKind::aggregate, seconds_for(buffer.bytes, plan.worker_sum_rate),
                                      buffer.bytes, -1, {posts.reduce[b][i]});
      r.op(summed).buffer = static_cast<int32_t>(b);
      r.op(summed).worker = static_cast<int32_t>(w + 1 + static_cast<int64_t>(i));
      start = {summed};
    }
    if (s.ring_members() > 1) {
      const std::vector<OpIndex> own = start;
      if (position == 0) {
        start.insert(start.end(), posts.ready[b].begin(), posts.ready[b].end());
        for (int64_t other = 1; other < s.ring_members(); ++other) {
          r.send(MessageKind::go, s.ring_hosts[other], item, 0, start);
        }
      } else {
        r.send(MessageKind::ready, s.ring_hosts[0], item, 0, own);
        start.push_back(posts.go[b]);
      }
      Op all;
      all.kind = OpKind::allreduce;
      all.buffer = static_cast<int32_t>(b);
      all.bytes = buffer.bytes;
      if (plan.compression != CompressionKind::none) {
        all.seconds = seconds_for(buffer.bytes, plan.worker_encode_rate);
      }
      start = {r.add(all, start)};
    }
    for (size_t i = 0; i < posts.reduce[b].size(); ++i) {
      const OpIndex back = r.send(MessageKind::broadcast, s.worker_host(w + 1 + static_cast<int64_t>(i)),
                                  item, buffer.bytes, start);
      r.op(back).buffer = static_cast<int32_t>(b);
    }
    reduced.insert(reduced.end(), start.begin(), start.end());
  }

  // ralp, hybrid: what a worker posts at the step's start for the head: the activation gradient
  // coming back (from the head PS, or from the node's first device when it gathers the node's
  // boundaries) and, on a node's first device, the other devices' boundaries.
  struct HeadPosts {
    std::optional<OpIndex> gradient_back;
    std::vector<OpIndex> member_boundaries;
  };
  HeadPosts head_posts(RoleBuilder& r, int64_t w) {
    HeadPosts p;
    if (!plan.has_head()) return p;
    const int64_t leader = head_leader_of(w);
    if (leader != w) {
      p.gradient_back = r.receive(MessageKind::activation_gradient, s.worker_host(leader), w,
                                  plan.activation_grad_bytes);
      return p;
    }
    p.gradient_back = r.receive(MessageKind::activation_gradient, head_host(), w,
                                plan.activation_grad_bytes * plan.micro_batch_devices);
    for (const int64_t m : head_members_of(w)) {
      p.member_boundaries.push_back(
          r.receive(MessageKind::activations, s.worker_host(m), m, plan.boundary_bytes));
    }
    return p;
  }

  // ralp, hybrid: the boundary of w's micro-batch once its forward ended (`last`), to the head
  // (through the node's first device when it gathers them); returns what w's backward waits
  // for: the activation gradient, on the device.
  std::vector<OpIndex> exchange_boundary(RoleBuilder& r, int64_t w, OpIndex last,
                                         const HeadPosts& posts) {
    const int64_t leader = head_leader_of(w);
    if (leader != w) {
      r.send(MessageKind::activations, s.worker_host(leader), w, plan.boundary_bytes, {last});
      return {*posts.gradient_back};
    }
    std::vector<OpIndex> ready = {last};
    ready.insert(ready.end(), posts.member_boundaries.begin(), posts.member_boundaries.end());
    const int64_t sent = plan.boundary_bytes * plan.micro_batch_devices;
    const std::vector<OpIndex> staged = r.copy(plan.worker_pcie, sent, -1, ready);
    r.send(MessageKind::activations, head_host(), w, sent, staged);
    const std::vector<OpIndex> back =
        r.copy(plan.worker_pcie, plan.activation_grad_bytes * plan.micro_batch_devices, -1,
               {*posts.gradient_back});
    for (const int64_t m : head_members_of(w)) {
      r.send(MessageKind::activation_gradient, s.worker_host(m), m, plan.activation_grad_bytes,
             back);
    }
    return back;
  }

  void worker(int64_t w) {
    RoleBuilder r(s.roles[static_cast<size_t>(s.worker_host(w))]);
    const std::vector<std::vector<OpIndex>> pulled = pulls(r, w);
    post_dequeues(r, w);
    // Posted before the members' pushes: a member sends its boundary before its gradients.
    const HeadPosts head = head_posts(r, w);
    const std::vector<std::vector<OpIndex>> from_members = member_pushes(r, w);
    const RingPosts posts = ring_posts(r, w);

    OpIndex last = 0;
    for (LayerId l = 0; l < plan.tail_end; ++l) {
      Op op;
      op.kind = OpKind::compute;
      op.pass = Pass::forward;
      op.layer = l;
      op.seconds = plan.worker[l].forward.value();
      last = r.add(op, pulled[l]);
    }
    std::vector<OpIndex> before_backward;
    if (plan.has_head()) before_backward = exchange_boundary(r, w, last, head);

    std::vector<OpIndex> reduced;
    for (LayerId l = plan.tail_end; l-- > 0;) {
      Op op;
      op.kind = OpKind::compute;
      op.pass = Pass::backward;
      op.layer = l;
      op.seconds = plan.worker[l].backward_data.value() + plan.worker[l].backward_weight.value();
      const OpIndex done = r.add(op, l + 1 == plan.tail_end ? before_backward : std::vector<OpIndex>{});
      for (const int32_t g : groups_of_layer[l]) push(r, w, g, done, from_members);
      if (!plan.uses_ring() || (s.ring_members() == 1 && !plan.hierarchical())) continue;
      for (size_t b = 0; b < s.buffers.size(); ++b) {
        if (s.buffers[b].last_layer == l) ring_buffer(r, w, b, done, posts, reduced);
      }
    }
    if (plan.uses_ring()) {
      Op update;
      update.kind = OpKind::update;
      update.bytes = plan.tail_param_bytes;
      update.seconds = seconds_for(plan.tail_param_bytes, plan.worker_update_rate);
      update.ends_part = true;
      r.add(update, reduced);
    }
  }

  // What a shard does with a server's push of group g before it sums or applies it: the copy to
  // a GPU shard and the decode of a compressed gradient, where there are any.
  std::vector<OpIndex> stage_push(RoleBuilder& r, int32_t g, OpIndex pushed) {
    const VariableGroup& group = s.groups[static_cast<size_t>(g)];
    std::vector<OpIndex> staged = r.copy(plan.ps_pcie, plan.compressed(group.bytes), g, {pushed});
    if (plan.compression != CompressionKind::none) {
      staged = {r.device(OpKind::decode, seconds_for(group.bytes, plan.ps_encode_rate),
                         group.bytes, g, staged)};
    }
    return staged;
  }

  // Group g's W gradients (one per node with local aggregation) summed in worker order, then its
  // update once the pulls that read its values have left; returns the update.
  OpIndex sum_and_apply(RoleBuilder& r, int32_t g, const std::vector<int64_t>& peers,
                        const std::vector<OpIndex>& pushed, const std::vector<OpIndex>& pulls) {
    const VariableGroup& group = s.groups[static_cast<size_t>(g)];
    for (size_t k = 0; k < peers.size(); ++k) {
      const OpIndex summed = r.device(OpKind::aggregate, seconds_for(group.bytes, plan.ps_sum_rate),
                                      group.bytes, g, stage_push(r, g, pushed[k]));
      r.op(summed).worker = static_cast<int32_t>(peers[k]);
    }
    const OpIndex updated = r.device(OpKind::update, seconds_for(group.bytes, plan.ps_update_rate),
                                     group.bytes, g, pulls);
    r.op(updated).ends_part = true;
    return updated;
  }

  // Token queues: the tokens server w enqueues for the others after its push of group g, posted
  // after that push; per variable of the group, the last of its W - 1 (none with one server).
  std::vector<OpIndex> receive_tokens(RoleBuilder& r, int32_t g, int64_t w) {
    std::vector<OpIndex> last;
    if (!token_queues() || servers() < 2) return last;
    for (const size_t v : s.groups[static_cast<size_t>(g)].variables) {
      for (int64_t other = 1; other < servers(); ++other) {
        const OpIndex got = r.receive(MessageKind::enqueue, s.worker_host(w),
                                      static_cast<int64_t>(v), kTokenBytes);
        r.op(got).group = g;
        r.op(got).worker = static_cast<int32_t>(w);
        if (other + 1 == servers()) last.push_back(got);
      }
    }
    return last;
  }

  // Token queues: each server's gradient of group g applied on its own, in worker order, the
  // first once the pulls that read the values have left; then, per variable, each server's
  // dequeue answered once every update is done and the other servers' tokens are in. Returns the
  // last update.
  OpIndex apply_each(RoleBuilder& r, int32_t g, const std::vector<int64_t>& peers,
                     const std::vector<OpIndex>& pushed, const std::vector<OpIndex>& pulls,
                     const std::vector<std::vector<OpIndex>>& tokens) {
    const VariableGroup& group = s.groups[static_cast<size_t>(g)];
    OpIndex applied = 0;
    for (size_t k = 0; k < peers.size(); ++k) {
      std::vector<OpIndex> after = stage_push(r, g, pushed[k]);
      if (k == 0) after.insert(after.end(), pulls.begin(), pulls.end());
      applied = r.device(OpKind::update, seconds_for(group.bytes, plan.ps_update_rate),
                         group.bytes, g, after);
      r.op(applied).worker = static_cast<int32_t>(peers[k]);
    }
    r.op(applied).ends_part = true;
    for (size_t v = 0; v < group.variables.size(); ++v) {
      for (size_t k = 0; k < peers.size(); ++k) {
        std::vector<OpIndex> after = {applied};
        for (size_t u = 0; u < peers.size(); ++u) {
          if (u != k && !tokens[u].empty()) after.push_back(tokens[u][v]);
        }
        const OpIndex sent = r.send(MessageKind::dequeue, s.worker_host(peers[k]),
                                    static_cast<int64_t>(group.variables[v]), servers() - 1, after);
        r.op(sent).group = g;
        r.op(sent).worker = static_cast<int32_t>(peers[k]);
      }
    }
    return applied;
  }

  // A PS shard's pulls, pushes, sums and updates (ps, ralp), and ps-0's head (ralp, hybrid).
  void parameter_server(int64_t shard) {
    RoleBuilder r(s.roles[static_cast<size_t>(s.ps_host(shard))]);
    std::vector<int32_t> mine;  // forward order
    if (plan.uses_shards()) {
      for (size_t g = 0; g < s.groups.size(); ++g) {
        if (s.groups[g].shard == shard) mine.push_back(static_cast<int32_t>(g));
      }
    }
    const bool head = plan.has_head() && shard == 0;
    const bool agrees = plan.uses_shards() && s.parameter_servers > 1;

    // Receives, posted at the step's start, in the order each worker sends: the boundary of its
    // micro-batch for the head, then its pushes in backward order; and the other shards' ends.
    std::vector<OpIndex> boundary;
    const std::vector<int64_t> senders = head ? head_senders() : std::vector<int64_t>{};
    const int64_t boundary_in = plan.boundary_bytes * plan.micro_batch_devices;
    const int64_t gradient_out = plan.activation_grad_bytes * plan.micro_batch_devices;
    for (const int64_t w : senders) {
      boundary.push_back(r.receive(MessageKind::activations, s.worker_host(w), w, boundary_in));
    }
    // With local aggregation only each node's first device pushes and pulls.
    const std::vector<int64_t> peers = pushers();
    std::vector<std::vector<OpIndex>> pushed(mine.size());
    std::vector<std::vector<std::vector<OpIndex>>> tokens(mine.size());  // [group][peer][variable]
    for (size_t i = mine.size(); i-- > 0;) {
      const VariableGroup& group = s.groups[static_cast<size_t>(mine[i])];
      for (const int64_t w : peers) {
        const OpIndex got = r.receive(MessageKind::push, s.worker_host(w),
                                      static_cast<int64_t>(group.layer),
                                      plan.compressed(group.bytes));
        r.op(got).group = mine[i];
        r.op(got).worker = static_cast<int32_t>(w);
        pushed[i].push_back(got);
        tokens[i].push_back(receive_tokens(r, mine[i], w));
      }
    }
    std::vector<OpIndex> others_done;
    if (agrees && shard == 0) {
      for (int64_t other = 1; other < s.parameter_servers; ++other) {
        others_done.push_back(r.receive(MessageKind::step_done, s.ps_host(other), other, 0));
      }
    }
    if (agrees && shard != 0) r.receive(MessageKind::step_complete, s.ps_host(0), 0, 0);

    // Pulls in forward order; a GPU shard first copies the group's values to the host.
    std::vector<std::vector<OpIndex>> pulls(mine.size());
    for (size_t i = 0; i < mine.size(); ++i) {
      const VariableGroup& group = s.groups[static_cast<size_t>(mine[i])];
      const std::vector<OpIndex> staged = r.copy(plan.ps_pcie, group.bytes, mine[i], {});
      for (const int64_t w : peers) {
        const OpIndex sent = r.send(MessageKind::pull, s.worker_host(w),
                                    static_cast<int64_t>(group.layer), group.bytes, staged);
        r.op(sent).group = mine[i];
        r.op(sent).worker = static_cast<int32_t>(w);
        pulls[i].push_back(sent);
      }
    }

    std::vector<OpIndex> parts;
    if (head) {
      const auto head_pass = [&](Pass pass, int32_t worker, double seconds,
                                 const std::vector<OpIndex>& after) {
        Op op;
        op.kind = OpKind::compute;
        op.pass = pass;
        op.layer = *plan.cut;
        op.worker = worker;
        op.seconds = seconds;
        return r.add(op, after);
      };
      const auto reply = [&](int64_t w, OpIndex after) {
        const std::vector<OpIndex> staged = r.copy(plan.ps_pcie, gradient_out, -1, {after});
        r.send(MessageKind::activation_gradient, s.worker_host(w), w, gradient_out, staged);
      };
      std::vector<OpIndex> arrived;
      for (const OpIndex got : boundary) {
        for (const OpIndex i : r.copy(plan.ps_pcie, boundary_in, -1, {got})) arrived.push_back(i);
      }
      if (plan.strategy.head_mode == HeadMode::per_worker) {
        for (size_t k = 0; k < senders.size(); ++k) {
          reply(senders[k],
                head_pass(Pass::head, static_cast<int32_t>(senders[k]),
                          plan.head_pass_seconds(static_cast<int64_t>(k)), {arrived[k]}));
        }
      } else {
        const OpIndex all = head_pass(Pass::head_all, -1, plan.head_full_batch.value(), arrived);
        for (const int64_t w : senders) reply(w, all);
      }
      Op update;
      update.kind = OpKind::update;
      update.bytes = plan.head_param_bytes;
      update.seconds = seconds_for(plan.head_param_bytes, plan.ps_update_rate);
      update.ends_part = true;
      parts.push_back(r.add(update));
    }

    for (size_t i = mine.size(); i-- > 0;) {
      parts.push_back(token_queues() ? apply_each(r, mine[i], peers, pushed[i], pulls[i], tokens[i])
                                     : sum_and_apply(r, mine[i], peers, pushed[i], pulls[i]));
    }

    // Several shards: no shard sends the next step's pulls before every shard is done.
    if (agrees && shard == 0) {
      std::vector<OpIndex> after = parts;
      after.insert(after.end(), others_done.begin(), others_done.end());
      for (int64_t other = 1; other < s.parameter_servers; ++other) {
        r.send(MessageKind::step_complete, s.ps_host(other), 0, 0, after);
      }
    } else if (agrees) {
      r.send(MessageKind::step_done, s.ps_host(0), shard, 0, parts);
    }
  }
};

}  // namespace

std::string_view to_string(MessageKind kind) {
  switch (kind) {
    case MessageKind::pull:
      return "pull";
    case MessageKind::push:
      return "push";
    case MessageKind::activations:
      return "activations";
    case MessageKind::activation_gradient:
      return "activation gradient";
    case MessageKind::ready:
      return "ready";
    case MessageKind::go:
      return "go";
    case MessageKind::ring:
      return "ring all-reduce";
    case MessageKind::step_done:
      return "step done";
    case MessageKind::step_complete:
      return "step complete";
    case MessageKind::reduce:
      return "reduce";
    case MessageKind::broadcast:
      return "broadcast";
    case MessageKind::enqueue:
      return "enqueue";
    case MessageKind::dequeue:
      return "dequeue";
  }
  return "message";
}

std::string_view to_string(OpKind kind) {
  switch (kind) {
    case OpKind::compute:
      return "compute";
    case OpKind::aggregate:
      return "aggregate";
    case OpKind::update:
      return "update";
    case OpKind::encode:
      return "encode";
    case OpKind::decode:
      return "decode";
    case OpKind::copy:
      return "copy";
    case OpKind::send:
      return "send";
    case OpKind::receive:
      return "receive";
    case OpKind::allreduce:
      return "allreduce";
  }
  return "op";
}

std::string_view to_string(Pass pass) {
  switch (pass) {
    case Pass::none:
      return "none";
    case Pass::forward:
      return "forward";
    case Pass::backward:
      return "backward";
    case Pass::head:
      return "head";
    case Pass::head_all:
      return "head_all";
  }
  return "pass";
}

std::vector<FusionBuffer> fusion_buffers(const StepPlan& plan) {
  if (!plan.uses_ring()) return {};
  // Production order: layers from the last, each layer's tensors in model order, with their
  // predicted readiness after backward starts.
  std::vector<size_t> order;
  std::vector<int64_t> bytes;
  std::vector<double> ready_at;
  double t = 0.0;
  for (LayerId l = plan.tail_end; l-- > 0;) {
    t += plan.worker[l].backward_data.value() + plan.worker[l].backward_weight.value();
    for (size_t i = 0; i < plan.tensors.size(); ++i) {
      if (plan.tensors[i].layer != l) continue;
      order.push_back(i);
      bytes.push_back(plan.tensors[i].bytes);
      ready_at.push_back(t);
    }
  }
  std::vector<FusionBuffer> out;
  const auto reduce = [&plan](int64_t b) { return plan.ring_seconds(b); };
  for (const auto& positions : plan_fusion(bytes, ready_at, plan.strategy.fusion_threshold.value(),
                                           plan.strategy.cycle_time.value(), reduce)) {
    FusionBuffer buffer;
    for (const size_t p : positions) {
      const size_t tensor = order[p];
      buffer.tensors.push_back(tensor);
      buffer.bytes += plan.tensors[tensor].bytes;
      buffer.last_layer = plan.tensors[tensor].layer;
    }
    buffer.wire_bytes = plan.compressed(buffer.bytes);
    out.push_back(std::move(buffer));
  }
  return out;
}

Stream Op::stream() const {
  switch (kind) {
    case OpKind::copy:
      return Stream::copy;
    case OpKind::send:
      return Stream::send;
    case OpKind::receive:
      return Stream::receive;
    case OpKind::allreduce:
      return Stream::ring;
    default:
      return Stream::device;
  }
}

Schedule build_schedule(const StepPlan& plan, int64_t parameter_servers) {
  if ((plan.uses_shards() || plan.has_head()) && parameter_servers < 1) {
    throw std::invalid_argument(std::string(to_string(plan.strategy.kind)) +
                                " needs a parameter server");
  }
  if (plan.uses_shards() && plan.shards > parameter_servers) {
    throw std::invalid_argument("the plan's shards outnumber the parameter servers");
  }
  Schedule s;
  s.plan = plan;
  s.parameter_servers = parameter_servers;
  s.workers = plan.workers;
  for (int64_t i = 0; i < parameter_servers; ++i) {
    s.roles.push_back({static_cast<int32_t>(i), "ps-" + std::to_string(i), {}, {}});
  }
  for (int64_t w = 0; w < plan.workers; ++w) {
    s.roles.push_back(
        {static_cast<int32_t>(parameter_servers + w), "worker-" + std::to_string(w), {}, {}});
  }
  for (const auto& layer_groups : plan.groups_by_layer) {
    for (const VariableGroup& g : layer_groups) s.groups.push_back(g);
  }
  s.buffers = fusion_buffers(plan);
  if (plan.uses_ring()) {
    const int64_t step = plan.hierarchical() ? plan.devices_per_node : 1;
    for (int64_t w = 0; w < plan.workers; w += step) s.ring_hosts.push_back(s.worker_host(w));
  }

  Builder b{plan, s, std::vector<std::vector<int32_t>>(plan.tail_end)};
  for (size_t g = 0; g < s.groups.size(); ++g) {
    b.groups_of_layer[s.groups[g].layer].push_back(static_cast<int32_t>(g));
  }
  for (int64_t i = 0; i < parameter_servers; ++i) b.parameter_server(i);
  for (int64_t w = 0; w < plan.workers; ++w) b.worker(w);
  for (const RoleSchedule& role : s.roles) {
    for (const Op& op : role.ops) s.parts_per_step += op.ends_part ? 1 : 0;
  }
  return s;
}

std::vector<Message> sends_of(const RoleSchedule& role) {
  std::vector<Message> out;
  for (const Op& op : role.ops) {
    if (op.kind == OpKind::send) out.push_back(op.message);
  }
  return out;
}

int64_t Schedule::ring_position(int32_t host) const {
  const auto it = std::find(ring_hosts.begin(), ring_hosts.end(), host);
  return it == ring_hosts.end() ? -1 : it - ring_hosts.begin();
}

std::vector<Message> ring_messages(const Schedule& schedule, size_t buffer, int64_t member) {
  const int64_t members = schedule.ring_members();
  std::vector<Message> out;
  if (members < 2) return out;
  const FusionBuffer& b = schedule.buffers.at(buffer);
  const int64_t elements = b.bytes / static_cast<int64_t>(kBytesPerFloat);
  const int32_t next = schedule.ring_hosts[static_cast<size_t>((member + 1) % members)];
  for (int64_t phase = 0; phase < 2 * (members - 1); ++phase) {
    const RingPhase p = ring_phase(member, members, phase);
    const ChunkRange chunk = chunk_range(elements, members, p.send_chunk);
    const int64_t raw = chunk.size() * static_cast<int64_t>(kBytesPerFloat);
    out.push_back({MessageKind::ring, next, phase, schedule.plan.compressed(raw)});
  }
  return out;
}

RingTotals ring_totals(const Schedule& schedule, size_t buffer, int64_t member) {
  const int64_t members = schedule.ring_members();
  if (members < 2) return {};
  const FusionBuffer& b = schedule.buffers.at(buffer);
  const int64_t elements = b.bytes / static_cast<int64_t>(kBytesPerFloat);
  const auto payload = [&](int64_t chunk) {
    const int64_t raw = chunk_range(elements, members, chunk).size() *
                        static_cast<int64_t>(kBytesPerFloat);
    return schedule.plan.compressed(raw);
  };
  // chunk_range cuts the buffer into chunks of one size, then one shorter chunk, then empty
  // ones: the sum over all chunks takes three terms.
  const int64_t size = (elements + members - 1) / members;
  const int64_t full = size > 0 ? elements / size : 0;
  const int64_t partial = size > 0 && elements % size != 0 ? 1 : 0;
  const int64_t empty = members - full - partial;
  const int64_t all = full * payload(0) + (partial > 0 ? payload(full) : 0) +
                      (empty > 0 ? empty * payload(members - 1) : 0);
  // Member m sends every chunk but m + 1 while reducing and every chunk but m + 2 while
  // gathering (ring_phase); it sums what m - 1 sends while reducing: every chunk but m.
  const auto mod = [members](int64_t x) { return ((x % members) + members) % members; };
  RingTotals t;
  t.messages = 2 * (members - 1);
  t.wire_bytes = 2 * all - payload(mod(member + 1)) - payload(mod(member + 2)) +
                 t.messages * kHeaderBytes;
  t.reduced_bytes = all - payload(mod(member));
  const auto carries = [&](int64_t chunk) -> int64_t { return payload(chunk) > 0 ? 1 : 0; };
  const int64_t carrying = full * carries(0) + (partial > 0 ? carries(full) : 0) +
                           (empty > 0 ? empty * carries(members - 1) : 0);
  // Member m - 1 sends what m receives.
  t.sent_payloads = 2 * carrying - carries(mod(member + 1)) - carries(mod(member + 2));
  t.received_payloads = 2 * carrying - carries(mod(member)) - carries(mod(member + 1));
  return t;
}

std::vector<HostBytes> bytes_per_host(const Schedule& schedule) {
  std::vector<HostBytes> out(schedule.roles.size());
  const auto count = [&](int32_t src, const Message& m) {
    out[static_cast<size_t>(src)].out += m.wire_bytes();
    out[static_cast<size_t>(m.peer)].in += m.wire_bytes();
  };
  for (const RoleSchedule& role : schedule.roles) {
    for (const Op& op : role.ops) {
      if (op.kind == OpKind::send) count(role.host, op.message);
      if (op.kind == OpKind::allreduce) {
        const int64_t member = schedule.ring_position(role.host);
        for (const Message& m :
             ring_messages(schedule, static_cast<size_t>(op.buffer), member)) {
          count(role.host, m);
        }
      }
    }
  }
  return out;
}

std::string op_label(const Schedule& schedule, const LayerGraph& model, int32_t host,
                     const Op& op) {
  const auto layer = [&](LayerId id) { return model.layer(id).name(); };
  const auto group_layer = [&](int32_t g) {
    return g < 0 ? std::string("head") : layer(schedule.groups[static_cast<size_t>(g)].layer);
  };
  switch (op.kind) {
    case OpKind::compute:
      switch (op.pass) {
        case Pass::forward:
          return layer(op.layer);
        case Pass::backward:
          return "grad " + layer(op.layer);
        case Pass::head:
          return "head " + schedule.host_name(schedule.worker_host(op.worker));
        case Pass::head_all:
          return "head all workers";
        case Pass::none:
          break;
      }
      return "compute";
    case OpKind::aggregate:
      return "sum " + (op.buffer >= 0 ? "buffer " + std::to_string(op.buffer) : group_layer(op.group)) +
             " of " + schedule.host_name(schedule.worker_host(op.worker));
    case OpKind::update:
      if (op.group >= 0 && op.worker >= 0) {
        return "update " + group_layer(op.group) + " of " +
               schedule.host_name(schedule.worker_host(op.worker));
      }
      if (op.group >= 0) return "update " + group_layer(op.group);
      return schedule.is_worker(host) ? "update" : "update head";
    case OpKind::encode:
      return "encode " + group_layer(op.group);
    case OpKind::decode:
      return "decode " + group_layer(op.group);
    case OpKind::copy:
      return "copy " + group_layer(op.group);
    case OpKind::send:
    case OpKind::receive: {
      std::string text(to_string(op.message.kind));
      if (op.message.kind == MessageKind::pull || op.message.kind == MessageKind::push) {
        text += " " + layer(static_cast<LayerId>(op.message.item));
      } else if (op.message.kind == MessageKind::ready || op.message.kind == MessageKind::go ||
                 op.message.kind == MessageKind::reduce ||
                 op.message.kind == MessageKind::broadcast) {
        text += " buffer " + std::to_string(op.message.item);
      } else if (op.message.kind == MessageKind::enqueue ||
                 op.message.kind == MessageKind::dequeue) {
        text += " " + group_layer(op.group);
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

std::optional<ReplayMismatch> replay_device_times(Schedule& schedule, const LayerGraph& model,
                                                  std::span<const DeviceOpTime> times) {
  std::vector<std::vector<bool>> given(schedule.roles.size());
  for (size_t r = 0; r < schedule.roles.size(); ++r) given[r].assign(schedule.roles[r].ops.size(), false);
  for (size_t e = 0; e < times.size(); ++e) {
    const DeviceOpTime& t = times[e];
    const auto role = std::find_if(schedule.roles.begin(), schedule.roles.end(),
                                   [&](const RoleSchedule& r) { return r.name == t.host; });
    if (role == schedule.roles.end()) {
      return ReplayMismatch{e, "names host \"" + t.host + "\", which this schedule does not have"};
    }
    const auto r = static_cast<size_t>(role - schedule.roles.begin());
    if (static_cast<size_t>(t.op) >= role->ops.size() ||
        role->ops[static_cast<size_t>(t.op)].stream() != Stream::device) {
      return ReplayMismatch{e, "names operation " + std::to_string(t.op) + " of " + t.host +
                                   ", which is not one of its device operations here"};
    }
    Op& op = role->ops[static_cast<size_t>(t.op)];
    const std::string label = op_label(schedule, model, role->host, op);
    if (label != t.label) {
      return ReplayMismatch{e, "names operation " + std::to_string(t.op) + " of " + t.host + " \"" +
                                   t.label + "\", which is \"" + label +
                                   "\" here: the run followed another schedule"};
    }
    if (given[r][static_cast<size_t>(t.op)]) {
      return ReplayMismatch{e, "gives operation " + std::to_string(t.op) + " of " + t.host + " twice"};
    }
    given[r][static_cast<size_t>(t.op)] = true;
    op.seconds = t.seconds;
  }
  for (size_t r = 0; r < schedule.roles.size(); ++r) {
    const RoleSchedule& role = schedule.roles[r];
    for (size_t i = 0; i < role.ops.size(); ++i) {
      if (role.ops[i].stream() == Stream::device && !given[r][i]) {
        return ReplayMismatch{times.size(),
                              "has no time for " + role.name + "'s operation " + std::to_string(i) +
                                  " (" + op_label(schedule, model, role.host, role.ops[i]) +
                                  "): the run followed another schedule"};
      }
    }
  }
  return std::nullopt;
}

}  // namespace ralp::schedule
