// The cost model a device profile supports.
#include "ralp/devices/profile_cost_model.hpp"

#include "ralp/devices/datasheet.hpp"
#include "ralp/devices/measured_profile.hpp"
#include "ralp/devices/published_model.hpp"

namespace ralp {

std::unique_ptr<CostModel> make_cost_model(const DeviceProfile& profile, Precision precision) {
  if (profile.source == ProfileSource::measured) {
    return std::make_unique<MeasuredProfileModel>(profile, precision);
  }
  if (profile.source == ProfileSource::published) {
    return std::make_unique<PublishedGpuModel>(profile, precision);
  }
  return std::make_unique<Roofline>(make_datasheet_model(profile, precision));
}

}  // namespace ralp
