// What every role of one strategy run shares: the scenario and strategy, the cut, the transport,
// the kernels' backend, fault injection and this rank's record; and host views of tensors for
// sending and receiving them. Internal to cluster/.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "ralp/cluster/cluster_options.hpp"
#include "ralp/cluster/fault_injection.hpp"
#include "ralp/cluster/measurement.hpp"
#include "ralp/kernels/backend.hpp"
#include "ralp/spec/scenario.hpp"
#include "ralp/spec/sharding.hpp"
#include "transport.hpp"

namespace ralp::cluster {

struct StrategyContext {
  const Scenario& scenario;
  const StrategySpec& spec;
  std::optional<LayerId> cut;  // first head layer (ralp, hybrid)
  LayerId tail_end = 0;        // the workers run layers [0, tail_end)
  int64_t steps = 0;           // warm-up included
  Transport& transport;
  kernels::Backend& backend;
  const FaultInjector& faults;
  kernels::SgdOptions sgd;
  AllreduceImplementation allreduce = AllreduceImplementation::ring;
  bool compute_yields = false;  // ClusterOptions::compute_yields
  MPI_Comm workers_comm = MPI_COMM_NULL;  // the workers only (MPI_Allreduce option)
  ShardPlan shards;                       // ps and ralp: the tail's variables
  RankRecord record;

  [[nodiscard]] const Roles& roles() const { return transport.roles(); }
  [[nodiscard]] int64_t workers() const { return scenario.workers; }
  [[nodiscard]] int64_t batch() const { return scenario.batch_per_worker; }
  [[nodiscard]] bool uses_shards() const {
    return spec.kind == StrategyKind::ps || spec.kind == StrategyKind::ralp;
  }
  [[nodiscard]] bool uses_ring() const {
    return spec.kind == StrategyKind::allreduce || spec.kind == StrategyKind::hybrid;
  }
  [[nodiscard]] bool has_head() const { return cut.has_value(); }
};

// A tensor's contents as bytes on the host: the tensor's own memory where the backend keeps it
// on the host in plain order (the CPU's parameters), else a host copy that download() and
// upload() move across.
class HostView {
 public:
  HostView(kernels::Backend& backend, kernels::Tensor& tensor);
  [[nodiscard]] Piece piece();
  [[nodiscard]] float* data() { return direct_ ? tensor_->f32() : copy_.data(); }
  [[nodiscard]] int64_t elements() const { return tensor_->elements(); }
  void download();  // before sending
  void upload();    // after receiving

 private:
  kernels::Backend* backend_;
  kernels::Tensor* tensor_;
  bool direct_;
  std::vector<float> copy_;
};

}  // namespace ralp::cluster
