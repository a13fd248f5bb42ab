// Roofline estimates of one layer's passes.
#include "ralp/devices/roofline.hpp"

#include <algorithm>

namespace ralp {

Roofline::Roofline(Rates rates, CostSource source, std::string name)
    : rates_(std::move(rates)), source_(source), name_(std::move(name)) {}

Seconds Roofline::pass_time(LayerKind kind, const PassWork& work) const {
  if (work.flops.value() <= 0.0 && work.bytes.value() <= 0.0) return Seconds(0.0);
  const auto f = rates_.flops.find(kind);
  const auto b = rates_.bytes.find(kind);
  const FlopsPerSecond flops_rate = f != rates_.flops.end() ? f->second : rates_.default_flops;
  const BytesPerSecond bytes_rate = b != rates_.bytes.end() ? b->second : rates_.default_bytes;
  const Seconds compute = work.flops / flops_rate;
  const Seconds memory = work.bytes / bytes_rate;
  return std::max(compute, memory) + rates_.launch_overhead;
}

LayerCost Roofline::estimate(const LayerKey& key) const {
  LayerCost cost;
  cost.forward = pass_time(key.kind, key.work.forward);
  cost.backward_data = pass_time(key.kind, key.work.backward_data);
  cost.backward_weight = pass_time(key.kind, key.work.backward_weight);
  cost.source = source_;
  return cost;
}

std::string Roofline::describe() const { return name_; }

}  // namespace ralp
