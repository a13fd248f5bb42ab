// Fitting a per-kind roofline (achieved FLOP/s and bytes/s) to measured layer passes, for the
// layer shapes and batch sizes a profile did not measure.
#pragma once

#include <map>
#include <vector>

#include "ralp/devices/device_profile.hpp"

namespace ralp::calibrate {

// One measured pass: its work (core's FLOP and byte counts) and median time.
struct FitPoint {
  LayerKind kind = LayerKind::relu;
  PassWork work;
  Seconds time;
};

// Per kind, with t' = time minus the launch overhead (at least a tenth of the time):
//   the aggregate rates sum(F) / sum(t') and sum(B) / sum(t') are the kind's achieved rates;
//   whichever of the two alone predicts the points better (median relative error) is the
//   binding one, and the other is set to the best single point's rate, a ceiling that binds only
//   for a shape of unusually low (or high) arithmetic intensity.
// Kinds whose passes have no FLOPs get a FLOP rate equal to their byte rate per second: it never
// matters, since their FLOP term is zero. Points with zero time or zero work are ignored; a kind
// without points gets no entry.
std::map<LayerKind, FittedRates> fit_rates(const std::vector<FitPoint>& points,
                                           Seconds launch_overhead);

}  // namespace ralp::calibrate
