// Every zoo model against its reference: exact parameter counts, and multiply-accumulates of the
// convolution and fully connected layers against the figures torchvision publishes.
#include "ralp/model/model_zoo.hpp"

#include <cmath>

#include <gtest/gtest.h>

namespace ralp {
namespace {

struct Reference {
  const char* model;
  int64_t params;      // torchvision: sum(p.numel() for p in model.parameters())
  double gmacs;        // torchvision's model table ("GFLOPS", which counts multiply-adds)
};

// tf_cnn_benchmarks' AlexNet has no published count; its layers sum by hand to
// 23,296 + 307,392 + 663,936 + 1,327,488 + 884,992 + 37,752,832 + 16,781,312 + 4,097,000.
// The CIFAR nets are this project's own: conv1 2,432 + conv2 51,264 + fc3 4,195,328 +
// fc4 524,800 + fc5 5,130; and 864+64 + 9,216+64 + 18,432+128 + 36,864+128 + 73,728+256 + 1,290.
const Reference kReferences[] = {
    {"alexnet", 61100840, 0.71},       {"alexnet_tf", 61838248, -1},
    {"vgg11", 132863336, 7.61},        {"vgg16", 138357544, 15.47},
    {"vgg19", 143667240, 19.63},       {"resnet18", 11689512, 1.81},
    {"resnet50", 25557032, 4.09},      {"resnet101", 44549160, 7.80},
    {"resnet152", 60192808, 11.51},    {"googlenet", 6624904, 1.50},
    {"inception_v3", 23834568, 5.71},  {"cifar_alexnet", 4778954, -1},
    {"cifar_allconv", 141034, -1},     {"resnet50_tf", 25557032, -1},
    {"resnet101_tf", 44549160, -1},    {"resnet152_tf", 60192808, -1},
    // NVIDIA DeepLearningExamples' PyTorch ConvNets (image_classification/models/resnet.py,
    // commit 729963dd): sum(p.numel()) of ResNet(Arch(...)) built from its resnext101-32x4d and
    // se-resnext101-32x4d entries with torch 1.13; DLE publishes no count or MAC figure.
    {"resnext101_32x4d", 44177704, -1}, {"se_resnext101_32x4d", 45251128, -1},
    // torchvision 0.14's EfficientNet_B0/B4_Weights meta "num_params"; its table's GFLOPS
    // (0.39 and 4.39, B4 at 380x380) come from newer torchvision releases.
    {"efficientnet_b0", 5288548, 0.39}, {"efficientnet_b4", 19341616, 4.39},
};

double conv_fc_macs(const LayerGraph& graph) {
  double macs = 0.0;
  for (const Layer& layer : graph.layers()) {
    if (layer.kind() == LayerKind::conv2d) {
      const auto& a = std::get<Conv2dAttrs>(layer.spec.attrs);
      macs += static_cast<double>(layer.input_shapes[0].channels / a.groups) * a.kernel_h *
              a.kernel_w * static_cast<double>(layer.output.elements());
    } else if (layer.kind() == LayerKind::fully_connected) {
      macs += static_cast<double>(layer.input_shapes[0].elements() * layer.output.elements());
    }
  }
  return macs;
}

TEST(Zoo, EveryModelHasAReference) {
  EXPECT_EQ(zoo_entries().size(), std::size(kReferences));
  EXPECT_FALSE(zoo_model("vgg17"));
}

TEST(Zoo, ParameterCountsEqualTheReferences) {
  for (const auto& ref : kReferences) {
    const auto model = zoo_model(ref.model);
    ASSERT_TRUE(model) << ref.model;
    EXPECT_EQ(model->total_params(), ref.params) << ref.model;
  }
}

TEST(Zoo, MultiplyAccumulatesMatchTorchvisionsTable) {
  for (const auto& ref : kReferences) {
    if (ref.gmacs < 0) continue;
    const double gmacs = conv_fc_macs(*zoo_model(ref.model)) / 1e9;
    EXPECT_NEAR(gmacs, ref.gmacs, 0.005) << ref.model;
  }
}

TEST(Zoo, ResNetV1MovesTheStrideToTheFirst1x1) {
  // v1 and v1.5 differ only in the first block of stages 2-4: its 1x1 (in -> planes) runs at the
  // stage's output resolution H/2 instead of the input's H, saving in*planes*H^2*3/4 each:
  // 256*128*56^2, 512*256*28^2 and 1024*512*14^2 all give 102,760,448 x 3/4 = 77,070,336.
  const double saved = 3 * 77070336.0;
  for (const std::string depth : {"50", "101", "152"}) {
    const double v15 = conv_fc_macs(*zoo_model("resnet" + depth));
    const double v1 = conv_fc_macs(*zoo_model("resnet" + depth + "_tf"));
    EXPECT_DOUBLE_EQ(v15 - v1, saved) << depth;
  }
  const LayerGraph v1 = *zoo_model("resnet50_tf");
  const auto& a = std::get<Conv2dAttrs>(v1.layer(*v1.find("layer2.0.conv1")).spec.attrs);
  EXPECT_EQ(a.stride_h, 2);
  EXPECT_EQ(v1.layer(*v1.find("layer2.0.conv2")).input_shapes[0].height, 28);
}

TEST(Zoo, Vgg16ForwardFlopsByHand) {
  // Conv and FC multiply-adds of VGG-16 are 15,470,264,320 (fc: 25088*4096 + 4096*4096 +
  // 4096*1000 = 123,633,664 of them).
  const LayerGraph vgg = *zoo_model("vgg16");
  EXPECT_DOUBLE_EQ(conv_fc_macs(vgg), 15470264320.0);
  const Layer& fc6 = vgg.layer(*vgg.find("fc6"));
  EXPECT_EQ(fc6.input_shapes[0].elements(), 25088);
  // fc6 forward: 2 * 25088 * 4096 + 4096 bias adds per image.
  EXPECT_DOUBLE_EQ(fc6.work(1).forward.flops.value(), 2.0 * 25088 * 4096 + 4096);
  // 89% of VGG-16's parameters are in its three FC layers.
  int64_t fc_params = 0;
  for (const auto& layer : vgg.layers()) {
    if (layer.kind() == LayerKind::fully_connected) fc_params += layer.params();
  }
  EXPECT_EQ(fc_params, 123642856);
}

TEST(Zoo, AlexNetFirstConvByHand) {
  // torchvision AlexNet conv1: 3x224x224 -> 64x55x55 with an 11x11 kernel, stride 4, pad 2.
  // MACs = 3*11*11 * 64*55*55 = 70,276,800; forward FLOPs = 2 * that + 64*55*55 bias adds.
  const LayerGraph alexnet = *zoo_model("alexnet");
  const Layer& conv1 = alexnet.layer(0);
  EXPECT_EQ(conv1.output, (TensorShape{64, 55, 55}));
  EXPECT_DOUBLE_EQ(conv1.work(1).forward.flops.value(), 2.0 * 70276800 + 193600);
}

TEST(Zoo, DeepLearningExamplesResNeXtWidthsAndSqueezeExcitation) {
  const LayerGraph x = *zoo_model("resnext101_32x4d");
  // Stage 1: 32 groups of 4 channels in the 3x3, 256 out; stage 4 ends at 2,048 channels.
  const Layer& conv2 = x.layer(*x.find("layer1.0.conv2"));
  EXPECT_EQ(std::get<Conv2dAttrs>(conv2.spec.attrs).groups, 32);
  EXPECT_EQ(conv2.output, (TensorShape{128, 56, 56}));
  EXPECT_EQ(x.layer(*x.find("layer4.2.bn3")).output, (TensorShape{2048, 7, 7}));
  EXPECT_FALSE(x.find("layer1.0.squeeze.scale"));
  // v1.5: the stride is on the 3x3.
  EXPECT_EQ(x.layer(*x.find("layer2.0.conv2")).output.height, 28);
  EXPECT_EQ(x.layer(*x.find("layer2.0.conv1")).output.height, 56);

  const LayerGraph se = *zoo_model("se_resnext101_32x4d");
  // Every block's SE is Linear(C, 16) and Linear(16, C) with biases: 33 blocks of
  // C*16 + 16 + 16*C + C, for C = 256 (3 blocks), 512 (4), 1,024 (23) and 2,048 (3).
  int64_t se_params = 0;
  for (const auto& [c, blocks] : std::vector<std::pair<int64_t, int64_t>>{
           {256, 3}, {512, 4}, {1024, 23}, {2048, 3}}) {
    se_params += blocks * (33 * c + 16);
  }
  EXPECT_EQ(se.total_params() - x.total_params(), se_params);
  const Layer& scale = se.layer(*se.find("layer3.5.squeeze.scale"));
  EXPECT_EQ(scale.kind(), LayerKind::mul);
  EXPECT_EQ(scale.input_shapes, (std::vector<TensorShape>{{1024, 14, 14}, {1024, 1, 1}}));
  EXPECT_EQ(se.layer(*se.find("layer3.5.add")).spec.inputs.front(), "layer3.5.squeeze.scale");
}

TEST(Zoo, EfficientNetBlocksFollowTorchvision) {
  // B0 has 1+2+2+3+3+4+1 = 16 MBConv blocks; B4 scales each stage's depth by 1.8, rounded up:
  // 2+4+4+6+6+8+2 = 32.
  const auto blocks = [](const LayerGraph& g) {
    int count = 0;
    for (const auto& layer : g.layers()) count += layer.name().ends_with(".scale");
    return count;
  };
  const LayerGraph b0 = *zoo_model("efficientnet_b0");
  const LayerGraph b4 = *zoo_model("efficientnet_b4");
  EXPECT_EQ(blocks(b0), 16);
  EXPECT_EQ(blocks(b4), 32);
  EXPECT_EQ(b4.input_shape(), (TensorShape{3, 380, 380}));
  // The first block keeps 32 channels (expand ratio 1): depthwise 3x3, then SE squeezing to
  // 32 / 4 = 8 with SiLU between.
  EXPECT_EQ(b0.layer(*b0.find("features.1.0.block.0.0")).params(), 32 * 9);
  EXPECT_EQ(b0.layer(*b0.find("features.1.0.block.1.fc1")).output, (TensorShape{8, 1, 1}));
  EXPECT_EQ(b0.layer(*b0.find("features.1.0.block.1.activation")).kind(), LayerKind::silu);
  // B4's channels: 1.4 x 32 = 44.8 rounds to 48 (a multiple of 8); the head's 1x1 is 4 x 448.
  EXPECT_EQ(b4.layer(0).output, (TensorShape{48, 190, 190}));
  EXPECT_EQ(b4.layer(*b4.find("features.8.0")).output, (TensorShape{1792, 12, 12}));
  // A residual add where a block keeps its shape: the second block of stage 2 at 56x56.
  EXPECT_EQ(b0.layer(*b0.find("features.2.1.add")).output, (TensorShape{24, 56, 56}));
  EXPECT_FALSE(b0.find("features.2.0.add"));
}

TEST(Zoo, InputsAndOutputsOfTheReferenceModels) {
  EXPECT_EQ(zoo_model("inception_v3")->input_shape(), (TensorShape{3, 299, 299}));
  EXPECT_EQ(zoo_model("alexnet_tf")->input_shape(), (TensorShape{3, 227, 227}));
  for (const auto& entry : zoo_entries()) {
    const LayerGraph graph = *zoo_model(entry.name);
    EXPECT_EQ(graph.layers().back().kind(), LayerKind::softmax_cross_entropy) << entry.name;
  }
  // GoogLeNet's last inception block concatenates 384 + 384 + 128 + 128 channels at 7x7.
  const LayerGraph googlenet = *zoo_model("googlenet");
  EXPECT_EQ(googlenet.layer(*googlenet.find("inception5b.concat")).output,
            (TensorShape{1024, 7, 7}));
}

}  // namespace
}  // namespace ralp
