// Layer names from ONNX node names: PyTorch's "/layer1/layer1.0/conv1/Conv" becomes
// "layer1.0.conv1", unique within the model.
#pragma once

#include <onnx/onnx_pb.h>

#include <set>
#include <string>
#include <string_view>

namespace ralp::onnx_import {

std::string lower(std::string_view s);

// Letters, digits, '_', '.' and '-' are kept; anything else becomes '_'.
std::string sanitise(std::string_view s);

// Names the layers of one graph. A scope that other nodes' scopes extend (a residual block's
// Add, "layer1.0") keeps its operator part ("layer1.0.add") so that it does not read as the whole
// block; a name met twice gets "_2", "_3", ...
class LayerNames {
 public:
  explicit LayerNames(const onnx::GraphProto& graph);
  // The name of the layer `node` becomes; each call returns a name no earlier call returned.
  std::string layer_name(const onnx::NodeProto& node);

 private:
  std::set<std::string> scope_prefixes_;
  std::set<std::string> used_names_;
};

}  // namespace ralp::onnx_import
