// Zoo definitions. Each follows its reference layer by layer; comments name the reference.
// Adaptive average pools that are identities at the reference input size (AlexNet's 6x6, VGG's
// 7x7) are left out: they hold no parameters and do no work there.
#include "ralp/model/model_zoo.hpp"

#include <algorithm>
#include <cmath>
#include <functional>

#include "ralp/model/model_builder.hpp"

namespace ralp {
namespace {

constexpr int64_t kImageNetClasses = 1000;
constexpr int64_t kCifarClasses = 10;
constexpr TensorShape kImageNet224{3, 224, 224};
constexpr TensorShape kCifar{3, 32, 32};
constexpr double kTorchvisionBasicConvEpsilon = 1e-3;  // GoogLeNet and Inception-v3 BasicConv2d

const ConvOptions kNoBias{.bias = false};

// torchvision.models.alexnet.
LayerGraph alexnet() {
  ModelBuilder b("alexnet", kImageNet224);
  b.conv("conv1", 64, 11, 4, 2);
  b.relu("relu1");
  b.max_pool("pool1", 3, 2);
  b.conv("conv2", 192, 5, 1, 2);
  b.relu("relu2");
  b.max_pool("pool2", 3, 2);
  b.conv("conv3", 384, 3, 1, 1);
  b.relu("relu3");
  b.conv("conv4", 256, 3, 1, 1);
  b.relu("relu4");
  b.conv("conv5", 256, 3, 1, 1);
  b.relu("relu5");
  b.max_pool("pool5", 3, 2);
  b.flatten("flatten");
  b.dropout("drop6");
  b.fc("fc6", 4096);
  b.relu("relu6");
  b.dropout("drop7");
  b.fc("fc7", 4096);
  b.relu("relu7");
  b.fc("fc8", kImageNetClasses);
  b.softmax_cross_entropy();
  return b.build();
}

// tf_cnn_benchmarks' alexnet_model: 64-192-384-384-256 convolutions on a 227x227 input (VALID
// first convolution, SAME elsewhere), ReLU after every convolution, 1,000 classes.
LayerGraph alexnet_tf() {
  ModelBuilder b("alexnet_tf", {3, 227, 227});
  b.conv("conv1", 64, 11, 4, 0);
  b.relu("relu1");
  b.max_pool("pool1", 3, 2);
  b.conv("conv2", 192, 5, 1, 2);
  b.relu("relu2");
  b.max_pool("pool2", 3, 2);
  b.conv("conv3", 384, 3, 1, 1);
  b.relu("relu3");
  b.conv("conv4", 384, 3, 1, 1);
  b.relu("relu4");
  b.conv("conv5", 256, 3, 1, 1);
  b.relu("relu5");
  b.max_pool("pool5", 3, 2);
  b.flatten("flatten");
  b.fc("fc6", 4096);
  b.relu("relu6");
  b.dropout("drop6");
  b.fc("fc7", 4096);
  b.relu("relu7");
  b.dropout("drop7");
  b.fc("fc8", kImageNetClasses);
  b.softmax_cross_entropy();
  return b.build();
}

// torchvision.models.vgg11/16/19 (no batch norm). `blocks` lists the convolutions per stage.
LayerGraph vgg(const std::string& name, const std::vector<int>& blocks) {
  ModelBuilder b(name, kImageNet224);
  const int64_t widths[] = {64, 128, 256, 512, 512};
  for (size_t stage = 0; stage < blocks.size(); ++stage) {
    for (int i = 1; i <= blocks[stage]; ++i) {
      const std::string id = std::to_string(stage + 1) + "_" + std::to_string(i);
      b.conv("conv" + id, widths[stage], 3, 1, 1);
      b.relu("relu" + id);
    }
    b.max_pool("pool" + std::to_string(stage + 1), 2, 2);
  }
  b.flatten("flatten");
  b.fc("fc6", 4096);
  b.relu("relu6");
  b.dropout("drop6");
  b.fc("fc7", 4096);
  b.relu("relu7");
  b.dropout("drop7");
  b.fc("fc8", kImageNetClasses);
  b.softmax_cross_entropy();
  return b.build();
}

// conv (no bias) + batch norm [+ ReLU], torchvision's pattern inside ResNet blocks.
std::string conv_bn(ModelBuilder& b, const std::string& prefix, int64_t out, int kernel,
                    int stride, int pad, const std::string& from, bool relu, double epsilon = 1e-5,
                    const std::string& suffix = "", int64_t groups = 1) {
  b.conv(prefix + ".conv" + suffix, out, kernel, stride, pad, from,
         {.bias = false, .groups = groups});
  std::string last = b.batch_norm(prefix + ".bn" + suffix, epsilon);
  if (relu) last = b.relu(prefix + ".relu" + suffix);
  return last;
}

// Where a bottleneck block's stride sits: torchvision's v1.5 puts it on the 3x3, the original
// ResNet (v1, as tf_cnn_benchmarks 2017 ran it) on the first 1x1.
enum class StrideOn { conv3x3, conv1x1 };

// A bottleneck's widths: stage s (from 0) has first_planes << s channels inside the block and
// expansion times that out; the 3x3 convolution has `groups` groups (ResNeXt's cardinality).
// se_features > 0 adds NVIDIA DeepLearningExamples' squeeze-and-excitation to every block.
struct BottleneckWidths {
  int64_t first_planes = 64;
  int64_t expansion = 4;
  int64_t groups = 1;
  int64_t se_features = 0;
};

// NVIDIA DeepLearningExamples' SqueezeAndExcitation (PyTorch/Classification/ConvNets/
// image_classification/models/common.py, commit 729963dd): the mean over H x W, Linear(C, 16)
// with bias, ReLU, Linear(16, C) with bias, sigmoid; the block multiplies its last batch norm's
// output by the gate (torch.addcmul with the shortcut, here mul then add). Its squeeze is 16
// units, not C / 16: SEBottleneck passes se_squeeze=16 as SqueezeAndExcitation's width.
std::string dle_squeeze_excitation(ModelBuilder& b, const std::string& p, const std::string& x,
                                   int64_t channels, int64_t features) {
  b.global_avg_pool(p + ".squeeze.pool", x);
  b.fc(p + ".squeeze.squeeze", features);
  b.relu(p + ".squeeze.relu");
  b.fc(p + ".squeeze.expand", channels);
  const std::string gate = b.sigmoid(p + ".squeeze.sigmoid");
  return b.mul(p + ".squeeze.scale", x, gate);
}

// torchvision.models.resnet18/50/101/152 (v1.5), or v1 with `stride_on` conv1x1; other
// bottleneck widths give DeepLearningExamples' ResNeXt and SE-ResNeXt.
LayerGraph resnet(const std::string& name, bool bottleneck, const std::vector<int>& blocks,
                  StrideOn stride_on = StrideOn::conv3x3, BottleneckWidths widths = {}) {
  ModelBuilder b(name, kImageNet224);
  b.conv("conv1", 64, 7, 2, 3, {}, kNoBias);
  b.batch_norm("bn1");
  b.relu("relu");
  std::string x = b.max_pool("maxpool", 3, 2, 1);
  const int64_t expansion = bottleneck ? widths.expansion : 1;
  int64_t in_channels = 64;
  for (size_t stage = 0; stage < blocks.size(); ++stage) {
    const int64_t planes = widths.first_planes << stage;
    for (int block = 0; block < blocks[stage]; ++block) {
      const std::string p = "layer" + std::to_string(stage + 1) + "." + std::to_string(block);
      const int stride = (stage > 0 && block == 0) ? 2 : 1;
      const std::string in = x;
      std::string y;
      if (bottleneck) {
        const bool v1 = stride_on == StrideOn::conv1x1;
        y = conv_bn(b, p, planes, 1, v1 ? stride : 1, 0, in, true, 1e-5, "1");
        y = conv_bn(b, p, planes, 3, v1 ? 1 : stride, 1, y, true, 1e-5, "2", widths.groups);
        y = conv_bn(b, p, planes * expansion, 1, 1, 0, y, false, 1e-5, "3");
      } else {
        y = conv_bn(b, p, planes, 3, stride, 1, in, true, 1e-5, "1");
        y = conv_bn(b, p, planes, 3, 1, 1, y, false, 1e-5, "2");
      }
      std::string shortcut = in;
      if (stride != 1 || in_channels != planes * expansion) {
        b.conv(p + ".downsample.conv", planes * expansion, 1, stride, 0, in, kNoBias);
        shortcut = b.batch_norm(p + ".downsample.bn");
      }
      if (widths.se_features > 0) {
        y = dle_squeeze_excitation(b, p, y, planes * expansion, widths.se_features);
      }
      b.add(p + ".add", {y, shortcut});
      x = b.relu(p + ".relu");
      in_channels = planes * expansion;
    }
  }
  b.global_avg_pool("avgpool");
  b.flatten("flatten");
  b.fc("fc", kImageNetClasses);
  b.softmax_cross_entropy();
  return b.build();
}

// NVIDIA DeepLearningExamples' resnext101-32x4d and se-resnext101-32x4d (PyTorch/Classification/
// ConvNets/image_classification/models/resnet.py, commit 729963dd): ResNet v1.5 (stride on the
// 3x3) with 3, 4, 23 and 3 bottlenecks of widths 128, 256, 512 and 1,024 (32 groups of 4 in the
// first stage), expansion 2, no convolution biases, batch norm eps 1e-5.
constexpr BottleneckWidths kDleResNeXt32x4d{.first_planes = 128, .expansion = 2, .groups = 32};
constexpr int64_t kDleSqueezeFeatures = 16;  // resnet.py's SEBottleneck: se_squeeze=16

// torchvision 0.14's EfficientNet-B0..B7 (torchvision/models/efficientnet.py): the stages of the
// paper's Table 1 as (expand ratio, kernel, stride, input channels, output channels, layers).
struct MbConvStage {
  int64_t expand_ratio;
  int kernel;
  int stride;
  int64_t in;
  int64_t out;
  int layers;
};
constexpr MbConvStage kEfficientNetStages[] = {
    {1, 3, 1, 32, 16, 1},   {6, 3, 2, 16, 24, 2},   {6, 5, 2, 24, 40, 2},  {6, 3, 2, 40, 80, 3},
    {6, 5, 1, 80, 112, 3},  {6, 5, 2, 112, 192, 4}, {6, 3, 1, 192, 320, 1},
};
constexpr int64_t kChannelDivisor = 8;
constexpr double kMaxRoundDown = 0.9;
constexpr int64_t kSqueezeDivisor = 4;      // SE squeeze: max(1, block input channels // 4)
constexpr int64_t kLastConvExpansion = 4;   // the head's 1x1: 4 x the last stage's channels

// torchvision's _make_divisible (models/_utils.py): round to a multiple of 8, never more than
// 10% down.
int64_t make_divisible(double value) {
  const auto half = static_cast<double>(kChannelDivisor) / 2;
  int64_t out = std::max(kChannelDivisor, static_cast<int64_t>(value + half) / kChannelDivisor *
                                              kChannelDivisor);
  if (static_cast<double>(out) < kMaxRoundDown * value) out += kChannelDivisor;
  return out;
}

// conv (no bias) + batch norm (eps 1e-5: B0-B4 use nn.BatchNorm2d's default) [+ SiLU]:
// torchvision's Conv2dNormActivation as EfficientNet uses it.
std::string conv_bn_silu(ModelBuilder& b, const std::string& p, int64_t out, int kernel,
                         int stride, const std::string& from, bool silu, int64_t groups = 1) {
  b.conv(p + ".0", out, kernel, stride, (kernel - 1) / 2, from, {.bias = false, .groups = groups});
  const std::string y = b.batch_norm(p + ".1");
  return silu ? b.silu(p + ".2") : y;
}

// torchvision's MBConv: 1x1 expansion (when the ratio is not 1), depthwise k x k, SE
// (ops.misc.SqueezeExcitation: global pool, 1x1 conv with bias, SiLU, 1x1 conv with bias,
// sigmoid, scale), 1x1 projection; a residual add when the shape is kept. Stochastic depth is
// the identity in a step's cost (it scales the branch of dropped images).
std::string mb_conv(ModelBuilder& b, const std::string& name, const MbConvStage& stage,
                    int64_t in, int stride, const std::string& x) {
  const std::string p = name + ".block";
  const int64_t expanded = make_divisible(static_cast<double>(in * stage.expand_ratio));
  int index = 0;
  std::string y = x;
  if (expanded != in) {
    y = conv_bn_silu(b, p + ".0", expanded, 1, 1, y, true);
    index = 1;
  }
  y = conv_bn_silu(b, p + "." + std::to_string(index++), expanded, stage.kernel, stride, y, true,
                   expanded);
  const std::string se = p + "." + std::to_string(index++);
  b.global_avg_pool(se + ".avgpool", y);
  b.conv(se + ".fc1", std::max<int64_t>(1, in / kSqueezeDivisor), 1, 1, 0);
  b.silu(se + ".activation");
  b.conv(se + ".fc2", expanded, 1, 1, 0);
  const std::string gate = b.sigmoid(se + ".scale_activation");
  y = b.mul(se + ".scale", y, gate);
  y = conv_bn_silu(b, p + "." + std::to_string(index), stage.out, 1, 1, y, false);
  if (stride == 1 && in == stage.out) y = b.add(name + ".add", {y, x});
  return y;
}

// torchvision.models.efficientnet_b0 .. b4: channels times `width`, each stage's layers times
// `depth` (rounded up), dropout before the classifier (efficientnet_b0: width 1.0, depth 1.0,
// dropout 0.2; efficientnet_b4: 1.4, 1.8, 0.4).
LayerGraph efficientnet(const std::string& name, TensorShape input, double width, double depth,
                        double dropout) {
  ModelBuilder b(name, input);
  const auto scaled = [width](int64_t channels) {
    return make_divisible(static_cast<double>(channels) * width);
  };
  std::string x = conv_bn_silu(b, "features.0", scaled(kEfficientNetStages[0].in), 3, 2, {}, true);
  int feature = 1;
  for (MbConvStage stage : kEfficientNetStages) {
    stage.in = scaled(stage.in);
    stage.out = scaled(stage.out);
    const int layers = static_cast<int>(std::ceil(stage.layers * depth));
    for (int i = 0; i < layers; ++i) {
      const std::string block = "features." + std::to_string(feature) + "." + std::to_string(i);
      x = mb_conv(b, block, stage, i == 0 ? stage.in : stage.out, i == 0 ? stage.stride : 1, x);
    }
    ++feature;
  }
  const int64_t last = scaled(std::end(kEfficientNetStages)[-1].out) * kLastConvExpansion;
  conv_bn_silu(b, "features." + std::to_string(feature), last, 1, 1, x, true);
  b.global_avg_pool("avgpool");
  b.flatten("flatten");
  b.dropout("classifier.0", dropout);
  b.fc("classifier.1", kImageNetClasses);
  b.softmax_cross_entropy();
  return b.build();
}

// torchvision's BasicConv2d: conv (no bias) + batch norm (eps 0.001) + ReLU.
std::string basic_conv(ModelBuilder& b, const std::string& name, int64_t out, int kernel_h,
                       int kernel_w, int stride, int pad_h, int pad_w, const std::string& from) {
  b.conv_rect(name + ".conv", out, kernel_h, kernel_w, stride, pad_h, pad_w, from, kNoBias);
  b.batch_norm(name + ".bn", kTorchvisionBasicConvEpsilon);
  return b.relu(name + ".relu");
}

std::string basic_conv(ModelBuilder& b, const std::string& name, int64_t out, int kernel,
                       int stride, int pad, const std::string& from) {
  return basic_conv(b, name, out, kernel, kernel, stride, pad, pad, from);
}

// torchvision.models.googlenet without auxiliary heads. Its "5x5" branch uses a 3x3 kernel, as
// torchvision's does.
LayerGraph googlenet() {
  ModelBuilder b("googlenet", kImageNet224);
  std::string x = basic_conv(b, "conv1", 64, 7, 2, 3, "input");
  x = b.max_pool("maxpool1", 3, 2, 0, true);
  x = basic_conv(b, "conv2", 64, 1, 1, 0, x);
  x = basic_conv(b, "conv3", 192, 3, 1, 1, x);
  x = b.max_pool("maxpool2", 3, 2, 0, true);
  const auto inception = [&b](const std::string& p, const std::string& in, int64_t c1,
                              int64_t c3r, int64_t c3, int64_t c5r, int64_t c5, int64_t pool) {
    const auto b1 = basic_conv(b, p + ".branch1", c1, 1, 1, 0, in);
    auto b2 = basic_conv(b, p + ".branch2.0", c3r, 1, 1, 0, in);
    b2 = basic_conv(b, p + ".branch2.1", c3, 3, 1, 1, b2);
    auto b3 = basic_conv(b, p + ".branch3.0", c5r, 1, 1, 0, in);
    b3 = basic_conv(b, p + ".branch3.1", c5, 3, 1, 1, b3);
    b.max_pool(p + ".branch4.pool", 3, 1, 1, true, in);
    const auto b4 = basic_conv(b, p + ".branch4.1", pool, 1, 1, 0, b.last());
    return b.concat(p + ".concat", {b1, b2, b3, b4});
  };
  x = inception("inception3a", x, 64, 96, 128, 16, 32, 32);
  x = inception("inception3b", x, 128, 128, 192, 32, 96, 64);
  x = b.max_pool("maxpool3", 3, 2, 0, true);
  x = inception("inception4a", x, 192, 96, 208, 16, 48, 64);
  x = inception("inception4b", x, 160, 112, 224, 24, 64, 64);
  x = inception("inception4c", x, 128, 128, 256, 24, 64, 64);
  x = inception("inception4d", x, 112, 144, 288, 32, 64, 64);
  x = inception("inception4e", x, 256, 160, 320, 32, 128, 128);
  x = b.max_pool("maxpool4", 2, 2, 0, true);
  x = inception("inception5a", x, 256, 160, 320, 32, 128, 128);
  inception("inception5b", x, 384, 192, 384, 48, 128, 128);
  b.global_avg_pool("avgpool");
  b.flatten("flatten");
  b.dropout("dropout", 0.2);
  b.fc("fc", kImageNetClasses);
  b.softmax_cross_entropy();
  return b.build();
}

// torchvision.models.inception_v3 without the auxiliary head, 299x299 input.
LayerGraph inception_v3() {
  ModelBuilder b("inception_v3", {3, 299, 299});
  std::string x = basic_conv(b, "Conv2d_1a_3x3", 32, 3, 2, 0, "input");
  x = basic_conv(b, "Conv2d_2a_3x3", 32, 3, 1, 0, x);
  x = basic_conv(b, "Conv2d_2b_3x3", 64, 3, 1, 1, x);
  x = b.max_pool("maxpool1", 3, 2);
  x = basic_conv(b, "Conv2d_3b_1x1", 80, 1, 1, 0, x);
  x = basic_conv(b, "Conv2d_4a_3x3", 192, 3, 1, 0, x);
  x = b.max_pool("maxpool2", 3, 2);

  const auto inception_a = [&b](const std::string& p, const std::string& in, int64_t pool) {
    const auto b1 = basic_conv(b, p + ".branch1x1", 64, 1, 1, 0, in);
    auto b5 = basic_conv(b, p + ".branch5x5_1", 48, 1, 1, 0, in);
    b5 = basic_conv(b, p + ".branch5x5_2", 64, 5, 1, 2, b5);
    auto bd = basic_conv(b, p + ".branch3x3dbl_1", 64, 1, 1, 0, in);
    bd = basic_conv(b, p + ".branch3x3dbl_2", 96, 3, 1, 1, bd);
    bd = basic_conv(b, p + ".branch3x3dbl_3", 96, 3, 1, 1, bd);
    b.avg_pool(p + ".branch_pool.avg", 3, 1, 1, in);
    const auto bp = basic_conv(b, p + ".branch_pool", pool, 1, 1, 0, b.last());
    return b.concat(p + ".concat", {b1, b5, bd, bp});
  };
  const auto inception_b = [&b](const std::string& p, const std::string& in) {
    const auto b3 = basic_conv(b, p + ".branch3x3", 384, 3, 2, 0, in);
    auto bd = basic_conv(b, p + ".branch3x3dbl_1", 64, 1, 1, 0, in);
    bd = basic_conv(b, p + ".branch3x3dbl_2", 96, 3, 1, 1, bd);
    bd = basic_conv(b, p + ".branch3x3dbl_3", 96, 3, 2, 0, bd);
    const auto bp = b.max_pool(p + ".branch_pool", 3, 2, 0, false, in);
    return b.concat(p + ".concat", {b3, bd, bp});
  };
  const auto inception_c = [&b](const std::string& p, const std::string& in, int64_t c7) {
    const auto b1 = basic_conv(b, p + ".branch1x1", 192, 1, 1, 0, in);
    auto b7 = basic_conv(b, p + ".branch7x7_1", c7, 1, 1, 0, in);
    b7 = basic_conv(b, p + ".branch7x7_2", c7, 1, 7, 1, 0, 3, b7);
    b7 = basic_conv(b, p + ".branch7x7_3", 192, 7, 1, 1, 3, 0, b7);
    auto bd = basic_conv(b, p + ".branch7x7dbl_1", c7, 1, 1, 0, in);
    bd = basic_conv(b, p + ".branch7x7dbl_2", c7, 7, 1, 1, 3, 0, bd);
    bd = basic_conv(b, p + ".branch7x7dbl_3", c7, 1, 7, 1, 0, 3, bd);
    bd = basic_conv(b, p + ".branch7x7dbl_4", c7, 7, 1, 1, 3, 0, bd);
    bd = basic_conv(b, p + ".branch7x7dbl_5", 192, 1, 7, 1, 0, 3, bd);
    b.avg_pool(p + ".branch_pool.avg", 3, 1, 1, in);
    const auto bp = basic_conv(b, p + ".branch_pool", 192, 1, 1, 0, b.last());
    return b.concat(p + ".concat", {b1, b7, bd, bp});
  };
  const auto inception_d = [&b](const std::string& p, const std::string& in) {
    auto b3 = basic_conv(b, p + ".branch3x3_1", 192, 1, 1, 0, in);
    b3 = basic_conv(b, p + ".branch3x3_2", 320, 3, 2, 0, b3);
    auto b7 = basic_conv(b, p + ".branch7x7x3_1", 192, 1, 1, 0, in);
    b7 = basic_conv(b, p + ".branch7x7x3_2", 192, 1, 7, 1, 0, 3, b7);
    b7 = basic_conv(b, p + ".branch7x7x3_3", 192, 7, 1, 1, 3, 0, b7);
    b7 = basic_conv(b, p + ".branch7x7x3_4", 192, 3, 2, 0, b7);
    const auto bp = b.max_pool(p + ".branch_pool", 3, 2, 0, false, in);
    return b.concat(p + ".concat", {b3, b7, bp});
  };
  const auto inception_e = [&b](const std::string& p, const std::string& in) {
    const auto b1 = basic_conv(b, p + ".branch1x1", 320, 1, 1, 0, in);
    const auto b3 = basic_conv(b, p + ".branch3x3_1", 384, 1, 1, 0, in);
    const auto b3a = basic_conv(b, p + ".branch3x3_2a", 384, 1, 3, 1, 0, 1, b3);
    const auto b3b = basic_conv(b, p + ".branch3x3_2b", 384, 3, 1, 1, 1, 0, b3);
    const auto b3cat = b.concat(p + ".branch3x3", {b3a, b3b});
    auto bd = basic_conv(b, p + ".branch3x3dbl_1", 448, 1, 1, 0, in);
    bd = basic_conv(b, p + ".branch3x3dbl_2", 384, 3, 1, 1, bd);
    const auto bda = basic_conv(b, p + ".branch3x3dbl_3a", 384, 1, 3, 1, 0, 1, bd);
    const auto bdb = basic_conv(b, p + ".branch3x3dbl_3b", 384, 3, 1, 1, 1, 0, bd);
    const auto bdcat = b.concat(p + ".branch3x3dbl", {bda, bdb});
    b.avg_pool(p + ".branch_pool.avg", 3, 1, 1, in);
    const auto bp = basic_conv(b, p + ".branch_pool", 192, 1, 1, 0, b.last());
    return b.concat(p + ".concat", {b1, b3cat, bdcat, bp});
  };

  x = inception_a("Mixed_5b", x, 32);
  x = inception_a("Mixed_5c", x, 64);
  x = inception_a("Mixed_5d", x, 64);
  x = inception_b("Mixed_6a", x);
  x = inception_c("Mixed_6b", x, 128);
  x = inception_c("Mixed_6c", x, 160);
  x = inception_c("Mixed_6d", x, 160);
  x = inception_c("Mixed_6e", x, 192);
  x = inception_d("Mixed_7a", x);
  x = inception_e("Mixed_7b", x);
  inception_e("Mixed_7c", x);
  b.global_avg_pool("avgpool");
  b.dropout("dropout", 0.5);
  b.flatten("flatten");
  b.fc("fc", kImageNetClasses);
  b.softmax_cross_entropy();
  return b.build();
}

// A CIFAR-size AlexNet-like net in the style of cuda-convnet's layers-18pct: two 5x5
// convolutions with pooling and LRN, then a large fully connected head (about 96% of the
// parameters), the case where RALP's split pays.
LayerGraph cifar_alexnet() {
  ModelBuilder b("cifar_alexnet", kCifar);
  b.conv("conv1", 32, 5, 1, 2);
  b.relu("relu1");
  b.max_pool("pool1", 2, 2);
  b.lrn("norm1", LrnAttrs{.size = 3, .alpha = 5e-5, .beta = 0.75, .k = 1.0});
  b.conv("conv2", 64, 5, 1, 2);
  b.relu("relu2");
  b.max_pool("pool2", 2, 2);
  b.lrn("norm2", LrnAttrs{.size = 3, .alpha = 5e-5, .beta = 0.75, .k = 1.0});
  b.flatten("flatten");
  b.fc("fc3", 1024);
  b.relu("relu3");
  b.dropout("drop3");
  b.fc("fc4", 512);
  b.relu("relu4");
  b.fc("fc5", kCifarClasses);
  b.softmax_cross_entropy();
  return b.build();
}

// A CIFAR-size all-convolutional net with batch norm and a tiny head (global average pooling and
// one 128x10 fully connected layer): the case where splitting does not pay.
LayerGraph cifar_allconv() {
  ModelBuilder b("cifar_allconv", kCifar);
  const struct {
    int64_t channels;
    int stride;
  } stages[] = {{32, 1}, {32, 2}, {64, 1}, {64, 2}, {128, 1}};
  int index = 1;
  for (const auto& stage : stages) {
    const std::string id = std::to_string(index++);
    b.conv("conv" + id, stage.channels, 3, stage.stride, 1, {}, kNoBias);
    b.batch_norm("bn" + id);
    b.relu("relu" + id);
  }
  b.global_avg_pool("avgpool");
  b.flatten("flatten");
  b.fc("fc", kCifarClasses);
  b.softmax_cross_entropy();
  return b.build();
}

struct ZooModel {
  ZooEntry entry;
  std::function<LayerGraph()> build;
};

const std::vector<ZooModel>& zoo() {
  static const std::vector<ZooModel> models = {
      {{"alexnet", "AlexNet, torchvision definition, 3x224x224, 1000 classes"}, alexnet},
      {{"alexnet_tf", "AlexNet, tf_cnn_benchmarks 64-192-384-384-256 variant, 3x227x227"},
       alexnet_tf},
      {{"vgg11", "VGG-11, torchvision definition (no batch norm), 3x224x224"},
       [] { return vgg("vgg11", {1, 1, 2, 2, 2}); }},
      {{"vgg16", "VGG-16, torchvision definition (no batch norm), 3x224x224"},
       [] { return vgg("vgg16", {2, 2, 3, 3, 3}); }},
      {{"vgg19", "VGG-19, torchvision definition (no batch norm), 3x224x224"},
       [] { return vgg("vgg19", {2, 2, 4, 4, 4}); }},
      {{"resnet18", "ResNet-18, torchvision definition, 3x224x224"},
       [] { return resnet("resnet18", false, {2, 2, 2, 2}); }},
      {{"resnet50", "ResNet-50 (v1.5), torchvision definition, 3x224x224"},
       [] { return resnet("resnet50", true, {3, 4, 6, 3}); }},
      {{"resnet101", "ResNet-101 (v1.5), torchvision definition, 3x224x224"},
       [] { return resnet("resnet101", true, {3, 4, 23, 3}); }},
      {{"resnet152", "ResNet-152 (v1.5), torchvision definition, 3x224x224"},
       [] { return resnet("resnet152", true, {3, 8, 36, 3}); }},
      {{"resnet50_tf", "ResNet-50 v1 (stride on the first 1x1), tf_cnn_benchmarks 2017, 3x224x224"},
       [] { return resnet("resnet50_tf", true, {3, 4, 6, 3}, StrideOn::conv1x1); }},
      {{"resnet101_tf", "ResNet-101 v1 (stride on the first 1x1), tf_cnn_benchmarks 2017, 3x224x224"},
       [] { return resnet("resnet101_tf", true, {3, 4, 23, 3}, StrideOn::conv1x1); }},
      {{"resnet152_tf", "ResNet-152 v1 (stride on the first 1x1), tf_cnn_benchmarks 2017, 3x224x224"},
       [] { return resnet("resnet152_tf", true, {3, 8, 36, 3}, StrideOn::conv1x1); }},
      {{"resnext101_32x4d",
        "ResNeXt-101 32x4d, NVIDIA DeepLearningExamples' definition (v1.5), 3x224x224"},
       [] {
         return resnet("resnext101_32x4d", true, {3, 4, 23, 3}, StrideOn::conv3x3,
                       kDleResNeXt32x4d);
       }},
      {{"se_resnext101_32x4d",
        "SE-ResNeXt-101 32x4d, NVIDIA DeepLearningExamples' definition (v1.5), 3x224x224"},
       [] {
         BottleneckWidths widths = kDleResNeXt32x4d;
         widths.se_features = kDleSqueezeFeatures;
         return resnet("se_resnext101_32x4d", true, {3, 4, 23, 3}, StrideOn::conv3x3, widths);
       }},
      {{"googlenet", "GoogLeNet, torchvision definition without auxiliary heads, 3x224x224"},
       googlenet},
      {{"inception_v3", "Inception-v3, torchvision definition without auxiliary head, 3x299x299"},
       inception_v3},
      {{"efficientnet_b0", "EfficientNet-B0, torchvision definition, 3x224x224"},
       [] { return efficientnet("efficientnet_b0", kImageNet224, 1.0, 1.0, 0.2); }},
      // B4 at 380x380, the crop torchvision's EfficientNet_B4_Weights and DeepLearningExamples'
      // effnet_b4_layers (image_classification/models/efficientnet.py, commit 729963dd) train at.
      {{"efficientnet_b4", "EfficientNet-B4, torchvision definition, 3x380x380"},
       [] { return efficientnet("efficientnet_b4", {3, 380, 380}, 1.4, 1.8, 0.4); }},
      {{"cifar_alexnet", "AlexNet-like CIFAR net, large FC head (96% of parameters), 3x32x32"},
       cifar_alexnet},
      {{"cifar_allconv", "All-convolutional CIFAR net with a tiny FC head, 3x32x32"},
       cifar_allconv},
  };
  return models;
}

}  // namespace

const std::vector<ZooEntry>& zoo_entries() {
  static const std::vector<ZooEntry> entries = [] {
    std::vector<ZooEntry> out;
    for (const auto& model : zoo()) out.push_back(model.entry);
    return out;
  }();
  return entries;
}

std::optional<LayerGraph> zoo_model(std::string_view name) {
  for (const auto& model : zoo()) {
    if (model.entry.name == name) return model.build();
  }
  return std::nullopt;
}

}  // namespace ralp
