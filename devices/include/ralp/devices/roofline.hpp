// Roofline cost model: each pass takes the longer of its FLOPs at the achieved compute rate and
// its bytes at the achieved memory rate, plus one kernel launch.
#pragma once

#include <map>

#include "ralp/devices/cost_model.hpp"

namespace ralp {

class Roofline final : public CostModel {
 public:
  struct Rates {
    std::map<LayerKind, FlopsPerSecond> flops;  // per kind; missing kinds use default_flops
    FlopsPerSecond default_flops;
    std::map<LayerKind, BytesPerSecond> bytes;  // per kind; missing kinds use default_bytes
    BytesPerSecond default_bytes;
    Seconds launch_overhead;
  };

  // `source` is what estimate() reports; `name` appears in describe().
  Roofline(Rates rates, CostSource source, std::string name);

  [[nodiscard]] LayerCost estimate(const LayerKey& key) const override;
  [[nodiscard]] std::string describe() const override;
  [[nodiscard]] Seconds pass_time(LayerKind kind, const PassWork& work) const;
  // Whether `kind` has its own compute rate rather than the default one.
  [[nodiscard]] bool has_kind(LayerKind kind) const { return rates_.flops.contains(kind); }

 private:
  Rates rates_;
  CostSource source_;
  std::string name_;
};

}  // namespace ralp
