// The cost-model interface: a layer's forward and backward times on one device, and the table
// of a whole model's costs that the simulator and the CLI read.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "ralp/devices/device_profile.hpp"
#include "ralp/model/layer_graph.hpp"

namespace ralp {

// Where a time came from, best first. Every output that uses times says which.
enum class CostSource { measured, fitted, published, datasheet };
std::string_view to_string(CostSource source);

// What a cost model is asked about: one layer signature at one batch size, with the work the
// layer maths computed (roofline inputs). Two keys with equal signature and batch are equal.
struct LayerKey {
  std::string signature;
  LayerKind kind = LayerKind::relu;
  int64_t batch = 0;
  LayerWork work;
  // What the GPU kernel model reads: the first input's and the output's shapes, the attributes
  // and whether the input needs a gradient.
  TensorShape input;
  TensorShape output;
  LayerAttrs attrs;
  bool needs_input_gradient = false;
  friend bool operator==(const LayerKey& a, const LayerKey& b) {
    return a.signature == b.signature && a.batch == b.batch;
  }
};

LayerKey make_layer_key(const Layer& layer, int64_t batch);

struct LayerCost {
  Seconds forward;
  Seconds backward_data;    // zero when the layer's input needs no gradient
  Seconds backward_weight;  // zero for layers without parameters
  CostSource source = CostSource::datasheet;
  [[nodiscard]] Seconds backward() const { return backward_data + backward_weight; }
  friend bool operator==(const LayerCost&, const LayerCost&) = default;
};

class CostModel {
 public:
  virtual ~CostModel() = default;
  // Times of each pass; a pass with no work (LayerWork all zero) costs zero.
  [[nodiscard]] virtual LayerCost estimate(const LayerKey& key) const = 0;
  // One line naming the model and its profile, for outputs.
  [[nodiscard]] virtual std::string describe() const = 0;
};

// Per-layer costs of a model at one batch size, with totals and a count per source.
struct ModelCost {
  std::vector<LayerCost> layers;  // indexed by LayerId
  Seconds forward;
  Seconds backward;
  size_t measured = 0;
  size_t fitted = 0;
  size_t published = 0;
  size_t datasheet = 0;
};

ModelCost model_cost(const LayerGraph& graph, const CostModel& model, int64_t batch);
// The same for layers [first, last) only (a worker's tail, a PS's head); `layers` holds those.
ModelCost model_cost(const LayerGraph& graph, const CostModel& model, int64_t batch, LayerId first,
                     LayerId last);

}  // namespace ralp
