// The model as a DAG of layers (Boost.Graph), with shapes inferred from the input, totals, and the
// cuts that split it into a worker-side tail and a PS-side head.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "ralp/model/layer.hpp"

namespace ralp {

using LayerId = size_t;

// A cut splits the layers into a tail (ids < first_head, data-parallel on the workers) and a head
// (ids >= first_head, on the head PS). Layer ids follow a topological order, so every head is
// closed under successors.
struct CutInfo {
  LayerId first_head = 0;
  std::vector<LayerId> boundary;        // tail layers whose outputs feed the head
  bool boundary_has_model_input = false;  // a head layer reads the model input directly
  Bytes boundary_bytes_per_image;       // activations sent per image (each tensor once)
  int64_t head_params = 0;
  int64_t tail_params = 0;
};

class LayerGraph {
 public:
  // Builds the graph and infers every layer's shape. Layers are in execution order: `inputs` may
  // name only earlier layers or "input" (the model input). Throws ModelError naming the layer's
  // index on a bad attribute, an unknown or later input, a duplicate name or a shape mismatch,
  // and when the model does not end in one softmax_cross_entropy layer that nothing reads.
  LayerGraph(std::string name, TensorShape input, std::vector<LayerSpec> layers);
  ~LayerGraph();
  LayerGraph(const LayerGraph&);
  LayerGraph& operator=(const LayerGraph&);
  LayerGraph(LayerGraph&&) noexcept;
  LayerGraph& operator=(LayerGraph&&) noexcept;

  [[nodiscard]] const std::string& name() const { return name_; }
  [[nodiscard]] const TensorShape& input_shape() const { return input_; }
  [[nodiscard]] size_t size() const { return layers_.size(); }
  [[nodiscard]] const Layer& layer(LayerId id) const { return layers_.at(id); }
  [[nodiscard]] const std::vector<Layer>& layers() const { return layers_; }
  [[nodiscard]] std::optional<LayerId> find(std::string_view layer_name) const;

  // Graph queries, answered from the Boost.Graph adjacency list; results sorted by id.
  [[nodiscard]] std::vector<LayerId> predecessors(LayerId id) const;
  [[nodiscard]] std::vector<LayerId> successors(LayerId id) const;

  [[nodiscard]] int64_t total_params() const;
  [[nodiscard]] Bytes total_param_bytes() const;
  [[nodiscard]] Flops forward_flops_per_image() const;
  [[nodiscard]] Bytes activation_bytes_per_image() const;

  // Cuts. Every id in [1, size()) starts a valid head; `describe_cut` throws std::out_of_range
  // outside it. `cut_points` lists them in order.
  [[nodiscard]] std::vector<LayerId> cut_points() const;
  [[nodiscard]] CutInfo describe_cut(LayerId first_head) const;

  // The same model with its layers in another topological order: layer i of the result is layer
  // order[i] of this one (names, inputs and shapes unchanged; no shape is inferred again, so it
  // costs a copy). Throws std::invalid_argument unless `order` is a permutation of the ids in
  // which every layer comes after the layers it reads.
  [[nodiscard]] LayerGraph reordered(const std::vector<LayerId>& order) const;

 private:
  struct Graph;
  LayerGraph() = default;
  std::string name_;
  TensorShape input_;
  std::vector<Layer> layers_;
  std::unique_ptr<Graph> graph_;
};

}  // namespace ralp
