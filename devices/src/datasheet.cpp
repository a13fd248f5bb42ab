// The datasheet roofline of a device profile.
#include "ralp/devices/datasheet.hpp"

namespace ralp {

Roofline make_datasheet_model(const DeviceProfile& profile) {
  Roofline::Rates rates;
  rates.default_flops = profile.peak_flops * profile.default_efficiency;
  for (const auto& [kind, efficiency] : profile.compute_efficiency) {
    rates.flops[kind] = profile.peak_flops * efficiency;
  }
  rates.default_bytes = profile.memory_bandwidth * profile.memory_efficiency;
  rates.launch_overhead = profile.launch_overhead;
  return Roofline(std::move(rates), CostSource::datasheet,
                  "datasheet roofline of " + profile.name);
}

}  // namespace ralp
