// Quantity strings and unit arithmetic.
#include "ralp/core/units.hpp"

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

namespace ralp {
namespace {

TEST(Units, ParsesBandwidthInBitsAndBytes) {
  // 1 Gbit/s is 125,000,000 bytes/s.
  EXPECT_DOUBLE_EQ(parse_bandwidth("1Gbps")->value(), 125e6);
  EXPECT_DOUBLE_EQ(parse_bandwidth("10Gbit/s")->value(), 1.25e9);
  EXPECT_DOUBLE_EQ(parse_bandwidth("100 Mbps")->value(), 12.5e6);
  EXPECT_DOUBLE_EQ(parse_bandwidth("12GB/s")->value(), 12e9);
  EXPECT_DOUBLE_EQ(parse_bandwidth("1MiB/s")->value(), 1048576.0);
  EXPECT_DOUBLE_EQ(parse_bandwidth("5e8")->value(), 5e8);
}

// The spellings accepted before the rules of units.hpp, with their scales as they were listed then:
// each must still give exactly the same double.
constexpr double kKi = 1024.0;
constexpr double kBit = 1.0 / 8.0;
const std::vector<std::pair<std::string, double>> kEarlierBandwidths{
    {"bps", kBit},          {"kbps", 1e3 * kBit},   {"Kbps", 1e3 * kBit},
    {"Mbps", 1e6 * kBit},   {"Gbps", 1e9 * kBit},   {"Tbps", 1e12 * kBit},
    {"bit/s", kBit},        {"kbit/s", 1e3 * kBit}, {"Mbit/s", 1e6 * kBit},
    {"Gbit/s", 1e9 * kBit}, {"Tbit/s", 1e12 * kBit}, {"B/s", 1.0},
    {"kB/s", 1e3},          {"KB/s", 1e3},          {"MB/s", 1e6},
    {"GB/s", 1e9},          {"TB/s", 1e12},         {"KiB/s", kKi},
    {"MiB/s", kKi * kKi},   {"GiB/s", kKi * kKi * kKi}, {"Bps", 1.0},
    {"kBps", 1e3},          {"MBps", 1e6},          {"GBps", 1e9},
};
const std::vector<std::pair<std::string, double>> kEarlierSizes{
    {"B", 1.0},    {"kB", 1e3},        {"KB", 1e3},              {"MB", 1e6},
    {"GB", 1e9},   {"TB", 1e12},       {"KiB", kKi},             {"MiB", kKi * kKi},
    {"GiB", kKi * kKi * kKi},          {"TiB", kKi * kKi * kKi * kKi},
};
const std::vector<std::pair<std::string, double>> kNumbers{
    {"1", 1.0},   {"2.5", 2.5}, {"0.1", 0.1},     {"37", 37.0},
    {"1e3", 1e3}, {"0", 0.0},   {"12.34", 12.34},
};

TEST(Units, EverySpellingAcceptedBeforeKeepsItsValue) {
  for (const auto& [number, value] : kNumbers) {
    for (const auto& [unit, scale] : kEarlierBandwidths) {
      for (const char* space : {"", " "}) {
        const std::string text = number + space + unit;
        const auto parsed = parse_bandwidth(text);
        ASSERT_TRUE(parsed) << text;
        EXPECT_EQ(parsed->value(), value * scale) << text;  // exactly, not nearly
      }
    }
    for (const auto& [unit, scale] : kEarlierSizes) {
      for (const char* space : {"", " "}) {
        const std::string text = number + space + unit;
        const auto parsed = parse_bytes(text);
        ASSERT_TRUE(parsed) << text;
        EXPECT_EQ(parsed->value(), value * scale) << text;
      }
    }
    ASSERT_TRUE(parse_bandwidth(number)) << number;
    EXPECT_EQ(parse_bandwidth(number)->value(), value) << number;  // bytes per second
    ASSERT_TRUE(parse_bytes(number)) << number;
    EXPECT_EQ(parse_bytes(number)->value(), value) << number;
  }
  ASSERT_TRUE(parse_bandwidth(" 5e8 "));
  EXPECT_EQ(parse_bandwidth(" 5e8 ")->value(), 5e8);
  ASSERT_TRUE(parse_bytes("1.5e3KiB"));
  EXPECT_EQ(parse_bytes("1.5e3KiB")->value(), 1.5e3 * 1024);
}

// The value parsed, or -1 for a refusal, so that a refused spelling fails the comparison cleanly.
double bandwidth(std::string_view text) {
  const auto parsed = parse_bandwidth(text);
  return parsed ? parsed->value() : -1.0;
}
double bytes(std::string_view text) {
  const auto parsed = parse_bytes(text);
  return parsed ? parsed->value() : -1.0;
}

TEST(Units, BandwidthsInBitsTakeTheCommonSpellings) {
  // A lower-case b is bits, whatever the prefix's case and however "per second" is written.
  EXPECT_EQ(bandwidth("10Gb/s"), 1.25e9);
  EXPECT_EQ(bandwidth("200Gb/s"), 25e9);
  EXPECT_EQ(bandwidth("10gbps"), 1.25e9);
  EXPECT_EQ(bandwidth("10gb/s"), 1.25e9);
  EXPECT_EQ(bandwidth("10 Gbps"), 1.25e9);
  EXPECT_EQ(bandwidth("10gbit/s"), 1.25e9);
  EXPECT_EQ(bandwidth("10Gbits/s"), 1.25e9);
  EXPECT_EQ(bandwidth("10GBit/s"), 1.25e9);  // the word says bits
  EXPECT_EQ(bandwidth("1Kbit/s"), 125.0);
  EXPECT_EQ(bandwidth("400tbps"), 5e13);
  EXPECT_EQ(bandwidth("8b/s"), 1.0);
  // m is mega in a rate: no one means millibits per second.
  EXPECT_EQ(bandwidth("100mbps"), 12.5e6);
  EXPECT_EQ(bandwidth("100mb/s"), 12.5e6);
  // A bare amount of bits names a NIC's rate.
  EXPECT_EQ(bandwidth("200Gbit"), 25e9);
  EXPECT_EQ(bandwidth("200 Gbit"), 25e9);
  EXPECT_EQ(bandwidth("10Gb"), 1.25e9);
  EXPECT_EQ(bandwidth("25gbit"), 3.125e9);
  EXPECT_EQ(bandwidth("100Gbits"), 12.5e9);
  // Binary prefixes are 1024-based in bits too.
  EXPECT_EQ(bandwidth("1Gib/s"), 1073741824.0 / 8);
  EXPECT_EQ(bandwidth("8Kibps"), 1024.0);
}

TEST(Units, BandwidthsInBytesTakeTheCommonSpellings) {
  EXPECT_EQ(bandwidth("1GiB/s"), 1073741824.0);
  EXPECT_EQ(bandwidth("1.25GB/s"), 1.25e9);
  EXPECT_EQ(bandwidth("12gB/s"), 12e9);
  EXPECT_EQ(bandwidth("12 GBps"), 12e9);
  EXPECT_EQ(bandwidth("3mB/s"), 3e6);
  EXPECT_EQ(bandwidth("2TiB/s"), 2.0 * 1024 * 1024 * 1024 * 1024);
  EXPECT_EQ(bandwidth("1giB/s"), 1073741824.0);
  EXPECT_EQ(bandwidth("1TBps"), 1e12);
  EXPECT_EQ(bandwidth("5GByte/s"), 5e9);
  EXPECT_EQ(bandwidth("5 gbytes/s"), 5e9);  // the word says bytes
  EXPECT_EQ(bandwidth("64bytes/s"), 64.0);
}

TEST(Units, BandwidthsStillRefuseWhatIsNotARate) {
  for (const char* text : {
           "fast", "", " ", "Gbps", "10 GHz", "10Gb/", "10Gb/sec", "10Gbpss", "1Gbpss", "-1Gbps",
           "10G", "10 G", "10Gi", "10Gbps10", "10Gb /s", "10 Gb/ s", "10Gb\\s", "10GBPS",
           "10Gbps/s", "10Gb/S", "10GB",       // bare bytes are a size, not a rate
           "12GiB", "64bytes", "10Gbitps",     // "ps" only after a lone b or B
           "10Gbytesps", "10Pbps", "10iB/s",   // no P prefix; i only after a prefix
           "10GIB/s", "10kkbps", "nan", "inf", "infGbps", "nanGbps", "1e400Gbps", "10xbps",
           "10 Gbps extra", "0x10Gbps", "10,5Gbps", "10FLOPS", "50us",
       }) {
    EXPECT_FALSE(parse_bandwidth(text)) << text;
  }
}

TEST(Units, SizesTakeBytesWithAnyPrefixCase) {
  EXPECT_EQ(bytes("64MiB"), 64.0 * 1024 * 1024);
  EXPECT_EQ(bytes("64miB"), 64.0 * 1024 * 1024);
  EXPECT_EQ(bytes("4kiB"), 4096.0);
  EXPECT_EQ(bytes("3gB"), 3e9);
  EXPECT_EQ(bytes("3.2mB"), 3.2e6);  // m is mega here too: no millibytes
  EXPECT_EQ(bytes("2tB"), 2e12);
  EXPECT_EQ(bytes("64 bytes"), 64.0);
  EXPECT_EQ(bytes("1 byte"), 1.0);
  EXPECT_EQ(bytes("5 GBytes"), 5e9);
  EXPECT_EQ(bytes("1GiByte"), 1073741824.0);
}

TEST(Units, SizesRefuseBitsAndRates) {
  // A lower-case b is bits, and bits are no size; nor is a rate.
  for (const char* text : {
           "gb", "1gb", "1Gb", "1GBit", "1Gbit", "8 bits", "8b", "1GB/s", "1GBps", "1GiB/s",
           "10G", "10GiB/", "big", "", "-1MB", "1PB", "1MiBB", "1 MiB s", "nan", "inf", "1MIB",
       }) {
    EXPECT_FALSE(parse_bytes(text)) << text;
  }
}

TEST(Units, ParsesDurationsSizesAndRates) {
  EXPECT_DOUBLE_EQ(parse_seconds("50us")->value(), 50e-6);
  EXPECT_DOUBLE_EQ(parse_seconds("1.5ms")->value(), 1.5e-3);
  EXPECT_DOUBLE_EQ(parse_seconds("2")->value(), 2.0);
  EXPECT_DOUBLE_EQ(parse_bytes("64MiB")->value(), 64.0 * 1024 * 1024);
  EXPECT_DOUBLE_EQ(parse_bytes("3.2MB")->value(), 3.2e6);
  EXPECT_DOUBLE_EQ(parse_flops_rate("11.34TFLOPS")->value(), 11.34e12);
  EXPECT_DOUBLE_EQ(parse_flops_rate("19.5TFLOP/s")->value(), 19.5e12);
}

TEST(Units, RejectsMalformedNegativeAndUnknownUnits) {
  EXPECT_FALSE(parse_bandwidth("fast"));
  EXPECT_FALSE(parse_bandwidth("1Gbpss"));
  EXPECT_FALSE(parse_bandwidth("-1Gbps"));
  EXPECT_FALSE(parse_seconds("5 parsecs"));
  EXPECT_FALSE(parse_seconds(""));
  EXPECT_FALSE(parse_bytes("nan"));
  EXPECT_FALSE(parse_bytes("inf"));
  EXPECT_FALSE(parse_seconds("1Gbps"));
}

TEST(Units, CrossUnitArithmetic) {
  // 1 GB over 1 GB/s is 1 s; 2 TFLOP at 1 TFLOP/s is 2 s.
  EXPECT_DOUBLE_EQ((Bytes(1e9) / BytesPerSecond(1e9)).value(), 1.0);
  EXPECT_DOUBLE_EQ((Flops(2e12) / FlopsPerSecond(1e12)).value(), 2.0);
  EXPECT_DOUBLE_EQ((BytesPerSecond(2.0) * Seconds(3.0)).value(), 6.0);
  EXPECT_LT(Seconds(1.0), Seconds(2.0));
}

TEST(Units, FormatsForTables) {
  EXPECT_EQ(format_seconds(Seconds(3.21e-3)), "3.21 ms");
  EXPECT_EQ(format_seconds(Seconds(2e-15)), "0 s");
  // Long steps in the units a person would use: 90 s, 37,400 s, three days.
  EXPECT_EQ(format_seconds(Seconds(59.0)), "59 s");
  EXPECT_EQ(format_seconds(Seconds(90.0)), "1.5 min");
  EXPECT_EQ(format_seconds(Seconds(3.74e4)), "10.4 h");
  EXPECT_EQ(format_seconds(Seconds(3 * 86400.0)), "3 d");
  EXPECT_EQ(format_bandwidth(BytesPerSecond(125e6)), "1 Gbps");
  EXPECT_EQ(format_bytes(Bytes(495.2e6)), "495 MB");
}

}  // namespace
}  // namespace ralp
