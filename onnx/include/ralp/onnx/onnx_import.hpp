// ONNX import: a CNN exported from PyTorch or TensorFlow as an ONNX file, read into the same layer
// graph a model file describes (docs/model-format.md lists the operators and how each maps).
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <string_view>

#include "ralp/core/json_input.hpp"
#include "ralp/model/layer_graph.hpp"

namespace ralp {

struct OnnxImportOptions {
  // The per-image input shape. Required when the file leaves a channel or spatial dimension
  // dynamic; where the file fixes them, they must agree. The batch dimension may always be
  // dynamic.
  std::optional<TensorShape> input;
  // The model's name; empty takes the file's stem.
  std::string name;
};

// False when ralp was built without the ONNX library; load_onnx_model then throws an InputError
// saying which packages to install.
bool onnx_import_available();

// Reads an ONNX model. Layers are named after their nodes (PyTorch's "/layer1/layer1.0/conv1/Conv"
// becomes "layer1.0.conv1"); parameter counts come from the initializers' dimensions; a model that
// does not end in Softmax gets a softmax cross-entropy layer named "loss", as training adds one.
// Throws InputError naming the file (and the node, with its operator type, where one is at fault)
// when the file cannot be read or parsed, uses an operator or attribute outside the supported
// set, or leaves the input shape dynamic without `options.input`.
LayerGraph load_onnx_model(const std::filesystem::path& file,
                           const OnnxImportOptions& options = {});

// "3x224x224" (or "3,224,224") as a per-image shape; nullopt when malformed.
std::optional<TensorShape> parse_shape_text(std::string_view text);

// A scenario's `{"onnx": PATH, "input": [C, H, W]}` model object (at JSON path `path` of `file`);
// a relative PATH is taken from `base`. Sets `ref` to PATH.
LayerGraph read_onnx_model_object(const Json& value, const std::string& path,
                                  const std::string& file, const std::filesystem::path& base,
                                  std::string& ref);

}  // namespace ralp
