// The import's view of an ONNX tensor: an activation (a layer's output, or the model input) or a
// constant (an initializer, a Constant node, or shape arithmetic on either), and the readers of
// constants. Small constants (shapes, ratios) have their values read; weights only their
// dimensions, so external-data files need not be present.
#pragma once

#include <onnx/onnx_pb.h>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "ralp/model/layer.hpp"

namespace ralp::onnx_import {

struct Value {
  bool is_constant = false;
  // An activation: the layer producing it ("input" for the model input), its per-image shape,
  // its rank including the batch dimension, and zero padding a Pad node added that the consuming
  // convolution or average pool absorbs.
  std::string layer;
  TensorShape shape;
  int rank = 4;
  int pad_h = 0;
  int pad_w = 0;
  // A constant: its dimensions, and its values where it is small and numeric.
  std::vector<int64_t> dims;
  std::optional<std::vector<double>> values;
};

// ONNX stores these attributes as floats: 1e-5 arrives as 9.99999975e-06. Seven significant
// digits give back the number that was written.
double from_float(float f);

// The product of `dims` (1 for a scalar).
int64_t element_count(const std::vector<int64_t>& dims);

// "1, 2, 3" for outputs.
std::string join_ints(const std::vector<int64_t>& values, std::string_view separator = ", ");

// An initializer or a Constant node's tensor: its dimensions, and its values when it has at most
// 4,096 numeric elements stored in the file.
Value constant_from_tensor(const onnx::TensorProto& t);

// A constant computed by shape arithmetic: a scalar, or a 1-D tensor of `numbers`.
Value constant_from_numbers(std::vector<double> numbers, bool scalar);

}  // namespace ralp::onnx_import
