// Parsing and formatting of quantity strings ("1Gbps", "50us", "64MiB", "11.3TFLOPS").
#include "ralp/core/units.hpp"

#include <array>
#include <cctype>
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
    UnitScale{"d", 86400.0},
};

// Bandwidths and sizes are read by the rules in units.hpp rather than from a list of spellings:
// a suffix is [prefix][unit][per second], each part read off the front in turn.

struct Prefix {
  char lower;
  double si;      // k M G T: 1e3 .. 1e12
  double binary;  // Ki Mi Gi Ti: 1024 .. 1024^4
};

constexpr std::array kPrefixes{
    Prefix{'k', 1e3, kKi},
    Prefix{'m', 1e6, kKi * kKi},
    Prefix{'g', 1e9, kKi * kKi * kKi},
    Prefix{'t', 1e12, kKi * kKi * kKi * kKi},
};

// Reads a prefix off the front of suffix (the letter in either case): 1.0 when there is none.
double take_prefix(std::string_view& suffix) {
  if (suffix.empty()) return 1.0;
  const char lower = static_cast<char>(std::tolower(static_cast<unsigned char>(suffix[0])));
  for (const auto& prefix : kPrefixes) {
    if (prefix.lower != lower) continue;
    const bool binary = suffix.size() >= 2 && suffix[1] == 'i';
    suffix.remove_prefix(binary ? 2 : 1);
    return binary ? prefix.binary : prefix.si;
  }
  return 1.0;
}

struct DataUnit {
  std::string_view spelling;
  double bytes;        // kBit or 1
  bool single_letter;  // "b" or "B": the only ones that may take "ps"
};

// Longest first, so that "bits" is not read as "b" followed by "its". A spelled-out word says
// bits or bytes itself, whatever the case of its first letter; a lone letter: b bits, B bytes.
constexpr std::array kDataUnits{
    DataUnit{"bits", kBit, false},  DataUnit{"Bits", kBit, false}, DataUnit{"bit", kBit, false},
    DataUnit{"Bit", kBit, false},   DataUnit{"bytes", 1.0, false}, DataUnit{"Bytes", 1.0, false},
    DataUnit{"byte", 1.0, false},   DataUnit{"Byte", 1.0, false},  DataUnit{"b", kBit, true},
    DataUnit{"B", 1.0, true},
};

// Reads [prefix][unit] off the front of suffix.
std::optional<DataUnit> take_data_unit(std::string_view& suffix, double& prefix) {
  prefix = take_prefix(suffix);
  for (const auto& unit : kDataUnits) {
    if (suffix.starts_with(unit.spelling)) {
      suffix.remove_prefix(unit.spelling.size());
      return unit;
    }
  }
  return std::nullopt;
}

// "12GB/s", "10Gbps", "200Gbit" -> bytes per second.
std::optional<double> bandwidth_scale(std::string_view suffix) {
  double prefix = 1.0;
  const auto unit = take_data_unit(suffix, prefix);
  if (!unit) return std::nullopt;
  const bool per_second = suffix == "/s" || (suffix == "ps" && unit->single_letter);
  // A bare amount of bits is how a NIC is named ("200Gbit"); a bare amount of bytes is a size.
  const bool bare_bits = suffix.empty() && unit->bytes == kBit;
  if (!per_second && !bare_bits) return std::nullopt;
  return prefix * unit->bytes;
}

// "64MiB", "3.2MB", "4kB" -> bytes; bits are no size.
std::optional<double> size_scale(std::string_view suffix) {
  double prefix = 1.0;
  const auto unit = take_data_unit(suffix, prefix);
  if (!unit || unit->bytes != 1.0 || !suffix.empty()) return std::nullopt;
  return prefix;
}

std::optional<double> parse_by_rule(std::string_view text,
                                    std::optional<double> (*scale_of)(std::string_view)) {
  const auto split = split_number(text);
  if (!split) return std::nullopt;
  const auto [value, suffix] = *split;
  if (suffix.empty()) return value;
  const auto scale = scale_of(suffix);
  if (!scale) return std::nullopt;
  return value * *scale;
}

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
  const auto v = parse_by_rule(text, size_scale);
  return v ? std::optional(Bytes(*v)) : std::nullopt;
}

std::optional<BytesPerSecond> parse_bandwidth(std::string_view text) {
  const auto v = parse_by_rule(text, bandwidth_scale);
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
