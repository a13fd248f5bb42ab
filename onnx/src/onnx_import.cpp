// ONNX files into layer graphs, through Debian's ONNX protobuf definitions (libonnx-dev).
//
// The nodes are walked in file order (ONNX requires a topological order). Each tensor is either
// an activation (a layer's output, or the model input) or a constant (an initializer, a Constant
// node, or shape arithmetic on either): onnx_values.hpp. Shape arithmetic the exporters insert
// before a classifier (Shape, Gather, Unsqueeze, Concat feeding a Reshape) is evaluated on the
// constants, so a Reshape to [batch, features] becomes a flatten layer (onnx_shape_ops.hpp); the
// other operators become layers (onnx_layer_ops.hpp). Weights are read only for their dimensions:
// external-data files need not be present.
#include "ralp/onnx/onnx_import.hpp"

#include <onnx/onnx_pb.h>

#include <fstream>

#include "onnx_import_state.hpp"
#include "onnx_layer_ops.hpp"
#include "onnx_names.hpp"
#include "onnx_shape_ops.hpp"

namespace ralp {
namespace onnx_import {
namespace {

constexpr std::string_view kSupportedOperators =
    "Conv, Gemm, MatMul, Add, Mul, Relu, Sigmoid, HardSigmoid, HardSwish, MaxPool, AveragePool, "
    "GlobalAveragePool, GlobalMaxPool, BatchNormalization, LRN, Dropout, Flatten, Reshape, "
    "Concat, Softmax, Pad, Identity, Cast, Constant, Shape, Gather, Unsqueeze, Squeeze";

void import_node(ImportState& s, const onnx::NodeProto& node) {
  const std::string& op = node.op_type();
  if (!node.domain().empty() && node.domain() != "ai.onnx") {
    s.fail_node(node, "is in operator domain '" + node.domain() + "', which ralp does not import");
  }
  if (op == "Conv") return import_conv(s, node);
  if (op == "Gemm") return import_gemm(s, node);
  if (op == "MatMul") return import_matmul(s, node);
  if (op == "Add") return import_add(s, node);
  if (op == "Mul") return import_mul(s, node);
  if (op == "Relu") return import_simple(s, node, LayerKind::relu, std::monostate{});
  if (op == "Sigmoid") return import_simple(s, node, LayerKind::sigmoid, std::monostate{});
  if (op == "HardSigmoid") return import_hard_sigmoid(s, node);
  if (op == "HardSwish") return import_simple(s, node, LayerKind::hard_swish, std::monostate{});
  if (op == "MaxPool" || op == "AveragePool") return import_pool(s, node);
  if (op == "GlobalAveragePool" || op == "GlobalMaxPool") {
    PoolAttrs a;
    a.global = true;
    const auto kind = op == "GlobalMaxPool" ? LayerKind::max_pool : LayerKind::avg_pool;
    return import_simple(s, node, kind, a);
  }
  if (op == "BatchNormalization") return import_batch_norm(s, node);
  if (op == "LRN") {
    LrnAttrs a;
    const auto* size = s.attribute(node, "size");
    if (size == nullptr || size->i() < 1) s.fail_node(node, "lacks a positive size attribute");
    a.size = static_cast<int>(size->i());
    a.alpha = s.float_attr(node, "alpha", a.alpha);
    a.beta = s.float_attr(node, "beta", a.beta);
    a.k = s.float_attr(node, "bias", a.k);
    return import_simple(s, node, LayerKind::lrn, a);
  }
  if (op == "Dropout") return import_dropout(s, node);
  if (op == "Flatten") return import_flatten(s, node);
  if (op == "Reshape") return import_reshape(s, node);
  if (op == "Concat") return import_concat(s, node);
  if (op == "Softmax")
    return import_simple(s, node, LayerKind::softmax_cross_entropy, std::monostate{});
  if (op == "Pad") return import_pad(s, node);
  if (op == "Identity" || op == "Cast") {
    s.set_output(node, s.value(node, 0));
    return;
  }
  if (op == "Constant") return import_constant(s, node);
  if (op == "Shape") return import_shape(s, node);
  if (op == "Gather") return import_gather(s, node);
  if (op == "Unsqueeze" || op == "Squeeze") return import_squeeze(s, node);
  s.fail_node(node, "has an operator ralp does not import (supported: " +
                        std::string(kSupportedOperators) + ")");
}

onnx::ModelProto read_model(const std::filesystem::path& path) {
  const auto fail = [&](const std::string& problem) {
    throw InputError(path.string(), "", problem);
  };
  onnx::ModelProto model;
  std::ifstream in(path, std::ios::binary);
  if (!in) fail("cannot be read");
  if (!model.ParseFromIstream(&in)) {
    fail("is not an ONNX model: its protobuf data does not parse (truncated or another format)");
  }
  if (!model.has_graph() || model.graph().node_size() == 0) {
    fail("is not an ONNX model: it holds no graph nodes");
  }
  return model;
}

}  // namespace
}  // namespace onnx_import

bool onnx_import_available() { return true; }

LayerGraph load_onnx_model(const std::filesystem::path& file, const OnnxImportOptions& options) {
  using namespace onnx_import;
  const onnx::ModelProto model = read_model(file);
  const onnx::GraphProto& graph = model.graph();
  ImportState s(file.string(), graph);
  s.add_initializers(graph);
  const TensorShape input_shape = s.read_input(graph, options.input);
  for (const auto& node : graph.node()) import_node(s, node);
  s.finish_output(graph);
  std::string name = options.name.empty() ? sanitise(file.stem().string()) : options.name;
  try {
    return LayerGraph(std::move(name), input_shape, s.specs());
  } catch (const ModelError& e) {
    const size_t i = e.layer_index();
    if (i < s.specs().size()) {
      s.fail("layer '" + s.specs()[i].name + "' (node '" + s.node_names()[i] + "') " + e.what());
    }
    s.fail(e.what());
  }
}

}  // namespace ralp
