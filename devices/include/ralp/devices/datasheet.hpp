// The datasheet cost model: a roofline from a profile's peak FLOP/s, memory bandwidth and
// efficiency factors. The fallback of last resort, and the only model of datasheet profiles.
#pragma once

#include "ralp/devices/roofline.hpp"

namespace ralp {

Roofline make_datasheet_model(const DeviceProfile& profile);

}  // namespace ralp
