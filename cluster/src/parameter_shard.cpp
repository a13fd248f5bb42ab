// Parameter-server shards: pulls, pushes, ordered sums and updates.
#include "parameter_shard.hpp"

#include "ralp/kernels/network.hpp"

namespace ralp::cluster {

ParameterShard::ParameterShard(StrategyContext& context, int64_t shard)
    : ctx_(context), shard_(shard) {
  kernels::Backend& backend = ctx_.backend;
  const LayerGraph& graph = ctx_.scenario.model;
  const auto workers = static_cast<size_t>(ctx_.workers());
  std::vector<Variable*> by_plan_index(ctx_.shards.variables.size(), nullptr);
  for (size_t i = 0; i < ctx_.shards.variables.size(); ++i) {
    const ralp::Variable& v = ctx_.shards.variables[i];
    if (v.shard != shard) continue;
    auto var = std::make_unique<Variable>();
    var->plan_index = i;
    const kernels::TensorDesc desc{{v.elements}};
    // The same initial values as every worker's network: a pure function of seed, name, index.
    std::vector<float> init(static_cast<size_t>(v.elements));
    for (int64_t e = 0; e < v.elements; ++e) {
      init[static_cast<size_t>(e)] =
          kernels::initial_parameter(ctx_.scenario.seed, graph.layer(v.layer), v.bias, e);
    }
    var->value = backend.upload(desc, init);
    var->velocity = backend.allocate(desc);
    backend.fill(var->velocity, 0.0F);
    var->sum = backend.allocate(desc);
    var->value_view = std::make_unique<HostView>(backend, var->value);
    var->gradients.reserve(workers);
    for (size_t w = 0; w < workers; ++w) var->gradients.push_back(backend.allocate(desc));
    for (size_t w = 0; w < workers; ++w) {
      var->gradient_views.push_back(std::make_unique<HostView>(backend, var->gradients[w]));
    }
    by_plan_index[i] = var.get();
    variables_.push_back(std::move(var));
  }
  for (const VariableGroup& g : ctx_.shards.groups) {
    if (g.shard != shard) continue;
    Group group;
    group.plan = &g;
    for (const size_t i : g.variables) group.variables.push_back(by_plan_index[i]);
    groups_.push_back(std::move(group));
  }
}

void ParameterShard::begin_step(int64_t step) {
  step_ = step;
  updated_ = 0;
  Transport& t = ctx_.transport;
  const Roles& roles = ctx_.roles();
  const int64_t workers = ctx_.workers();
  // Pushes arrive in backward order on each worker's connection; post them so.
  for (auto it = groups_.rbegin(); it != groups_.rend(); ++it) {
    Group& g = *it;
    g.summed = 0;
    g.pushes.assign(static_cast<size_t>(workers), 0);
    for (int64_t w = 0; w < workers; ++w) {
      std::vector<Piece> pieces;
      for (Variable* v : g.variables)
        pieces.push_back(v->gradient_views[static_cast<size_t>(w)]->piece());
      g.pushes[static_cast<size_t>(w)] =
          t.receive(roles.worker_rank(w), MessageKind::push, step, std::move(pieces));
    }
  }
  if (groups_.empty()) return;
  ctx_.faults.at("pull", step);
  PhaseScope sending(ctx_.clock, Phase::send);
  for (Group& g : groups_) {
    for (Variable* v : g.variables) v->value_view->download();
    g.pulls.assign(static_cast<size_t>(workers), 0);
    for (int64_t w = 0; w < workers; ++w) {
      std::vector<Piece> pieces;
      for (Variable* v : g.variables) pieces.push_back(v->value_view->piece());
      g.pulls[static_cast<size_t>(w)] =
          t.send(roles.worker_rank(w), MessageKind::pull, step, static_cast<int64_t>(g.plan->layer),
                 std::move(pieces));
    }
    t.progress();
  }
}

bool ParameterShard::has_work() const {
  for (const Group& g : groups_) {
    if (g.summed < static_cast<int64_t>(g.pushes.size()) &&
        ctx_.transport.done(g.pushes[static_cast<size_t>(g.summed)])) {
      return true;
    }
  }
  return false;
}

void ParameterShard::advance() {
  Transport& t = ctx_.transport;
  kernels::Backend& backend = ctx_.backend;
  const int64_t workers = ctx_.workers();
  for (Group& g : groups_) {
    while (g.summed < workers && t.done(g.pushes[static_cast<size_t>(g.summed)])) {
      const auto w = static_cast<size_t>(g.summed);
      t.release(g.pushes[w]);
      ctx_.faults.at("aggregate", step_);
      PhaseScope aggregating(ctx_.clock, Phase::aggregation);
      for (Variable* v : g.variables) {
        v->gradient_views[w]->upload();
        if (w == 0) {
          backend.copy(v->gradients[0], v->sum);
        } else {
          backend.add_into(v->sum, v->gradients[w]);
        }
      }
      ++g.summed;
    }
    if (g.summed != workers || g.pulls.empty()) continue;
    // The pulls read the values in place: they must be out before the update changes them.
    t.wait_all(g.pulls);
    ctx_.faults.at("update", step_);
    {
      PhaseScope updating(ctx_.clock, Phase::aggregation);
      const float scale = 1.0F / static_cast<float>(workers);
      for (Variable* v : g.variables) {
        backend.sgd_update(v->value, v->sum, v->velocity, ctx_.sgd, scale);
      }
      backend.synchronize();
    }
    ++updated_;
    updated_at_ = t.now_reference();
  }
}

std::vector<float> ParameterShard::values(size_t variable) {
  for (auto& v : variables_) {
    if (v->plan_index == variable) return ctx_.backend.download(v->value);
  }
  throw std::out_of_range("shard " + std::to_string(shard_) + " does not hold variable " +
                          std::to_string(variable));
}

}  // namespace ralp::cluster
