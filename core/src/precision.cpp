// Training precisions.
#include "ralp/core/precision.hpp"

namespace ralp {

const std::array<std::string, 4>& precision_names() {
  static const std::array<std::string, 4> names = {"fp32", "tf32", "fp16", "bf16"};
  return names;
}

std::string_view to_string(Precision precision) {
  return precision_names().at(static_cast<size_t>(precision));
}

std::optional<Precision> parse_precision(std::string_view text) {
  for (const Precision p : kPrecisions) {
    if (to_string(p) == text) return p;
  }
  return std::nullopt;
}

double activation_bytes(Precision precision) { return is_mixed(precision) ? 2.0 : 4.0; }

double update_cost_factor(Precision precision) {
  constexpr double kSgdArrays = 5.0;
  constexpr double kHalfCopyArrays = 0.5;
  constexpr double kUnscaleArrays = 2.0;
  double arrays = kSgdArrays;
  if (is_mixed(precision)) arrays += kHalfCopyArrays;
  if (precision == Precision::fp16) arrays += kUnscaleArrays;
  return arrays / kSgdArrays;
}

bool is_mixed(Precision precision) {
  return precision == Precision::fp16 || precision == Precision::bf16;
}

}  // namespace ralp
