// Step plans of every cut from one set of cost estimates.
#include "ralp/placement/plans.hpp"

#include <cmath>

#include "ralp/devices/profile_cost_model.hpp"

namespace ralp::placement {
namespace {

int64_t whole_bytes(Bytes b) { return static_cast<int64_t>(std::llround(b.value())); }

// schedule::boundary_bytes of the model in the order `order` cut at `cut`, read on the model in
// file order: the tail layers a head layer reads, the images when a head layer reads the model
// input, the labels; back, the gradients of the boundary layers that need one.
schedule::BoundaryBytes head_boundary_bytes(const LayerGraph& model,
                                            const std::vector<LayerId>& order, LayerId cut,
                                            int64_t batch, Precision precision) {
  std::vector<bool> in_head(model.size(), false);
  for (LayerId i = cut; i < order.size(); ++i) in_head[order[i]] = true;
  std::vector<bool> boundary(model.size(), false);
  bool reads_input = false;
  for (LayerId id = 0; id < model.size(); ++id) {
    if (!in_head[id]) continue;
    reads_input = reads_input || model.layer(id).reads_model_input;
    for (const LayerId pred : model.predecessors(id)) {
      if (!in_head[pred]) boundary[pred] = true;
    }
  }
  schedule::BoundaryBytes out;
  for (LayerId id = 0; id < model.size(); ++id) {
    if (!boundary[id]) continue;
    const Layer& layer = model.layer(id);
    const int64_t bytes =
        whole_bytes(layer.activation_bytes_per_image() * (activation_bytes(precision) / kBytesPerFloat)) *
        batch;
    out.sent += bytes;
    if (layer.params() > 0 || layer.needs_input_gradient) out.returned += bytes;
  }
  if (reads_input) {
    out.sent += whole_bytes(Bytes(static_cast<double>(model.input_shape().elements()) *
                                  activation_bytes(precision) * static_cast<double>(batch)));
  }
  out.sent += schedule::kLabelBytes * batch;
  return out;
}

}  // namespace

CutPlans::CutPlans(const Scenario& scenario, const StrategySpec& strategy)
    : scenario_(scenario),
      reordered_(scenario),
      longest_(schedule::make_step_plan(scenario, strategy, scenario.model.cut_points().back())) {
  const auto ps_model = make_cost_model(scenario.ps_device, scenario.precision);
  head_micro_batch_ = model_cost(scenario.model, *ps_model, longest_.batch).layers;
  head_full_batch_ = model_cost(scenario.model, *ps_model, longest_.batch * longest_.workers).layers;
}

schedule::StepPlan CutPlans::plan_at(LayerId cut) const {
  std::vector<LayerId> order(scenario_.model.size());
  for (LayerId id = 0; id < order.size(); ++id) order[id] = id;
  return plan_of(order, cut, &scenario_.model, true);
}

schedule::StepPlan CutPlans::plan_at(const Head& head) const {
  if (head.is_suffix()) return plan_at(head.cut());
  // Only a tail on several shards, or balanced, needs the model in the head's order: to place
  // its variables.
  const bool place = longest_.uses_shards() &&
                     (longest_.shards > 1 || longest_.strategy.sharding == ShardPlacement::balanced);
  if (!place) return plan_of(head_order(head), head.cut(), nullptr, false);
  reordered_.model = model_for_head(scenario_.model, head);
  return plan_of(head_order(head), head.cut(), &reordered_.model, false);
}

schedule::StepPlan CutPlans::plan_of(const std::vector<LayerId>& order, LayerId cut,
                                     const LayerGraph* graph, bool prefix_groups) const {
  const LayerGraph& model = scenario_.model;
  schedule::StepPlan plan;
  const schedule::StepPlan& l = longest_;
  plan.strategy = l.strategy;
  plan.workers = l.workers;
  plan.shards = l.shards;
  plan.batch = l.batch;
  plan.tail_end = cut;
  plan.cut = cut;
  // Every tail leaves out the loss, which the longest tail holds all but.
  std::vector<LayerId> new_id(model.size(), model.size());
  for (LayerId i = 0; i < cut; ++i) {
    const LayerId id = order[i];
    new_id[id] = i;
    plan.layer_names.push_back(l.layer_names[id]);
    plan.worker.push_back(l.worker[id]);
    plan.tail_param_bytes += whole_bytes(model.layer(id).param_bytes());
  }
  // Round-robin and greedy assign shards in model order, so a shorter tail's groups are the
  // longer tail's first ones.
  if (prefix_groups) {
    plan.groups_by_layer.assign(l.groups_by_layer.begin(),
                                l.groups_by_layer.begin() + static_cast<std::ptrdiff_t>(cut));
  }
  // Tensors in model order: the tail keeps the file's order.
  for (const schedule::Tensor& t : l.tensors) {
    if (new_id[t.layer] < cut) plan.tensors.push_back({new_id[t.layer], t.bytes});
  }
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
  plan.nccl = l.nccl;
  plan.nccl_forced = l.nccl_forced;
  plan.worker_sources = l.worker_sources;
  plan.ps_sources = l.ps_sources;

  // The head, summed in its order as make_step_plan sums it.
  Seconds forward(0.0);
  Seconds backward(0.0);
  Seconds forward_all(0.0);
  Seconds backward_all(0.0);
  for (LayerId i = cut; i < order.size(); ++i) {
    const LayerId id = order[i];
    forward += head_micro_batch_[id].forward;
    backward += head_micro_batch_[id].backward();
    forward_all += head_full_batch_[id].forward;
    backward_all += head_full_batch_[id].backward();
    plan.head_param_bytes += whole_bytes(model.layer(id).param_bytes());
  }
  plan.head_micro_batch = forward + backward;
  plan.head_full_batch = forward_all + backward_all;
  const schedule::BoundaryBytes crossing =
      graph != nullptr ? schedule::boundary_bytes(*graph, cut, plan.batch, scenario_.precision)
                       : head_boundary_bytes(model, order, cut, plan.batch, scenario_.precision);
  plan.boundary_bytes = crossing.sent;
  plan.activation_grad_bytes = crossing.returned;
  if (graph == nullptr) {
    // One shard and round-robin or greedy: each tail layer's variables in one group on ps-0,
    // numbered in the tail's order, as place_shards numbers them.
    plan.groups_by_layer.assign(cut, {});
    if (plan.uses_shards()) {
      size_t next = 0;
      for (LayerId i = 0; i < cut; ++i) {
        const Layer& layer = model.layer(order[i]);
        VariableGroup group{i, 0, {}, 0};
        for (const int64_t elements : {layer.weight_params, layer.bias_params}) {
          if (elements == 0) continue;
          group.variables.push_back(next++);
          group.bytes += elements * static_cast<int64_t>(kBytesPerFloat);
        }
        if (!group.variables.empty()) plan.groups_by_layer[i].push_back(std::move(group));
      }
    }
  } else if (!prefix_groups || plan.strategy.sharding == ShardPlacement::balanced) {
    // A balanced assignment depends on the tail and on the head's load on ps-0, and a reordered
    // tail's round-robin or greedy one on its order: placed again.
    schedule::place_shards(graph == &model ? scenario_ : reordered_, plan);
  }
  return plan;
}

}  // namespace ralp::placement
