// Parsing and formatting of quantity strings ("1Gbps", "50us", "64MiB", "11.3TFLOPS").
#include "ralp/core/units.hpp"

#include <array>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <utility>

namespace ralp {
namespace {

struct UnitScale {
  std::string_view suffix;
  double scale;  // multiplier to the SI base unit of the quantity
};

// Splits "12.5Gbps" into 12.5 and "Gbps"; spaces between number and unit are allowed.
std::optional<std::pair<double, std::string_view>> split_number(std::string_view text) {
  while (!text.empty() && text.front() == ' ') text.remove_prefix(1);
  while (!text.empty() && text.back() == ' ') text.remove_suffix(1);
  double value = 0.0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end == text.data()) return std::nullopt;
  if (!std::isfinite(value) || value < 0.0) return std::nullopt;
  std::string_view rest(end, static_cast<size_t>(text.data() + text.size() - end));
  while (!rest.empty() && rest.front() == ' ') rest.remove_prefix(1);
  return std::pair{value, rest};
}

template <size_t N>
std::optional<double> parse_with(std::string_view text, const std::array<UnitScale, N>& units) {
  const auto split = split_number(text);
  if (!split) return std::nullopt;
  const auto [value, suffix] = *split;
  if (suffix.empty()) return value;
  for (const auto& unit : units) {
    if (unit.suffix == suffix) return value * unit.scale;
  }
  return std::nullopt;
}

constexpr double kKi = 1024.0;
constexpr double kBit = 1.0 / kBitsPerByte;

constexpr std::array kTimeUnits{
    UnitScale{"s", 1.0},     UnitScale{"ms", 1e-3}, UnitScale{"us", 1e-6},
    UnitScale{"ns", 1e-9},   UnitScale{"min", 60.0}, UnitScale{"h", 3600.0},
};

constexpr std::array kByteUnits{
    UnitScale{"B", 1.0},           UnitScale{"kB", 1e3},          UnitScale{"KB", 1e3},
    UnitScale{"MB", 1e6},          UnitScale{"GB", 1e9},          UnitScale{"TB", 1e12},
    UnitScale{"KiB", kKi},         UnitScale{"MiB", kKi * kKi},   UnitScale{"GiB", kKi * kKi * kKi},
    UnitScale{"TiB", kKi * kKi * kKi * kKi},
};

constexpr std::array kBandwidthUnits{
    UnitScale{"bps", kBit},        UnitScale{"kbps", 1e3 * kBit},  UnitScale{"Kbps", 1e3 * kBit},
    UnitScale{"Mbps", 1e6 * kBit}, UnitScale{"Gbps", 1e9 * kBit},  UnitScale{"Tbps", 1e12 * kBit},
    UnitScale{"bit/s", kBit},      UnitScale{"kbit/s", 1e3 * kBit}, UnitScale{"Mbit/s", 1e6 * kBit},
    UnitScale{"Gbit/s", 1e9 * kBit}, UnitScale{"Tbit/s", 1e12 * kBit},
    UnitScale{"B/s", 1.0},         UnitScale{"kB/s", 1e3},         UnitScale{"KB/s", 1e3},
    UnitScale{"MB/s", 1e6},        UnitScale{"GB/s", 1e9},         UnitScale{"TB/s", 1e12},
    UnitScale{"KiB/s", kKi},       UnitScale{"MiB/s", kKi * kKi},  UnitScale{"GiB/s", kKi * kKi * kKi},
    UnitScale{"Bps", 1.0},         UnitScale{"kBps", 1e3},         UnitScale{"MBps", 1e6},
    UnitScale{"GBps", 1e9},
};

constexpr std::array kFlopsUnits{
    UnitScale{"FLOPS", 1.0},   UnitScale{"FLOP/s", 1.0},  UnitScale{"kFLOPS", 1e3},
    UnitScale{"kFLOP/s", 1e3}, UnitScale{"MFLOPS", 1e6},  UnitScale{"MFLOP/s", 1e6},
    UnitScale{"GFLOPS", 1e9},  UnitScale{"GFLOP/s", 1e9}, UnitScale{"TFLOPS", 1e12},
    UnitScale{"TFLOP/s", 1e12}, UnitScale{"PFLOPS", 1e15}, UnitScale{"PFLOP/s", 1e15},
};

std::string format_scaled(double value, const char* const* prefixes, size_t count, double step,
                          const char* unit) {
  size_t index = 0;
  while (index + 1 < count && std::fabs(value) >= step) {
    value /= step;
    ++index;
  }
  char buffer[64];
  std::snprintf(buffer, sizeof buffer, "%.3g %s%s", value, prefixes[index], unit);
  return buffer;
}

}  // namespace

