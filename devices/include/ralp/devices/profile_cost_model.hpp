// The cost model a device profile supports, chosen by where the profile came from.
#pragma once

#include <memory>

#include "ralp/devices/cost_model.hpp"
#include "ralp/devices/device_profile.hpp"

namespace ralp {

// The cost model a profile supports: measured times, then the fitted model, then the datasheet
// roofline for measured profiles; the GPU kernel model for published profiles; the datasheet
// roofline alone for datasheet profiles; each in `precision`.
std::unique_ptr<CostModel> make_cost_model(const DeviceProfile& profile,
                                           Precision precision = Precision::fp32);

}  // namespace ralp
