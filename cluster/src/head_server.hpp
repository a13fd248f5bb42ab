// The RALP head on ps-0 (ralp, hybrid): receives each worker's boundary activations and labels,
// runs the head's layers forward and backward for that micro-batch as it arrives (per_worker) or
// for all W at once after all arrived (all_workers), returns each worker its activation gradient,
// accumulates the head's weight gradients and applies SGD once all W are in. No head parameter
// crosses the network. Internal.
#pragma once

#include <memory>
#include <vector>

#include "ralp/kernels/network.hpp"
#include "strategy_context.hpp"

namespace ralp::cluster {

// The activation message of one worker's micro-batch: each boundary tensor (plain order), the
// model input when a head layer reads it, and the labels; and the gradients that go back.
struct BoundaryMessage {
  std::vector<std::vector<float>> activations;  // one per CutInfo::boundary layer
  std::vector<float> images;                    // when CutInfo::boundary_has_model_input
  std::vector<int32_t> labels;
  std::vector<std::vector<float>> gradients;  // one per boundary layer that needs one

  // Sized for `batch` images of `graph` cut at `cut`.
  BoundaryMessage(const LayerGraph& graph, const CutInfo& cut, int64_t batch);
  [[nodiscard]] std::vector<Piece> activation_pieces();
  [[nodiscard]] std::vector<Piece> gradient_pieces();
  // The boundary layers that need a gradient, in order.
  std::vector<LayerId> gradient_layers;
};

class HeadServer {
 public:
  explicit HeadServer(StrategyContext& context);

  void begin_step(int64_t step);  // posts the activation receives
  [[nodiscard]] bool has_work() const;
  void advance();  // runs the head on what arrived, replies, updates after the last
  [[nodiscard]] bool finished() const { return updated_; }
  void end_step();  // waits for the replies to leave
  [[nodiscard]] double updated_at() const { return updated_at_; }
  [[nodiscard]] kernels::Network& network() { return *network_; }

 private:
  void run_one(int64_t worker);
  void run_all();

  StrategyContext& ctx_;
  CutInfo cut_;
  bool batched_ = false;
  std::unique_ptr<kernels::Network> network_;
  std::vector<BoundaryMessage> messages_;  // per worker
  std::vector<Transport::Handle> arrivals_;
  std::vector<Transport::Handle> replies_;
  std::vector<bool> processed_;
  int64_t processed_count_ = 0;
  int64_t step_ = -1;
  bool updated_ = false;
  double updated_at_ = 0.0;
};

}  // namespace ralp::cluster
