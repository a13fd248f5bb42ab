// Step plans of every cut from one set of cost estimates.
#include "ralp/placement/plans.hpp"

#include <cmath>

namespace ralp::placement {
namespace {

int64_t whole_bytes(Bytes b) { return static_cast<int64_t>(std::llround(b.value())); }

}  // namespace

CutPlans::CutPlans(const Scenario& scenario, const StrategySpec& strategy)
    : scenario_(scenario),
      longest_(schedule::make_step_plan(scenario, strategy, scenario.model.cut_points().back())) {
  const auto ps_model = make_cost_model(scenario.ps_device);
  head_micro_batch_ = model_cost(scenario.model, *ps_model, longest_.batch).layers;
  head_full_batch_ = model_cost(scenario.model, *ps_model, longest_.batch * longest_.workers).layers;
}

schedule::StepPlan CutPlans::plan_at(LayerId cut) const {
  const LayerGraph& graph = scenario_.model;
  schedule::StepPlan plan;
  const schedule::StepPlan& l = longest_;
  plan.strategy = l.strategy;
  plan.workers = l.workers;
  plan.shards = l.shards;
  plan.batch = l.batch;
  plan.tail_end = cut;
  plan.cut = cut;
  plan.layer_names.assign(l.layer_names.begin(), l.layer_names.begin() + static_cast<std::ptrdiff_t>(cut));
  plan.worker.assign(l.worker.begin(), l.worker.begin() + static_cast<std::ptrdiff_t>(cut));
  // Round-robin and greedy assign shards in model order, so a shorter tail's groups are the
  // longer tail's first ones.
  plan.groups_by_layer.assign(l.groups_by_layer.begin(),
                              l.groups_by_layer.begin() + static_cast<std::ptrdiff_t>(cut));
  for (const schedule::Tensor& t : l.tensors) {
    if (t.layer < cut) plan.tensors.push_back(t);
  }
  for (LayerId id = 0; id < cut; ++id) plan.tail_param_bytes += whole_bytes(graph.layer(id).param_bytes());
  plan.worker_update_rate = l.worker_update_rate;
  plan.worker_sum_rate = l.worker_sum_rate;
  plan.ps_sum_rate = l.ps_sum_rate;
  plan.ps_update_rate = l.ps_update_rate;
  plan.worker_pcie = l.worker_pcie;
  plan.ps_pcie = l.ps_pcie;
  plan.compression = l.compression;
  plan.topk_ratio = l.topk_ratio;
  plan.worker_encode_rate = l.worker_encode_rate;
  plan.ps_encode_rate = l.ps_encode_rate;
  plan.ring_bandwidth = l.ring_bandwidth;
  plan.ring_hop_latency = l.ring_hop_latency;
  plan.worker_sources = l.worker_sources;
  plan.ps_sources = l.ps_sources;

  // The head, summed in layer order as make_step_plan sums it.
  Seconds forward(0.0);
  Seconds backward(0.0);
  Seconds forward_all(0.0);
  Seconds backward_all(0.0);
  for (LayerId id = cut; id < graph.size(); ++id) {
    forward += head_micro_batch_[id].forward;
    backward += head_micro_batch_[id].backward();
    forward_all += head_full_batch_[id].forward;
    backward_all += head_full_batch_[id].backward();
    plan.head_param_bytes += whole_bytes(graph.layer(id).param_bytes());
  }
  plan.head_micro_batch = forward + backward;
  plan.head_full_batch = forward_all + backward_all;
  const schedule::BoundaryBytes crossing = schedule::boundary_bytes(graph, cut, plan.batch);
  plan.boundary_bytes = crossing.sent;
  plan.activation_grad_bytes = crossing.returned;
  // A balanced assignment depends on the tail and on the head's load on ps-0: placed again.
  if (plan.strategy.sharding == ShardPlacement::balanced) schedule::place_shards(scenario_, plan);
  return plan;
}

}  // namespace ralp::placement