std::optional<Seconds> parse_seconds(std::string_view text) {
  const auto v = parse_with(text, kTimeUnits);
  return v ? std::optional(Seconds(*v)) : std::nullopt;
}

std::optional<Bytes> parse_bytes(std::string_view text) {
  const auto v = parse_with(text, kByteUnits);
  return v ? std::optional(Bytes(*v)) : std::nullopt;
}

std::optional<BytesPerSecond> parse_bandwidth(std::string_view text) {
  const auto v = parse_with(text, kBandwidthUnits);
  return v ? std::optional(BytesPerSecond(*v)) : std::nullopt;
}

std::optional<FlopsPerSecond> parse_flops_rate(std::string_view text) {
  const auto v = parse_with(text, kFlopsUnits);
  return v ? std::optional(FlopsPerSecond(*v)) : std::nullopt;
}

// Long durations read as a person would: minutes, hours, days.
constexpr double kSecondsPerMinute = 60.0;
constexpr double kSecondsPerHour = 3600.0;
constexpr double kSecondsPerDay = 86400.0;

std::string format_seconds(Seconds s) {
  const double v = s.value();
  char buffer[64];
  // Below a nanosecond is rounding noise of sums of simulated times.
  if (std::fabs(v) < 1e-9) return "0 s";
  if (std::fabs(v) < 1e-6) {
    std::snprintf(buffer, sizeof buffer, "%.3g ns", v * 1e9);
  } else if (std::fabs(v) < 1e-3) {
    std::snprintf(buffer, sizeof buffer, "%.3g us", v * 1e6);
  } else if (std::fabs(v) < 1.0) {
    std::snprintf(buffer, sizeof buffer, "%.3g ms", v * 1e3);
  } else if (std::fabs(v) < kSecondsPerMinute) {
    std::snprintf(buffer, sizeof buffer, "%.3g s", v);
  } else if (std::fabs(v) < kSecondsPerHour) {
    std::snprintf(buffer, sizeof buffer, "%.3g min", v / kSecondsPerMinute);
  } else if (std::fabs(v) < kSecondsPerDay) {
    std::snprintf(buffer, sizeof buffer, "%.3g h", v / kSecondsPerHour);
  } else {
    std::snprintf(buffer, sizeof buffer, "%.3g d", v / kSecondsPerDay);
  }
  return buffer;
}

std::string format_bytes(Bytes b) {
  static constexpr const char* kPrefixes[] = {"", "k", "M", "G", "T", "P"};
  return format_scaled(b.value(), kPrefixes, std::size(kPrefixes), 1e3, "B");
}

std::string format_bandwidth(BytesPerSecond r) {
  static constexpr const char* kPrefixes[] = {"", "k", "M", "G", "T"};
  return format_scaled(r.value() * kBitsPerByte, kPrefixes, std::size(kPrefixes), 1e3, "bps");
}

std::string format_flops_rate(FlopsPerSecond r) {
  static constexpr const char* kPrefixes[] = {"", "k", "M", "G", "T", "P"};
  return format_scaled(r.value(), kPrefixes, std::size(kPrefixes), 1e3, "FLOP/s");
}

}  // namespace ralp
