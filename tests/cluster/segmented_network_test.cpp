// The segmented network (one kernel network per layer with parameters, boundary tensors copied
// between them) computes exactly what one network over the same layers computes, alone and as the
// tail of a RALP cut whose head is a separate network.
#include <gtest/gtest.h>

#include "ralp/cluster/synthetic_data.hpp"
#include "ralp/kernels/network.hpp"
#include "ralp/model/model_zoo.hpp"
#include "segmented_network.hpp"


namespace ralp::cluster {
namespace {

constexpr int64_t kBatch = 4;
constexpr uint64_t kSeed = 9;

std::unique_ptr<kernels::Backend> cpu() {
  if (!kernels::cpu_backend_built()) return nullptr;
  return kernels::make_cpu_backend(1);
}

std::vector<std::vector<float>> gradients(kernels::Backend& backend,
                                          const std::vector<kernels::Network::Parameter*>& ps) {
  std::vector<std::vector<float>> out;
  for (const auto* p : ps) out.push_back(backend.download(*p->gradient));
  return out;
}

class SegmentedNetworkTest : public ::testing::TestWithParam<const char*> {};

TEST_P(SegmentedNetworkTest, EqualsOneNetwork) {
  const auto backend = cpu();
  if (!backend) GTEST_SKIP() << "no CPU kernel backend";
  const LayerGraph graph = *zoo_model(GetParam());
  const SyntheticData data(kSeed, graph.input_shape(), 10);
  const SyntheticBatch batch = data.batch(0, 0, kBatch);
  const kernels::StepContext context{kSeed, 0, 0};

  kernels::Network whole(*backend, graph, kBatch, kSeed);
  backend->copy_from_host(whole.model_input(), batch.images);
  backend->copy_labels_from_host(whole.labels(), batch.labels);
  whole.forward(context);
  whole.backward(context);
  std::vector<kernels::Network::Parameter*> whole_params;
  for (auto& p : whole.parameters()) whole_params.push_back(&p);

  SegmentedNetwork segmented(*backend, graph, graph.size(), kBatch, kSeed);
  EXPECT_GT(segmented.segments(), 2u);
  segmented.set_input(batch.images);
  segmented.set_labels(batch.labels);
  for (size_t i = 0; i < segmented.segments(); ++i) segmented.forward(i, context);
  EXPECT_EQ(segmented.loss(), whole.loss());
  for (size_t i = segmented.segments(); i-- > 0;) segmented.backward(i, context);
  EXPECT_EQ(gradients(*backend, segmented.parameters()), gradients(*backend, whole_params));
}

TEST_P(SegmentedNetworkTest, TailAndHeadEqualOneNetwork) {
  const auto backend = cpu();
  if (!backend) GTEST_SKIP() << "no CPU kernel backend";
  const LayerGraph graph = *zoo_model(GetParam());
  const LayerId cut = *graph.find(std::string(GetParam()) == "cifar_alexnet" ? "fc3" : "fc");
  const SyntheticBatch batch = SyntheticData(kSeed, graph.input_shape(), 10).batch(1, 2, kBatch);
  const kernels::StepContext context{kSeed, 2, 1};

  kernels::Network whole(*backend, graph, kBatch, kSeed);
  backend->copy_from_host(whole.model_input(), batch.images);
  backend->copy_labels_from_host(whole.labels(), batch.labels);
  whole.forward(context);
  whole.backward(context);

  SegmentedNetwork tail(*backend, graph, cut, kBatch, kSeed);
  kernels::Network head(*backend, graph, cut, graph.size(), kBatch, kSeed);
  tail.set_input(batch.images);
  for (size_t i = 0; i < tail.segments(); ++i) tail.forward(i, context);
  ASSERT_EQ(tail.outputs(), head.boundary_inputs());
  for (const LayerId id : tail.outputs()) {
    backend->copy(tail.output(id), head.boundary_input(id));
  }
  backend->copy_labels_from_host(head.labels(), batch.labels);
  head.forward(context);
  EXPECT_EQ(head.loss(), whole.loss());
  head.backward(context);
  for (const LayerId id : tail.outputs()) {
    ASSERT_TRUE(tail.output_needs_gradient(id));
    backend->copy(head.boundary_input_gradient(id), tail.output_gradient(id));
  }
  for (size_t i = tail.segments(); i-- > 0;) tail.backward(i, context);

  std::vector<kernels::Network::Parameter*> split = tail.parameters();
  for (auto& p : head.parameters()) split.push_back(&p);
  std::vector<kernels::Network::Parameter*> whole_params;
  for (auto& p : whole.parameters()) whole_params.push_back(&p);
  EXPECT_EQ(gradients(*backend, split), gradients(*backend, whole_params));
}

INSTANTIATE_TEST_SUITE_P(CifarNets, SegmentedNetworkTest,
                         ::testing::Values("cifar_alexnet", "cifar_allconv"));

}  // namespace
}  // namespace ralp::cluster
