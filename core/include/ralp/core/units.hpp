// Strong unit types (seconds, bytes, FLOPs and their rates) and the parser for quantity strings.
#pragma once

#include <compare>
#include <optional>
#include <string>
#include <string_view>

namespace ralp {

// A double tagged with its unit. Same-unit arithmetic only; the cross-unit operators below are the
// ones that make physical sense (bytes / bytes-per-second = seconds, ...).
template <class Tag>
class Quantity {
 public:
  constexpr Quantity() = default;
  constexpr explicit Quantity(double value) : value_(value) {}
  [[nodiscard]] constexpr double value() const { return value_; }

  constexpr Quantity& operator+=(Quantity other) {
    value_ += other.value_;
    return *this;
  }
  constexpr Quantity& operator-=(Quantity other) {
    value_ -= other.value_;
    return *this;
  }
  friend constexpr Quantity operator+(Quantity a, Quantity b) { return Quantity(a.value_ + b.value_); }
  friend constexpr Quantity operator-(Quantity a, Quantity b) { return Quantity(a.value_ - b.value_); }
  friend constexpr Quantity operator*(Quantity a, double k) { return Quantity(a.value_ * k); }
  friend constexpr Quantity operator*(double k, Quantity a) { return Quantity(a.value_ * k); }
  friend constexpr Quantity operator/(Quantity a, double k) { return Quantity(a.value_ / k); }
  friend constexpr double operator/(Quantity a, Quantity b) { return a.value_ / b.value_; }
  friend constexpr auto operator<=>(Quantity, Quantity) = default;
  friend constexpr bool operator==(Quantity, Quantity) = default;

 private:
  double value_ = 0.0;
};

struct SecondsTag {};
struct BytesTag {};
struct FlopsTag {};
struct BytesPerSecondTag {};
struct FlopsPerSecondTag {};

using Seconds = Quantity<SecondsTag>;
using Bytes = Quantity<BytesTag>;  // a double: sums over 1,000 workers exceed 2^53 only past 9 PB
using Flops = Quantity<FlopsTag>;  // floating-point operations; a multiply-add counts 2
using BytesPerSecond = Quantity<BytesPerSecondTag>;
using FlopsPerSecond = Quantity<FlopsPerSecondTag>;

constexpr Seconds operator/(Bytes b, BytesPerSecond r) { return Seconds(b.value() / r.value()); }
constexpr Seconds operator/(Flops f, FlopsPerSecond r) { return Seconds(f.value() / r.value()); }
constexpr Bytes operator*(BytesPerSecond r, Seconds t) { return Bytes(r.value() * t.value()); }
constexpr Flops operator*(FlopsPerSecond r, Seconds t) { return Flops(r.value() * t.value()); }
constexpr BytesPerSecond operator/(Bytes b, Seconds t) { return BytesPerSecond(b.value() / t.value()); }
constexpr FlopsPerSecond operator/(Flops f, Seconds t) { return FlopsPerSecond(f.value() / t.value()); }

constexpr double kBytesPerFloat = 4.0;
constexpr double kBitsPerByte = 8.0;

// Quantity strings. Each parser accepts a plain number (SI base unit) or a number followed by a
// unit, spaces allowed between them; it returns nullopt on anything else, including negative, NaN
// or infinite values.
//   seconds:        "50us", "1.5ms", "2s", "100ns", "0.25min"
//   bytes:          "64MiB", "3.2MB", "512", "1GiB", "4kB", "64 bytes"
//   bytes/second:   "10Gbps", "10Gb/s", "10Gbit/s", "200Gbit", "10gbps" (bits);
//                   "12GB/s", "12GBps", "900MiB/s" (bytes); "5e8" (bytes per second)
//   FLOP/second:    "11.3TFLOPS", "19.5TFLOP/s", "2.5e12"
//
// Sizes and bandwidths are read by rule: a number, then [prefix][unit][per second].
//   prefix       k, m, g, t in either case are 1e3, 1e6, 1e9, 1e12 (m is mega: no one means a
//                millibit per second); Ki, Mi, Gi, Ti (the letter in either case, the i lower-case)
//                are 1024, 1024^2, 1024^3, 1024^4. No prefix is 1.
//   unit         a lone letter: b is bits, B is bytes, always ("Gb", "gb" bits; "GB" bytes). A word
//                says which itself, its first letter in either case: bit, bits (bits), byte, bytes
//                (bytes); "GBit/s" is bits.
//   per second   "/s" after any unit, "ps" after a lone b or B ("Gbps", "GBps"); both lower-case.
//                A bandwidth in bits may leave it out, as NICs are named ("200Gbit", "10Gb"); one
//                in bytes may not ("12GB" is a size, refused as a bandwidth).
// A size takes bytes only, without "/s": "gb", "1Gbit" and "12GB/s" are refused as sizes. A unit
// with no b or B ("10G", "10 GHz") is refused, as is anything after the unit ("10Gb/", "1Gbpss").
std::optional<Seconds> parse_seconds(std::string_view text);
std::optional<Bytes> parse_bytes(std::string_view text);
std::optional<BytesPerSecond> parse_bandwidth(std::string_view text);
std::optional<FlopsPerSecond> parse_flops_rate(std::string_view text);

// Human-readable forms for tables: "3.21 ms", "495.2 MB", "1.00 Gbps", "11.3 TFLOP/s".
std::string format_seconds(Seconds s);
std::string format_bytes(Bytes b);
std::string format_bandwidth(BytesPerSecond r);
std::string format_flops_rate(FlopsPerSecond r);

}  // namespace ralp
