// Counter-based random numbers for dropout masks and parameter initialisation: a value is a pure
// function of its key and index, so every backend, process and layer placement draws the same.
// Plain C++17 so that CUDA device code can include it.
#pragma once

#include <cstdint>

#if defined(__CUDACC__)
#define RALP_HOST_DEVICE __host__ __device__
#else
#define RALP_HOST_DEVICE
#endif

namespace ralp::kernels {

// SplitMix64's finaliser: a bijection on 64 bits with full avalanche.
RALP_HOST_DEVICE inline uint64_t mix64(uint64_t x) {
  x += 0x9E3779B97F4A7C15ULL;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ULL;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBULL;
  return x ^ (x >> 31);
}

// Folds a mask key (seed, step, worker, layer) into one stream key.
RALP_HOST_DEVICE inline uint64_t mask_stream(uint64_t seed, uint64_t step, uint32_t worker,
                                             uint32_t layer) {
  uint64_t k = mix64(seed);
  k = mix64(k ^ step);
  k = mix64(k ^ (static_cast<uint64_t>(worker) << 32 | layer));
  return k;
}

// A uniform value in [0, 1) for element `index` of a stream (24 random bits, exact in float).
RALP_HOST_DEVICE inline float stream_uniform(uint64_t stream, uint64_t index) {
  constexpr float kInv24 = 1.0F / 16777216.0F;
  return static_cast<float>(mix64(stream ^ mix64(index)) >> 40) * kInv24;
}

// Dropout keeps element `index` (its position in plain NCHW order within the micro-batch) when
// its uniform draw is at or above `rate`; kept elements are scaled by 1 / (1 - rate).
RALP_HOST_DEVICE inline bool dropout_keeps(uint64_t stream, uint64_t index, float rate) {
  return stream_uniform(stream, index) >= rate;
}

}  // namespace ralp::kernels
