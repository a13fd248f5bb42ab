// The layer DAG: edges, gradient needs, validation, and cuts with their boundary activations.
#include "ralp/model/layer_graph.hpp"

#include <gtest/gtest.h>

#include "ralp/model/model_builder.hpp"
#include "ralp/model/model_zoo.hpp"

namespace ralp {
namespace {

TEST(LayerGraph, EdgesFollowInputs) {
  ModelBuilder b("branchy", {4, 8, 8});
  const auto a = b.conv("a", 4, 3, 1, 1);
  const auto c = b.conv("c", 4, 1, 1, 0, "input");
  b.add("sum", {a, c});
  b.flatten("flat");
  b.fc("fc", 3);
  b.softmax_cross_entropy();
  const LayerGraph g = b.build();
  EXPECT_EQ(g.predecessors(*g.find("sum")), (std::vector<LayerId>{0, 1}));
  EXPECT_EQ(g.successors(0), (std::vector<LayerId>{2}));
  EXPECT_TRUE(g.layer(0).reads_model_input);
  EXPECT_FALSE(g.layer(0).needs_input_gradient);
  EXPECT_TRUE(g.layer(*g.find("sum")).needs_input_gradient);
}

TEST(LayerGraph, RejectsBadStructure) {
  // A later layer as input.
  EXPECT_THROW(LayerGraph("m", {1, 4, 4},
                          {{"a", LayerKind::relu, {}, {"b"}},
                           {"b", LayerKind::flatten, {}, {}},
                           {"loss", LayerKind::softmax_cross_entropy, {}, {}}}),
               ModelError);
  // No loss at the end.
  EXPECT_THROW(LayerGraph("m", {4, 1, 1}, {{"a", LayerKind::relu, {}, {}}}), ModelError);
  // A dangling layer that feeds nothing.
  EXPECT_THROW(LayerGraph("m", {4, 1, 1},
                          {{"a", LayerKind::relu, {}, {}},
                           {"b", LayerKind::relu, {}, {"input"}},
                           {"loss", LayerKind::softmax_cross_entropy, {}, {}}}),
               ModelError);
  // Duplicate names.
  try {
    LayerGraph("m", {4, 1, 1},
               {{"a", LayerKind::relu, {}, {}},
                {"a", LayerKind::relu, {}, {}},
                {"loss", LayerKind::softmax_cross_entropy, {}, {}}});
    FAIL();
  } catch (const ModelError& e) {
    EXPECT_EQ(e.layer_index(), 1u);
    EXPECT_EQ(e.attribute(), "name");
  }
}

TEST(LayerGraph, Vgg16CutBeforeTheHead) {
  // Cutting VGG-16 at fc6 sends pool5's 512x7x7 = 25,088 floats (100,352 bytes) per image and
  // leaves the 123,642,856 FC parameters on the PS.
  const LayerGraph vgg = *zoo_model("vgg16");
  const CutInfo cut = vgg.describe_cut(*vgg.find("flatten"));
  EXPECT_EQ(cut.boundary, (std::vector<LayerId>{*vgg.find("pool5")}));
  EXPECT_DOUBLE_EQ(cut.boundary_bytes_per_image.value(), 100352.0);
  EXPECT_EQ(cut.head_params, 123642856);
  EXPECT_EQ(cut.tail_params + cut.head_params, vgg.total_params());
  // At batch 32 that is 3.2 MB per worker per step, against 495 MB of FC gradients.
  EXPECT_NEAR(cut.boundary_bytes_per_image.value() * 32 / 1e6, 3.21, 0.01);
}

TEST(LayerGraph, ResNetCutInsideABlockSendsTheSkipTensorOnce) {
  // Cutting at layer4.2.conv1: the block input feeds both conv1 and the add; it is one tensor.
  const LayerGraph resnet = *zoo_model("resnet50");
  const LayerId first = *resnet.find("layer4.2.conv1");
  const CutInfo cut = resnet.describe_cut(first);
  ASSERT_EQ(cut.boundary.size(), 1u);
  EXPECT_EQ(resnet.layer(cut.boundary[0]).name(), "layer4.1.relu");
  // 2048x7x7 floats.
  EXPECT_DOUBLE_EQ(cut.boundary_bytes_per_image.value(), 2048.0 * 49 * 4);
  // Cutting at the second conv of that block needs both the skip and the main path.
  const CutInfo inner = resnet.describe_cut(*resnet.find("layer4.2.conv2"));
  EXPECT_EQ(inner.boundary.size(), 2u);
}

TEST(LayerGraph, CutPointsCoverEveryLayerButTheFirst) {
  const LayerGraph g = *zoo_model("cifar_alexnet");
  EXPECT_EQ(g.cut_points().size(), g.size() - 1);
  EXPECT_THROW(g.describe_cut(0), std::out_of_range);
  EXPECT_THROW(g.describe_cut(g.size()), std::out_of_range);
}

}  // namespace
}  // namespace ralp
