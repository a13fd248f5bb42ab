// Counter-based draws for the straggler model (splitmix64 and Box-Muller: the same numbers on
// every platform, unlike std::normal_distribution).
#include "ralp/sim/straggler.hpp"

#include <algorithm>
#include <cmath>
#include <numbers>

namespace ralp::sim {
namespace {

uint64_t splitmix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

// A uniform double in (0, 1].
double unit(uint64_t bits) { return (static_cast<double>(bits >> 11) + 1.0) * 0x1.0p-53; }

}  // namespace

double straggler_factor(const StragglerSpec& spec, uint64_t seed, int64_t step, int64_t worker) {
  if (spec.kind == StragglerKind::none) return 1.0;
  const uint64_t key =
      splitmix64(seed ^ splitmix64(static_cast<uint64_t>(step) ^
                                   splitmix64(static_cast<uint64_t>(worker) + 0x5851f42d4c957f2dULL)));
  const double u1 = unit(key);
  if (spec.kind == StragglerKind::bernoulli) return u1 <= spec.probability ? spec.slowdown : 1.0;
  const double u2 = unit(splitmix64(key));
  const double normal = std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * std::numbers::pi * u2);
  return std::max(1.0, std::exp(spec.sigma * normal));
}

}  // namespace ralp::sim
