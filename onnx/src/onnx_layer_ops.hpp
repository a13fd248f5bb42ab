// The ONNX operators that become layers, one function each.
#pragma once

#include <onnx/onnx_pb.h>

#include "onnx_import_state.hpp"

namespace ralp::onnx_import {

// Each reads one node into a layer: Relu, Sigmoid, HardSwish, Softmax, LRN and global pools
// (import_simple with the layer's kind and attributes), HardSigmoid, Conv, MaxPool and
// AveragePool, Gemm, MatMul, Add (of two activations, or a MatMul's bias), Mul (of two
// activations: SiLU's Mul(x, Sigmoid(x)), or a tensor and its per-channel scale),
// BatchNormalization, Dropout and Flatten.
void import_simple(ImportState& s, const onnx::NodeProto& node, LayerKind kind, LayerAttrs attrs);
void import_conv(ImportState& s, const onnx::NodeProto& node);
void import_pool(ImportState& s, const onnx::NodeProto& node);
void import_gemm(ImportState& s, const onnx::NodeProto& node);
void import_matmul(ImportState& s, const onnx::NodeProto& node);
void import_add(ImportState& s, const onnx::NodeProto& node);
void import_hard_sigmoid(ImportState& s, const onnx::NodeProto& node);
void import_mul(ImportState& s, const onnx::NodeProto& node);
void import_batch_norm(ImportState& s, const onnx::NodeProto& node);
void import_dropout(ImportState& s, const onnx::NodeProto& node);
void import_flatten(ImportState& s, const onnx::NodeProto& node);

}  // namespace ralp::onnx_import
