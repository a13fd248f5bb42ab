// The state of one ONNX import: the values the nodes read so far computed, the layers made, and
// the readers a node's inputs and attributes go through, each failing with the node named.
#pragma once

#include <onnx/onnx_pb.h>

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "onnx_names.hpp"
#include "onnx_values.hpp"
#include "ralp/model/layer.hpp"

namespace ralp::onnx_import {

class ImportState {
 public:
  // `file` names the file in every error; `graph` gives the layers their names.
  ImportState(std::string file, const onnx::GraphProto& graph);

  // Throw InputError naming the file (and the node, with its operator type).
  [[noreturn]] void fail(const std::string& problem) const;
  [[noreturn]] void fail_node(const onnx::NodeProto& node, const std::string& problem) const;

  // The initializers as constants, then the model input: one tensor of rank 4 (images) or 2,
  // whose per-image shape is `given_shape` where set (it must agree with the file's) or the
  // file's. Returns the per-image shape.
  void add_initializers(const onnx::GraphProto& graph);
  TensorShape read_input(const onnx::GraphProto& graph,
                         const std::optional<TensorShape>& given_shape);
  // Checks the graph's one output and appends the training loss unless the model ends in
  // Softmax.
  void finish_output(const onnx::GraphProto& graph);

  // A node's inputs: present at all; any value; an activation; a constant (its `what` in the
  // error); a constant's values.
  [[nodiscard]] bool has_input(const onnx::NodeProto& node, int i) const;
  [[nodiscard]] const Value& value(const onnx::NodeProto& node, int i) const;
  [[nodiscard]] const Value& activation(const onnx::NodeProto& node, int i) const;
  [[nodiscard]] const Value& constant(const onnx::NodeProto& node, int i,
                                      std::string_view what) const;
  [[nodiscard]] const std::vector<double>& values_of(const onnx::NodeProto& node, const Value& v,
                                                     std::string_view what) const;

  // A node's attributes, with the value to take when one is absent.
  [[nodiscard]] const onnx::AttributeProto* attribute(const onnx::NodeProto& node,
                                                      std::string_view name) const;
  [[nodiscard]] int64_t int_attr(const onnx::NodeProto& node, std::string_view name,
                                 int64_t fallback) const;
  [[nodiscard]] double float_attr(const onnx::NodeProto& node, std::string_view name,
                                  double fallback) const;
  [[nodiscard]] std::string string_attr(const onnx::NodeProto& node, std::string_view name,
                                        std::string fallback) const;
  [[nodiscard]] std::vector<int64_t> ints_attr(const onnx::NodeProto& node, std::string_view name,
                                               std::vector<int64_t> fallback) const;
  // A 2-D window attribute (kernel_shape, strides, dilations) as {h, w}; without a fallback the
  // attribute is required.
  [[nodiscard]] std::pair<int, int> pair_attr(const onnx::NodeProto& node, std::string_view name,
                                              std::optional<int> fallback) const;
  // Symmetric {pad_h, pad_w} from pads or auto_pad, plus what a Pad node before `x` added.
  [[nodiscard]] std::pair<int, int> padding(const onnx::NodeProto& node, const Value& x,
                                            std::pair<int, int> k, std::pair<int, int> s,
                                            std::pair<int, int> d) const;

  // Appends a layer read from `inputs`; `expected_params` (the initializers' element count) must
  // equal the parameters the layer maths infers. Returns the layer's output value.
  const Value& add_layer(const onnx::NodeProto& node, LayerSpec spec,
                         const std::vector<const Value*>& inputs, int64_t expected_params,
                         int out_rank);
  // Sets the node's first output to `v`.
  const Value& set_output(const onnx::NodeProto& node, Value v);
  // An activation's dimensions with the batch, as ONNX's Shape sees them.
  [[nodiscard]] std::vector<int64_t> full_dims(const Value& x) const;

  [[nodiscard]] int64_t batch() const { return batch_; }
  // The layers so far, in file order, and the node each came from.
  [[nodiscard]] std::vector<LayerSpec>& specs() { return specs_; }
  [[nodiscard]] const std::vector<std::string>& node_names() const { return node_names_; }
  // How many nodes read the tensor `name`, a graph output counting as one.
  [[nodiscard]] int readers(const std::string& name) const;
  // A MatMul's layer, which an Add right after it may give a bias.
  [[nodiscard]] std::optional<size_t>& bias_free_fc() { return bias_free_fc_; }

 private:
  std::string file_;
  LayerNames names_;
  std::map<std::string, Value> values_;
  int64_t batch_ = 1;
  std::vector<LayerSpec> specs_;
  std::vector<std::string> node_names_;  // the node each layer came from
  std::optional<size_t> bias_free_fc_;
  std::map<std::string, int> readers_;
};

}  // namespace ralp::onnx_import
