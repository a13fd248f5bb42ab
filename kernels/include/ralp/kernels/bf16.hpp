// BF16 (bfloat16) values on the host: the upper 16 bits of an IEEE float (sign, 8-bit exponent,
// 7 stored mantissa bits). Conversions round to nearest, ties to even, as oneDNN's and CUDA's do;
// a NaN stays a (quiet) NaN. Every BF16 value converts to float exactly.
#pragma once

#include <bit>
#include <cstdint>

namespace ralp::kernels {

[[nodiscard]] inline uint16_t to_bf16(float value) {
  const auto bits = std::bit_cast<uint32_t>(value);
  if ((bits & 0x7F800000U) == 0x7F800000U && (bits & 0x007FFFFFU) != 0) {
    return static_cast<uint16_t>((bits >> 16) | 0x0040U);
  }
  const uint32_t rounding = 0x7FFFU + ((bits >> 16) & 1U);
  return static_cast<uint16_t>((bits + rounding) >> 16);
}

[[nodiscard]] inline float from_bf16(uint16_t value) {
  return std::bit_cast<float>(static_cast<uint32_t>(value) << 16);
}

// The float nearest `value` that BF16 can hold.
[[nodiscard]] inline float round_to_bf16(float value) { return from_bf16(to_bf16(value)); }

}  // namespace ralp::kernels
