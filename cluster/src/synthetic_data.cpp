// Class patterns plus noise, from counter-based random numbers.
#include "ralp/cluster/synthetic_data.hpp"

#include <algorithm>
#include <cmath>
#include <numbers>
#include <stdexcept>

#include "ralp/kernels/dropout_mask.hpp"

namespace ralp::cluster {
namespace {

using kernels::mix64;
using kernels::stream_uniform;

// Stream domains, so that patterns, labels and noise never share a stream.
constexpr uint64_t kPatternDomain = 0x7061747465726e00ULL;  // "pattern"
constexpr uint64_t kLabelDomain = 0x6c6162656c000000ULL;    // "label"
constexpr uint64_t kNoiseDomain = 0x6e6f697365000000ULL;    // "noise"
constexpr int64_t kGrid = 4;

uint64_t stream_of(uint64_t seed, uint64_t domain, uint64_t a, uint64_t b = 0, uint64_t c = 0) {
  uint64_t k = mix64(seed ^ domain);
  k = mix64(k ^ a);
  k = mix64(k ^ b);
  return mix64(k ^ c);
}

}  // namespace

SyntheticData::SyntheticData(uint64_t seed, TensorShape image, int64_t classes, double noise)
    : seed_(seed), image_(image), classes_(classes), noise_(noise) {
  if (classes < 1) throw std::invalid_argument("synthetic data needs at least one class");
  if (image.elements() < 1) throw std::invalid_argument("synthetic data needs a non-empty image");
}

float SyntheticData::pattern(int64_t label, int64_t index) const {
  // Blocks of a kGrid x kGrid grid per channel: coarse enough to survive pooling, so that a small
  // CNN learns them within a few steps.
  const int64_t plane = image_.height * image_.width;
  const int64_t channel = index / plane;
  const int64_t y = index % plane / image_.width;
  const int64_t x = index % image_.width;
  const int64_t cell =
      (channel * kGrid + y * kGrid / image_.height) * kGrid + x * kGrid / image_.width;
  const uint64_t stream = stream_of(seed_, kPatternDomain, static_cast<uint64_t>(label));
  return 2.0F * stream_uniform(stream, static_cast<uint64_t>(cell)) - 1.0F;
}

SyntheticBatch SyntheticData::batch(int64_t worker, int64_t index, int64_t batch) const {
  const int64_t per_image = image_.elements();
  SyntheticBatch out;
  out.images.resize(static_cast<size_t>(batch * per_image));
  out.labels.resize(static_cast<size_t>(batch));
  const auto w = static_cast<uint64_t>(worker);
  const auto k = static_cast<uint64_t>(index);
  const uint64_t label_stream = stream_of(seed_, kLabelDomain, w, k);
  for (int64_t b = 0; b < batch; ++b) {
    const float u = stream_uniform(label_stream, static_cast<uint64_t>(b));
    const auto label =
        std::min(classes_ - 1, static_cast<int64_t>(u * static_cast<float>(classes_)));
    out.labels[static_cast<size_t>(b)] = static_cast<int32_t>(label);
    const uint64_t noise_stream = stream_of(seed_, kNoiseDomain, w, k, static_cast<uint64_t>(b));
    float* image = out.images.data() + b * per_image;
    for (int64_t i = 0; i < per_image; ++i) {
      // Box-Muller on two draws; 1 - u keeps the logarithm's argument in (0, 1].
      const double u1 = 1.0 - stream_uniform(noise_stream, 2 * static_cast<uint64_t>(i));
      const double u2 = stream_uniform(noise_stream, 2 * static_cast<uint64_t>(i) + 1);
      const double normal = std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * std::numbers::pi * u2);
      image[i] = pattern(label, i) + static_cast<float>(noise_ * normal);
    }
  }
  return out;
}

}  // namespace ralp::cluster
