// The training memory model: closed forms on a tiny graph, splits and batches, and ResNet-50 and
// VGG-16 against what PyTorch saved (tests/data/torch-footprints, from scripts/torch-footprint).
#include "ralp/model/memory_footprint.hpp"

#include <cmath>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>

#include <gtest/gtest.h>

#include "ralp/core/json_input.hpp"
#include "ralp/model/model_builder.hpp"
#include "ralp/model/model_zoo.hpp"

namespace ralp {
namespace {

constexpr double kActivationTolerance = 0.10;  // the bound against PyTorch
constexpr double kParameterTolerance = 0.01;
constexpr int64_t kTorchBatch = 8;
const FootprintOptions kCpu{TorchBackend::cpu};

// input 3x8x8 -> conv 4x3x3 pad 1 (bias) -> batch norm -> ReLU -> 2x2 max pool -> flatten ->
// fc 10 -> loss. Parameters: conv 4*3*9 + 4 = 112, batch norm 4 + 4 = 8, fc 64*10 + 10 = 650.
LayerGraph tiny() {
  ModelBuilder b("tiny", {3, 8, 8});
  b.conv("conv", 4, 3, 1, 1);
  b.batch_norm("bn");
  b.relu("relu");
  b.max_pool("pool", 2, 2);
  b.flatten("flatten");
  b.fc("fc", 10);
  b.softmax_cross_entropy();
  return b.build();
}

TEST(MemoryFootprint, TinyGraphInFp32ByHand) {
  const MemoryFootprint f = training_footprint(tiny(), 2, Precision::fp32);
  // 770 parameters x 4 bytes, three times; no 16-bit copies.
  EXPECT_EQ(f.weights, Bytes(3080));
  EXPECT_EQ(f.weight_copies, Bytes(0));
  EXPECT_EQ(f.gradients, Bytes(3080));
  EXPECT_EQ(f.optimizer_state, Bytes(3080));
  // Per image: the conv's input 192, batch norm's input 256, the ReLU's output 256 (also the
  // pool's input: once), the pool's output 64 (the fc's input through flatten) -> 768 x 4 bytes;
  // 64 int64 pool indices 512; the loss's 10 FP32 log-probabilities 40 and an int64 label 8.
  // 3,632 per image, x 2 = 7,264; plus batch norm's mean and invstd 2 x 4 x 4 = 32 and the loss's
  // scalar 4: 7,300.
  EXPECT_EQ(f.activations, Bytes(7300));
  // The largest backward: batch norm (or ReLU) holds its output's and its input's gradient,
  // 256 + 256 elements x 4 bytes x 2 images.
  EXPECT_EQ(f.workspace, Bytes(4096));
  EXPECT_EQ(f.total(), Bytes(3 * 3080 + 7300 + 4096));
}

TEST(MemoryFootprint, TinyGraphInBf16ByHand) {
  const MemoryFootprint f = training_footprint(tiny(), 2, Precision::bf16);
  // FP32 masters, gradients and momentum as in FP32; 16-bit copies of the conv and fc
  // parameters only: (112 + 650) x 2 = 1,524.
  EXPECT_EQ(f.weights, Bytes(3080));
  EXPECT_EQ(f.weight_copies, Bytes(1524));
  EXPECT_EQ(f.gradients, Bytes(3080));
  EXPECT_EQ(f.optimizer_state, Bytes(3080));
  // 768 elements x 2 bytes + 512 (indices stay int64) + 48 (the loss stays FP32) = 2,096 per
  // image, x 2 = 4,192; + 36 fixed = 4,228.
  EXPECT_EQ(f.activations, Bytes(4228));
  EXPECT_EQ(f.workspace, Bytes(2048));
}

// TF32 stores FP32 (it rounds inside the tensor cores); fp16 and bf16 store the same 16 bits.
TEST(MemoryFootprint, Tf32StoresAsFp32AndFp16AsBf16) {
  const LayerGraph g = *zoo_model("resnet50");
  EXPECT_EQ(training_footprint(g, 16, Precision::tf32), training_footprint(g, 16, Precision::fp32));
  EXPECT_EQ(training_footprint(g, 16, Precision::fp16), training_footprint(g, 16, Precision::bf16));
  EXPECT_LT(training_footprint(g, 16, Precision::bf16).activations,
            training_footprint(g, 16, Precision::fp32).activations);
}

TEST(MemoryFootprint, DropoutMaskIsABytePerElementOnCudaAndTheDtypeOnCpu) {
  ModelBuilder b("drop", {16, 1, 1});
  b.fc("fc1", 8);
  b.dropout("drop");
  b.fc("fc2", 4);
  b.softmax_cross_entropy();
  const LayerGraph g = b.build();
  // Per image: fc1's input 16 and fc2's input 8 (the dropout's output) in the compute dtype, the
  // mask of 8 elements, the loss's 4 x 4 + 8. One image, FP32: 96 + mask + 24, plus 4 fixed.
  EXPECT_EQ(training_footprint(g, 1, Precision::fp32).activations, Bytes(96 + 8 + 24 + 4));
  EXPECT_EQ(training_footprint(g, 1, Precision::fp32, kCpu).activations,
            Bytes(96 + 32 + 24 + 4));
  EXPECT_EQ(training_footprint(g, 1, Precision::fp16).activations, Bytes(48 + 8 + 24 + 4));
}

TEST(MemoryFootprint, TensorReadByTwoLayersIsCountedOnce) {
  ModelBuilder b("fork", {4, 2, 2});
  const auto x = b.relu("relu");
  const auto left = b.conv("left", 4, 1, 1, 0, x);
  const auto right = b.conv("right", 4, 1, 1, 0, x);
  b.add("sum", {left, right});
  b.flatten("flatten");
  b.fc("fc", 2);
  b.softmax_cross_entropy();
  const LayerGraph g = b.build();
  // Per image, FP32: the ReLU's output 16 (saved by the ReLU and both convolutions: once), the
  // sum 16 (the fc's input) -> 32 x 4 = 128; the loss 2 x 4 + 8 = 16; plus the scalar 4.
  EXPECT_EQ(training_footprint(g, 1, Precision::fp32).activations, Bytes(128 + 16 + 4));
}

TEST(MemoryFootprint, SqueezeExcitationSavesWhatAutogradSaves) {
  ModelBuilder b("se", {4, 2, 2});
  b.conv("c", 4, 1, 1, 0);
  const auto act = b.silu("act");
  b.global_avg_pool("pool");
  b.conv("reduce", 2, 1, 1, 0);
  b.hard_swish("hs");
  b.conv("expand", 4, 1, 1, 0);
  const auto gate = b.hard_sigmoid("gate");
  b.mul("scale", act, gate);
  b.sigmoid("s");
  b.flatten("flatten");
  b.fc("fc", 2);
  b.softmax_cross_entropy();
  const LayerGraph g = b.build();
  // Per image, FP32, each tensor once: the model input 16 (c's), c's output 16 (SiLU's input),
  // act 16 (the pool's and mul's input), pool 4, reduce 2 (hard swish's input), hs 2, expand 4
  // (hard sigmoid's input), gate 4 (mul's second input), s 16 (sigmoid's output and the fc's
  // input through flatten): 80 x 4 = 320; the loss 2 x 4 + 8 = 16; plus the scalar 4.
  EXPECT_EQ(training_footprint(g, 1, Precision::fp32).activations, Bytes(320 + 16 + 4));
}

TEST(MemoryFootprint, TailAndHeadSplitTheParametersAndTheHeadKeepsItsBoundaryInput) {
  const LayerGraph vgg = *zoo_model("vgg16");
  const LayerId cut = *vgg.find("flatten");
  const auto whole = training_footprint(vgg, 32, Precision::fp32);
  const auto tail = training_footprint(vgg, 0, cut, 32, Precision::fp32);
  const auto head = training_footprint(vgg, cut, vgg.size(), 32, Precision::fp32);
  EXPECT_EQ(tail.weights + head.weights, whole.weights);
  EXPECT_EQ(head.weights, Bytes(static_cast<double>(vgg.describe_cut(cut).head_params) * 4));
  // pool5's output is saved by fc6 on the head only: the tail keeps nothing of it, and the
  // split counts it exactly once.
  EXPECT_EQ(tail.activations + head.activations, whole.activations);
  // fc6's input, 25,088 x 4 bytes x 32 images, is the largest thing the head saves.
  EXPECT_GE(head.activations, Bytes(25088.0 * 4 * 32));
}

TEST(MemoryFootprint, ShardHoldsWeightsMomentumAndOneGradientBuffer) {
  const MemoryFootprint f = shard_footprint(Bytes(1e9));
  EXPECT_EQ(f.total(), Bytes(3e9));
  EXPECT_EQ(f.activations, Bytes(0));
  EXPECT_THROW(shard_footprint(Bytes(-1)), std::invalid_argument);
}

TEST(MemoryFootprint, RejectsBadRangesAndBatches) {
  const LayerGraph g = tiny();
  EXPECT_THROW(training_footprint(g, 3, 3, 1, Precision::fp32), std::invalid_argument);
  EXPECT_THROW(training_footprint(g, 0, g.size() + 1, 1, Precision::fp32), std::invalid_argument);
  EXPECT_THROW(training_footprint(g, 0, Precision::fp32), std::invalid_argument);
}

TEST(MemoryFootprint, FootprintIsAffineInTheBatch) {
  const LayerGraph g = *zoo_model("resnet50");
  const Bytes one = training_footprint(g, 1, Precision::fp16).total();
  const Bytes two = training_footprint(g, 2, Precision::fp16).total();
  const Bytes many = training_footprint(g, 101, Precision::fp16).total();
  EXPECT_NEAR(many.value(), one.value() + 100 * (two - one).value(), 1.0);
}

TEST(MemoryFootprint, LargestBatchFitsAndOneMoreDoesNot) {
  const LayerGraph g = tiny();
  const LayerId end = g.size();
  const Bytes at_five = training_footprint(g, 5, Precision::fp32).total();
  EXPECT_EQ(largest_batch_that_fits(g, 0, end, Precision::fp32, at_five), 5);
  EXPECT_EQ(largest_batch_that_fits(g, 0, end, Precision::fp32, at_five - Bytes(1)), 4);
  const Bytes at_one = training_footprint(g, 1, Precision::fp32).total();
  EXPECT_EQ(largest_batch_that_fits(g, 0, end, Precision::fp32, at_one - Bytes(1)), std::nullopt);

  // ResNet-50 on a 16 GiB device: whatever the answer, it fits and one more image does not.
  const LayerGraph resnet = *zoo_model("resnet50");
  const Bytes capacity(16.0 * 1024 * 1024 * 1024);
  for (Precision p : kPrecisions) {
    const auto batch = largest_batch_that_fits(resnet, 0, resnet.size(), p, capacity);
    ASSERT_TRUE(batch.has_value()) << to_string(p);
    EXPECT_LE(training_footprint(resnet, *batch, p).total(), capacity) << to_string(p);
    EXPECT_GT(training_footprint(resnet, *batch + 1, p).total(), capacity) << to_string(p);
  }
}

// VGG-16 at batch 4,096 per worker cannot train on one device: what autograd saves is 300 GB.
// Per image (FP32, CUDA), in floats: the input 150,528; the ReLU outputs, which the next
// convolution or pool saves as its input, 2 x 3,211,264 + 2 x 1,605,632 + 3 x 802,816 +
// 3 x 401,408 + 3 x 100,352 = 13,547,520; the pool outputs 802,816 + 401,408 + 200,704 + 100,352
// + 25,088 = 1,530,368; relu6, drop6, relu7, drop7 4 x 4,096: 15,244,800 floats, 60,979,200 bytes.
// The pools' int64 indices 1,530,368 x 8 = 12,242,944; dropout masks 2 x 4,096 bytes; the loss
// 1,000 x 4 + 8. 73,234,344 bytes per image, x 4,096 = 299,967,873,024, and the loss's scalar 4.
// The 471 GB counts every layer's output as a tensor of its own (LayerGraph's
// activation_bytes_per_image: 114.7 MB per image, 469.8 GB): each convolution's output and the
// ReLU's, the fully connected outputs and the dropout outputs, none of which autograd keeps
// twice (in-place ReLU) or at all (a convolution's output).
TEST(MemoryFootprint, Vgg16AtBatch4096NeedsThreeHundredGigabytesOfActivations) {
  const LayerGraph vgg = *zoo_model("vgg16");
  const int64_t batch = 4096;
  const MemoryFootprint f = training_footprint(vgg, batch, Precision::fp32);
  const Bytes every_output = vgg.activation_bytes_per_image() * static_cast<double>(batch);
  std::printf("vgg16 batch 4096 fp32: activations %.1f GB (every layer output: %.1f GB), "
              "workspace %.1f GB, total %.1f GB\n",
              f.activations.value() / 1e9, every_output.value() / 1e9,
              f.workspace.value() / 1e9, f.total().value() / 1e9);
  EXPECT_EQ(f.activations, Bytes(299'967'873'024.0 + 4));
  EXPECT_NEAR(every_output.value(), 469.8e9, 0.1e9);
  // bf16 halves the floats but not the int64 indices: 30,489,600 + 12,242,944 + 8,192 + 4,008.
  EXPECT_EQ(training_footprint(vgg, batch, Precision::bf16).activations,
            Bytes(4096.0 * 42'744'744 + 4));
}

// --- Against PyTorch ------------------------------------------------------------------------

Json torch_reference() {
  std::ifstream in(std::string(RALP_TEST_DATA_DIR) + "/data/torch-footprints/footprints.json");
  return Json::parse(in);
}

double relative_error(Bytes model, double reference) {
  return (model.value() - reference) / reference;
}

struct Part {
  const char* name;
  Bytes MemoryFootprint::*member;
  double tolerance;
};

const Part kParts[] = {
    {"weights", &MemoryFootprint::weights, kParameterTolerance},
    {"weight_copies", &MemoryFootprint::weight_copies, kParameterTolerance},
    {"gradients", &MemoryFootprint::gradients, kParameterTolerance},
    {"optimizer_state", &MemoryFootprint::optimizer_state, kParameterTolerance},
    {"activations", &MemoryFootprint::activations, kActivationTolerance},
};

const char* const kTorchModels[] = {"resnet50", "vgg16"};
const Precision kTorchPrecisions[] = {Precision::fp32, Precision::bf16};

TEST(MemoryFootprintTorch, ZooModelsHaveTorchvisionsParameters) {
  const Json reference = torch_reference();
  ASSERT_EQ(reference.at("batch").get<int64_t>(), kTorchBatch);
  for (const char* name : kTorchModels) {
    const Json& fp32 = reference.at("models").at(name).at("fp32");
    EXPECT_EQ(zoo_model(name)->total_params(), fp32.at("params").get<int64_t>()) << name;
  }
}

TEST(MemoryFootprintTorch, PartsAgreeWithWhatPyTorchKeeps) {
  const Json reference = torch_reference();
  for (const char* name : kTorchModels) {
    const LayerGraph g = *zoo_model(name);
    for (Precision p : kTorchPrecisions) {
      const Json& measured = reference.at("models").at(name).at(std::string(to_string(p)));
      const MemoryFootprint f = training_footprint(g, kTorchBatch, p, kCpu);
      for (const Part& part : kParts) {
        const double expected = measured.at(part.name).get<double>();
        if (expected == 0.0) {
          EXPECT_EQ((f.*part.member).value(), 0.0) << name << ' ' << to_string(p) << ' '
                                                   << part.name;
          continue;
        }
        EXPECT_LE(std::abs(relative_error(f.*part.member, expected)), part.tolerance)
            << name << ' ' << to_string(p) << ' ' << part.name << ": model "
            << (f.*part.member).value() << ", PyTorch " << expected;
      }
    }
  }
}

// The table docs/memory.md shows: model against PyTorch, each part, in MB and per cent.
std::string comparison_table() {
  const Json reference = torch_reference();
  std::ostringstream out;
  out << "| model | precision | part | ralp (MB) | PyTorch (MB) | error |\n"
      << "|---|---|---|---:|---:|---:|\n";
  for (const char* name : kTorchModels) {
    const LayerGraph g = *zoo_model(name);
    for (Precision p : kTorchPrecisions) {
      const Json& measured = reference.at("models").at(name).at(std::string(to_string(p)));
      const MemoryFootprint f = training_footprint(g, kTorchBatch, p, kCpu);
      for (const Part& part : kParts) {
        const double expected = measured.at(part.name).get<double>();
        const double model = (f.*part.member).value();
        char line[160];
        const double error =
            expected == 0.0 ? 0.0 : 100.0 * relative_error(f.*part.member, expected);
        std::snprintf(line, sizeof line, "| %s | %s | %s | %.3f | %.3f | %+.3f%% |\n", name,
                      std::string(to_string(p)).c_str(), part.name, model / 1e6, expected / 1e6,
                      error);
        out << line;
      }
    }
  }
  return out.str();
}

TEST(MemoryFootprintTorch, DocsShowTheComparisonTable) {
  const std::string table = comparison_table();
  const std::string written = std::string(RALP_BINARY_DIR) + "/memory-comparison.md";
  std::ofstream(written) << table;
  std::ifstream in(std::string(RALP_SOURCE_DIR) + "/docs/memory.md");
  std::stringstream docs;
  docs << in.rdbuf();
  EXPECT_NE(docs.str().find(table), std::string::npos)
      << "docs/memory.md does not hold the table this test computes; paste " << written;
}

}  // namespace
}  // namespace ralp
