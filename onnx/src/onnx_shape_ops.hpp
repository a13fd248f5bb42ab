// The ONNX operators of shape arithmetic and reshaping, one function each.
#pragma once

#include <onnx/onnx_pb.h>

#include "onnx_import_state.hpp"

namespace ralp::onnx_import {

// Nodes that make no layer of their own, or only a flatten: shape arithmetic on constants (Shape,
// Gather, Concat of constants, Constant, Unsqueeze and Squeeze), a Reshape or Squeeze to [batch,
// features], a Concat of activations along channels, and a zero Pad that the next Conv or
// AveragePool absorbs.
void import_squeeze(ImportState& s, const onnx::NodeProto& node);
void import_reshape(ImportState& s, const onnx::NodeProto& node);
void import_concat(ImportState& s, const onnx::NodeProto& node);
void import_pad(ImportState& s, const onnx::NodeProto& node);
void import_constant(ImportState& s, const onnx::NodeProto& node);
void import_shape(ImportState& s, const onnx::NodeProto& node);
void import_gather(ImportState& s, const onnx::NodeProto& node);

}  // namespace ralp::onnx_import
