// Shared state of one simulated run: hosts, mailboxes, step synchronisation, and the recorder of
// activities, traffic and per-worker time splits. SimGrid adapter (internal to sim/).
#pragma once

#include <map>
#include <string>
#include <utility>
#include <vector>

#include <simgrid/s4u.hpp>

#include "platform.hpp"
#include "ralp/sim/result.hpp"
#include "ralp/sim/step_plan.hpp"

namespace ralp::sim {

// A worker's busy interval, kept for the time split.
struct BusyInterval {
  double start = 0.0;
  double end = 0.0;
  int32_t step = 0;
  bool compute = false;  // compute-like (compute, update, encode) or communication-like
};

class World {
 public:
  World(const Scenario& scenario, const StepPlan& plan, Platform platform);
  World(const World&) = delete;
  World& operator=(const World&) = delete;

  const Scenario& scenario;
  const StepPlan& plan;
  const int64_t steps;
  const int64_t warmup;
  const int64_t workers;
  const int64_t ps_hosts;

  // Host indices: ps-i is i, worker-w is ps_hosts + w.
  [[nodiscard]] int32_t ps_index(int64_t shard) const { return static_cast<int32_t>(shard); }
  [[nodiscard]] int32_t worker_index(int64_t w) const {
    return static_cast<int32_t>(ps_hosts + w);
  }
  [[nodiscard]] simgrid::s4u::Host* host(int32_t index) const { return hosts_[index]; }
  [[nodiscard]] const std::string& host_name(int32_t index) const { return names_[index]; }
  [[nodiscard]] bool traced(int64_t step) const { return step == steps - 1; }
  [[nodiscard]] bool measured(int64_t step) const { return step >= warmup; }

  // Named mailbox "kind:src>dst", created once.
  simgrid::s4u::Mailbox* mailbox(const std::string& kind, int32_t src, int32_t dst);

  // One piece of device work: a layer's pass, a sum, an update, an encoding.
  struct Work {
    ActivityKind kind = ActivityKind::compute;
    std::string label;  // only filled for the traced step
    double seconds = 0.0;
  };

  // Worker devices run one actor's work at a time: `work` runs back to back from now, as one
  // simulated wait (nothing can observe the points between the pieces), and each piece is
  // recorded with its own interval.
  void run_on_worker(int32_t host, int64_t step, const std::vector<Work>& work);

  // PS devices are FIFO: `work` is queued behind everything submitted before it and runs as one
  // uninterrupted block, like kernels on one GPU stream; the caller resumes when it ends.
  void run_on_ps(int64_t shard, int64_t step, const std::vector<Work>& work);
  // Waits `seconds` without using the host's CPU (copy engines, compression streams, ring
  // reductions on a separate stream), and records it against `peer`, the host the data comes
  // from or goes to, so that each peer's copies get their own timeline track.
  void busy_wait(int32_t host, int32_t peer, ActivityKind kind, int64_t step,
                 const std::string& label, double seconds);
  // A blocking send; records the transfer on both ends and counts its bytes on every link.
  void send(simgrid::s4u::Mailbox* box, int32_t src, int32_t dst, int64_t bytes, int64_t step,
            const std::string& label);
  // Records a transfer that was posted at `start` and has completed now.
  void record_transfer(int32_t src, int32_t dst, int64_t bytes, int64_t step,
                       const std::string& label, double start);
  // Records a busy interval for a worker's time split only (no timeline entry).
  void record_busy(int32_t host, int64_t step, double start, double end, bool compute);

  // Step completion: each step waits for `parts` completions (PS variable updates, head update,
  // worker updates); the last one closes the step.
  void set_parts_per_step(int64_t parts);
  void complete_part(int64_t step);
  // Blocks the caller until `step` is complete.
  void wait_step_complete(int64_t step);
  [[nodiscard]] int64_t completed_step() const { return completed_step_; }

  void worker_finished() { ++finished_workers_; }
  [[nodiscard]] int64_t finished_workers() const { return finished_workers_; }

  // Builds the result once the engine has run. Throws std::runtime_error when the simulation
  // stopped before every step completed (a deadlock).
  StrategyResult collect() const;

 private:
  void add_activity(int32_t host, int32_t peer, ActivityKind kind, int64_t step,
                    const std::string& label, double start, double end, double bytes);
  const std::vector<int32_t>& route(int32_t src, int32_t dst);

  std::vector<simgrid::s4u::Host*> hosts_;
  std::vector<std::string> names_;
  std::map<std::string, simgrid::s4u::Mailbox*> mailboxes_;

  std::vector<simgrid::s4u::Link*> links_;
  std::map<const simgrid::s4u::Link*, int32_t> link_index_;
  std::map<std::pair<int32_t, int32_t>, std::vector<int32_t>> routes_;
  std::vector<double> link_bytes_;  // over the measured steps
  std::vector<double> host_in_;
  std::vector<double> host_out_;
  std::vector<std::vector<BusyInterval>> busy_;  // per worker
  std::vector<Activity> timeline_;               // the last step
  double ps_busy_ = 0.0;                         // head PS device, measured steps
  void record_work(int32_t host, int64_t step, const std::vector<Work>& work, double start);

  std::vector<int64_t> pending_parts_;
  std::vector<double> boundary_;
  int64_t completed_step_ = -1;
  simgrid::s4u::MutexPtr step_mutex_;
  simgrid::s4u::ConditionVariablePtr step_done_;
  std::vector<double> ps_device_free_;  // when each PS device finishes its queued work
  int64_t finished_workers_ = 0;
};

}  // namespace ralp::sim
