// The datasheet roofline of a device profile.
#include "ralp/devices/datasheet.hpp"

namespace ralp {

bool runs_products(LayerKind kind) {
  return kind == LayerKind::conv2d || kind == LayerKind::fully_connected;
}

Roofline make_datasheet_model(const DeviceProfile& profile, Precision precision) {
  const FlopsPerSecond products = precision_peak(profile, precision);
  Roofline::Rates rates;
  rates.default_flops = profile.peak_flops * profile.default_efficiency;
  for (const LayerKind kind : all_layer_kinds()) {
    if (!runs_products(kind)) continue;
    const auto it = profile.compute_efficiency.find(kind);
    rates.flops[kind] =
        products * (it == profile.compute_efficiency.end() ? profile.default_efficiency : it->second);
  }
  for (const auto& [kind, efficiency] : profile.compute_efficiency) {
    if (!runs_products(kind)) rates.flops[kind] = profile.peak_flops * efficiency;
  }
  // A layer's work counts 4-byte values; 16-bit activations move as many values in half the bytes.
  rates.default_bytes = profile.memory_bandwidth * profile.memory_efficiency *
                        (kBytesPerFloat / activation_bytes(precision));
  rates.launch_overhead = profile.launch_overhead;
  const std::string in = precision == Precision::fp32 ? "" : " in " + std::string(to_string(precision));
  return Roofline(std::move(rates), CostSource::datasheet,
                  "datasheet roofline of " + profile.name + in);
}

}  // namespace ralp
