// Building a strategy's step plan from the scenario and the cost models.
#include "ralp/schedule/step_plan.hpp"

#include "ralp/spec/nccl_plan.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "ralp/devices/profile_cost_model.hpp"
#include "ralp/spec/nccl_plan.hpp"
#include "ralp/spec/nodes.hpp"

namespace ralp::schedule {
namespace {

// Reading and writing a gradient once: fp16 and int8 encoding stream the gradient through
// memory; top-k selection makes several passes over it.
constexpr double kStreamingEncodeArrays = 2.0;
constexpr double kTopkEncodeArrays = 8.0;
// int8 carries one float scale per message; top-k sends a 32-bit index with each value.
constexpr int64_t kInt8ScaleBytes = 4;
constexpr double kTopkIndexBytesPerValue = 4.0;

ComputeSources sources_of(const DeviceProfile& profile, const CostModel& model,
                          const LayerGraph& graph, LayerId first, LayerId last, int64_t batch) {
  const ModelCost cost = model_cost(graph, model, batch, first, last);
  return {profile.name,   std::string(to_string(profile.source)), model.describe(),
          cost.measured, cost.fitted,                             cost.datasheet,
          cost.published};
}

Seconds head_time(const LayerGraph& graph, const CostModel& model, LayerId first, int64_t batch) {
  const ModelCost cost = model_cost(graph, model, batch, first, graph.size());
  return cost.forward + cost.backward;
}

int64_t whole_bytes(Bytes b) { return static_cast<int64_t>(std::llround(b.value())); }

BytesPerSecond encode_rate(const DeviceProfile& device, const CompressionSpec& spec) {
  if (spec.encode_rate) return *spec.encode_rate;
  const BytesPerSecond achieved = device.memory_bandwidth * device.memory_efficiency;
  return achieved /
         (spec.kind == CompressionKind::topk ? kTopkEncodeArrays : kStreamingEncodeArrays);
}

// The network model's latency and bandwidth factors: SimGrid's TCP model (LV08) scales latency
// by 13.01 and bandwidth by 0.97.
struct NetworkFactors {
  double latency = 1.0;
  double bandwidth = 1.0;
};
NetworkFactors network_factors(const Scenario& scenario) {
  constexpr double kTcpLatencyFactor = 13.01;
  constexpr double kTcpBandwidthFactor = 0.97;
  switch (scenario.network_model.kind) {
    case NetworkModelKind::tcp:
      return {kTcpLatencyFactor, kTcpBandwidthFactor};
    case NetworkModelKind::ideal:
      return {};
    case NetworkModelKind::factors:
      return {scenario.network_model.latency_factor, scenario.network_model.bandwidth_factor};
  }
  return {};
}

}  // namespace

double StepPlan::ring_seconds(int64_t bytes) const {
  if (workers < 2) return 0.0;
  if (nccl) return nccl_allreduce_choice(*nccl, compressed(bytes), nccl_forced).time(compressed(bytes)).value();
  if (ring_bandwidth.value() <= 0.0) return 0.0;
  const double chunk = std::ceil(static_cast<double>(compressed(bytes)) / static_cast<double>(workers));
  // Under the strategy's transport (devices/transport.hpp) a hop between nodes reaches its link
  // share, and no hop is faster than a member's CPU sends its chunk and receives the previous
  // member's (a message each way).
  const Transport& t = strategy.transport;
  const double share = devices_per_node < workers ? t.link_share : 1.0;
  const double wire = ring_hop_latency.value() + chunk / (ring_bandwidth.value() * share);
  const double cpu = 2.0 * (t.message_s + t.s_per_byte * chunk);
  return 2.0 * static_cast<double>(workers - 1) * std::max(wire, cpu);
}

double StepPlan::head_pass_seconds(int64_t k) const {
  const double accumulate =
      k > 0 ? static_cast<double>(head_param_bytes) / ps_sum_rate.value() : 0.0;
  return head_micro_batch.value() + accumulate;
}

int64_t StepPlan::compressed(int64_t bytes) const {
  switch (compression) {
    case CompressionKind::none:
      return bytes;
    case CompressionKind::fp16:
      return (bytes + 1) / 2;
    case CompressionKind::int8:
      return (bytes + 3) / 4 + kInt8ScaleBytes;
    case CompressionKind::topk: {
      const double values = std::ceil(topk_ratio * static_cast<double>(bytes) / kBytesPerFloat);
      return static_cast<int64_t>(values * (kBytesPerFloat + kTopkIndexBytesPerValue));
    }
  }
  return bytes;
}

BoundaryBytes boundary_bytes(const LayerGraph& graph, LayerId cut, int64_t batch,
                             Precision precision) {
  const CutInfo info = graph.describe_cut(cut);
  const double scale = activation_bytes(precision) / kBytesPerFloat;
  const auto per_image = [&](LayerId id) {
    return whole_bytes(graph.layer(id).activation_bytes_per_image() * scale) * batch;
  };
  BoundaryBytes out;
  for (const LayerId id : info.boundary) {
    out.sent += per_image(id);
    const Layer& layer = graph.layer(id);
    if (layer.params() > 0 || layer.needs_input_gradient) out.returned += per_image(id);
  }
  if (info.boundary_has_model_input) {
    out.sent += whole_bytes(Bytes(static_cast<double>(graph.input_shape().elements()) *
                                  activation_bytes(precision) * static_cast<double>(batch)));
  }
  out.sent += kLabelBytes * batch;
  return out;
}

StepPlan make_step_plan(const Scenario& scenario, const StrategySpec& strategy,
                        std::optional<LayerId> cut) {
  const LayerGraph& graph = scenario.model;
  const bool wants_cut =
      strategy.kind == StrategyKind::ralp || strategy.kind == StrategyKind::hybrid;
  if (wants_cut && !cut) throw std::invalid_argument("ralp and hybrid plans need a cut");
  require_modelled_nodes(scenario);
  if (!wants_cut) cut.reset();

  StepPlan plan;
  plan.strategy = strategy;
  plan.workers = scenario.workers;
  plan.shards = strategy.kind == StrategyKind::allreduce ? 0 : scenario.parameter_servers;
  plan.batch = scenario.batch_per_worker;
  plan.devices_per_node = scenario.nodes.devices_per_node;
  plan.cut = cut;
  plan.tail_end = cut.value_or(graph.size());

  const auto worker_model = make_cost_model(scenario.worker_device, scenario.precision);
  for (LayerId id = 0; id < plan.tail_end; ++id) {
    const LayerCost cost = worker_model->estimate(make_layer_key(graph.layer(id), plan.batch));
    plan.worker.push_back({cost.forward, cost.backward_data, cost.backward_weight});
    plan.layer_names.push_back(graph.layer(id).name());
  }
  plan.worker_sources =
      sources_of(scenario.worker_device, *worker_model, graph, 0, plan.tail_end, plan.batch);

  for (LayerId id = 0; id < plan.tail_end; ++id) {
    const Layer& layer = graph.layer(id);
    plan.tail_param_bytes += whole_bytes(layer.param_bytes());
    if (plan.uses_ring()) {
      if (layer.weight_params > 0) plan.tensors.push_back({id, whole_bytes(layer.weight_bytes())});
      if (layer.bias_params > 0) plan.tensors.push_back({id, whole_bytes(layer.bias_bytes())});
    }
  }

  // Gradients are summed in FP32 whatever the precision; the update also writes 16-bit copies and
  // (fp16) unscales the gradients.
  const double update_factor = update_cost_factor(scenario.precision);
  plan.worker_update_rate = scenario.worker_device.update_rate / update_factor;
  plan.worker_sum_rate = scenario.worker_device.gradient_sum_rate;
  plan.ps_sum_rate = scenario.ps_device.gradient_sum_rate;
  plan.ps_update_rate = scenario.ps_device.update_rate / update_factor;
  if (scenario.pcie_copies && scenario.worker_device.kind == DeviceKind::gpu) {
    plan.worker_pcie = scenario.worker_device.pcie_bandwidth;
  }
  if (scenario.pcie_copies && scenario.ps_device.kind == DeviceKind::gpu) {
    plan.ps_pcie = scenario.ps_device.pcie_bandwidth;
  }
  // A hop between two workers crosses both NICs.
  const LinkSpec& nic = scenario.platform.worker_nic.value_or(scenario.platform.nic);
  const auto [latency_factor, bandwidth_factor] = network_factors(scenario);
  plan.ring_bandwidth = BytesPerSecond(nic.bandwidth.value() * bandwidth_factor);
  plan.ring_hop_latency = Seconds(2.0 * nic.latency.value() * latency_factor);
  if (uses_nccl_model(scenario, strategy)) {
    plan.nccl = nccl_machine_of(scenario);
    plan.nccl_forced = forced_nccl_algorithm(strategy);
  }
  plan.compression = scenario.compression.kind;
  plan.topk_ratio = scenario.compression.topk_ratio;
  plan.worker_encode_rate = encode_rate(scenario.worker_device, scenario.compression);
  plan.ps_encode_rate = encode_rate(scenario.ps_device, scenario.compression);

  if (plan.has_head()) {
    const auto ps_model = make_cost_model(scenario.ps_device, scenario.precision);
    if (plan.gathers_boundaries()) plan.micro_batch_devices = plan.devices_per_node;
    plan.head_micro_batch =
        head_time(graph, *ps_model, *cut, plan.batch * plan.micro_batch_devices);
    plan.head_full_batch = head_time(graph, *ps_model, *cut, plan.batch * plan.workers);
    for (LayerId id = *cut; id < graph.size(); ++id) {
      plan.head_param_bytes += whole_bytes(graph.layer(id).param_bytes());
    }
    const BoundaryBytes crossing = boundary_bytes(graph, *cut, plan.batch, scenario.precision);
    plan.boundary_bytes = crossing.sent;
    plan.activation_grad_bytes = crossing.returned;
    const int64_t head_batch = strategy.head_mode == HeadMode::per_worker
                                   ? plan.batch * plan.micro_batch_devices
                                   : plan.batch * plan.workers;
    plan.ps_sources = sources_of(scenario.ps_device, *ps_model, graph, *cut, graph.size(),
                                 head_batch);
  } else if (plan.uses_shards()) {
    // The PS only sums and applies gradients; record its profile for the outputs.
    const auto ps_model = make_cost_model(scenario.ps_device, scenario.precision);
    ComputeSources s;
    s.profile = scenario.ps_device.name;
    s.profile_source = std::string(to_string(scenario.ps_device.source));
    s.cost_model = ps_model->describe();
    plan.ps_sources = s;
  }
  place_shards(scenario, plan);
  return plan;
}

ShardLoadModel shard_load_model(const Scenario& scenario, const StepPlan& plan) {
  const double w = static_cast<double>(plan.workers);
  const double header = static_cast<double>(kHeaderBytes);
  const LinkSpec& nic = scenario.platform.ps_nic.value_or(scenario.platform.nic);
  const double link = network_factors(scenario).bandwidth * nic.bandwidth.value();
  const auto pcie = [rate = plan.ps_pcie](double bytes) {
    return rate ? bytes / rate->value() : 0.0;
  };
  ShardLoadModel model;
  model.base_s.assign(static_cast<size_t>(std::max<int64_t>(plan.shards, 1)), 0.0);
  if (plan.has_head()) {
    const double in = static_cast<double>(plan.boundary_bytes);
    const double out = static_cast<double>(plan.activation_grad_bytes);
    double passes = plan.head_full_batch.value();
    if (plan.strategy.head_mode == HeadMode::per_worker) {
      passes = 0.0;
      for (int64_t k = 0; k < plan.micro_batches(); ++k) passes += plan.head_pass_seconds(k);
    }
    model.base_s[0] = w * (in + header) / link + w * (out + header) / link + pcie(w * (in + out)) +
                      passes + static_cast<double>(plan.head_param_bytes) / plan.ps_update_rate.value();
  }
  const bool compressed = plan.compression != CompressionKind::none;
  const double sum_rate = plan.ps_sum_rate.value();
  const double update_rate = plan.ps_update_rate.value();
  const double decode_rate = plan.ps_encode_rate.value();
  // What compressed() reads, copied so that the model outlives the caller's plan.
  StepPlan codec;
  codec.compression = plan.compression;
  codec.topk_ratio = plan.topk_ratio;
  model.group_s = [w, header, link, sum_rate, update_rate, decode_rate, compressed, pcie,
                   codec](int64_t bytes) {
    const double b = static_cast<double>(bytes);
    const double wire = static_cast<double>(codec.compressed(bytes));
    double t = w * (b + header) / link + w * (wire + header) / link + pcie(b + w * wire) +
               w * b / sum_rate + b / update_rate;
    if (compressed) t += w * b / decode_rate;
    return t;
  };
  return model;
}

void place_shards(const Scenario& scenario, StepPlan& plan) {
  plan.groups_by_layer.assign(plan.tail_end, {});
  plan.shard_plan = {};
  if (!plan.uses_shards()) return;
  const LayerGraph& graph = scenario.model;
  if (plan.strategy.sharding == ShardPlacement::balanced) {
    const ShardLoadModel load = shard_load_model(scenario, plan);
    plan.shard_plan = make_shard_plan(graph, plan.tail_end, plan.shards, plan.strategy.sharding, &load);
  } else {
    plan.shard_plan = make_shard_plan(graph, plan.tail_end, plan.shards, plan.strategy.sharding);
  }
  for (const VariableGroup& g : plan.shard_plan.groups) plan.groups_by_layer[g.layer].push_back(g);
}

}  // namespace ralp::schedule
