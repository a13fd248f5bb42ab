// Synthetic training data that can be learned: each class has a fixed random pattern (a 4 x 4 grid
// of blocks per channel), and an image is its class's pattern plus Gaussian noise. Every value is a
// pure function of the seed, the worker, the micro-batch's number and the position, so each worker
// generates its own shard (images no other worker sees) without reading anything, and every
// strategy trains on the same images.
#pragma once

#include <cstdint>
#include <vector>

#include "ralp/model/layer.hpp"

namespace ralp::cluster {

struct SyntheticBatch {
  std::vector<float> images;    // batch x C x H x W, plain (NCHW) order
  std::vector<int32_t> labels;  // batch, each in [0, classes)
};

class SyntheticData {
 public:
  // Pattern values are uniform in [-1, 1); noise has standard deviation `noise`.
  static constexpr double kDefaultNoise = 0.5;

  // Throws std::invalid_argument for classes < 1 or an empty image shape.
  SyntheticData(uint64_t seed, TensorShape image, int64_t classes, double noise = kDefaultNoise);

  [[nodiscard]] int64_t classes() const { return classes_; }
  [[nodiscard]] const TensorShape& image() const { return image_; }

  // Micro-batch number `index` of worker `worker`'s shard, `batch` images.
  [[nodiscard]] SyntheticBatch batch(int64_t worker, int64_t index, int64_t batch) const;
  // Element `index` (plain order within one image) of class `label`'s pattern.
  [[nodiscard]] float pattern(int64_t label, int64_t index) const;

 private:
  uint64_t seed_;
  TensorShape image_;
  int64_t classes_;
  double noise_;
};

}  // namespace ralp::cluster
