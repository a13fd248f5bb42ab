// Where a rank's time goes, step by step: every moment of a step is charged to exactly one phase
// (compute, send, receive, waiting, aggregation), so the phases of a step add up to its duration
// on that rank.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

namespace ralp::cluster {

//   compute      layer kernels (forward, backward), a worker's own SGD update
//   send         packing and posting messages, and waiting for own sends to finish
//   receive      unpacking messages, and waiting while a message the peer already posted arrives
//   waiting      waiting for a peer that has not posted the message yet (or for a fusion cycle)
//   aggregation  gradient sums and updates on a PS, ring all-reduce reductions
enum class Phase { compute, send, receive, waiting, aggregation };
inline constexpr size_t kPhaseCount = 5;
std::string_view to_string(Phase phase);

struct PhaseTimes {
  double seconds[kPhaseCount] = {};

  [[nodiscard]] double operator[](Phase p) const { return seconds[static_cast<size_t>(p)]; }
  double& operator[](Phase p) { return seconds[static_cast<size_t>(p)]; }
  [[nodiscard]] double total() const;
  PhaseTimes& operator+=(const PhaseTimes& other);
  friend bool operator==(const PhaseTimes&, const PhaseTimes&) = default;
};

// Seconds on a monotonic clock shared by the processes of one machine (CLOCK_MONOTONIC).
double monotonic_seconds();

class PhaseClock {
 public:
  explicit PhaseClock(int64_t steps);

  // Starts step `step` at `now`, first closing the current interval into the previous step.
  // Precondition: 0 <= step < steps, steps started in order.
  void start_step(int64_t step, double now);
  // Charges [last switch, now) to the current phase and makes `phase` current; returns the phase
  // it replaced. Time before the first step or after stop() is not charged.
  Phase switch_to(Phase phase, double now);
  void stop(double now);

  [[nodiscard]] Phase current() const { return current_; }
  [[nodiscard]] int64_t step() const { return step_; }
  [[nodiscard]] const std::vector<PhaseTimes>& per_step() const { return per_step_; }

 private:
  void charge(double now);

  std::vector<PhaseTimes> per_step_;
  int64_t step_ = -1;
  bool running_ = false;
  Phase current_ = Phase::waiting;
  double mark_ = 0.0;
};

// Switches a clock to a phase for a scope and back to the previous one.
class PhaseScope {
 public:
  PhaseScope(PhaseClock& clock, Phase phase)
      : clock_(clock), previous_(clock.switch_to(phase, monotonic_seconds())) {}
  ~PhaseScope() { clock_.switch_to(previous_, monotonic_seconds()); }
  PhaseScope(const PhaseScope&) = delete;
  PhaseScope& operator=(const PhaseScope&) = delete;

 private:
  PhaseClock& clock_;
  Phase previous_;
};

}  // namespace ralp::cluster
