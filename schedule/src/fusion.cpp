// Fusion buffers, cycle ticks and the ring schedule.
#include "ralp/schedule/fusion.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace ralp::schedule {

std::vector<std::vector<size_t>> fuse_tensors(const std::vector<int64_t>& bytes, double threshold) {
  std::vector<std::vector<size_t>> buffers;
  std::vector<size_t> current;
  int64_t filled = 0;
  for (size_t i = 0; i < bytes.size(); ++i) {
    if (filled > 0 && static_cast<double>(filled + bytes[i]) > threshold) {
      buffers.push_back(std::move(current));
      current.clear();
      filled = 0;
    }
    current.push_back(i);
    filled += bytes[i];
  }
  if (!current.empty()) buffers.push_back(std::move(current));
  return buffers;
}

double next_cycle_start(double next_tick, double now, double cycle) {
  if (cycle <= 0.0) return now;
  if (next_tick < now) next_tick += cycle * std::ceil((now - next_tick) / cycle);
  return std::max(next_tick, now);
}

ChunkRange chunk_range(int64_t elements, int64_t members, int64_t chunk) {
  if (members < 1 || chunk < 0 || chunk >= members) {
    throw std::out_of_range("chunk " + std::to_string(chunk) + " of " + std::to_string(members));
  }
  const int64_t size = (elements + members - 1) / members;
  const int64_t begin = std::min(elements, chunk * size);
  return {begin, std::min(elements, begin + size)};
}

RingPhase ring_phase(int64_t member, int64_t members, int64_t phase) {
  if (members < 2 || phase < 0 || phase >= 2 * (members - 1)) {
    throw std::out_of_range("ring phase " + std::to_string(phase) + " of " +
                            std::to_string(members) + " members");
  }
  const auto mod = [members](int64_t x) { return ((x % members) + members) % members; };
  if (phase < members - 1) return {mod(member - phase), mod(member - phase - 1), true};
  const int64_t p = phase - (members - 1);
  return {mod(member + 1 - p), mod(member - p), false};
}

std::vector<std::vector<size_t>> plan_fusion(const std::vector<int64_t>& bytes,
                                             const std::vector<double>& ready_at, double threshold,
                                             double cycle,
                                             const std::function<double(int64_t)>& reduce_seconds) {
  if (bytes.size() != ready_at.size()) {
    throw std::invalid_argument("plan_fusion: one readiness time per tensor");
  }
  std::vector<std::vector<size_t>> buffers;
  size_t next = 0;
  double next_tick = 0.0;
  double clock = 0.0;  // when the last cycle's all-reduces end
  while (next < bytes.size()) {
    const double now = std::max(clock, ready_at[next]);
    const double tick = next_cycle_start(next_tick, now, cycle);
    size_t end = next;
    while (end < bytes.size() && ready_at[end] <= tick) ++end;
    const std::vector<int64_t> taken(bytes.begin() + static_cast<std::ptrdiff_t>(next),
                                     bytes.begin() + static_cast<std::ptrdiff_t>(end));
    clock = tick;
    for (auto& positions : fuse_tensors(taken, threshold)) {
      int64_t fused = 0;
      for (size_t& p : positions) {
        p += next;
        fused += bytes[p];
      }
      clock += reduce_seconds ? reduce_seconds(fused) : 0.0;
      buffers.push_back(std::move(positions));
    }
    next_tick = std::max(tick + cycle, clock);
    next = end;
  }
  return buffers;
}

}  // namespace ralp::schedule
