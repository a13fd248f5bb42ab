// Every layer kernel of every backend against the double-precision reference and against finite
// differences of its own forward pass; the CUDA kernels also against the CPU ones.
#include <cmath>
#include <functional>
#include <optional>
#include <string>

#include "ralp/kernels/backend.hpp"
#include "reference.hpp"
#include "test_support.hpp"

namespace ralp::testing {
namespace {

using kernels::Backend;
using kernels::BackendKind;
using kernels::LayerArgs;
using kernels::Tensor;

// Finite-difference steps along a direction of elements in [-1, 1). The objective is linear in the
// input and in the weights of a linear kernel (convolution, fully connected, average pool, dropout
// under its fixed mask, flatten, concat, add), so a central difference is exact at any step: a unit
// step keeps float32 rounding of long sums (4,608 products per output in conv_deep_small) far below
// the tolerance, where a 1e-2 step failed 6 of 755 random seeds. Piecewise-linear kernels (ReLU,
// max pool) take a step below half the smallest gap between input values (random_distinct_values,
// at most a few hundred per case) and, their outputs being copies of inputs, suffer no rounding
// from it; the other smooth kernels take a step small enough for their curvature and large enough
// for float32 rounding.
constexpr double kLinearStep = 1.0;
constexpr double kKinkFreeStep = 1e-4;
constexpr double kSmoothStep = 1e-2;

double fd_step(const Layer& layer) {
  switch (layer.kind()) {
    case LayerKind::conv2d:
    case LayerKind::fully_connected:
    case LayerKind::avg_pool:
    case LayerKind::dropout:
    case LayerKind::flatten:
    case LayerKind::concat:
    case LayerKind::add:
    case LayerKind::mul:
      return kLinearStep;
    case LayerKind::relu:
    case LayerKind::max_pool:
    case LayerKind::hard_sigmoid:
      return kKinkFreeStep;
    case LayerKind::lrn:
    case LayerKind::batch_norm:
    case LayerKind::softmax_cross_entropy:
    case LayerKind::sigmoid:
    case LayerKind::silu:
    case LayerKind::hard_swish:
      return kSmoothStep;
  }
  return kSmoothStep;
}

struct OpCase {
  std::string name;
  LayerSpec spec;
  std::vector<TensorShape> inputs;
  int64_t batch = 2;
  // Input values span [-input_scale, input_scale): wider than [-1, 1) to reach pieces of the hard
  // activations that begin at +-3.
  double input_scale = 1.0;
};

LayerSpec spec(LayerKind kind, LayerAttrs attrs = std::monostate{}) {
  return {"layer", kind, std::move(attrs), {}};
}

Conv2dAttrs conv(int64_t out, int kh, int kw, int stride, int pad_h, int pad_w, int64_t groups = 1,
                 bool bias = true, int dilation = 1) {
  Conv2dAttrs a;
  a.out_channels = out;
  a.kernel_h = kh;
  a.kernel_w = kw;
  a.stride_h = a.stride_w = stride;
  a.pad_h = pad_h;
  a.pad_w = pad_w;
  a.groups = groups;
  a.bias = bias;
  a.dilation_h = a.dilation_w = dilation;
  return a;
}

PoolAttrs pool(int k, int s, int p, bool ceil = false, bool include_pad = true) {
  PoolAttrs a;
  a.kernel_h = a.kernel_w = k;
  a.stride_h = a.stride_w = s;
  a.pad_h = a.pad_w = p;
  a.ceil_mode = ceil;
  a.count_include_pad = include_pad;
  return a;
}

const std::vector<OpCase>& op_cases() {
  static const std::vector<OpCase> cases = [] {
    PoolAttrs global;
    global.global = true;
    return std::vector<OpCase>{
        {"conv3x3", spec(LayerKind::conv2d, conv(4, 3, 3, 1, 1, 1)), {{3, 7, 7}}},
        {"conv_grouped_strided", spec(LayerKind::conv2d, conv(6, 3, 3, 2, 1, 1, 2, false)), {{4, 8, 8}}},
        {"conv_dilated", spec(LayerKind::conv2d, conv(4, 3, 3, 1, 2, 2, 1, true, 2)), {{3, 6, 6}}},
        {"conv_rect_1x3", spec(LayerKind::conv2d, conv(5, 1, 3, 1, 0, 1)), {{4, 5, 6}}},
        {"conv5x5_stride3", spec(LayerKind::conv2d, conv(4, 5, 5, 3, 2, 2)), {{3, 13, 13}}},
        // Deep and small: the CPU backend's automatic choice runs its backward passes blocked.
        {"conv_deep_small", spec(LayerKind::conv2d, conv(4, 3, 3, 1, 1, 1)), {{512, 4, 4}}},
        {"max_pool", spec(LayerKind::max_pool, pool(3, 2, 0)), {{3, 7, 7}}},
        {"max_pool_padded", spec(LayerKind::max_pool, pool(3, 2, 1)), {{3, 8, 8}}},
        {"max_pool_ceil", spec(LayerKind::max_pool, pool(3, 2, 0, true)), {{3, 8, 8}}},
        {"avg_pool", spec(LayerKind::avg_pool, pool(3, 1, 1)), {{3, 5, 5}}},
        {"avg_pool_exclude_pad", spec(LayerKind::avg_pool, pool(3, 2, 1, false, false)), {{3, 6, 6}}},
        {"global_avg_pool", spec(LayerKind::avg_pool, global), {{5, 4, 4}}},
        {"relu", spec(LayerKind::relu), {{4, 3, 3}}},
        {"lrn3", spec(LayerKind::lrn, LrnAttrs{.size = 3, .alpha = 0.1, .beta = 0.75, .k = 1.0}), {{6, 3, 3}}},
        {"lrn5", spec(LayerKind::lrn, LrnAttrs{.size = 5, .alpha = 1e-2, .beta = 0.75, .k = 2.0}), {{7, 2, 3}}},
        {"batch_norm", spec(LayerKind::batch_norm, BatchNormAttrs{1e-5}), {{4, 3, 3}}, 3},
        {"dropout", spec(LayerKind::dropout, DropoutAttrs{0.5}), {{40, 1, 1}}},
        {"dropout_spatial", spec(LayerKind::dropout, DropoutAttrs{0.3}), {{3, 4, 5}}},
        {"flatten", spec(LayerKind::flatten), {{3, 4, 5}}},
        {"fc", spec(LayerKind::fully_connected, FullyConnectedAttrs{7, true}), {{24, 1, 1}}, 3},
        {"fc_spatial_input", spec(LayerKind::fully_connected, FullyConnectedAttrs{5, true}), {{3, 2, 2}}},
        {"concat", spec(LayerKind::concat), {{2, 3, 3}, {3, 3, 3}}},
        {"add", spec(LayerKind::add), {{3, 3, 4}, {3, 3, 4}}},
        {"softmax_cross_entropy", spec(LayerKind::softmax_cross_entropy), {{10, 1, 1}}, 4},
        {"sigmoid", spec(LayerKind::sigmoid), {{4, 3, 3}}},
        {"silu", spec(LayerKind::silu), {{4, 3, 3}}},
        // PyTorch's hard sigmoid stays inside its linear piece on inputs in [-1, 1); this one
        // clamps both ends, at x = -47/60 and 53/60, which lie 1/120 from the nearest of the 120
        // evenly spaced inputs: far beyond the finite-difference step.
        {"hard_sigmoid", spec(LayerKind::hard_sigmoid, HardSigmoidAttrs{}), {{4, 3, 3}}},
        {"hard_sigmoid_clamped", spec(LayerKind::hard_sigmoid, HardSigmoidAttrs{0.6, 0.47}), {{3, 4, 5}}},
        {"hard_swish", spec(LayerKind::hard_swish), {{4, 3, 3}}},
        // Inputs in [-5, 5): every piece of hard swish and PyTorch's hard sigmoid, whose kinks at
        // +-3 lie 5 / 360 from the nearest of the 72 inputs, beyond the finite-difference steps.
        {"hard_swish_wide", spec(LayerKind::hard_swish), {{4, 3, 3}}, 2, 5.0},
        {"hard_sigmoid_wide", spec(LayerKind::hard_sigmoid, HardSigmoidAttrs{}), {{4, 3, 3}}, 2, 5.0},
        {"mul", spec(LayerKind::mul), {{3, 3, 4}, {3, 3, 4}}},
        // Squeeze-and-excitation's channel scale: the second input broadcast over 4 x 5.
        {"mul_channel_scale", spec(LayerKind::mul), {{6, 4, 5}, {6, 1, 1}}, 3},
        // Large enough (2 x 32 x 16 x 16 = 16,384 elements) for the CPU loops to split between
        // threads.
        {"mul_channel_scale_large", spec(LayerKind::mul), {{32, 16, 16}, {32, 1, 1}}},
        {"hard_sigmoid_large", spec(LayerKind::hard_sigmoid, HardSigmoidAttrs{}), {{32, 16, 16}}},
    };
  }();
  return cases;
}

const OpCase& find_case(const std::string& name) {
  for (const auto& c : op_cases()) {
    if (c.name == name) return c;
  }
  throw std::out_of_range(name);
}

Layer make_layer(const OpCase& c) {
  Layer layer = infer_layer(c.spec, c.inputs, 0);
  layer.needs_input_gradient = true;
  return layer;
}

// Random host data for one case, in plain order.
struct CaseData {
  std::vector<Vec> inputs;
  Vec weight, bias, diff_output;
  std::vector<int32_t> labels;
  kernels::MaskKey mask{7, 3, 1, 5};
};

CaseData make_data(const Layer& layer, int64_t batch, std::mt19937_64& rng, double input_scale) {
  CaseData d;
  for (const auto& s : layer.input_shapes) {
    d.inputs.push_back(random_distinct_values(rng, batch * s.elements()));
    for (double& v : d.inputs.back()) v *= input_scale;
  }
  if (layer.weight_params > 0) d.weight = random_values(rng, layer.weight_params);
  if (layer.bias_params > 0) d.bias = random_values(rng, layer.bias_params);
  d.diff_output = random_values(rng, batch * layer.output.elements());
  std::uniform_int_distribution<int32_t> label(0, static_cast<int32_t>(layer.output.channels - 1));
  for (int64_t n = 0; n < batch; ++n) d.labels.push_back(label(rng));
  return d;
}

// One layer's tensors on a backend, and the passes run on them.
class Harness {
 public:
  Harness(Backend& backend, const Layer& layer, int64_t batch, const CaseData& data)
      : backend_(backend), runner_(backend.make_runner(layer, batch)), data_(data) {
    for (size_t i = 0; i < data.inputs.size(); ++i) {
      inputs_.push_back(backend.upload(runner_->input_desc(i), to_float(data.inputs[i])));
      diff_inputs_.push_back(backend.allocate(runner_->input_desc(i)));
    }
    output_ = backend.allocate(runner_->output_desc());
    diff_output_ = backend.upload(runner_->output_desc(), to_float(data.diff_output));
    if (runner_->has_weights()) {
      weight_ = backend.upload(runner_->weight_desc(), to_float(data.weight));
      diff_weight_ = backend.allocate(runner_->weight_desc());
    }
    if (runner_->has_bias()) {
      bias_ = backend.upload(runner_->bias_desc(), to_float(data.bias));
      diff_bias_ = backend.allocate(runner_->bias_desc());
    }
    labels_ = backend.allocate(runner_->labels_desc());
    backend.copy_labels_from_host(labels_, data.labels);
    loss_ = backend.allocate({{1}});
    for (size_t i = 0; i < inputs_.size(); ++i) {
      args_.inputs.push_back(&inputs_[i]);
      args_.diff_inputs.push_back(&diff_inputs_[i]);
    }
    args_.output = &output_;
    args_.diff_output = &diff_output_;
    args_.weights = weight_.empty() ? nullptr : &weight_;
    args_.bias = bias_.empty() ? nullptr : &bias_;
    args_.diff_weights = diff_weight_.empty() ? nullptr : &diff_weight_;
    args_.diff_bias = diff_bias_.empty() ? nullptr : &diff_bias_;
    args_.labels = &labels_;
    args_.loss = &loss_;
    args_.mask = data.mask;
  }

