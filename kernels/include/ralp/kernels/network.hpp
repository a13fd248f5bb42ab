// The network executor: runs a contiguous range [first, last) of a model's layers forward and
// backward for one micro-batch on one backend, owning the range's parameters, gradients,
// momentum and activations. The whole model, a worker's tail and the PS head of a RALP cut are
// all ranges.
//
// Loss scaling. The loss layer reports the mean cross-entropy over its micro-batch of B images,
// and its gradient is that of this mean. Weight gradients are therefore per-micro-batch means;
// whoever aggregates W micro-batches (the PS summing W workers, the RALP head accumulating W
// micro-batches, an all-reduce) divides by W, through sgd_step's gradient_scale or
// Backend::sgd_update's, so that the update follows the mean over the global batch of W * B.
//
// Precision. The network computes in its backend's precision (Backend::precision): activations
// and their gradients, boundary tensors included, are of the backend's activation type (BF16
// under bf16 mixed precision); parameters, their gradients and momentum are FP32 in every
// precision (the master weights AMP keeps), so the SGD step and gradient sums are FP32.
//
// Dropout. A dropout layer's mask is a pure function of (StepContext::seed, step, worker, the
// layer's name (dropout_key), the element's position in the micro-batch), so it is the same
// whether the layer runs on a worker or on the PS, and in whatever order a strategy runs the
// model's layers. Batch norm uses the micro-batch's own statistics (training mode).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "ralp/kernels/backend.hpp"
#include "ralp/model/layer_graph.hpp"

namespace ralp::kernels {

// What a step's dropout masks depend on besides the layer and element.
struct StepContext {
  uint64_t seed = 0;    // the run's seed
  uint64_t step = 0;    // training step
  uint32_t worker = 0;  // whose micro-batch this is
};

// The value parameter `name` ("conv1.weight", "fc6.bias", "bn1.weight") starts with at element
// `index` (plain order): conv and FC weights and biases uniform in [-1/sqrt(fan_in),
// 1/sqrt(fan_in)) as PyTorch's defaults, batch-norm scale 1 and shift 0. Depends only on
// (seed, name, index), so a layer starts the same in every range and process.
float initial_parameter(uint64_t seed, const Layer& layer, bool bias, int64_t index);

// The layer part of a dropout mask's key (MaskKey::layer): a hash of the layer's name.
uint32_t dropout_key(const Layer& layer);

class Network {
 public:
  // One trainable tensor of the range, with its gradient (of the last backward, or the sum of
  // several when accumulating) and momentum. Pointers stay valid for the network's life.
  struct Parameter {
    LayerId layer = 0;
    std::string name;  // "<layer>.weight" or "<layer>.bias"
    Tensor* value = nullptr;
    Tensor* gradient = nullptr;
    Tensor* velocity = nullptr;
  };

  // Builds runners and tensors for layers [first, last) of `graph` at `batch` images and
  // initialises parameters from `init_seed`. Throws std::out_of_range for an empty or
  // out-of-bounds range, std::invalid_argument for a layer that reads one tensor twice or that
  // the backend cannot run. `graph` must outlive the network.
  Network(Backend& backend, const LayerGraph& graph, LayerId first, LayerId last, int64_t batch,
          uint64_t init_seed);
  // The whole model.
  Network(Backend& backend, const LayerGraph& graph, int64_t batch, uint64_t init_seed);
  ~Network();
  Network(const Network&) = delete;
  Network& operator=(const Network&) = delete;

  [[nodiscard]] Backend& backend() const { return backend_; }
  [[nodiscard]] const LayerGraph& graph() const { return graph_; }
  [[nodiscard]] LayerId first() const { return first_; }
  [[nodiscard]] LayerId last() const { return last_; }
  [[nodiscard]] int64_t batch() const { return batch_; }

