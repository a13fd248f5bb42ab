// The measured cost model: exact measured times for a layer signature and batch in the asked
// precision (those measured inside a training step when the profile has them, else those measured
// alone), else the roofline fitted to that precision's measurements, else the datasheet roofline
// in that precision.
#pragma once

#include <map>
#include <optional>
#include <utility>

#include "ralp/devices/roofline.hpp"

namespace ralp {

class MeasuredProfileModel final : public CostModel {
 public:
  explicit MeasuredProfileModel(const DeviceProfile& profile, Precision precision = Precision::fp32);

  [[nodiscard]] LayerCost estimate(const LayerKey& key) const override;
  [[nodiscard]] std::string describe() const override;

 private:
  std::string name_;
  Precision precision_;
  std::map<std::pair<std::string, int64_t>, MeasuredLayer> measured_;
  size_t in_step_ = 0;  // measured shapes with in-step times
  std::optional<Roofline> fitted_;
  Roofline datasheet_;
};

}  // namespace ralp
