// Horovod-style tensor fusion and the ring all-reduce schedule, as pure functions: which gradients
// share a fusion buffer, when a cycle may start, and which chunk each ring member sends, receives
// and reduces in each phase. The step schedule (schedule.hpp) builds its fusion buffers with
// them, and both the simulator and the real cluster play those buffers.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <vector>

namespace ralp::schedule {

// Splits tensors (their sizes in bytes, in the order they became ready on every worker) into
// fusion buffers: consecutive tensors while the buffer stays within `threshold` bytes; a tensor
// larger than the threshold travels alone. Returns each buffer's positions into `bytes`.
std::vector<std::vector<size_t>> fuse_tensors(const std::vector<int64_t>& bytes, double threshold);

// The earliest time at or after `now` that a cycle may start, given the next tick of the cycle
// grid: ticks fall every `cycle` seconds, so a late start waits for the next tick. A cycle of 0
// starts at once.
double next_cycle_start(double next_tick, double now, double cycle);

// Elements [begin, end) of chunk `chunk` when a buffer of `elements` is cut into `members` chunks
// of ceil(elements / members) (the last ones shorter, possibly empty).
struct ChunkRange {
  int64_t begin = 0;
  int64_t end = 0;
  [[nodiscard]] int64_t size() const { return end - begin; }
  friend bool operator==(const ChunkRange&, const ChunkRange&) = default;
};
ChunkRange chunk_range(int64_t elements, int64_t members, int64_t chunk);

// Ring member `member` of `members` in phase `phase` of 2 * (members - 1): it sends chunk
// `send_chunk` to member + 1 and receives chunk `receive_chunk` from member - 1, adding it into its
// own (reduce-scatter, the first members - 1 phases) or replacing it (allgather, the rest).
// After reduce-scatter, member m holds the full sum of chunk (m + 1) mod members.
struct RingPhase {
  int64_t send_chunk = 0;
  int64_t receive_chunk = 0;
  bool reduce = false;
  friend bool operator==(const RingPhase&, const RingPhase&) = default;
};
RingPhase ring_phase(int64_t member, int64_t members, int64_t phase);

// Horovod's background loop, played on predicted times: tensors (their bytes, in production
// order) become ready at `ready_at` seconds (non-decreasing). A cycle waits until something is
// ready, starts at the next tick of its `cycle`-second grid, takes every tensor ready by then and
// fuses them with fuse_tensors; its buffers are all-reduced one after another, taking
// `reduce_seconds(bytes)` each, and the next cycle ticks `cycle` seconds after this one began, or
// when its all-reduces end if they take longer. Returns the buffers, as positions into `bytes`, in
// the order they are all-reduced.
std::vector<std::vector<size_t>> plan_fusion(const std::vector<int64_t>& bytes,
                                             const std::vector<double>& ready_at, double threshold,
                                             double cycle,
                                             const std::function<double(int64_t)>& reduce_seconds);

}  // namespace ralp::schedule
