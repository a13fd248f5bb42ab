// Horovod-style gradient all-reduce among the workers (allreduce, and hybrid's tail): as backward
// produces a layer's gradients, workers tell the coordinator (worker-0); each fusion cycle it fuses
// the gradients every worker has produced into buffers of at most the fusion threshold and
// announces them; every worker then all-reduces the buffers one after another with a ring over
// point-to-point messages (reduce-scatter and allgather, 2(W-1) phases of chunks of size/W), or
// with MPI_Iallreduce when asked. Progress is interleaved: the worker's thread calls advance()
// between layers of backward and waits in wait_until() only once backward is done, so there is no
// second thread competing with the kernels for the CPU. Internal.
#pragma once

#include <deque>
#include <vector>

#include "segmented_network.hpp"
#include "strategy_context.hpp"

namespace ralp::cluster {

class RingAllreduce {
 public:
  RingAllreduce(StrategyContext& context, SegmentedNetwork& network, int64_t worker);

  void begin_step(int64_t step);
  // This worker's backward just produced `layer`'s gradients.
  void produced(LayerId layer);
  // Whether advance() has something to do now (a message completed or a fusion cycle is due).
  [[nodiscard]] bool has_work();
  void advance();
  // Every gradient of the step is summed over the workers (in the network's gradient tensors).
  [[nodiscard]] bool step_complete() const { return reduced_ == tensors_.size(); }
  // Waits for this step's negotiation messages to leave.
  void end_step();

 private:
  struct Gradient {
    LayerId layer = 0;
    SegmentedNetwork::Parameter* parameter = nullptr;
    int64_t elements = 0;
    std::unique_ptr<HostView> view;
  };
  struct Buffer {
    std::vector<size_t> tensors;  // indices into tensors_, in fusion order
    int64_t elements = 0;
  };

  [[nodiscard]] bool coordinator() const { return worker_ == 0; }
  void note_ready(size_t tensor);
  void start_cycle();
  void start_buffer();
  void post_phase();
  void finish_phase();
  void finish_buffer();
  [[nodiscard]] bool cycle_due() const;
  void post_plan_receive();
  void take_plan();

  StrategyContext& ctx_;
  int64_t worker_;
  int64_t members_;
  int64_t step_ = -1;
  std::vector<Gradient> tensors_;         // model order
  std::vector<size_t> production_order_;  // layers from the last, each weight before bias
  double threshold_ = 0.0;
  double cycle_ = 0.0;

  // Coordinator: how many workers produced each tensor this step, the tensors all have produced
  // and no cycle took yet, and the cycle grid.
  std::vector<int64_t> ready_count_;
  std::vector<size_t> ready_queue_;
  double cycle_start_ = 0.0;  // when the queue became non-empty
  double next_tick_ = 0.0;    // local clock
  double tick_ = 0.0;         // start of the cycle in flight
  int64_t cycles_ = 0;
  size_t cycle_buffers_left_ = 0;
  // Coordinator: per other worker, its readiness messages of the step and the next to check.
  std::vector<std::vector<Transport::Handle>> readiness_in_;
  std::vector<size_t> readiness_next_;
  std::vector<Transport::Handle> readiness_out_;  // the other workers' sends
  std::vector<int32_t> plan_;                     // per tensor: its buffer in the cycle, or -1
  Transport::Handle plan_receive_ = 0;
  bool plan_pending_ = false;
  std::vector<Transport::Handle> plan_sends_;
  std::deque<std::vector<int32_t>> sent_plans_;  // kept until their sends are done

  // Buffers announced and not yet reduced; the first one is in flight when active_.
  std::deque<Buffer> buffers_;
  bool cycle_in_flight_ = false;
  bool active_ = false;
  std::vector<float> fused_;
  std::vector<float> incoming_;
  int64_t phase_ = 0;
  Transport::Handle phase_send_ = 0, phase_receive_ = 0;
  MPI_Request collective_ = MPI_REQUEST_NULL;
  size_t reduced_ = 0;
};

}  // namespace ralp::cluster
