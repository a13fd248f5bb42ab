// Running a sweep's points: each point's scenario simulated (event fidelity) or estimated
// (analytic fidelity) exactly as `ralp simulate` does it, in-process or in child processes, at most
// `jobs` at a time.
#pragma once

#include <cstddef>
#include <functional>
#include <string>
#include <vector>

#include "ralp/core/json_input.hpp"
#include "ralp/results/child_reply.hpp"
#include "ralp/sweep/spec.hpp"

namespace ralp::sweep {

// A point's outcome: {"results": [to_json(StrategyResult, false)...], "verdict": {...}}, as the
// "results" and "verdict" of `ralp simulate --json`. Throws InputError for bad input found while
// simulating (a platform file) and std::runtime_error when a simulation fails.
Json evaluate_point(const SweepPoint& point, const std::string& fidelity);

// Where points run. A worker process evaluates one point after another, so that its fork is
// paid once; the event simulator forks a process per simulation inside it either way.
enum class Isolation {
  workers,            // `jobs` child processes, each handed the next point as it finishes one
  process_per_point,  // a fresh child process for every point, `jobs` at a time
  in_process,         // one after another in the calling process (jobs is ignored)
};

struct PoolOptions {
  int jobs = 0;  // points at once; 0: one per hardware thread
  Isolation isolation = Isolation::workers;
  // Called while waiting for children (every kIdleInterval at most), e.g. to receive results
  // from other ranks.
  std::function<void()> idle;
};

inline constexpr int kIdleIntervalMs = 5;

// Evaluates the points named by `which` (indices into `points`), handed out in that order,
// calling `done(index, outcome)` in the calling process as each finishes, in the order they
// finish. A child's InputError and failures are rethrown here, after the children still running
// are stopped.
void run_points(const std::vector<SweepPoint>& points, const std::vector<size_t>& which,
                const std::string& fidelity, const PoolOptions& options,
                const std::function<void(size_t, Json)>& done);

using ralp::default_jobs;  // ralp/results/child_reply.hpp

}  // namespace ralp::sweep