  [[nodiscard]] const Layer& layer() const { return runner_->layer(); }
  [[nodiscard]] bool is_loss() const { return layer().kind() == LayerKind::softmax_cross_entropy; }

  void forward() { runner_->forward(args_); }
  void backward() {
    runner_->backward_data(args_);
    if (layer().params() > 0) runner_->backward_weight(args_);
  }
  std::vector<float> output() { return backend_.download(output_); }
  float loss() { return backend_.download(loss_).front(); }
  std::vector<float> diff_input(size_t i) { return backend_.download(diff_inputs_[i]); }
  std::vector<float> diff_weight() { return backend_.download(diff_weight_); }
  std::vector<float> diff_bias() { return backend_.download(diff_bias_); }

  // The scalar whose gradient backward computes: the loss, or <diff_output, output>.
  double objective() {
    forward();
    if (is_loss()) return loss();
    const std::vector<float> y = output();
    double sum = 0.0;
    for (size_t i = 0; i < y.size(); ++i) sum += data_.diff_output[i] * static_cast<double>(y[i]);
    return sum;
  }

  // Central difference of the objective along `direction` in the tensor `target` holds `base`.
  double directional_difference(Tensor& target, const Vec& base, const Vec& direction) {
    const double step = fd_step(layer());
    const auto shifted = [&](double sign) {
      Vec v(base);
      for (size_t i = 0; i < v.size(); ++i) v[i] += sign * step * direction[i];
      backend_.copy_from_host(target, to_float(v));
      return objective();
    };
    const double up = shifted(1.0);
    const double down = shifted(-1.0);
    backend_.copy_from_host(target, to_float(base));
    return (up - down) / (2.0 * step);
  }

