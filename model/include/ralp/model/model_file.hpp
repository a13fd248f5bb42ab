// Model files: a user's CNN as JSON (an input shape and a layer list), and the way back.
//
//   {"name": "mynet", "input": [3, 32, 32], "layers": [
//     {"name": "conv1", "type": "conv2d", "out_channels": 32, "kernel": 5, "padding": 2},
//     {"name": "relu1", "type": "relu"},
//     {"name": "pool1", "type": "max_pool", "kernel": 2},
//     {"name": "flat", "type": "flatten"},
//     {"name": "fc", "type": "fc", "out_features": 10},
//     {"name": "loss", "type": "softmax_cross_entropy"}]}
//
// docs/model-format.md lists every layer type and key.
#pragma once

#include <filesystem>
#include <string>

#include "ralp/core/json_input.hpp"
#include "ralp/model/layer_graph.hpp"

namespace ralp {

// Parses a model object; errors name `file` and the JSON path (under `path`) of the problem,
// including shape errors found while building the graph.
LayerGraph parse_model(const Json& value, const std::string& path, const std::string& file);
LayerGraph load_model_file(const std::filesystem::path& file);

// A model file that parse_model reads back into an equal graph.
Json model_to_json(const LayerGraph& graph);

}  // namespace ralp
