// Training precisions: names, storage and mixed precision.
#include "ralp/core/precision.hpp"

#include <gtest/gtest.h>

namespace ralp {
namespace {

TEST(Precision, NamesRoundTrip) {
  for (const Precision p : kPrecisions) EXPECT_EQ(parse_precision(to_string(p)), p);
  EXPECT_EQ(parse_precision("FP16"), std::nullopt);
  EXPECT_EQ(parse_precision("float16"), std::nullopt);
  EXPECT_EQ(parse_precision(""), std::nullopt);
}

TEST(Precision, SixteenBitMixedPrecisionsStoreTwoBytesAndKeepMasters) {
  EXPECT_EQ(activation_bytes(Precision::fp32), 4.0);
  EXPECT_EQ(activation_bytes(Precision::tf32), 4.0);  // TF32 rounds inside the tensor cores only
  EXPECT_EQ(activation_bytes(Precision::fp16), 2.0);
  EXPECT_EQ(activation_bytes(Precision::bf16), 2.0);
  EXPECT_FALSE(is_mixed(Precision::fp32));
  EXPECT_FALSE(is_mixed(Precision::tf32));
  EXPECT_TRUE(is_mixed(Precision::fp16));
  EXPECT_TRUE(is_mixed(Precision::bf16));
}

TEST(Precision, MixedPrecisionUpdatesStreamMoreArrays) {
  EXPECT_EQ(update_cost_factor(Precision::fp32), 1.0);
  EXPECT_EQ(update_cost_factor(Precision::tf32), 1.0);
  EXPECT_DOUBLE_EQ(update_cost_factor(Precision::bf16), 5.5 / 5.0);
  EXPECT_DOUBLE_EQ(update_cost_factor(Precision::fp16), 7.5 / 5.0);
}

}  // namespace
}  // namespace ralp
