// The MPI interpreter of a step schedule (schedule.hpp) for one rank. Two threads carry out the
// rank's list, following the schedule's stream rules: a compute thread runs the device stream
// (kernels, sums, updates) in list order, and the calling thread runs every other stream (sends
// and receives per peer, copies, the ring all-reduce of each fusion buffer), posting each message
// as soon as its dependencies completed and driving MPI's progress meanwhile, as Horovod's
// background thread does: communication overlaps computation wherever the schedule allows.
// Only the calling thread calls MPI. What each operation reads and writes comes from the rank's
// RoleActions. Internal to cluster/.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "ralp/results/step_result.hpp"
#include "strategy_context.hpp"

namespace ralp::cluster {

// How a role carries out its operations: the data behind each message and the work behind each
// device operation. Methods marked "compute thread" run there, the others on the MPI thread;
// the executor orders them by the schedule's dependencies.
class RoleActions {
 public:
  virtual ~RoleActions() = default;
  // MPI thread, before any operation of `step`.
  virtual void begin_step(int64_t step) = 0;
  // Compute thread: a compute, aggregate, update, encode or decode operation.
  virtual void run_device(const schedule::Op& op, int64_t step) = 0;
  // MPI thread: where a message's payload comes from or lands; it must add up to the message's
  // payload bytes.
  virtual std::vector<Piece> send_pieces(const schedule::Op& op) = 0;
  virtual std::vector<Piece> receive_pieces(const schedule::Op& op) = 0;
  // MPI thread: the float32 gradients of a fusion buffer's tensors, in buffer order.
  virtual std::vector<std::span<float>> ring_tensors(size_t buffer) = 0;
};

class StepExecutor {
 public:
  StepExecutor(StrategyContext& context, const schedule::Schedule& schedule, RoleActions& actions);

  // Runs every step of the strategy on this rank, recording into context.record.
  void run();

 private:
  struct Plan;       // the lanes and dependencies, worked out once
  struct State;      // what the two threads share
  class MpiThread;   // the calling thread's loop over the other streams

  // The compute thread's side, and the pieces of it.
  void run_device_stream(const Plan& plan, State& state);
  // Waits until device operation i of step k may run; false when the run stops.
  bool await_turn(uint32_t i, int64_t k, State& state);
  void run_device_op(const Plan& plan, size_t position, int64_t k, State& state);
  void record_device_stream(const Plan& plan, State& state);

  [[nodiscard]] std::string label(const schedule::Op& op) const;
  // Adds an activity of the last step to the record's timeline.
  void trace(ActivityKind kind, int32_t peer, int64_t step, std::string label, double start,
             double end, int64_t bytes);

  StrategyContext& ctx_;
  const schedule::Schedule& schedule_;
  const schedule::RoleSchedule& role_;
  RoleActions& actions_;
};

}  // namespace ralp::cluster
