// ONNX import: the hand-made files under tests/data/onnx (made by their make-onnx-files script),
// the bad-file corpus with its exact messages, scenarios and the `model import` command.
#include "ralp/onnx/onnx_import.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>

#include "../support/run_command.hpp"
#include "ralp/model/model_file.hpp"
#include "ralp/spec/scenario.hpp"

namespace ralp {
namespace {

namespace fs = std::filesystem;
const fs::path kOnnx = fs::path(RALP_TEST_DATA_DIR) / "data/onnx";

#define SKIP_WITHOUT_ONNX() \
  if (!onnx_import_available()) GTEST_SKIP() << "built without ONNX (libonnx-dev)"

std::vector<fs::path> bad_files() {
  std::vector<fs::path> files;
  for (const auto& entry : fs::directory_iterator(kOnnx / "bad")) {
    if (entry.path().extension() == ".onnx") files.push_back(entry.path());
  }
  std::sort(files.begin(), files.end());
  return files;
}

std::string expected_message(const fs::path& file) {
  fs::path expected = file;
  expected.replace_extension(".expected");
  std::string text = testing::read_file(expected.string());
  while (!text.empty() && text.back() == '\n') text.pop_back();
  const std::string placeholder = "{file}";
  if (const auto at = text.find(placeholder); at != std::string::npos) {
    text.replace(at, placeholder.size(), file.string());
  }
  return text;
}

std::vector<std::string> names(const LayerGraph& g) {
  std::vector<std::string> out;
  for (const Layer& layer : g.layers()) out.push_back(layer.name());
  return out;
}

TEST(OnnxImport, TinyCnnLayersAndParametersFromItsInitializers) {
  SKIP_WITHOUT_ONNX();
  const LayerGraph g = load_onnx_model(kOnnx / "tiny_cnn.onnx");
  EXPECT_EQ(g.name(), "tiny_cnn");
  EXPECT_EQ(g.input_shape(), (TensorShape{3, 8, 8}));
  // Node "/conv1/Conv" gives "conv1"; the scope-less "/Softmax" its operator's name.
  EXPECT_EQ(names(g), (std::vector<std::string>{"conv1", "relu1", "norm1", "pool1", "bn1", "conv2",
                                                "pool2", "avgpool", "flatten", "fc", "softmax"}));
  // conv1 3*4*3*3 + 4 = 112, bn1 2*4 = 8, conv2 8*(4/2)*3*3 = 144, fc 8*10 + 10 = 90.
  EXPECT_EQ(g.total_params(), 354);
  EXPECT_EQ(g.layer(0).params(), 112);
  EXPECT_EQ(g.layer(4).params(), 8);
  EXPECT_EQ(g.layer(5).params(), 144);
  EXPECT_EQ(g.layer(9).params(), 90);
  // conv1 forward: 2 * (3*3*3) * 4 * 8*8 + 4 * 8*8 = 13,824 + 256.
  EXPECT_EQ(g.layer(0).work(1).forward.flops.value(), 14080.0);

  const auto& conv2 = std::get<Conv2dAttrs>(g.layer(5).spec.attrs);
  EXPECT_EQ(conv2.groups, 2);
  EXPECT_EQ(conv2.dilation_h, 2);
  EXPECT_EQ(conv2.pad_h, 2);
  EXPECT_FALSE(conv2.bias);
  // Dilated 3x3 spans 5: (4 + 2*2 - 5) + 1 = 4.
  EXPECT_EQ(g.layer(5).output, (TensorShape{8, 4, 4}));
  // Pad [1, 1] then a 3x3 average: the pool absorbs the padding and counts its zeros.
  const auto& pool2 = std::get<PoolAttrs>(g.layer(6).spec.attrs);
  EXPECT_EQ(pool2.pad_h, 1);
  EXPECT_TRUE(pool2.count_include_pad);
  EXPECT_EQ(g.layer(6).output, (TensorShape{8, 4, 4}));
  EXPECT_TRUE(std::get<PoolAttrs>(g.layer(7).spec.attrs).global);
  EXPECT_EQ(std::get<BatchNormAttrs>(g.layer(4).spec.attrs).epsilon, 1e-3);
  const auto& lrn = std::get<LrnAttrs>(g.layer(2).spec.attrs);
  EXPECT_EQ(lrn.size, 3);
  EXPECT_EQ(lrn.alpha, 5e-5);
  EXPECT_EQ(g.layer(10).kind(), LayerKind::softmax_cross_entropy);
}

TEST(OnnxImport, BranchesJoinsAndThePyTorchReshape) {
  SKIP_WITHOUT_ONNX();
  const LayerGraph g = load_onnx_model(kOnnx / "branches.onnx");
  EXPECT_EQ(names(g), (std::vector<std::string>{"a", "b", "concat", "c", "add", "relu", "reshape",
                                                "dropout", "fc", "loss"}));
  EXPECT_EQ(g.layer(2).spec.inputs, (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(g.layer(4).spec.inputs, (std::vector<std::string>{"concat", "c"}));
  // Shape -> Gather -> Unsqueeze -> Concat with -1 -> Reshape: a flatten to 8*8*8 features.
  EXPECT_EQ(g.layer(6).kind(), LayerKind::flatten);
  EXPECT_EQ(g.layer(6).output, (TensorShape{512, 1, 1}));
  EXPECT_EQ(std::get<DropoutAttrs>(g.layer(7).spec.attrs).rate, 0.25);
  // MatMul + Add of a constant: one fully connected layer with a bias, 512*10 + 10.
  EXPECT_TRUE(std::get<FullyConnectedAttrs>(g.layer(8).spec.attrs).bias);
  EXPECT_EQ(g.layer(8).params(), 5130);
  // No Softmax in the file: a loss is added, as training adds one.
  EXPECT_EQ(g.layer(9).kind(), LayerKind::softmax_cross_entropy);
  // 16 + 112 + 72 + 5130.
  EXPECT_EQ(g.total_params(), 5330);
}

TEST(OnnxImport, SamePaddingSqueezeAndUntransposedGemm) {
  SKIP_WITHOUT_ONNX();
  const LayerGraph g = load_onnx_model(kOnnx / "same_padding.onnx");
  EXPECT_EQ(names(g), (std::vector<std::string>{"conv", "relu", "pool", "squeeze", "fc", "loss"}));
  // SAME_UPPER for a 3x3 at stride 1: 2 rows and columns in all, 1 at each end.
  const auto& conv = std::get<Conv2dAttrs>(g.layer(0).spec.attrs);
  EXPECT_EQ(conv.pad_h, 1);
  EXPECT_EQ(conv.pad_w, 1);
  EXPECT_EQ(g.layer(0).output, (TensorShape{4, 8, 8}));
  EXPECT_EQ(g.layer(2).kind(), LayerKind::max_pool);
  EXPECT_EQ(g.layer(3).kind(), LayerKind::flatten);
  // Weights [4, 10] without transB: 4 inputs, 10 outputs.
  EXPECT_EQ(std::get<FullyConnectedAttrs>(g.layer(4).spec.attrs).out_features, 10);
  // 3*4*3*3 + 4*10 + 10.
  EXPECT_EQ(g.total_params(), 158);
}

TEST(OnnxImport, SqueezeExcitationSiluAndTheHardActivations) {
  SKIP_WITHOUT_ONNX();
  const LayerGraph g = load_onnx_model(kOnnx / "squeeze_excitation.onnx");
  // Sigmoid then Mul(x, Sigmoid(x)) is one silu layer, named after the Sigmoid's scope.
  EXPECT_EQ(names(g), (std::vector<std::string>{"conv", "act", "se.avgpool", "se.fc1",
                                                "se.activation", "se.fc2", "se.scale_activation",
                                                "se.mul", "hard", "mul", "avgpool", "flatten",
                                                "fc", "loss"}));
  EXPECT_EQ(g.layer(1).kind(), LayerKind::silu);
  EXPECT_EQ(g.layer(1).spec.inputs, (std::vector<std::string>{"conv"}));
  EXPECT_EQ(g.layer(4).kind(), LayerKind::hard_swish);
  // The gate's sigmoid reads a different tensor than the Mul's other operand: no silu. The file
  // has Mul(gate, x); the layer takes the 8x1x1 scale second.
  EXPECT_EQ(g.layer(6).kind(), LayerKind::sigmoid);
  EXPECT_EQ(g.layer(7).kind(), LayerKind::mul);
  EXPECT_EQ(g.layer(7).spec.inputs, (std::vector<std::string>{"act", "se.scale_activation"}));
  EXPECT_EQ(g.layer(7).output, (TensorShape{8, 8, 8}));
  // HardSigmoid without attributes takes ONNX's alpha 0.2 and beta 0.5, not PyTorch's 1/6.
  EXPECT_EQ(std::get<HardSigmoidAttrs>(g.layer(8).spec.attrs), (HardSigmoidAttrs{0.2, 0.5}));
  // Mul of two 8x8x8 activations.
  EXPECT_EQ(g.layer(9).spec.inputs, (std::vector<std::string>{"hard", "conv"}));
  // 8*3 + 8 + 2*8 + 2 + 8*2 + 8 + 8*10 + 10.
  EXPECT_EQ(g.total_params(), 164);
}

TEST(OnnxImport, WeightsInAMissingExternalFileAreNotNeeded) {
  SKIP_WITHOUT_ONNX();
  // tiny_cnn with its initializers moved to external_data.weights, which is not there.
  ASSERT_FALSE(fs::exists(kOnnx / "external_data.weights"));
  const LayerGraph g = load_onnx_model(kOnnx / "external_data.onnx");
  EXPECT_EQ(g.total_params(), 354);
  EXPECT_EQ(model_to_json(g)["layers"],
            model_to_json(load_onnx_model(kOnnx / "tiny_cnn.onnx"))["layers"]);
}

TEST(OnnxImport, ModelFileRoundTripGivesTheSameGraph) {
  SKIP_WITHOUT_ONNX();
  for (const char* file :
       {"tiny_cnn.onnx", "branches.onnx", "same_padding.onnx", "squeeze_excitation.onnx"}) {
    const LayerGraph g = load_onnx_model(kOnnx / file);
    const Json j = model_to_json(g);
    EXPECT_EQ(model_to_json(parse_model(j, "", "round-trip")), j) << file;
  }
}

TEST(OnnxImport, DynamicInputTakesTheGivenShape) {
  SKIP_WITHOUT_ONNX();
  const fs::path file = kOnnx / "bad/dynamic-input.onnx";
  OnnxImportOptions options;
  options.input = TensorShape{3, 8, 8};
  options.name = "tiny";
  const LayerGraph g = load_onnx_model(file, options);
  EXPECT_EQ(g.name(), "tiny");
  EXPECT_EQ(g.total_params(), 354);
  // Twice the height and width: conv1's work grows fourfold, its parameters do not.
  options.input = TensorShape{3, 16, 16};
  const LayerGraph big = load_onnx_model(file, options);
  EXPECT_EQ(big.layer(0).work(1).forward.flops.value(), 4 * 14080.0);
  EXPECT_EQ(big.total_params(), 354);
  // The file fixes 3 channels.
  options.input = TensorShape{4, 8, 8};
  try {
    load_onnx_model(file, options);
    ADD_FAILURE() << "no error";
  } catch (const InputError& e) {
    EXPECT_EQ(std::string(e.what()),
              file.string() + ": input 'image' is [N, 3, H, W], which --input 4x8x8 contradicts");
  }
}

TEST(OnnxImport, ShapeText) {
  EXPECT_EQ(parse_shape_text("3x224x224"), (TensorShape{3, 224, 224}));
  EXPECT_EQ(parse_shape_text("3,32,32"), (TensorShape{3, 32, 32}));
  EXPECT_EQ(parse_shape_text("784"), (TensorShape{784, 1, 1}));
  for (const char* bad : {"", "3x", "x3x3", "3x224", "0x8x8", "3x8x8x8", "3x-8x8", "3xax8"}) {
    EXPECT_FALSE(parse_shape_text(bad)) << bad;
  }
}

TEST(OnnxImport, BadFilesGiveTheirExactMessage) {
  SKIP_WITHOUT_ONNX();
  const auto files = bad_files();
  ASSERT_GE(files.size(), 6u);
  for (const auto& file : files) {
    SCOPED_TRACE(file.filename().string());
    try {
      load_onnx_model(file);
      ADD_FAILURE() << "no error";
    } catch (const InputError& e) {
      EXPECT_EQ(std::string(e.what()), expected_message(file));
    }
  }
}

TEST(OnnxImport, CliReportsOneLineAndExitsTwo) {
  SKIP_WITHOUT_ONNX();
  for (const auto& file : bad_files()) {
    SCOPED_TRACE(file.filename().string());
    const auto result =
        testing::run_command(testing::ralp_binary() + " model import '" + file.string() + "'");
    EXPECT_EQ(result.status, 2);
    EXPECT_EQ(result.err, "error: " + expected_message(file) + "\n");
    EXPECT_EQ(result.out, "");
  }
  const auto missing = testing::run_command(testing::ralp_binary() + " model import '" +
                                            (kOnnx / "none.onnx").string() + "'");
  EXPECT_EQ(missing.status, 2);
  EXPECT_EQ(missing.err, "error: " + (kOnnx / "none.onnx").string() + ": cannot be read\n");
  const auto bad_shape = testing::run_command(testing::ralp_binary() + " model import '" +
                                              (kOnnx / "tiny_cnn.onnx").string() + "' --input 3x8");
  EXPECT_EQ(bad_shape.status, 2);
  EXPECT_EQ(bad_shape.err, "error: --input: is '3x8', expected CxHxW such as 3x224x224\n");
}

TEST(OnnxImport, CliPrintsAModelFileThatReadsBackTheSame) {
  SKIP_WITHOUT_ONNX();
  const std::string file = (kOnnx / "bad/dynamic-input.onnx").string();
  const std::string command =
      testing::ralp_binary() + " model import '" + file + "' --input 3x8x8 --name tiny";
  const auto first = testing::run_command(command);
  ASSERT_EQ(first.status, 0) << first.err;
  EXPECT_EQ(testing::run_command(command).out, first.out);
  const Json j = parse_json_text(first.out, "stdout");
  EXPECT_EQ(j["name"], "tiny");
  EXPECT_EQ(j["input"], Json::array({3, 8, 8}));
  EXPECT_EQ(parse_model(j, "", "stdout").total_params(), 354);
  // `model show` reads .onnx files too.
  const auto show = testing::run_command(testing::ralp_binary() + " model show '" +
                                         (kOnnx / "branches.onnx").string() + "' --json");
  ASSERT_EQ(show.status, 0) << show.err;
  EXPECT_EQ(parse_json_text(show.out, "stdout")["params"], 5330);
}

TEST(OnnxImport, ScenarioModelObject) {
  SKIP_WITHOUT_ONNX();
  const Scenario s = load_scenario(kOnnx / "scenarios/tiny-cnn.json");
  EXPECT_EQ(s.model_ref, "../tiny_cnn.onnx");
  EXPECT_EQ(s.model.total_params(), 354);
  const Scenario dynamic = load_scenario(kOnnx / "scenarios/dynamic-input.json");
  EXPECT_EQ(dynamic.model.input_shape(), (TensorShape{3, 16, 16}));
  EXPECT_EQ(dynamic.model.name(), "tiny");
  const fs::path bad = kOnnx / "scenarios/bad-input.json";
  try {
    load_scenario(bad);
    ADD_FAILURE() << "no error";
  } catch (const InputError& e) {
    EXPECT_EQ(std::string(e.what()),
              bad.string() +
                  ": /model/input is an array, expected [channels, height, width] of "
                  "integers >= 1");
  }
}

TEST(OnnxImport, WithoutTheLibraryTheImportSaysWhatToInstall) {
  if (onnx_import_available()) GTEST_SKIP() << "built with ONNX";
  try {
    load_onnx_model(kOnnx / "tiny_cnn.onnx");
    ADD_FAILURE() << "no error";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("libonnx-dev and libprotobuf-dev"), std::string::npos);
  }
}

}  // namespace
}  // namespace ralp
