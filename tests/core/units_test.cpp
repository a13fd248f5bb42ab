// Quantity strings and unit arithmetic.
#include "ralp/core/units.hpp"

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
