// A parameter-server shard (ps, ralp): holds its variables and their momentum, sends each worker
// the pulls of a step in forward order, receives the workers' pushes as their backward produces
// them, sums each variable group's W gradients in worker order (so that the sum does not depend on
// arrival order) and applies SGD with momentum (gradient scale 1/W) once all W arrived. Internal.
#pragma once

#include <memory>
#include <vector>

#include "strategy_context.hpp"

namespace ralp::cluster {

class ParameterShard {
 public:
  ParameterShard(StrategyContext& context, int64_t shard);

  [[nodiscard]] bool has_groups() const { return !groups_.empty(); }
  // Posts the step's push receives, then sends every worker its pulls.
  void begin_step(int64_t step);
  // Whether a gradient arrived that advance() can sum now.
  [[nodiscard]] bool has_work() const;
  // Sums what arrived in worker order; updates the groups whose W gradients are in.
  void advance();
  [[nodiscard]] bool finished() const { return updated_ == groups_.size(); }
  // Reference time of the step's last update.
  [[nodiscard]] double updated_at() const { return updated_at_; }
  // The current values of variable `variable` (a ShardPlan index this shard holds).
  [[nodiscard]] std::vector<float> values(size_t variable);

 private:
  struct Variable {
    size_t plan_index = 0;
    kernels::Tensor value, velocity, sum;
    std::vector<kernels::Tensor> gradients;  // per worker
    std::unique_ptr<HostView> value_view;
    std::vector<std::unique_ptr<HostView>> gradient_views;
  };
  struct Group {
    const VariableGroup* plan = nullptr;
    std::vector<Variable*> variables;
    std::vector<Transport::Handle> pulls;   // per worker, this step
    std::vector<Transport::Handle> pushes;  // per worker, this step
    int64_t summed = 0;                     // workers summed so far, in order
  };

  StrategyContext& ctx_;
  int64_t shard_;
  int64_t step_ = -1;
  std::vector<std::unique_ptr<Variable>> variables_;
  std::vector<Group> groups_;  // forward order
  size_t updated_ = 0;
  double updated_at_ = 0.0;
};

}  // namespace ralp::cluster
