// One worker device alone, priced by the analytic step model.
#include "ralp/placement/baseline.hpp"

#include "ralp/placement/analytic.hpp"

namespace ralp::placement {

SingleDeviceBaseline single_device_baseline(const Scenario& scenario) {
  Scenario one = scenario;
  one.workers = 1;
  one.parameter_servers = 0;
  one.nodes = NodeSpec{};
  // No byte leaves the device, so the links only need to exist.
  one.platform = PlatformSpec{};
  one.platform.nic = LinkSpec{BytesPerSecond(1e9), Seconds(0.0)};
  one.shared_devices.clear();
  one.stragglers = StragglerSpec{};
  one.compression = CompressionSpec{};
  one.pcie_copies = false;
  StrategySpec alone;
  alone.kind = StrategyKind::allreduce;
  alone.label = "one device";
  one.strategies = {alone};
  const double step = estimate_strategy(one, alone, std::nullopt).step_time_s;
  SingleDeviceBaseline b;
  b.device = scenario.worker_device.name;
  b.batch = scenario.batch_per_worker;
  b.step_time_s = step;
  b.images_per_s = step > 0.0 ? static_cast<double>(scenario.batch_per_worker) / step : 0.0;
  return b;
}

}  // namespace ralp::placement
