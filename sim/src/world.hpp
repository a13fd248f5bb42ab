// Shared state of one simulated run: hosts, mailboxes, step boundaries, and the recorder of
// activities, traffic, messages and per-host time splits. SimGrid adapter (internal to sim/).
#pragma once

#include <map>
#include <string>
#include <utility>
#include <vector>

#include <simgrid/s4u.hpp>

#include "platform.hpp"
#include "ralp/results/simulation_result.hpp"
#include "ralp/schedule/schedule.hpp"
#include "ralp/sim/run_options.hpp"
#include "ralp/spec/nodes.hpp"

namespace ralp::sim {

using schedule::StepPlan;

class World {
 public:
  World(const Scenario& scenario, const schedule::Schedule& schedule, Platform platform,
        RunOptions options);
  World(const World&) = delete;
  World& operator=(const World&) = delete;

  const Scenario& scenario;
  const schedule::Schedule& schedule;
  const int64_t steps;
  const int64_t warmup;

  [[nodiscard]] size_t hosts() const { return hosts_.size(); }
  [[nodiscard]] simgrid::s4u::Host* host(int32_t index) const { return hosts_[index]; }
  [[nodiscard]] const std::string& host_name(int32_t index) const { return names_[index]; }
  [[nodiscard]] bool traced(int64_t step) const { return options_.timeline && step == steps - 1; }
  [[nodiscard]] bool measured(int64_t step) const { return step >= warmup; }
  [[nodiscard]] bool logs_messages(int64_t step) const {
    return options_.messages && step == steps - 1;
  }

  // Named mailbox "kind:src>dst", created once.
  simgrid::s4u::Mailbox* mailbox(const std::string& kind, int32_t src, int32_t dst);

  // Records an interval of device work (compute-like) or of a copy, on `host`'s timeline.
  void record_work(int32_t host, int32_t peer, ActivityKind kind, int64_t step,
                   const std::string& label, double start, double end);
  // Records a transfer of `bytes` on the wire from `start` to `end`: both ends' timelines and
  // splits, the hosts' and every route link's byte counts.
  void record_transfer(int32_t src, int32_t dst, int64_t bytes, int64_t step,
                       const std::string& label, double start, double end);
  // The time a message of `bytes` takes from `src` to `dst` on an otherwise idle route: the
  // route's latency and the bytes at its narrowest bandwidth, with the network model's factors.
  [[nodiscard]] double idle_transfer_seconds(int32_t src, int32_t dst, int64_t bytes) const;
  // A payload flow of `bytes` from `src` to `dst` starts at `now`. Where NICs are token buckets
  // (PlatformSpec::nic_burst), the first bytes pass at once, as many as every bucket on the route
  // holds; returns the bytes the flow still carries. end_flow follows once the flow completes.
  // A bucket refills at its link's rate only while no flow of this run crosses the link.
  [[nodiscard]] int64_t start_flow(int32_t src, int32_t dst, int64_t bytes, double now);
  void end_flow(int32_t src, int32_t dst, double now);
  // Records an interval in which `host` had a transfer in flight, for its time split only.
  void record_busy(int32_t host, int64_t step, double start, double end, bool compute);
  // Logs a message `host` sent in `step` (kept for the last step when asked).
  void log_message(int32_t host, int64_t step, const schedule::Message& message);

  // Step completion: each step waits for the schedule's parts_per_step completions, and ends at
  // the latest of their times.
  void complete_part(int64_t step, double at);
  void role_finished() { ++finished_roles_; }

  // Builds the result once the engine has run. Throws std::runtime_error when the simulation
  // stopped before every step completed (a deadlock).
  StrategyResult collect() const;

 private:
  const std::vector<int32_t>& route(int32_t src, int32_t dst);

  RunOptions options_;
  std::vector<simgrid::s4u::Host*> hosts_;
  std::vector<std::string> names_;
  std::map<std::string, simgrid::s4u::Mailbox*> mailboxes_;

  std::vector<simgrid::s4u::Link*> links_;
  std::map<const simgrid::s4u::Link*, int32_t> link_index_;
  std::map<std::pair<int32_t, int32_t>, std::vector<int32_t>> routes_;
  // Per route asked for: its latency and its payload rate when idle (idle_transfer_seconds).
  struct IdlePath {
    double latency_s = 0.0;
    double bytes_per_s = 0.0;
  };
  mutable std::map<std::pair<int32_t, int32_t>, IdlePath> idle_paths_;
  std::vector<double> link_bytes_;  // over the measured steps
  // Per link: its token bucket (payload bytes it holds when full, 0 without one), the bytes it
  // held when it was last left idle, since when, and the flows crossing it now.
  struct Bucket {
    double capacity = 0.0;
    double rate = 0.0;  // payload bytes per second it refills at
    double tokens = 0.0;
    double idle_since = 0.0;
    int32_t flows = 0;
    [[nodiscard]] double held(double now) const;
  };
  std::vector<Bucket> buckets_;
  [[nodiscard]] Bucket bucket_of(const simgrid::s4u::Link& link) const;
  std::vector<double> host_in_;
  std::vector<double> host_out_;
  NodeLayout layout_;
  bool on_nodes_ = false;  // nodes of several devices or co-located servers: count per node
  std::vector<NodeTraffic> node_traffic_;
  std::vector<std::vector<BusyInterval>> busy_;  // per host
  std::vector<Activity> timeline_;               // the last step
  std::vector<std::vector<SentMessage>> messages_;
  double ps_busy_ = 0.0;  // ps-0's device, measured steps

  std::vector<int64_t> pending_parts_;
  std::vector<double> boundary_;
  int64_t completed_step_ = -1;
  size_t finished_roles_ = 0;
};

}  // namespace ralp::sim