  Tensor& input(size_t i) { return inputs_[i]; }
  Tensor& weight() { return weight_; }

 private:
  Backend& backend_;
  std::unique_ptr<kernels::LayerRunner> runner_;
  const CaseData& data_;
  std::vector<Tensor> inputs_, diff_inputs_;
  Tensor output_, diff_output_, weight_, bias_, diff_weight_, diff_bias_, labels_, loss_;
  LayerArgs args_;
};

double dot(const std::vector<float>& a, const Vec& b) {
  double sum = 0.0;
  for (size_t i = 0; i < a.size(); ++i) sum += static_cast<double>(a[i]) * b[i];
  return sum;
}

// The backend's forward and backward of `data` against the double-precision reference: the
// output, loss and parameter gradients within `tolerance`, the inputs' gradients within
// `data_tolerance`.
void expect_reference(Harness& h, const Layer& layer, int64_t batch, const CaseData& data,
                      double tolerance, double data_tolerance) {
  std::vector<const Vec*> inputs;
  for (const Vec& v : data.inputs) inputs.push_back(&v);
  double ref_loss = 0.0;
  const Vec ref_out =
      ref_forward(layer, batch, inputs, data.weight, data.bias, data.labels, data.mask, &ref_loss);
  h.forward();
  EXPECT_LT(relative_error(h.output(), ref_out), tolerance) << "forward";
  if (h.is_loss()) {
    EXPECT_NEAR(h.loss(), ref_loss, tolerance * std::abs(ref_loss));
  }
  const RefGradients ref = ref_backward(layer, batch, inputs, ref_out, data.weight, data.bias,
                                        data.diff_output, data.labels, data.mask);
  h.backward();
  for (size_t i = 0; i < inputs.size(); ++i) {
    EXPECT_LT(relative_error(h.diff_input(i), ref.inputs[i]), data_tolerance)
        << "backward-data of input " << i;
  }
  if (layer.weight_params > 0) {
    EXPECT_LT(relative_error(h.diff_weight(), ref.weight), tolerance) << "backward-weight";
  }
  if (layer.bias_params > 0) {
    EXPECT_LT(relative_error(h.diff_bias(), ref.bias), tolerance) << "backward-bias";
  }
}

// One case on one backend against the reference and finite differences.
void check_case(Backend* backend, const std::string& name) {
  const OpCase& c = find_case(name);
  const Layer layer = make_layer(c);
  std::mt19937_64 rng = test_rng();
  const CaseData data = make_data(layer, c.batch, rng, c.input_scale);
  std::optional<Harness> made;
  try {
    made.emplace(*backend, layer, c.batch, data);
  } catch (const std::invalid_argument& e) {
    GTEST_SKIP() << "the backend cannot run this layer: " << e.what();
  }
  Harness& h = *made;
  expect_reference(h, layer, c.batch, data, kReferenceTolerance, kReferenceTolerance);
  const size_t inputs = data.inputs.size();

  // Finite differences of the backend's own forward along random directions, for every input.
  std::vector<std::vector<float>> dx;
  for (size_t i = 0; i < inputs; ++i) dx.push_back(h.diff_input(i));
  const std::vector<float> dw = layer.weight_params > 0 ? h.diff_weight() : std::vector<float>{};
  for (size_t i = 0; i < inputs; ++i) {
    const Vec direction = random_values(rng, static_cast<int64_t>(data.inputs[i].size()));
    const double fd = h.directional_difference(h.input(i), data.inputs[i], direction);
    const double analytic = dot(dx[i], direction);
    EXPECT_NEAR(fd, analytic, kFiniteDifferenceTolerance * std::max(1.0, std::abs(analytic)))
        << "finite differences of input " << i;
  }
  if (layer.weight_params > 0) {
    const Vec wdir = random_values(rng, layer.weight_params);
    const double wfd = h.directional_difference(h.weight(), data.weight, wdir);
    const double wanalytic = dot(dw, wdir);
    EXPECT_NEAR(wfd, wanalytic, kFiniteDifferenceTolerance * std::max(1.0, std::abs(wanalytic)))
        << "finite differences of the weights";
  }
}

class KernelOps : public ::testing::TestWithParam<std::tuple<BackendKind, std::string>> {};

TEST_P(KernelOps, MatchesReferenceAndFiniteDifferences) {
  RALP_TRACE_SEED();
  const auto [kind, name] = GetParam();
  std::string why;
  Backend* backend = test_backend(kind, &why);
  if (backend == nullptr) GTEST_SKIP() << why;
  check_case(backend, name);
}

std::vector<std::string> case_names() {
  std::vector<std::string> out;
  for (const auto& c : op_cases()) out.push_back(c.name);
  return out;
}

std::string param_name(const ::testing::TestParamInfo<KernelOps::ParamType>& info) {
  return std::string(kernels::to_string(std::get<0>(info.param))) + "_" + std::get<1>(info.param);
}

INSTANTIATE_TEST_SUITE_P(Backends, KernelOps,
                         ::testing::Combine(::testing::Values(BackendKind::cpu, BackendKind::cuda),
                                            ::testing::ValuesIn(case_names())),
                         param_name);

// The CPU backend with every convolution and FC pass forced into one layout: both must be as
// correct as the automatic mix of them.
class CpuPassLayouts
    : public ::testing::TestWithParam<std::tuple<kernels::CpuPassLayout, std::string>> {};

TEST_P(CpuPassLayouts, MatchReferenceAndFiniteDifferences) {
  RALP_TRACE_SEED();
  const auto [layout, name] = GetParam();
  std::string why;
  Backend* backend = cpu_test_backend(layout, &why);
  if (backend == nullptr) GTEST_SKIP() << why;
  check_case(backend, name);
}

std::vector<std::string> conv_and_fc_case_names() {
  std::vector<std::string> out;
  for (const auto& c : op_cases()) {
    if (c.spec.kind == LayerKind::conv2d || c.spec.kind == LayerKind::fully_connected) {
      out.push_back(c.name);
    }
  }
  return out;
}

INSTANTIATE_TEST_SUITE_P(
    Cpu, CpuPassLayouts,
    ::testing::Combine(::testing::Values(kernels::CpuPassLayout::channels_last,
                                         kernels::CpuPassLayout::blocked),
                       ::testing::ValuesIn(conv_and_fc_case_names())),
    [](const auto& p) {
      const bool blocked = std::get<0>(p.param) == kernels::CpuPassLayout::blocked;
      return std::string(blocked ? "blocked_" : "channels_last_") + std::get<1>(p.param);
    });

// One case on a BF16 backend against the reference computed on the BF16-rounded operands the
// kernels read (see kBf16ReferenceTolerance): inputs and output gradients are BF16 tensors, the
// FP32 master weights of convolution and FC layers are rounded in the passes' weight reorders,
// biases and batch-norm scale and shift stay FP32. Finite differences are left to the FP32 tests:
// a BF16 forward rounds a small step away.
//
// Pooling's backward-data pass is the exception to kBf16ReferenceTolerance's single rounding:
// oneDNN's BF16 kernel (jit:avx512_core_bf16 on channels-last data) adds each window's share into
// the BF16 gradient in turn, rounding after each addition, so an input in m overlapping windows
// takes up to m roundings, and the bound grows to m times the single one.
int64_t pooling_overlap(const Layer& layer) {
  if (layer.kind() != LayerKind::max_pool && layer.kind() != LayerKind::avg_pool) return 1;
  const auto& a = std::get<PoolAttrs>(layer.spec.attrs);
  if (a.global) return 1;
  const auto windows = [](int64_t kernel, int64_t stride) { return (kernel + stride - 1) / stride; };
  return windows(a.kernel_h, a.stride_h) * windows(a.kernel_w, a.stride_w);
}

// Values as a tensor of the backend's activation type holds them: rounded to BF16 or FP16.
Vec rounded(Backend& backend, const Vec& v) {
  const kernels::TensorDesc desc{{static_cast<int64_t>(v.size())}, backend.activation_type()};
  return to_double(backend.download(backend.upload(desc, to_float(v))));
}

// The same check on a backend of either 16-bit type (the CUDA backend's FP16 and BF16 too),
// with that type's tolerance.
void check_mixed_case(Backend* backend, const std::string& name, double tolerance) {
  const OpCase& c = find_case(name);
  const Layer layer = make_layer(c);
  std::mt19937_64 rng = test_rng();
  CaseData data = make_data(layer, c.batch, rng, c.input_scale);
  for (Vec& v : data.inputs) v = rounded(*backend, v);
  const bool rounded_weights =
      layer.kind() == LayerKind::conv2d || layer.kind() == LayerKind::fully_connected;
  if (rounded_weights) data.weight = rounded(*backend, data.weight);
  data.diff_output = rounded(*backend, data.diff_output);
  std::optional<Harness> made;
  try {
    made.emplace(*backend, layer, c.batch, data);
  } catch (const std::invalid_argument& e) {
    GTEST_SKIP() << "the backend cannot run this layer: " << e.what();
  }
  Harness& h = *made;
  expect_reference(h, layer, c.batch, data, tolerance,
                   tolerance * static_cast<double>(pooling_overlap(layer)));
}

class CpuBf16Ops
    : public ::testing::TestWithParam<std::tuple<kernels::CpuPassLayout, std::string>> {};

TEST_P(CpuBf16Ops, MatchTheReferenceOnRoundedOperands) {
  RALP_TRACE_SEED();
  const auto [layout, name] = GetParam();
  std::string why;
  Backend* backend = cpu_bf16_test_backend(layout, &why);
  if (backend == nullptr) GTEST_SKIP() << why;
  check_mixed_case(backend, name, kBf16ReferenceTolerance);
}

std::string layout_prefix(kernels::CpuPassLayout layout) {
  switch (layout) {
    case kernels::CpuPassLayout::automatic:
      return "";
    case kernels::CpuPassLayout::channels_last:
      return "channels_last_";
    case kernels::CpuPassLayout::blocked:
      return "blocked_";
  }
  return "";
}

INSTANTIATE_TEST_SUITE_P(Bf16, CpuBf16Ops,
                         ::testing::Combine(::testing::Values(kernels::CpuPassLayout::automatic),
                                            ::testing::ValuesIn(case_names())),
                         [](const auto& p) {
                           return layout_prefix(std::get<0>(p.param)) + std::get<1>(p.param);
                         });

INSTANTIATE_TEST_SUITE_P(Bf16Layouts, CpuBf16Ops,
                         ::testing::Combine(::testing::Values(kernels::CpuPassLayout::channels_last,
                                                              kernels::CpuPassLayout::blocked),
                                            ::testing::ValuesIn(conv_and_fc_case_names())),
                         [](const auto& p) {
                           return layout_prefix(std::get<0>(p.param)) + std::get<1>(p.param);
                         });

// The tensors of a BF16 runner: 16-bit activations, FP32 weights, biases and loss output.
TEST(CpuBf16Ops, KeepsActivationsInBf16AndParametersInFp32) {
  std::string why;
  Backend* backend = cpu_bf16_test_backend(kernels::CpuPassLayout::automatic, &why);
  if (backend == nullptr) GTEST_SKIP() << why;
  EXPECT_EQ(backend->precision(), Precision::bf16);
  const auto conv = backend->make_runner(make_layer(find_case("conv3x3")), 2);
  EXPECT_EQ(conv->input_desc(0).type, kernels::DataType::bf16);
  EXPECT_EQ(conv->output_desc().type, kernels::DataType::bf16);
  EXPECT_EQ(conv->weight_desc().type, kernels::DataType::f32);
  EXPECT_EQ(conv->bias_desc().type, kernels::DataType::f32);
  EXPECT_EQ(conv->input_desc(0).bytes(), 2 * conv->input_desc(0).elements());
  const auto loss = backend->make_runner(make_layer(find_case("softmax_cross_entropy")), 4);
  EXPECT_EQ(loss->input_desc(0).type, kernels::DataType::bf16);
  EXPECT_EQ(loss->output_desc().type, kernels::DataType::f32);
}

// The CUDA backend in FP16 and BF16 mixed precision, as the CPU's BF16 above.
class CudaMixedOps : public ::testing::TestWithParam<std::tuple<Precision, std::string>> {};

TEST_P(CudaMixedOps, MatchTheReferenceOnRoundedOperands) {
  RALP_TRACE_SEED();
  const auto [precision, name] = GetParam();
  std::string why;
  Backend* backend = cuda_precision_test_backend(precision, &why);
  if (backend == nullptr) GTEST_SKIP() << why;
  check_mixed_case(backend, name,
                   precision == Precision::bf16 ? kBf16ReferenceTolerance : kFp16ReferenceTolerance);
}

INSTANTIATE_TEST_SUITE_P(Cuda, CudaMixedOps,
                         ::testing::Combine(::testing::Values(Precision::fp16, Precision::bf16),
                                            ::testing::ValuesIn(case_names())),
                         [](const auto& p) {
                           return std::string(to_string(std::get<0>(p.param))) + "_" +
                                  std::get<1>(p.param);
                         });

// The CUDA backend in TF32 against the double reference: forward and both backward passes of
// every case within kTf32ReferenceTolerance (the layers without products compute in FP32 and
// meet it by far).
class CudaTf32Ops : public ::testing::TestWithParam<std::string> {};

TEST_P(CudaTf32Ops, MatchTheReference) {
  RALP_TRACE_SEED();
  std::string why;
  Backend* backend = cuda_precision_test_backend(Precision::tf32, &why);
  if (backend == nullptr) GTEST_SKIP() << why;
  const OpCase& c = find_case(GetParam());
  const Layer layer = make_layer(c);
  std::mt19937_64 rng = test_rng();
  const CaseData data = make_data(layer, c.batch, rng, c.input_scale);
  std::optional<Harness> made;
  try {
    made.emplace(*backend, layer, c.batch, data);
  } catch (const std::invalid_argument& e) {
    GTEST_SKIP() << "the backend cannot run this layer: " << e.what();
  }
  Harness& h = *made;
  std::vector<const Vec*> inputs;
  for (const Vec& v : data.inputs) inputs.push_back(&v);
  double ref_loss = 0.0;
  const Vec ref_out =
      ref_forward(layer, c.batch, inputs, data.weight, data.bias, data.labels, data.mask, &ref_loss);
  h.forward();
  EXPECT_LT(relative_error(h.output(), ref_out), kTf32ReferenceTolerance) << "forward";
  const RefGradients ref = ref_backward(layer, c.batch, inputs, ref_out, data.weight, data.bias,
                                        data.diff_output, data.labels, data.mask);
  h.backward();
  for (size_t i = 0; i < inputs.size(); ++i) {
    EXPECT_LT(relative_error(h.diff_input(i), ref.inputs[i]), kTf32ReferenceTolerance)
        << "backward-data of input " << i;
  }
  if (layer.weight_params > 0) {
    EXPECT_LT(relative_error(h.diff_weight(), ref.weight), kTf32ReferenceTolerance)
        << "backward-weight";
  }
}

INSTANTIATE_TEST_SUITE_P(Tf32, CudaTf32Ops, ::testing::ValuesIn(case_names()),
                         [](const auto& p) { return p.param; });

class CudaMatchesCpu : public ::testing::TestWithParam<std::string> {};

TEST_P(CudaMatchesCpu, SameResults) {
  RALP_TRACE_SEED();
  std::string why;
  Backend* cuda = test_backend(BackendKind::cuda, &why);
  if (cuda == nullptr) GTEST_SKIP() << "no CUDA device: " << why;
  Backend* cpu = test_backend(BackendKind::cpu, &why);
  if (cpu == nullptr) GTEST_SKIP() << why << " (the CUDA kernels are checked against the reference)";
  const OpCase& c = find_case(GetParam());
  const Layer layer = make_layer(c);
  std::mt19937_64 rng = test_rng();
  const CaseData data = make_data(layer, c.batch, rng, c.input_scale);
  Harness on_cpu(*cpu, layer, c.batch, data);
  std::optional<Harness> made;
  try {
    made.emplace(*cuda, layer, c.batch, data);
  } catch (const std::invalid_argument& e) {
    GTEST_SKIP() << "the CUDA backend cannot run this layer: " << e.what();
  }
  Harness& on_cuda = *made;
  on_cpu.forward();
  on_cuda.forward();
  EXPECT_LT(relative_error(on_cuda.output(), on_cpu.output()), kReferenceTolerance);
  on_cpu.backward();
  on_cuda.backward();
  for (size_t i = 0; i < c.inputs.size(); ++i) {
    EXPECT_LT(relative_error(on_cuda.diff_input(i), on_cpu.diff_input(i)), kReferenceTolerance);
  }
  if (layer.weight_params > 0) {
    EXPECT_LT(relative_error(on_cuda.diff_weight(), on_cpu.diff_weight()), kReferenceTolerance);
  }
}

INSTANTIATE_TEST_SUITE_P(Ops, CudaMatchesCpu, ::testing::ValuesIn(case_names()),
                         [](const auto& p) { return p.param; });

}  // namespace
}  // namespace ralp::testing
