// ONNX nodes of shape arithmetic, reshaping, joining and padding.
#include "onnx_shape_ops.hpp"

#include <algorithm>
#include <optional>
#include <string>
#include <vector>

namespace ralp::onnx_import {

// On shape constants the values stay and the rank goes; on an activation only Squeeze of a
// 1x1 plane, [batch, C, 1, 1] to [batch, C], which is a flatten.
void import_squeeze(ImportState& s, const onnx::NodeProto& node) {
  const Value& x = s.value(node, 0);
  if (x.is_constant) {
    Value v = x;
    v.dims = {element_count(v.dims)};
    s.set_output(node, std::move(v));
    return;
  }
  if (node.op_type() != "Squeeze" || x.rank != 4 || x.shape.height != 1 || x.shape.width != 1) {
    s.fail_node(node,
                "changes the rank of an activation; ralp imports only a Squeeze of "
                "[batch, C, 1, 1] to [batch, C]");
  }
  s.add_layer(node, LayerSpec{.kind = LayerKind::flatten}, {&x}, 0, 2);
}

void import_reshape(ImportState& s, const onnx::NodeProto& node) {
  const Value& x = s.activation(node, 0);
  const auto& target_values =
      s.values_of(node, s.constant(node, 1, "target shape"), "target shape");
  const std::vector<int64_t> current = s.full_dims(x);
  const bool allow_zero = s.int_attr(node, "allowzero", 0) != 0;
  std::vector<int64_t> target;
  int64_t known = 1;
  std::optional<size_t> inferred;
  for (size_t i = 0; i < target_values.size(); ++i) {
    int64_t t = static_cast<int64_t>(target_values[i]);
    if (t == 0 && !allow_zero && i < current.size()) t = current[i];
    if (t == -1 && !inferred) {
      inferred = i;
    } else if (t < 1) {
      s.fail_node(node, "has a target shape ralp cannot resolve");
    } else {
      known *= t;
    }
    target.push_back(t);
  }
  const int64_t total = element_count(current);
  if (inferred) target[*inferred] = known > 0 ? total / known : 0;
  if (element_count(target) != total) {
    s.fail_node(node, "reshapes [" + join_ints(current) + "] to [" + join_ints(target) + "]");
  }
  if (target == current && x.pad_h == 0 && x.pad_w == 0) {
    s.set_output(node, x);
    return;
  }
  if (target.size() == 2 && target[0] == s.batch()) {
    s.add_layer(node, LayerSpec{.kind = LayerKind::flatten}, {&x}, 0, 2);
    return;
  }
  s.fail_node(node, "reshapes [" + join_ints(current) + "] to [" + join_ints(target) +
                        "]; ralp imports only a flattening to [batch, features]");
}

void import_concat(ImportState& s, const onnx::NodeProto& node) {
  std::vector<const Value*> inputs;
  bool all_constant = true;
  bool any_constant = false;
  for (int i = 0; i < node.input_size(); ++i) {
    inputs.push_back(&s.value(node, i));
    all_constant = all_constant && inputs.back()->is_constant;
    any_constant = any_constant || inputs.back()->is_constant;
  }
  if (inputs.empty()) s.fail_node(node, "has no inputs");
  if (all_constant) {
    std::vector<double> joined;
    for (const Value* v : inputs) {
      const auto& part = s.values_of(node, *v, "constant input");
      joined.insert(joined.end(), part.begin(), part.end());
    }
    s.set_output(node, constant_from_numbers(std::move(joined), false));
    return;
  }
  if (any_constant) s.fail_node(node, "joins constants and activations");
  int64_t axis = s.int_attr(node, "axis", 1);
  if (axis < 0) axis += inputs.front()->rank;
  if (axis != 1) {
    s.fail_node(node,
                "joins along axis " + std::to_string(axis) + "; ralp joins channels (axis 1)");
  }
  s.add_layer(node, LayerSpec{.kind = LayerKind::concat}, inputs, 0, inputs.front()->rank);
}

void import_pad(ImportState& s, const onnx::NodeProto& node) {
  Value x = s.activation(node, 0);
  if (s.string_attr(node, "mode", "constant") != "constant") {
    s.fail_node(node, "pads in mode '" + s.string_attr(node, "mode", "") +
                          "'; ralp imports zero padding only");
  }
  std::vector<int64_t> pads = s.ints_attr(node, "pads", {});
  if (s.has_input(node, 1)) {
    const auto& v = s.values_of(node, s.constant(node, 1, "pads"), "pads");
    pads.assign(v.begin(), v.end());
  }
  double fill = s.float_attr(node, "value", 0.0);
  if (s.has_input(node, 2)) {
    const auto& v = s.values_of(node, s.constant(node, 2, "constant value"), "constant value");
    if (!v.empty()) fill = v[0];
  }
  const bool zero_spatial_only = x.rank == 4 && pads.size() == 8 && pads[0] == 0 && pads[1] == 0 &&
                                 pads[4] == 0 && pads[5] == 0 && pads[2] == pads[6] &&
                                 pads[3] == pads[7] && pads[2] >= 0 && pads[3] >= 0;
  if (!zero_spatial_only || fill != 0.0) {
    s.fail_node(node, "pads [" + join_ints(pads) +
                          "]; ralp imports equal zero padding of height and width only");
  }
  x.pad_h += static_cast<int>(pads[2]);
  x.pad_w += static_cast<int>(pads[3]);
  s.set_output(node, std::move(x));
}

void import_constant(ImportState& s, const onnx::NodeProto& node) {
  if (const auto* a = s.attribute(node, "value")) {
    s.set_output(node, constant_from_tensor(a->t()));
  } else if (const auto* f = s.attribute(node, "value_float")) {
    s.set_output(node, constant_from_numbers({from_float(f->f())}, true));
  } else if (const auto* fs = s.attribute(node, "value_floats")) {
    std::vector<double> numbers;
    for (const float x : fs->floats()) numbers.push_back(from_float(x));
    s.set_output(node, constant_from_numbers(std::move(numbers), false));
  } else if (const auto* i = s.attribute(node, "value_int")) {
    s.set_output(node, constant_from_numbers({static_cast<double>(i->i())}, true));
  } else if (const auto* is = s.attribute(node, "value_ints")) {
    s.set_output(node, constant_from_numbers({is->ints().begin(), is->ints().end()}, false));
  } else {
    s.fail_node(node, "holds no value ralp can read");
  }
}

void import_shape(ImportState& s, const onnx::NodeProto& node) {
  const Value& x = s.value(node, 0);
  std::vector<int64_t> dims = x.is_constant ? x.dims : s.full_dims(x);
  const auto rank = static_cast<int64_t>(dims.size());
  const auto clamp = [rank](int64_t i) {
    return std::clamp(i < 0 ? i + rank : i, int64_t{0}, rank);
  };
  const int64_t start = clamp(s.int_attr(node, "start", 0));
  const int64_t end = clamp(s.int_attr(node, "end", rank));
  std::vector<double> out;
  for (int64_t i = start; i < end; ++i) out.push_back(static_cast<double>(dims[i]));
  s.set_output(node, constant_from_numbers(std::move(out), false));
}

void import_gather(ImportState& s, const onnx::NodeProto& node) {
  const Value& data = s.constant(node, 0, "data");
  const Value& indices = s.constant(node, 1, "indices");
  const auto& d = s.values_of(node, data, "data");
  const auto& idx = s.values_of(node, indices, "indices");
  if (s.int_attr(node, "axis", 0) != 0 || data.dims.size() != 1) {
    s.fail_node(node, "gathers from a constant of rank " + std::to_string(data.dims.size()) +
                          "; ralp evaluates only 1-D shape arithmetic");
  }
  std::vector<double> out;
  for (const double i : idx) {
    auto k = static_cast<int64_t>(i);
    if (k < 0) k += static_cast<int64_t>(d.size());
    if (k < 0 || k >= static_cast<int64_t>(d.size()))
      s.fail_node(node, "has an index out of range");
    out.push_back(d[k]);
  }
  Value v = constant_from_numbers(std::move(out), indices.dims.empty());
  if (!indices.dims.empty()) v.dims = indices.dims;
  s.set_output(node, std::move(v));
}

}  // namespace ralp::onnx_import
