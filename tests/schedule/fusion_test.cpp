// Fusion buffers, the cycle grid and the ring schedule; the ring is played out in memory to check
// that every member ends with the sum.
#include <gtest/gtest.h>

#include "ralp/schedule/fusion.hpp"


namespace ralp::schedule {
namespace {

using Buffers = std::vector<std::vector<size_t>>;

TEST(Fusion, BuffersStayWithinTheThreshold) {
  // 100 + 200 fit in 300; 50 would make 350: a new buffer.
  EXPECT_EQ(fuse_tensors({100, 200, 50, 250}, 300), (Buffers{{0, 1}, {2, 3}}));
  // A tensor above the threshold travels alone.
  EXPECT_EQ(fuse_tensors({10, 1000, 10}, 300), (Buffers{{0}, {1}, {2}}));
  EXPECT_EQ(fuse_tensors({}, 300), Buffers{});
  EXPECT_EQ(fuse_tensors({1, 2, 3}, 64.0 * 1024 * 1024), (Buffers{{0, 1, 2}}));
}

TEST(Fusion, CyclesFallOnTheGrid) {
  // Ticks every 5 ms from 0: ready at 12 ms, the cycle starts at 15 ms.
  EXPECT_DOUBLE_EQ(next_cycle_start(0.0, 0.012, 0.005), 0.015);
  // Already past a tick that is due: at once.
  EXPECT_DOUBLE_EQ(next_cycle_start(0.020, 0.020, 0.005), 0.020);
  // The next tick is later than now: wait for it.
  EXPECT_DOUBLE_EQ(next_cycle_start(0.030, 0.021, 0.005), 0.030);
  EXPECT_DOUBLE_EQ(next_cycle_start(0.030, 0.021, 0.0), 0.021);
}

TEST(Fusion, ChunksOfCeilSizeOverW) {
  // 10 elements over 4 members: chunks of 3, 3, 3, 1.
  EXPECT_EQ(chunk_range(10, 4, 0), (ChunkRange{0, 3}));
  EXPECT_EQ(chunk_range(10, 4, 3), (ChunkRange{9, 10}));
  // 2 elements over 4 members: the last two chunks are empty.
  EXPECT_EQ(chunk_range(2, 4, 2), (ChunkRange{2, 2}));
  EXPECT_EQ(chunk_range(2, 4, 3).size(), 0);
  EXPECT_THROW(chunk_range(10, 4, 4), std::out_of_range);
}

TEST(Fusion, RingPhasesOfTwoMembers) {
  // Reduce-scatter: each sends its own chunk and keeps the other's sum; allgather returns it.
  EXPECT_EQ(ring_phase(0, 2, 0), (RingPhase{0, 1, true}));
  EXPECT_EQ(ring_phase(1, 2, 0), (RingPhase{1, 0, true}));
  EXPECT_EQ(ring_phase(0, 2, 1), (RingPhase{1, 0, false}));
  EXPECT_EQ(ring_phase(1, 2, 1), (RingPhase{0, 1, false}));
  EXPECT_THROW(ring_phase(0, 2, 2), std::out_of_range);
  EXPECT_THROW(ring_phase(0, 1, 0), std::out_of_range);
}

// Every member starts with its own vector (member m holds m + 1 everywhere, plus the element's
// index times 100); after 2(W-1) phases each must hold the element-wise sum.
TEST(Fusion, RingPlayedOutSumsEverywhere) {
  for (const int64_t members : {2, 3, 4, 5}) {
    for (const int64_t elements : {1, 7, 10, 64}) {
      std::vector<std::vector<double>> data(static_cast<size_t>(members));
      for (int64_t m = 0; m < members; ++m) {
        for (int64_t e = 0; e < elements; ++e) {
          data[static_cast<size_t>(m)].push_back(static_cast<double>(m + 1 + 100 * e));
        }
      }
      for (int64_t phase = 0; phase < 2 * (members - 1); ++phase) {
        // Messages of one phase leave before any lands, as with posted sends and receives.
        std::vector<std::vector<double>> sent(static_cast<size_t>(members));
        for (int64_t m = 0; m < members; ++m) {
          const ChunkRange r =
              chunk_range(elements, members, ring_phase(m, members, phase).send_chunk);
          const auto& own = data[static_cast<size_t>(m)];
          sent[static_cast<size_t>(m)].assign(own.begin() + r.begin, own.begin() + r.end);
        }
        for (int64_t m = 0; m < members; ++m) {
          const RingPhase p = ring_phase(m, members, phase);
          const int64_t from = (m + members - 1) % members;
          ASSERT_EQ(ring_phase(from, members, phase).send_chunk, p.receive_chunk);
          const ChunkRange r = chunk_range(elements, members, p.receive_chunk);
          const auto& in = sent[static_cast<size_t>(from)];
          for (int64_t i = 0; i < r.size(); ++i) {
            double& x = data[static_cast<size_t>(m)][static_cast<size_t>(r.begin + i)];
            x = p.reduce ? x + in[static_cast<size_t>(i)] : in[static_cast<size_t>(i)];
          }
        }
      }
      // Sum over members of (m + 1) is W(W+1)/2; each element adds W * 100 * e.
      const double base = static_cast<double>(members * (members + 1) / 2);
      for (int64_t m = 0; m < members; ++m) {
        for (int64_t e = 0; e < elements; ++e) {
          EXPECT_EQ(data[static_cast<size_t>(m)][static_cast<size_t>(e)],
                    base + static_cast<double>(members * 100 * e))
              << members << " members, " << elements << " elements, member " << m;
        }
      }
    }
  }
}

}  // namespace
}  // namespace ralp::schedule
