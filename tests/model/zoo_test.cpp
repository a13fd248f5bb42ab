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
