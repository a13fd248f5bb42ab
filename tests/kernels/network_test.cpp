// The network executor: whole-model forward and backward against a double-precision reference,
// a split at a cut giving the whole model's gradients, micro-batch accumulation, the SGD step and
// deterministic initialisation.
#include <map>

#include "ralp/kernels/network.hpp"
#include "ralp/model/model_builder.hpp"
#include "ralp/model/model_zoo.hpp"
#include "reference.hpp"
#include "test_support.hpp"

namespace ralp::testing {
namespace {

using kernels::Backend;
using kernels::Network;
using kernels::StepContext;

constexpr int64_t kBatch = 2;
constexpr uint64_t kInitSeed = 42;
// Exactly equal up to float summation order (a split network runs the same primitives).
constexpr double kSplitTolerance = 1e-6;

// The whole model in double precision, parameters as the executor initialises them. ReLU masks
// and max-pool winners are taken from `kernel_outputs` (each layer's activation as the executor
// computed it, by id): a random batch now and then puts a value so near a kink that float and
// double fall on different sides, and only rounding should separate the two.
struct RefNetwork {
  double loss = 0.0;
  std::map<std::string, Vec> gradients;  // by parameter name

  RefNetwork(const LayerGraph& g, const Vec& input, const std::vector<int32_t>& labels,
             const StepContext& ctx, const std::vector<Vec>& kernel_outputs) {
    const size_t n = g.size();
    std::vector<Vec> out(n), diff(n);
    std::vector<Vec> weight(n), bias(n);
    const auto inputs_of = [&](LayerId id) {
      std::vector<const Vec*> in;
      for (const auto& name : g.layer(id).spec.inputs) {
        in.push_back(name == kModelInputName ? &input : &out[*g.find(name)]);
      }
      return in;
    };
    const auto key = [&](LayerId id) {
      return kernels::MaskKey{ctx.seed, ctx.step, ctx.worker, kernels::dropout_key(g.layer(id))};
    };
    // The kernel's copy of a layer's first input; the model input is the same for both.
    const auto decisions = [&](LayerId id) -> const Vec* {
      const std::string& name = g.layer(id).spec.inputs.front();
      return name == kModelInputName ? nullptr : &kernel_outputs.at(*g.find(name));
    };
    for (LayerId id = 0; id < n; ++id) {
      const Layer& l = g.layer(id);
      if (l.weight_params > 0) weight[id] = ref_initial(kInitSeed, l, false);
      if (l.bias_params > 0) bias[id] = ref_initial(kInitSeed, l, true);
      out[id] = ref_forward(l, kBatch, inputs_of(id), weight[id], bias[id], labels, key(id), &loss,
                            decisions(id));
    }
    for (LayerId id = n; id-- > 0;) {
      const Layer& l = g.layer(id);
      if (l.kind() != LayerKind::softmax_cross_entropy && diff[id].empty()) continue;
      const RefGradients r = ref_backward(l, kBatch, inputs_of(id), out[id], weight[id], bias[id],
                                          diff[id], labels, key(id), decisions(id));
      if (l.weight_params > 0) gradients[l.name() + ".weight"] = r.weight;
      if (l.bias_params > 0) gradients[l.name() + ".bias"] = r.bias;
      if (!l.needs_input_gradient) continue;
      for (size_t i = 0; i < l.spec.inputs.size(); ++i) {
        if (l.spec.inputs[i] == kModelInputName) continue;
        Vec& d = diff[*g.find(l.spec.inputs[i])];
        if (d.empty()) {
          d = r.inputs[i];
        } else {
          for (size_t k = 0; k < d.size(); ++k) d[k] += r.inputs[i][k];
        }
      }
    }
  }
};

Backend* cpu_or_skip(std::string* why) { return test_backend(kernels::BackendKind::cpu, why); }

struct Batch {
  Vec input;
  std::vector<int32_t> labels;
};

Batch random_batch(const LayerGraph& g, std::mt19937_64& rng) {
  Batch b;
  b.input = random_values(rng, kBatch * g.input_shape().elements());
  const int64_t classes = g.layer(g.size() - 1).output.channels;
  std::uniform_int_distribution<int32_t> label(0, static_cast<int32_t>(classes - 1));
  for (int64_t i = 0; i < kBatch; ++i) b.labels.push_back(label(rng));
  return b;
}

void load(Backend& backend, Network& net, const Batch& b) {
  if (net.reads_model_input()) backend.copy_from_host(net.model_input(), to_float(b.input));
  if (net.has_loss()) backend.copy_labels_from_host(net.labels(), b.labels);
}

std::map<std::string, std::vector<float>> gradients(Backend& backend, Network& net) {
  std::map<std::string, std::vector<float>> out;
  for (const auto& p : net.parameters()) out[p.name] = backend.download(*p.gradient);
  return out;
}

// A small DAG: one tensor feeding three layers, a concat and a residual add.
LayerGraph branching_model() {
  ModelBuilder b("branching", {3, 8, 8});
  b.conv("c1", 4, 3, 1, 1);
  const std::string r1 = b.relu("r1");
  const std::string a = b.conv("a", 3, 3, 1, 1, r1);
  const std::string c = b.conv("b", 5, 1, 1, 0, r1);
  b.concat("cat", {a, c});
  const std::string c2 = b.conv("c2", 4, 3, 1, 1);
  b.add("sum", {c2, r1});
  b.relu("r2");
  b.global_avg_pool("pool");
  b.flatten("flatten");
  b.fc("fc", 5);
  b.softmax_cross_entropy();
  return b.build();
}

// Two squeeze-and-excitation blocks as SE-ResNeXt / EfficientNet (SiLU, a ReLU squeeze, a sigmoid
// gate) and MobileNetV3 (hard swish, a SiLU squeeze, a hard-sigmoid gate) build them: each
// global-pools its input, reduces and expands the channels with 1x1 convolutions and scales its
// input's channels by the gate, so the gate's gradient is a sum over H x W.
LayerGraph se_model() {
  ModelBuilder b("se_block", {3, 8, 8});
  b.conv("c1", 8, 3, 1, 1);
  const std::string act = b.silu("act");
  b.global_avg_pool("squeeze");
  b.conv("reduce", 2, 1, 1, 0);
  b.relu("r");
  b.conv("expand", 8, 1, 1, 0);
  const std::string gate = b.sigmoid("gate");
  b.mul("scale", act, gate);
  b.conv("c2", 8, 3, 2, 1);
  const std::string hs = b.hard_swish("hs");
  b.global_avg_pool("squeeze2");
  b.conv("reduce2", 2, 1, 1, 0);
  b.silu("act2");
  b.conv("expand2", 8, 1, 1, 0);
  const std::string gate2 = b.hard_sigmoid("gate2");
  b.mul("scale2", hs, gate2);
  b.global_avg_pool("pool");
  b.flatten("flatten");
  b.fc("fc", 5);
  b.softmax_cross_entropy();
  return b.build();
}

LayerGraph test_model(const std::string& name) {
  if (name == "branching") return branching_model();
  if (name == "se_block") return se_model();
  return *zoo_model(name);
}

class WholeModel : public ::testing::TestWithParam<std::string> {};

TEST_P(WholeModel, ForwardAndBackwardMatchTheReference) {
  RALP_TRACE_SEED();
  std::string why;
  Backend* backend = cpu_or_skip(&why);
  if (backend == nullptr) GTEST_SKIP() << why;
  const LayerGraph g = test_model(GetParam());
  std::mt19937_64 rng = test_rng();
  const Batch batch = random_batch(g, rng);
  const StepContext ctx{.seed = 5, .step = 3, .worker = 1};

  Network net(*backend, g, kBatch, kInitSeed);
  for (const auto& p : net.parameters()) {
    const Layer& l = g.layer(p.layer);
    EXPECT_EQ(relative_error(backend->download(*p.value),
                             ref_initial(kInitSeed, l, p.name.ends_with(".bias"))),
              0.0)
        << p.name;
  }
  load(*backend, net, batch);
  net.forward(ctx);
  std::vector<Vec> activations;
  for (LayerId id = 0; id < g.size(); ++id) {
    activations.push_back(to_double(backend->download(net.output(id))));
  }
  net.backward(ctx);

  const RefNetwork ref(g, batch.input, batch.labels, ctx, activations);
  EXPECT_NEAR(net.loss(), ref.loss, kReferenceTolerance * ref.loss);
  const auto got = gradients(*backend, net);
  ASSERT_EQ(got.size(), ref.gradients.size());
  for (const auto& [name, want] : ref.gradients) {
    EXPECT_LT(relative_error(got.at(name), want), kReferenceTolerance) << name;
  }
}

INSTANTIATE_TEST_SUITE_P(Models, WholeModel,
                         ::testing::Values("cifar_alexnet", "cifar_allconv", "branching", "se_block"),
                         [](const auto& p) { return p.param; });

struct SplitCase {
  std::string model;
  std::string first_head;  // the head's first layer
};

class SplitModel : public ::testing::TestWithParam<SplitCase> {};

// A worker runs [0, cut), the head [cut, n); activations and gradients cross as host copies, as
// they would over MPI. The gradients must be the whole model's.
TEST_P(SplitModel, GivesTheWholeModelsGradients) {
  RALP_TRACE_SEED();
  std::string why;
  Backend* backend = cpu_or_skip(&why);
  if (backend == nullptr) GTEST_SKIP() << why;
  const LayerGraph g = test_model(GetParam().model);
  const LayerId cut = *g.find(GetParam().first_head);
  std::mt19937_64 rng = test_rng();
  const Batch batch = random_batch(g, rng);
  const StepContext ctx{.seed = 9, .step = 1, .worker = 2};

  Network whole(*backend, g, kBatch, kInitSeed);
  load(*backend, whole, batch);
  whole.forward(ctx);
  whole.backward(ctx);

  Network tail(*backend, g, 0, cut, kBatch, kInitSeed);
  Network head(*backend, g, cut, g.size(), kBatch, kInitSeed);
  EXPECT_EQ(tail.boundary_outputs(), head.boundary_inputs());
  EXPECT_EQ(tail.boundary_outputs(), g.describe_cut(cut).boundary);
  load(*backend, tail, batch);
  load(*backend, head, batch);
  tail.forward(ctx);
  for (const LayerId id : tail.boundary_outputs()) {
    backend->copy_from_host(head.boundary_input(id), backend->download(tail.output(id)));
  }
  head.forward(ctx);
  EXPECT_NEAR(head.loss(), whole.loss(), kSplitTolerance * whole.loss());
  head.backward(ctx);
  for (const LayerId id : head.boundary_inputs()) {
    backend->copy_from_host(tail.boundary_output_gradient(id),
                            backend->download(head.boundary_input_gradient(id)));
  }
  tail.backward(ctx);

  const auto want = gradients(*backend, whole);
  auto got = gradients(*backend, tail);
  got.merge(gradients(*backend, head));
  ASSERT_EQ(got.size(), want.size());
  for (const auto& [name, w] : want) {
    EXPECT_LT(relative_error(got.at(name), w), kSplitTolerance) << name;
  }
}

INSTANTIATE_TEST_SUITE_P(Cuts, SplitModel,
                         ::testing::Values(SplitCase{"cifar_alexnet", "fc3"},
                                           SplitCase{"cifar_alexnet", "drop3"},
                                           SplitCase{"cifar_allconv", "conv4"},
                                           SplitCase{"branching", "b"},
                                           // The cut passes the gate (8x1x1) and the tensor it
                                           // scales: the broadcast gradient crosses it.
                                           SplitCase{"se_block", "scale"},
                                           SplitCase{"se_block", "gate2"}),
                         [](const auto& p) { return p.param.model + "_" + p.param.first_head; });

// The RALP head runs one micro-batch per worker and sums their gradients, then updates with the
// mean; the same as summing separate backward passes by hand.
TEST(NetworkTraining, AccumulatesMicroBatchesAndStepsWithMomentum) {
  RALP_TRACE_SEED();
  std::string why;
  Backend* backend = cpu_or_skip(&why);
  if (backend == nullptr) GTEST_SKIP() << why;
  const LayerGraph g = *zoo_model("cifar_alexnet");
  const LayerId cut = *g.find("fc3");
  std::mt19937_64 rng = test_rng();
  Network head(*backend, g, cut, g.size(), kBatch, kInitSeed);
  Network single(*backend, g, cut, g.size(), kBatch, kInitSeed);
  const LayerId boundary = head.boundary_inputs().front();
  std::map<std::string, Vec> summed;
  for (uint32_t worker = 0; worker < 2; ++worker) {
    const StepContext ctx{.seed = 1, .step = 0, .worker = worker};
    const Vec activations = random_values(rng, kBatch * g.layer(boundary).output.elements());
    const Batch b = random_batch(g, rng);
    for (Network* net : {&head, &single}) {
      backend->copy_from_host(net->boundary_input(boundary), to_float(activations));
      backend->copy_labels_from_host(net->labels(), b.labels);
      net->forward(ctx);
      net->backward(ctx, /*accumulate=*/net == &head && worker > 0);
    }
    for (const auto& [name, grad] : gradients(*backend, single)) {
      Vec& s = summed[name];
      s.resize(grad.size(), 0.0);
      for (size_t i = 0; i < grad.size(); ++i) s[i] += grad[i];
    }
  }
  const auto accumulated = gradients(*backend, head);
  for (const auto& [name, want] : summed) {
    EXPECT_LT(relative_error(accumulated.at(name), want), kReferenceTolerance) << name;
  }

  const kernels::SgdOptions options{.learning_rate = 0.05F, .momentum = 0.9F, .weight_decay = 0.0F};
  const auto& p = head.parameters().front();
  const std::vector<float> before = backend->download(*p.value);
  head.sgd_step(options, 0.5F);
  const std::vector<float> after = backend->download(*p.value);
  const Vec& g_sum = summed.at(p.name);
  Vec want(before.size());
  for (size_t i = 0; i < want.size(); ++i) want[i] = before[i] - 0.05 * 0.5 * g_sum[i];
  EXPECT_LT(relative_error(after, want), kReferenceTolerance);
  head.zero_gradients();
  EXPECT_EQ(backend->download(*p.gradient), std::vector<float>(before.size(), 0.0F));
}

// SGD on one batch through both squeeze-and-excitation blocks lowers the loss step after step.
TEST(NetworkTraining, SqueezeExcitationModelLearnsABatch) {
  RALP_TRACE_SEED();
  std::string why;
  Backend* backend = cpu_or_skip(&why);
  if (backend == nullptr) GTEST_SKIP() << why;
  const LayerGraph g = se_model();
  std::mt19937_64 rng = test_rng();
  const Batch batch = random_batch(g, rng);
  Network net(*backend, g, kBatch, kInitSeed);
  load(*backend, net, batch);
  const kernels::SgdOptions options{.learning_rate = 0.1F, .momentum = 0.0F, .weight_decay = 0.0F};
  std::vector<float> losses;
  for (uint64_t step = 0; step < 4; ++step) {
    const StepContext ctx{.seed = 3, .step = step, .worker = 0};
    net.forward(ctx);
    losses.push_back(net.loss());
    net.backward(ctx);
    net.sgd_step(options, 1.0F);
  }
  for (size_t i = 1; i < losses.size(); ++i) {
    EXPECT_LT(losses[i], losses[i - 1]) << "step " << i;
  }
}

TEST(NetworkTraining, RejectsBadRangesAndIds) {
  std::string why;
  Backend* backend = cpu_or_skip(&why);
  if (backend == nullptr) GTEST_SKIP() << why;
  const LayerGraph g = *zoo_model("cifar_allconv");
  EXPECT_THROW(Network(*backend, g, 3, 3, kBatch, 1), std::out_of_range);
  EXPECT_THROW(Network(*backend, g, 0, g.size() + 1, kBatch, 1), std::out_of_range);
  Network tail(*backend, g, 0, 4, kBatch, 1);
  EXPECT_FALSE(tail.has_loss());
  EXPECT_THROW(static_cast<void>(tail.labels()), std::out_of_range);
  EXPECT_THROW(static_cast<void>(tail.output(7)), std::out_of_range);
  EXPECT_THROW(static_cast<void>(tail.boundary_input(0)), std::out_of_range);
}

}  // namespace
}  // namespace ralp::testing
