// The state of one ONNX import and the readers of nodes' inputs and attributes.
#include "onnx_import_state.hpp"

#include <algorithm>
#include <set>

#include "ralp/core/json_input.hpp"

namespace ralp::onnx_import {

ImportState::ImportState(std::string file, const onnx::GraphProto& graph)
    : file_(std::move(file)), names_(graph) {
  for (const auto& node : graph.node()) {
    for (const auto& input : node.input()) ++readers_[input];
  }
  for (const auto& output : graph.output()) ++readers_[output.name()];
}

int ImportState::readers(const std::string& name) const {
  const auto it = readers_.find(name);
  return it == readers_.end() ? 0 : it->second;
}

void ImportState::fail(const std::string& problem) const { throw InputError(file_, "", problem); }

void ImportState::fail_node(const onnx::NodeProto& node, const std::string& problem) const {
  fail("node '" + node.name() + "' (" + node.op_type() + ") " + problem);
}

void ImportState::add_initializers(const onnx::GraphProto& graph) {
  for (const auto& init : graph.initializer()) values_[init.name()] = constant_from_tensor(init);
}

TensorShape ImportState::read_input(const onnx::GraphProto& graph,
                                    const std::optional<TensorShape>& given_shape) {
  std::set<std::string> initializers;
  for (const auto& init : graph.initializer()) initializers.insert(init.name());
  const onnx::ValueInfoProto* input = nullptr;
  for (const auto& candidate : graph.input()) {
    if (initializers.contains(candidate.name())) continue;
    if (input != nullptr) {
      fail("has more than one input ('" + input->name() + "', '" + candidate.name() +
           "'); ralp models read one image tensor");
    }
    input = &candidate;
  }
  if (input == nullptr) fail("has no input besides its initializers");
  const auto& shape = input->type().tensor_type().shape();
  const int rank = shape.dim_size();
  if (rank != 4 && rank != 2) {
    fail("input '" + input->name() + "' has rank " + std::to_string(rank) +
         ", expected [batch, channels, height, width] or [batch, features]");
  }
  std::vector<std::optional<int64_t>> dims;
  std::string shown;
  for (int i = 0; i < rank; ++i) {
    const auto& d = shape.dim(i);
    const bool known = d.has_dim_value() && d.dim_value() > 0;
    dims.push_back(known ? std::optional(d.dim_value()) : std::nullopt);
    shown += (i ? ", " : "") +
             (known ? std::to_string(d.dim_value())
                    : (d.has_dim_param() && !d.dim_param().empty() ? d.dim_param() : "?"));
  }
  batch_ = dims[0].value_or(1);
  const TensorShape in_file{dims[1].value_or(0), rank == 4 ? dims[2].value_or(0) : 1,
                            rank == 4 ? dims[3].value_or(0) : 1};
  const bool dynamic = !dims[1] || (rank == 4 && (!dims[2] || !dims[3]));
  TensorShape input_shape;
  if (given_shape) {
    const TensorShape& given = *given_shape;
    const bool agrees = (!dims[1] || *dims[1] == given.channels) &&
                        (rank == 2 ? given.height == 1 && given.width == 1
                                   : (!dims[2] || *dims[2] == given.height) &&
                                         (!dims[3] || *dims[3] == given.width));
    if (!agrees) {
      fail("input '" + input->name() + "' is [" + shown + "], which --input " + given.to_string() +
           " contradicts");
    }
    input_shape = given;
  } else if (dynamic) {
    fail("input '" + input->name() + "' has a dynamic shape [" + shown +
         "]; give the image shape with --input CxHxW (a scenario: \"input\": [C, H, W])");
  } else {
    input_shape = in_file;
  }
  Value v;
  v.layer = std::string(kModelInputName);
  v.shape = input_shape;
  v.rank = rank;
  values_[input->name()] = v;
  return input_shape;
}

void ImportState::finish_output(const onnx::GraphProto& graph) {
  std::vector<const Value*> outputs;
  std::string names;
  for (const auto& out : graph.output()) {
    const auto it = values_.find(out.name());
    if (it == values_.end() || it->second.is_constant) continue;
    outputs.push_back(&it->second);
    names += (names.empty() ? "'" : ", '") + out.name() + "'";
  }
  if (outputs.empty()) fail("has no output computed from its input");
  if (outputs.size() > 1) {
    fail("has " + std::to_string(outputs.size()) + " outputs (" + names +
         "); ralp models have one (export without auxiliary heads)");
  }
  const Value& out = *outputs.front();
  if (!specs_.empty() && specs_.back().kind == LayerKind::softmax_cross_entropy &&
      out.layer == specs_.back().name) {
    return;
  }
  // Training appends a loss to the logits.
  onnx::NodeProto loss;
  loss.set_name("loss");
  loss.set_op_type("SoftmaxCrossEntropyLoss");
  loss.add_output("loss");
  add_layer(loss, LayerSpec{.kind = LayerKind::softmax_cross_entropy}, {&out}, 0, out.rank);
}

bool ImportState::has_input(const onnx::NodeProto& node, int i) const {
  return i < node.input_size() && !node.input(i).empty();
}

const Value& ImportState::value(const onnx::NodeProto& node, int i) const {
  if (!has_input(node, i)) fail_node(node, "lacks input " + std::to_string(i));
  const auto it = values_.find(node.input(i));
  if (it == values_.end()) {
    fail_node(node, "reads '" + node.input(i) + "', which no earlier node or initializer makes");
  }
  return it->second;
}
const Value& ImportState::activation(const onnx::NodeProto& node, int i) const {
  const Value& v = value(node, i);
  if (v.is_constant) {
    fail_node(node, "has a constant as input " + std::to_string(i) +
                        ", where ralp expects an activation");
  }
  return v;
}
const Value& ImportState::constant(const onnx::NodeProto& node, int i,
                                   std::string_view what) const {
  const Value& v = value(node, i);
  if (!v.is_constant) {
    fail_node(node, "computes its " + std::string(what) +
                        " from the input; ralp needs it as an initializer or constant");
  }
  return v;
}
const std::vector<double>& ImportState::values_of(const onnx::NodeProto& node, const Value& v,
                                                  std::string_view what) const {
  if (!v.values) fail_node(node, "has a " + std::string(what) + " whose values ralp cannot read");
  return *v.values;
}

const onnx::AttributeProto* ImportState::attribute(const onnx::NodeProto& node,
                                                   std::string_view name) const {
  for (const auto& a : node.attribute()) {
    if (a.name() == name) return &a;
  }
  return nullptr;
}
int64_t ImportState::int_attr(const onnx::NodeProto& node, std::string_view name,
                              int64_t fallback) const {
  const auto* a = attribute(node, name);
  return a != nullptr ? a->i() : fallback;
}
double ImportState::float_attr(const onnx::NodeProto& node, std::string_view name,
                               double fallback) const {
  const auto* a = attribute(node, name);
  return a != nullptr ? from_float(a->f()) : fallback;
}
std::string ImportState::string_attr(const onnx::NodeProto& node, std::string_view name,
                                     std::string fallback) const {
  const auto* a = attribute(node, name);
  return a != nullptr ? a->s() : fallback;
}
std::vector<int64_t> ImportState::ints_attr(const onnx::NodeProto& node, std::string_view name,
                                            std::vector<int64_t> fallback) const {
  const auto* a = attribute(node, name);
  if (a == nullptr) return fallback;
  return {a->ints().begin(), a->ints().end()};
}
std::pair<int, int> ImportState::pair_attr(const onnx::NodeProto& node, std::string_view name,
                                           std::optional<int> fallback) const {
  const auto* a = attribute(node, name);
  if (a == nullptr) {
    if (!fallback) fail_node(node, "lacks its " + std::string(name) + " attribute");
    return {*fallback, *fallback};
  }
  if (a->ints_size() != 2 || a->ints(0) < 1 || a->ints(1) < 1) {
    fail_node(node, "has " + std::string(name) + " [" +
                        join_ints({a->ints().begin(), a->ints().end()}) +
                        "], expected two positive integers (2-D only)");
  }
  return {static_cast<int>(a->ints(0)), static_cast<int>(a->ints(1))};
}

std::pair<int, int> ImportState::padding(const onnx::NodeProto& node, const Value& x,
                                         std::pair<int, int> k, std::pair<int, int> s,
                                         std::pair<int, int> d) const {
  const std::string auto_pad = string_attr(node, "auto_pad", "NOTSET");
  int ph = 0;
  int pw = 0;
  if (auto_pad == "NOTSET") {
    const auto pads = ints_attr(node, "pads", {0, 0, 0, 0});
    if (pads.size() != 4 || pads[0] != pads[2] || pads[1] != pads[3]) {
      fail_node(node, "has pads [" + join_ints(pads) +
                          "]; ralp supports equal padding at both ends of each axis");
    }
    ph = static_cast<int>(pads[0]);
    pw = static_cast<int>(pads[1]);
  } else if (auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") {
    const auto same = [&](int64_t in, int kernel, int stride, int dilation) {
      const int64_t out = (in + stride - 1) / stride;
      const int64_t total =
          std::max<int64_t>((out - 1) * stride + (kernel - 1) * dilation + 1 - in, 0);
      if (total % 2 != 0) {
        fail_node(node, "has auto_pad " + auto_pad +
                            " padding one end more than the other, which ralp does not model");
      }
      return static_cast<int>(total / 2);
    };
    ph = same(x.shape.height, k.first, s.first, d.first);
    pw = same(x.shape.width, k.second, s.second, d.second);
  } else if (auto_pad != "VALID") {
    fail_node(node, "has auto_pad '" + auto_pad + "'");
  }
  return {ph + x.pad_h, pw + x.pad_w};
}

const Value& ImportState::add_layer(const onnx::NodeProto& node, LayerSpec spec,
                                    const std::vector<const Value*>& inputs,
                                    int64_t expected_params, int out_rank) {
  spec.name = names_.layer_name(node);
  std::vector<TensorShape> shapes;
  for (const Value* v : inputs) {
    if (v->pad_h != 0 || v->pad_w != 0) {
      fail_node(node, "reads the output of a Pad node; only Conv and AveragePool absorb one");
    }
    spec.inputs.push_back(v->layer);
    shapes.push_back(v->shape);
  }
  Layer layer;
  try {
    layer = infer_layer(spec, shapes, specs_.size());
  } catch (const ModelError& e) {
    fail_node(node, e.what());
  }
  if (layer.params() != expected_params) {
    fail_node(node, "has initializers of " + std::to_string(expected_params) +
                        " parameters where its shape implies " + std::to_string(layer.params()));
  }
  specs_.push_back(spec);
  node_names_.push_back(node.name());
  Value out;
  out.layer = spec.name;
  out.shape = layer.output;
  out.rank = out_rank;
  return set_output(node, std::move(out));
}

const Value& ImportState::set_output(const onnx::NodeProto& node, Value v) {
  if (node.output_size() == 0 || node.output(0).empty()) fail_node(node, "has no output");
  return values_[node.output(0)] = std::move(v);
}

std::vector<int64_t> ImportState::full_dims(const Value& x) const {
  const int64_t h = x.shape.height + 2 * x.pad_h;
  const int64_t w = x.shape.width + 2 * x.pad_w;
  if (x.rank == 4) return {batch_, x.shape.channels, h, w};
  return {batch_, x.shape.channels};
}

}  // namespace ralp::onnx_import
