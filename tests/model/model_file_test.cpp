// Model files: every zoo model survives a round trip, and bad files name the JSON path at fault.
#include "ralp/model/model_file.hpp"

#include <gtest/gtest.h>

#include "ralp/model/model_zoo.hpp"

namespace ralp {
namespace {

std::string error_of(const std::string& text) {
  try {
    parse_model(parse_json_text(text, "m.json"), "", "m.json");
  } catch (const InputError& e) {
    return e.what();
  }
  return "no error";
}

TEST(ModelFile, ZooModelsRoundTrip) {
  for (const auto& entry : zoo_entries()) {
    const LayerGraph graph = *zoo_model(entry.name);
    const Json text = model_to_json(graph);
    const LayerGraph back = parse_model(parse_json_text(text.dump(), entry.name), "", entry.name);
    ASSERT_EQ(back.size(), graph.size()) << entry.name;
    for (LayerId id = 0; id < graph.size(); ++id) {
      EXPECT_EQ(back.layer(id).spec, graph.layer(id).spec) << entry.name << " layer " << id;
      EXPECT_EQ(back.layer(id).output, graph.layer(id).output);
    }
    EXPECT_EQ(back.total_params(), graph.total_params());
  }
}

TEST(ModelFile, SmallModelWithDefaults) {
  const LayerGraph g = parse_model(parse_json_text(R"({
    "name": "tiny", "input": [3, 8, 8],
    "layers": [
      {"name": "c", "type": "conv2d", "out_channels": 4, "kernel": [3, 1], "padding": [1, 0]},
      {"type": "max_pool", "kernel": 2},
      {"type": "flatten"},
      {"name": "fc", "type": "fc", "out_features": 2},
      {"type": "softmax_cross_entropy"}]})", "t"), "", "t");
  EXPECT_EQ(g.layer(0).output, (TensorShape{4, 8, 8}));
  // Pool stride defaults to the kernel: 8x8 -> 4x4. Unnamed layers are named type + index.
  EXPECT_EQ(g.layer(1).output, (TensorShape{4, 4, 4}));
  EXPECT_EQ(g.layer(1).name(), "max_pool1");
  EXPECT_EQ(g.total_params(), 4 * 3 * 3 + 4 + 64 * 2 + 2);
}

TEST(ModelFile, SqueezeExcitationKinds) {
  // A squeeze-and-excitation block: global pool, two 1x1 convolutions, a gate, a channel scale.
  const LayerGraph g = parse_model(parse_json_text(R"({
    "name": "se", "input": [8, 4, 4],
    "layers": [
      {"name": "c", "type": "conv2d", "out_channels": 8, "kernel": 1},
      {"name": "act", "type": "silu"},
      {"name": "pool", "type": "avg_pool", "global": true},
      {"name": "reduce", "type": "conv2d", "out_channels": 2, "kernel": 1},
      {"name": "hs", "type": "hard_swish"},
      {"name": "expand", "type": "conv2d", "out_channels": 8, "kernel": 1},
      {"name": "gate", "type": "hard_sigmoid", "alpha": 0.2},
      {"name": "scale", "type": "mul", "inputs": ["act", "gate"]},
      {"name": "s", "type": "sigmoid"},
      {"type": "flatten"}, {"type": "fc", "out_features": 2},
      {"type": "softmax_cross_entropy"}]})", "t"), "", "t");
  EXPECT_EQ(g.layer(7).output, (TensorShape{8, 4, 4}));
  // alpha is read, beta keeps PyTorch's default.
  EXPECT_EQ(std::get<HardSigmoidAttrs>(g.layer(6).spec.attrs), (HardSigmoidAttrs{0.2, 0.5}));
  const LayerGraph back = parse_model(model_to_json(g), "", "back");
  for (LayerId id = 0; id < g.size(); ++id) EXPECT_EQ(back.layer(id).spec, g.layer(id).spec);
  EXPECT_EQ(error_of(R"({"name": "x", "input": [8, 4, 4], "layers": [
              {"name": "p", "type": "avg_pool", "global": true},
              {"name": "c", "type": "conv2d", "out_channels": 4, "kernel": 1},
              {"type": "mul", "inputs": ["input", "c"]}, {"type": "softmax_cross_entropy"}]})"),
            "m.json: /layers/2/inputs mul's second input must have the first's shape or be 8x1x1, "
            "got 8x4x4,4x1x1");
  EXPECT_EQ(error_of(R"({"name": "x", "input": [8, 4, 4], "layers": [
              {"type": "hard_sigmoid", "alpha": 0}, {"type": "softmax_cross_entropy"}]})"),
            "m.json: /layers/0/alpha is 0, expected a number in [1e-12, 1e+06]");
}

TEST(ModelFile, ErrorsNameThePath) {
  EXPECT_EQ(error_of(R"({"name": "x", "input": [3, 8], "layers": []})"),
            "m.json: /input is an array, expected [channels, height, width] of integers >= 1");
  EXPECT_EQ(error_of(R"({"name": "x", "input": [3, 8, 8], "layers": [
              {"type": "conv2d", "out_channels": 4, "kernel": 9},
              {"type": "softmax_cross_entropy"}]})"),
            "m.json: /layers/0/kernel leaves no output: the kernel is larger than the padded "
            "3x8x8 input");
  EXPECT_EQ(error_of(R"({"name": "x", "input": [3, 8, 8], "layers": [
              {"type": "conv3d", "out_channels": 4}]})"),
            "m.json: /layers/0/type is \"conv3d\", expected one of: conv2d, max_pool, avg_pool, "
            "relu, lrn, batch_norm, dropout, flatten, fc, concat, add, softmax_cross_entropy, sigmoid, "
            "silu, hard_sigmoid, hard_swish, mul (did you mean \"conv2d\"?)");
  EXPECT_EQ(error_of(R"({"name": "x", "input": [3, 8, 8], "layers": [
              {"type": "relu", "inputs": ["nope"]}, {"type": "softmax_cross_entropy"}]})"),
            "m.json: /layers/0/inputs names 'nope', expected \"input\" or an earlier layer's name");
  EXPECT_EQ(error_of(R"({"name": "x", "input": [3, 8, 8], "layers": [
              {"type": "relu", "strides": 2}, {"type": "softmax_cross_entropy"}]})"),
            "m.json: /layers/0/strides is not a known key, expected one of: inputs, name, type");
  EXPECT_EQ(error_of(R"({"name": "x", "input": [3, 8, 8], "layers": [{"type": "relu"}]})"),
            "m.json: /layers/0/type the last layer must be softmax_cross_entropy (the loss)");
}

}  // namespace
}  // namespace ralp
