// Per-step phase accounting.
#include "ralp/cluster/phase_clock.hpp"

#include <array>
#include <chrono>
#include <stdexcept>
#include <string>

namespace ralp::cluster {

std::string_view to_string(Phase phase) {
  static constexpr std::array<std::string_view, kPhaseCount> names = {"compute", "send", "receive",
                                                                      "waiting", "aggregation"};
  return names[static_cast<size_t>(phase)];
}

double PhaseTimes::total() const {
  double sum = 0.0;
  for (const double s : seconds) sum += s;
  return sum;
}

PhaseTimes& PhaseTimes::operator+=(const PhaseTimes& other) {
  for (size_t i = 0; i < kPhaseCount; ++i) seconds[i] += other.seconds[i];
  return *this;
}

double monotonic_seconds() {
  using namespace std::chrono;
  return duration<double>(steady_clock::now().time_since_epoch()).count();
}

PhaseClock::PhaseClock(int64_t steps) : per_step_(static_cast<size_t>(steps)) {}

void PhaseClock::charge(double now) {
  if (running_ && now > mark_) per_step_[static_cast<size_t>(step_)][current_] += now - mark_;
  mark_ = now;
}

void PhaseClock::start_step(int64_t step, double now) {
  if (step != step_ + 1 || step >= static_cast<int64_t>(per_step_.size())) {
    throw std::logic_error("phase clock: step " + std::to_string(step) + " out of order");
  }
  charge(now);
  step_ = step;
  running_ = true;
}

Phase PhaseClock::switch_to(Phase phase, double now) {
  charge(now);
  const Phase previous = current_;
  current_ = phase;
  return previous;
}

void PhaseClock::stop(double now) {
  charge(now);
  running_ = false;
}

}  // namespace ralp::cluster
