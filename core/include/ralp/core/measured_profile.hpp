// The measured cost model: exact measured times for a layer signature and batch, else the roofline
// fitted to the measurements, else the datasheet roofline.
#pragma once

#include <map>
#include <optional>
#include <utility>

#include "ralp/core/roofline.hpp"

namespace ralp {

class MeasuredProfileModel final : public CostModel {
 public:
  explicit MeasuredProfileModel(const DeviceProfile& profile);

  [[nodiscard]] LayerCost estimate(const LayerKey& key) const override;
  [[nodiscard]] std::string describe() const override;

 private:
  std::string name_;
  std::map<std::pair<std::string, int64_t>, MeasuredLayer> measured_;
  std::optional<Roofline> fitted_;
  Roofline datasheet_;
};

}  // namespace ralp