  // The range's boundary, each sorted by id:
  //   boundary_inputs   layers before `first` whose outputs the range reads (received)
  //   boundary_outputs  layers in the range read by layers at or after `last` (sent)
  [[nodiscard]] const std::vector<LayerId>& boundary_inputs() const { return boundary_inputs_; }
  [[nodiscard]] const std::vector<LayerId>& boundary_outputs() const { return boundary_outputs_; }
  [[nodiscard]] bool reads_model_input() const { return reads_model_input_; }
  [[nodiscard]] bool has_loss() const { return has_loss_; }

  // Tensors to fill before forward (with Backend::copy_from_host / copy_labels_from_host):
  [[nodiscard]] Tensor& model_input();             // precondition: reads_model_input()
  [[nodiscard]] Tensor& labels();                  // s32 [B]; precondition: has_loss()
  [[nodiscard]] Tensor& boundary_input(LayerId id);  // B x that layer's output shape
  // ... and before backward: the loss's gradient with respect to each boundary output.
  [[nodiscard]] Tensor& boundary_output_gradient(LayerId id);

  // Results: any range layer's activation after forward (boundary outputs are what a worker
  // sends), and after backward each boundary input's gradient (what the head returns). Throw
  // std::out_of_range for an id without one.
  [[nodiscard]] const Tensor& output(LayerId id) const;
  [[nodiscard]] const Tensor& boundary_input_gradient(LayerId id) const;

  // Runs the range forward. Then loss() is the micro-batch's mean loss (has_loss() only).
  void forward(const StepContext& context);
  [[nodiscard]] float loss();
  // Runs the range backward (every boundary_output_gradient must be filled). With `accumulate`
  // the weight gradients are added to those held (micro-batches of one step); without, they
  // replace them.
  void backward(const StepContext& context, bool accumulate = false);

  // The same work one layer at a time, for callers that communicate between layers (the real
  // cluster waits for a layer's pulled parameters just before its forward, and sends its
  // gradients as soon as its backward is done). forward() is forward_layer() over the range in id
  // order; backward() is begin_backward() then backward_layer() in reverse id order, and callers
  // stepping by hand must keep those orders. Throws std::out_of_range for a layer not in range.
  void forward_layer(LayerId id, const StepContext& context);
  void begin_backward();
  void backward_layer(LayerId id, const StepContext& context, bool accumulate = false);

  // Per-layer pass times of the last forward and backward, indexed by id - first(), when timing
  // is on (each pass is then timed alone, waiting for the device after it; off by default).
  struct LayerTimes {
    std::vector<Seconds> forward, backward_data, backward_weight;
  };
  void set_timing(bool on);
  [[nodiscard]] const LayerTimes& layer_times() const { return times_; }

  [[nodiscard]] std::vector<Parameter>& parameters() { return parameters_; }
  // Parameters of one layer, weight first; empty for layers without any.
  [[nodiscard]] std::vector<Parameter*> parameters_of(LayerId id);
  void zero_gradients();
  // SGD with momentum on every parameter of the range (see Backend::sgd_update).
  void sgd_step(const SgdOptions& options, float gradient_scale);

 private:
  struct Slot;
  struct Step;
  Slot& slot_of(LayerId id);
  const Slot& slot_of(LayerId id) const;
  void build(uint64_t init_seed);
  template <class Pass>
  void timed(std::vector<Seconds>* times, LayerId id, Pass pass);

  Backend& backend_;
  const LayerGraph& graph_;
  LayerId first_, last_;
  int64_t batch_;
  std::vector<LayerId> boundary_inputs_, boundary_outputs_;
  bool reads_model_input_ = false;
  bool has_loss_ = false;
  std::map<LayerId, std::unique_ptr<Slot>> slots_;  // range layers and boundary inputs
  std::unique_ptr<Slot> input_slot_;                // the model input, when read
  Tensor labels_, loss_;
  std::vector<std::unique_ptr<Step>> steps_;         // one per range layer, in id order
  std::vector<Parameter> parameters_;
  std::vector<std::unique_ptr<Tensor>> parameter_tensors_;
  std::unique_ptr<DeviceTimer> timer_;  // set while timing is on
  LayerTimes times_;
};

}  // namespace ralp::kernels
