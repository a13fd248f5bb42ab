// Lookup of measured layer times, with the fitted and datasheet rooflines behind it.
#include "ralp/devices/measured_profile.hpp"

#include "ralp/devices/datasheet.hpp"

namespace ralp {
namespace {

std::optional<Roofline> make_fitted(const DeviceProfile& profile, Precision precision) {
  const auto other = profile.precision_fitted.find(precision);
  const std::map<LayerKind, FittedRates>& fitted =
      precision == Precision::fp32 || other == profile.precision_fitted.end() ? profile.fitted
                                                                             : other->second;
  if (precision != Precision::fp32 && other == profile.precision_fitted.end()) return std::nullopt;
  if (fitted.empty()) return std::nullopt;
  Roofline::Rates rates;
  // Only fitted kinds are estimated here (MeasuredProfileModel checks has_kind first).
  rates.default_flops = profile.peak_flops * profile.default_efficiency;
  rates.default_bytes = profile.memory_bandwidth * profile.memory_efficiency;
  for (const auto& [kind, fit] : fitted) {
    rates.flops[kind] = fit.flops;
    rates.bytes[kind] = fit.bytes;
  }
  rates.launch_overhead = profile.fitted_launch_overhead.value_or(profile.launch_overhead);
  const std::string in = precision == Precision::fp32 ? "" : " in " + std::string(to_string(precision));
  return Roofline(std::move(rates), CostSource::fitted, "fitted roofline of " + profile.name + in);
}

}  // namespace

MeasuredProfileModel::MeasuredProfileModel(const DeviceProfile& profile, Precision precision)
    : name_(profile.name),
      precision_(precision),
      fitted_(make_fitted(profile, precision)),
      datasheet_(make_datasheet_model(profile, precision)) {
  for (const auto& m : profile.measured) {
    if (m.precision != precision) continue;
    measured_[{m.signature, m.batch}] = m;
    if (m.in_step) ++in_step_;
  }
}

LayerCost MeasuredProfileModel::estimate(const LayerKey& key) const {
  if (const auto it = measured_.find({key.signature, key.batch}); it != measured_.end()) {
    const MeasuredLayer& m = it->second;
    const auto when = [](const PassWork& work, Seconds t) {
      return work.flops.value() > 0.0 || work.bytes.value() > 0.0 ? t : Seconds(0.0);
    };
    // Inside a step, where the prediction applies, before alone.
    const InStepTimes t = m.in_step.value_or(InStepTimes{m.forward, m.backward_data, m.backward_weight});
    LayerCost cost;
    cost.forward = when(key.work.forward, t.forward);
    cost.backward_data = when(key.work.backward_data, t.backward_data);
    cost.backward_weight = when(key.work.backward_weight, t.backward_weight);
    cost.source = CostSource::measured;
    return cost;
  }
  if (fitted_ && fitted_->has_kind(key.kind)) return fitted_->estimate(key);
  return datasheet_.estimate(key);
}

std::string MeasuredProfileModel::describe() const {
  const std::string in_step =
      in_step_ == 0 ? ""
                    : ", " + std::to_string(in_step_) +
                          " of them timed inside a training step, and those times used";
  const std::string in = precision_ == Precision::fp32 ? "" : " " + std::string(to_string(precision_));
  return "measured profile " + name_ + " (" + std::to_string(measured_.size()) + in + " layer shapes" +
         in_step + "; fitted model" + (fitted_ ? "" : " absent") + "; datasheet fallback)";
}

}  // namespace ralp
