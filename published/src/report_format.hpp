// Number formats the published reports share.
#pragma once

#include <iomanip>
#include <sstream>
#include <string>

namespace ralp::published {

// x as a percentage with one decimal ("12.3%"), signed ("+12.3%") when `sign`.
inline std::string pct(double x, bool sign = false) {
  std::ostringstream out;
  if (sign) out << std::showpos;
  out << std::fixed << std::setprecision(1) << x * 100.0 << '%';
  return out.str();
}

// x with one decimal.
inline std::string fixed1(double x) {
  std::ostringstream out;
  out << std::fixed << std::setprecision(1) << x;
  return out.str();
}

}  // namespace ralp::published
