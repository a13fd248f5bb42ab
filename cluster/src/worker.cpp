// A worker's step: pulls before each layer that needs them, forward, the boundary to the head PS
// and back, backward with each layer's gradients pushed (or handed to the all-reduce) as soon as
// they exist, and, after all-reduce, the local update.
#include <algorithm>
#include <memory>

#include "head_server.hpp"
#include "ralp/cluster/synthetic_data.hpp"
#include "ring_allreduce.hpp"
#include "role_loops.hpp"
#include "segmented_network.hpp"

namespace ralp::cluster {
namespace {

// Micro-batches in each worker's shard of the synthetic data set.
constexpr int64_t kShardBatches = 16;

struct PullGroup {
  const VariableGroup* plan = nullptr;
  std::vector<SegmentedNetwork::Parameter*> parameters;
  std::vector<std::unique_ptr<HostView>> values;
  std::vector<std::unique_ptr<HostView>> gradients;
  Transport::Handle pull = 0;
};

}  // namespace

FinalParameters run_worker(StrategyContext& ctx, int64_t worker) {
  const LayerGraph& graph = ctx.scenario.model;
  Transport& t = ctx.transport;
  kernels::Backend& backend = ctx.backend;
  const Roles& roles = ctx.roles();
  SegmentedNetwork net(backend, graph, ctx.tail_end, ctx.batch(), ctx.scenario.seed);
  // The worker's shard: kShardBatches micro-batches, made before the first step so that making
  // them is not timed, and visited in order, epoch after epoch.
  const SyntheticData data(ctx.scenario.seed, graph.input_shape(),
                           graph.layer(graph.size() - 1).input_shapes.front().elements());
  std::vector<SyntheticBatch> shard;
  for (int64_t i = 0; i < std::min(ctx.steps, kShardBatches); ++i) {
    shard.push_back(data.batch(worker, i, ctx.batch()));
  }

  // ps and ralp: the messages of each layer's variable groups, into and out of the network's own
  // parameter tensors.
  std::vector<PullGroup> groups;
  if (ctx.uses_shards()) {
    for (const VariableGroup& g : ctx.shards.groups) {
      PullGroup group;
      group.plan = &g;
      const auto params = net.parameters_of(g.layer);
      for (const size_t v : g.variables) {
        const bool bias = ctx.shards.variables[v].bias;
        for (auto* p : params) {
          if ((p->name.ends_with(".bias")) == bias) group.parameters.push_back(p);
        }
      }
      for (auto* p : group.parameters) {
        group.values.push_back(std::make_unique<HostView>(backend, *p->value));
        group.gradients.push_back(std::make_unique<HostView>(backend, *p->gradient));
      }
      groups.push_back(std::move(group));
    }
  }
  std::unique_ptr<RingAllreduce> ring;
  if (ctx.uses_ring()) ring = std::make_unique<RingAllreduce>(ctx, net, worker);

  // ralp and hybrid: the boundary message to and from the head PS.
  std::unique_ptr<BoundaryMessage> boundary;
  std::optional<CutInfo> cut;
  if (ctx.has_head()) {
    cut = graph.describe_cut(*ctx.cut);
    boundary = std::make_unique<BoundaryMessage>(graph, *cut, ctx.batch());
  }
  const int head_rank = roles.ps_rank(0);

  std::vector<Transport::Handle> pushes;
  for (int64_t k = 0; k < ctx.steps; ++k) {
    ctx.clock.start_step(k, monotonic_seconds());
    t.wait_all(pushes);  // last step's pushes read the gradients this backward overwrites
    const kernels::StepContext step{ctx.scenario.seed, static_cast<uint64_t>(k),
                                    static_cast<uint32_t>(worker)};
    for (PullGroup& g : groups) {
      std::vector<Piece> pieces;
      for (auto& v : g.values) pieces.push_back(v->piece());
      g.pull = t.receive(roles.ps_rank(g.plan->shard), MessageKind::pull, k, std::move(pieces));
    }
    if (ring) ring->begin_step(k);

    ctx.faults.at("forward", k);
    const SyntheticBatch& batch = shard[static_cast<size_t>(k) % shard.size()];
    {
      PhaseScope computing(ctx.clock, Phase::compute);
      net.set_input(batch.images);
      if (net.holds_loss()) net.set_labels(batch.labels);
    }
    if (!groups.empty()) ctx.faults.at("pull", k);
    for (size_t i = 0; i < net.segments(); ++i) {
      if (const auto layer = net.parameter_layer(i)) {
        for (PullGroup& g : groups) {
          if (g.plan->layer != *layer) continue;
          t.wait(g.pull);
          PhaseScope receiving(ctx.clock, Phase::receive);
          for (auto& v : g.values) v->upload();
        }
      }
      {
        PhaseScope computing(ctx.clock, Phase::compute);
        net.forward(i, step);
        backend.synchronize();
      }
      t.progress();
    }

    if (boundary) {
      ctx.faults.at("activations", k);
      Transport::Handle reply = 0;
      {
        PhaseScope sending(ctx.clock, Phase::send);
        for (size_t i = 0; i < cut->boundary.size(); ++i) {
          backend.copy_to_host(net.output(cut->boundary[i]), boundary->activations[i]);
        }
        if (cut->boundary_has_model_input) boundary->images = batch.images;
        boundary->labels = batch.labels;
        reply =
            t.receive(head_rank, MessageKind::activation_gradient, k, boundary->gradient_pieces());
        t.wait(
            t.send(head_rank, MessageKind::activations, k, worker, boundary->activation_pieces()));
      }
      t.wait(reply);
      PhaseScope receiving(ctx.clock, Phase::receive);
      for (size_t i = 0; i < boundary->gradient_layers.size(); ++i) {
        backend.copy_from_host(net.output_gradient(boundary->gradient_layers[i]),
                               boundary->gradients[i]);
      }
    } else {
      ctx.record.losses.push_back({k, worker, net.loss()});
    }

    ctx.faults.at("backward", k);
    for (size_t i = net.segments(); i-- > 0;) {
      {
        PhaseScope computing(ctx.clock, Phase::compute);
        net.backward(i, step);
        backend.synchronize();
      }
      if (const auto layer = net.parameter_layer(i)) {
        for (PullGroup& g : groups) {
          if (g.plan->layer != *layer) continue;
          ctx.faults.at("push", k);
          PhaseScope sending(ctx.clock, Phase::send);
          std::vector<Piece> pieces;
          for (auto& v : g.gradients) {
            v->download();
            pieces.push_back(v->piece());
          }
          pushes.push_back(t.send(roles.ps_rank(g.plan->shard), MessageKind::push, k,
                                  static_cast<int64_t>(*layer), std::move(pieces)));
        }
        if (ring) ring->produced(*layer);
      }
      t.progress();
      if (ring) ring->advance();
    }

    if (ring) {
      while (!ring->step_complete()) {
        t.wait_until([&] { return ring->has_work(); });
        ring->advance();
      }
      ctx.faults.at("update", k);
      {
        PhaseScope computing(ctx.clock, Phase::compute);
        net.sgd_step(ctx.sgd, 1.0F / static_cast<float>(ctx.workers()));
        backend.synchronize();
      }
      ctx.part_done(k);
      ring->end_step();
    }
  }
  t.wait_all(pushes);
  ctx.clock.stop(monotonic_seconds());

  // The workers hold the all-reduced tail; worker-0 reports it.
  FinalParameters out;
  if (ctx.uses_ring() && worker == 0) {
    size_t index = 0;
    for (const ParameterEntry& e : dump_layout(graph)) {
      if (e.layer < ctx.tail_end) {
        for (auto* p : net.parameters_of(e.layer)) {
          if (p->name.ends_with(".bias") == e.bias)
            out.emplace_back(index, backend.download(*p->value));
        }
      }
      ++index;
    }
  }
  return out;
}

}  // namespace ralp::cluster
