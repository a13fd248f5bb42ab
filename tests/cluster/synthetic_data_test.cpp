// Synthetic data: a pure function of seed, worker and micro-batch number; labels in range;
// images are their class's pattern plus noise of the stated spread.
#include <gtest/gtest.h>

#include <cmath>

#include "ralp/cluster/synthetic_data.hpp"


namespace ralp::cluster {
namespace {

const TensorShape kCifar{3, 32, 32};

TEST(SyntheticData, SameKeySameBatchOtherKeysOtherBatches) {
  const SyntheticData data(7, kCifar, 10);
  const SyntheticBatch a = data.batch(1, 4, 8);
  const SyntheticBatch b = SyntheticData(7, kCifar, 10).batch(1, 4, 8);
  EXPECT_EQ(a.images, b.images);
  EXPECT_EQ(a.labels, b.labels);
  ASSERT_EQ(a.images.size(), 8u * 3 * 32 * 32);
  EXPECT_NE(data.batch(0, 4, 8).images, a.images);  // another worker's shard
  EXPECT_NE(data.batch(1, 5, 8).images, a.images);  // another micro-batch
  EXPECT_NE(SyntheticData(8, kCifar, 10).batch(1, 4, 8).images, a.images);  // another seed
}

TEST(SyntheticData, LabelsCoverTheClasses) {
  const SyntheticData data(3, kCifar, 10);
  std::vector<int> seen(10, 0);
  for (int64_t index = 0; index < 20; ++index) {
    for (const int32_t label : data.batch(0, index, 16).labels) {
      ASSERT_GE(label, 0);
      ASSERT_LT(label, 10);
      ++seen[static_cast<size_t>(label)];
    }
  }
  // 320 draws over 10 classes: each expected 32 times; none may be missing.
  for (const int count : seen) EXPECT_GT(count, 0);
}

TEST(SyntheticData, ImagesArePatternPlusNoise) {
  constexpr double kNoise = 0.5;
  const SyntheticData data(5, kCifar, 4, kNoise);
  double sum = 0.0, sum_squares = 0.0;
  int64_t n = 0;
  for (int64_t index = 0; index < 4; ++index) {
    const SyntheticBatch batch = data.batch(0, index, 8);
    const int64_t per_image = kCifar.elements();
    for (size_t b = 0; b < batch.labels.size(); ++b) {
      for (int64_t i = 0; i < per_image; ++i) {
        const double residual =
            batch.images[b * static_cast<size_t>(per_image) + i] - data.pattern(batch.labels[b], i);
        sum += residual;
        sum_squares += residual * residual;
        ++n;
      }
    }
  }
  // 98,304 Gaussian draws: the mean is within 5 standard errors (0.008) of 0, the spread within
  // 2% of 0.5.
  const double mean = sum / static_cast<double>(n);
  EXPECT_NEAR(mean, 0.0, 5 * kNoise / std::sqrt(static_cast<double>(n)));
  EXPECT_NEAR(std::sqrt(sum_squares / static_cast<double>(n) - mean * mean), kNoise, 0.01);
}

TEST(SyntheticData, PatternsAreBlocksThatDifferByClass) {
  const SyntheticData data(5, kCifar, 10);
  // A 4 x 4 grid of 8 x 8 blocks per channel: (0,0) and (7,7) share a block, (8,8) does not.
  EXPECT_EQ(data.pattern(2, 0), data.pattern(2, 7 * 32 + 7));
  EXPECT_NE(data.pattern(2, 0), data.pattern(2, 8 * 32 + 8));
  EXPECT_NE(data.pattern(2, 0), data.pattern(3, 0));
  for (int64_t i = 0; i < kCifar.elements(); i += 97) {
    EXPECT_GE(data.pattern(1, i), -1.0F);
    EXPECT_LT(data.pattern(1, i), 1.0F);
  }
}

TEST(SyntheticData, RejectsEmptyShapes) {
  EXPECT_THROW(SyntheticData(1, kCifar, 0), std::invalid_argument);
  EXPECT_THROW(SyntheticData(1, TensorShape{0, 1, 1}, 10), std::invalid_argument);
}

}  // namespace
}  // namespace ralp::cluster
