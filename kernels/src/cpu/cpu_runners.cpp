// CPU layer runners: oneDNN primitives made once per layer and batch, run on tensors bound by
// handle. Dropout, the loss's scalar arithmetic, hard sigmoid and the gradient of mul's broadcast
// scale, which oneDNN 2.6 has no primitive for, are loops.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>
#include <stdexcept>
#include <type_traits>
#include <vector>

#include "cpu/cpu_backend.hpp"
#include "ralp/kernels/bf16.hpp"
#include "ralp/kernels/dropout_mask.hpp"

namespace ralp::kernels::cpu {
namespace {

using dnnl::memory;
using tag = memory::format_tag;
using dt = memory::data_type;

// Right padding that makes oneDNN's output size (floor division) equal the layer's: the left
// padding for floor-mode sizes, more when ceil_mode added a last window.
int64_t right_pad(int64_t in, int64_t out, int64_t window, int64_t stride, int64_t left) {
  return std::max(left, (out - 1) * stride + window - in - left);
}

class CpuRunner : public LayerRunner {
 public:
  CpuRunner(CpuBackend& backend, const Layer& layer, int64_t batch)
      : LayerRunner(layer, batch, Layout::channels_last, backend.activation_type()),
        backend_(backend) {}

  void backward_data(const LayerArgs&) override {
    throw std::logic_error("layer '" + layer_.name() + "' has no backward-data pass");
  }
  void backward_weight(const LayerArgs&) override {
    throw std::logic_error("layer '" + layer_.name() + "' has no parameters");
  }

 protected:
  [[nodiscard]] const dnnl::engine& engine() const { return backend_.engine(); }
  // The type the passes compute on: the activations' (f32, or bf16 under mixed precision).
  [[nodiscard]] dt compute_type() const { return to_dnnl(activation_type_); }
  // Every primitive gets its scratchpad from its runner: with oneDNN's default (library-owned)
  // scratchpad, large ones were allocated and freed around each execution, and the page faults
  // of the fresh memory made FC backward-weight passes several times slower.
  static dnnl::primitive_attr user_scratchpad() {
    dnnl::primitive_attr attr;
    attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
    return attr;
  }
  void run(const dnnl::primitive& p, std::unordered_map<int, memory> args) {
    args.emplace(DNNL_ARG_SCRATCHPAD, scratchpad_for(p));
    p.execute(backend_.stream(), args);
    backend_.stream().wait();
  }
  // Runs a primitive that reads every input (DNNL_ARG_MULTIPLE_SRC + i) into one output: concat
  // and sum.
  void run_on_inputs(const dnnl::primitive& p, std::vector<memory>& inputs, memory& output,
                     const LayerArgs& args) {
    std::unordered_map<int, memory> m;
    for (size_t i = 0; i < inputs.size(); ++i) {
      bind(inputs[i], args.inputs.at(i));
      m.emplace(DNNL_ARG_MULTIPLE_SRC + static_cast<int>(i), inputs[i]);
    }
    bind(output, args.output);
    m.emplace(DNNL_ARG_DST, output);
    run(p, m);
  }
  [[nodiscard]] memory owned(const memory::desc& md) const { return memory(md, engine()); }
  [[nodiscard]] memory unbound(const memory::desc& md) const { return unbound_memory(md, engine()); }
  void need_input_gradient() const {
    if (!layer_.needs_input_gradient) {
      throw std::logic_error("layer '" + layer_.name() + "' needs no input gradient");
    }
  }

  CpuBackend& backend_;

 private:
  memory& scratchpad_for(const dnnl::primitive& p) {
    auto it = scratchpads_.find(p.get());
    if (it == scratchpads_.end()) {
      const dnnl_memory_desc_t* md =
          dnnl_primitive_desc_query_md(p.get_primitive_desc(), dnnl_query_scratchpad_md, 0);
      it = scratchpads_.emplace(p.get(), memory(memory::desc(*md), engine())).first;
    }
    return it->second;
  }

  std::map<dnnl_primitive_t, memory> scratchpads_;
};

// A reorder that runs only when the two layouts differ; otherwise the user's memory is used
// directly. An input converts the user's memory into the layout a primitive wants; an output
// lets the primitive write its own layout and converts that into the user's.
struct MaybeReorder {
  std::optional<dnnl::reorder> reorder;
  memory converted;

  void prepare(const memory::desc& user, const memory::desc& wanted, const dnnl::engine& eng) {
    if (user == wanted) return;
    converted = memory(wanted, eng);
    reorder = dnnl::reorder(dnnl::reorder::primitive_desc(eng, user, eng, wanted));
  }
  void prepare_output(const memory::desc& user, const memory::desc& produced,
                      const dnnl::engine& eng) {
    if (user == produced) return;
    converted = memory(produced, eng);
    reorder = dnnl::reorder(dnnl::reorder::primitive_desc(eng, produced, eng, user));
  }
  // Input: the memory the primitive should read, converting `user` into it first when needed.
  memory& to_wanted(memory& user, dnnl::stream& s) {
    if (!reorder) return user;
    reorder->execute(s, user, converted);
    return converted;
  }
  // Output: the memory the primitive should write; from_wanted then converts it into `user`.
  memory& target(memory& user) { return reorder ? converted : user; }
  void from_wanted(memory& user, dnnl::stream& s) {
    if (!reorder) return;
    reorder->execute(s, converted, user);
    s.wait();
  }
};

// Mixed precision casts the FP32 master weights into the compute type in each pass that reads
// them. Backward-data reads the forward's cast again, as AMP's cast cache does, instead of
// casting once more, when it wants the same layout and gets the weights that forward cast (they
// do not change between a step's forward and backward). FP32 passes reorder as before.
struct WeightCasts {
  bool shared = false;
  const void* cast_from = nullptr;  // the weights the last forward cast

  void prepare(const MaybeReorder& forward, const MaybeReorder& backward, bool mixed) {
    shared = mixed && forward.reorder && backward.reorder &&
             forward.converted.get_desc() == backward.converted.get_desc();
  }
  memory& for_forward(MaybeReorder& forward, memory& user, dnnl::stream& s) {
    cast_from = user.get_data_handle();
    return forward.to_wanted(user, s);
  }
  memory& for_backward(MaybeReorder& forward, MaybeReorder& backward, memory& user,
                       dnnl::stream& s) const {
    if (shared && cast_from == user.get_data_handle()) return forward.converted;
    return backward.to_wanted(user, s);
  }
};

// The same description with the layout left to the primitive (format_tag::any).
memory::desc any_layout(const memory::desc& md) {
  return {md.dims(), md.data_type(), tag::any};
}

// Which passes of a layer run in the layouts oneDNN picks for them (format_tag::any, reordered
// from and to the channels-last activations around the pass) rather than on channels-last data.
struct PassLayouts {
  bool forward = false, backward_data = false, backward_weight = false;
};

PassLayouts pass_layouts(const CpuBackend& backend, const Layer& layer) {
  switch (backend.pass_layout()) {
    case CpuPassLayout::channels_last:
      return {};
    case CpuPassLayout::blocked:
      return {true, true, true};
    case CpuPassLayout::automatic:
      break;
  }
  const auto blocked = [&](KernelPass pass) {
    return automatic_cpu_pass_layout(layer, pass) == CpuPassLayout::blocked;
  };
  return {blocked(KernelPass::forward), blocked(KernelPass::backward_data),
          blocked(KernelPass::backward_weight)};
}

class ConvRunner final : public CpuRunner {
 public:
  ConvRunner(CpuBackend& b, const Layer& layer, int64_t batch) : CpuRunner(b, layer, batch) {
    const auto& a = std::get<Conv2dAttrs>(layer.spec.attrs);
    const TensorShape& in = layer.input_shapes.front();
    const TensorShape& out = layer.output;
    const PassLayouts layouts = pass_layouts(b, layer);
    const memory::desc src = to_dnnl(input_desc(0));
    const memory::desc dst = to_dnnl(output_desc());
    memory::dims wdims = {a.out_channels, in.channels / a.groups, a.kernel_h, a.kernel_w};
    tag wtag = tag::oihw;
    if (a.groups > 1) {
      wdims = {a.groups, a.out_channels / a.groups, in.channels / a.groups, a.kernel_h, a.kernel_w};
      wtag = tag::goihw;
    }
    // FP32 master weights, converted into the compute type by the passes' weight reorders; the
    // weight gradients come back in FP32 (oneDNN accumulates them in FP32 whatever the type).
    const memory::desc user_w(wdims, dt::f32, wtag);
    const memory::desc any_w(wdims, compute_type(), tag::any);
    const memory::desc any_diff_w(wdims, dt::f32, tag::any);
    const memory::desc bias = a.bias ? memory::desc({a.out_channels}, dt::f32, tag::a) : memory::desc();
    const memory::dims strides = {a.stride_h, a.stride_w};
    const memory::dims dilates = {a.dilation_h - 1, a.dilation_w - 1};
    const memory::dims pad_l = {a.pad_h, a.pad_w};
    const memory::dims pad_r = {
        right_pad(in.height, out.height, (a.kernel_h - 1) * a.dilation_h + 1, a.stride_h, a.pad_h),
        right_pad(in.width, out.width, (a.kernel_w - 1) * a.dilation_w + 1, a.stride_w, a.pad_w)};
    const auto alg = dnnl::algorithm::convolution_direct;
    // Activation descriptions of a pass: channels-last, or left to oneDNN.
    const auto src_of = [&](bool blocked) { return blocked ? any_layout(src) : src; };
    const auto dst_of = [&](bool blocked) { return blocked ? any_layout(dst) : dst; };
    // A forward description in a pass's layouts, the hint its backward primitive is made from.
    const auto forward_pd = [&](bool blocked) {
      return dnnl::convolution_forward::primitive_desc(
          dnnl::convolution_forward::desc(dnnl::prop_kind::forward_training, alg, src_of(blocked),
                                          any_w, bias, dst_of(blocked), strides, dilates, pad_l,
                                          pad_r),
          user_scratchpad(), engine());
    };

    const auto fwd_pd = forward_pd(layouts.forward);
    forward_ = dnnl::convolution_forward(fwd_pd);
    fwd_weights_.prepare(user_w, fwd_pd.weights_desc(), engine());
    fwd_src_.prepare(src, fwd_pd.src_desc(), engine());
    fwd_dst_.prepare_output(dst, fwd_pd.dst_desc(), engine());

    src_ = unbound(src);
    dst_ = unbound(dst);
    weights_ = unbound(user_w);
    if (a.bias) bias_ = unbound(bias);

    if (layer.needs_input_gradient) {
      const bool blocked = layouts.backward_data;
      const dnnl::convolution_backward_data::primitive_desc pd(
          dnnl::convolution_backward_data::desc(alg, src_of(blocked), any_w, dst_of(blocked),
                                                strides, dilates, pad_l, pad_r),
          user_scratchpad(), engine(), forward_pd(blocked));
      backward_data_ = dnnl::convolution_backward_data(pd);
      bwd_weights_.prepare(user_w, pd.weights_desc(), engine());
      bwd_diff_dst_.prepare(dst, pd.diff_dst_desc(), engine());
      bwd_diff_src_.prepare_output(src, pd.diff_src_desc(), engine());
      diff_src_ = unbound(src);
      casts_.prepare(fwd_weights_, bwd_weights_, compute_type() != dt::f32);
    }
    diff_dst_ = unbound(dst);
    const bool blocked = layouts.backward_weight;
    const dnnl::convolution_backward_weights::primitive_desc wpd(
        dnnl::convolution_backward_weights::desc(alg, src_of(blocked), any_diff_w, bias,
                                                 dst_of(blocked), strides, dilates, pad_l, pad_r),
        user_scratchpad(), engine(), forward_pd(blocked));
    backward_weights_ = dnnl::convolution_backward_weights(wpd);
    wgt_src_.prepare(src, wpd.src_desc(), engine());
    wgt_diff_dst_.prepare(dst, wpd.diff_dst_desc(), engine());
    diff_weights_ = unbound(user_w);
    diff_weights_out_.prepare_output(user_w, wpd.diff_weights_desc(), engine());
    if (a.bias) diff_bias_ = unbound(bias);
  }

  void forward(const LayerArgs& args) override {
    backend_.activate();
    bind(src_, args.inputs.at(0));
    bind(dst_, args.output);
    bind(weights_, args.weights);
    dnnl::stream& s = backend_.stream();
    std::unordered_map<int, memory> m = {{DNNL_ARG_SRC, fwd_src_.to_wanted(src_, s)},
                                         {DNNL_ARG_WEIGHTS, casts_.for_forward(fwd_weights_, weights_, s)},
                                         {DNNL_ARG_DST, fwd_dst_.target(dst_)}};
    if (has_bias()) {
      bind(bias_, args.bias);
      m.emplace(DNNL_ARG_BIAS, bias_);
    }
    run(forward_, m);
    fwd_dst_.from_wanted(dst_, s);
  }

  void backward_data(const LayerArgs& args) override {
    need_input_gradient();
    backend_.activate();
    bind(diff_src_, args.diff_inputs.at(0));
    bind(diff_dst_, args.diff_output);
    bind(weights_, args.weights);
    dnnl::stream& s = backend_.stream();
    run(*backward_data_, {{DNNL_ARG_DIFF_SRC, bwd_diff_src_.target(diff_src_)},
                          {DNNL_ARG_WEIGHTS, casts_.for_backward(fwd_weights_, bwd_weights_, weights_, s)},
                          {DNNL_ARG_DIFF_DST, bwd_diff_dst_.to_wanted(diff_dst_, s)}});
    bwd_diff_src_.from_wanted(diff_src_, s);
  }

  void backward_weight(const LayerArgs& args) override {
    backend_.activate();
    bind(src_, args.inputs.at(0));
    bind(diff_dst_, args.diff_output);
    bind(diff_weights_, args.diff_weights);
    dnnl::stream& s = backend_.stream();
    std::unordered_map<int, memory> m = {{DNNL_ARG_SRC, wgt_src_.to_wanted(src_, s)},
                                         {DNNL_ARG_DIFF_DST, wgt_diff_dst_.to_wanted(diff_dst_, s)},
                                         {DNNL_ARG_DIFF_WEIGHTS, diff_weights_out_.target(diff_weights_)}};
    if (has_bias()) {
      bind(diff_bias_, args.diff_bias);
      m.emplace(DNNL_ARG_DIFF_BIAS, diff_bias_);
    }
    run(backward_weights_, m);
    diff_weights_out_.from_wanted(diff_weights_, s);
  }

 private:
  dnnl::convolution_forward forward_;
  std::optional<dnnl::convolution_backward_data> backward_data_;
  dnnl::convolution_backward_weights backward_weights_;
  // Per pass, the weights' and activations' conversions between the user's layouts (plain
  // weights, channels-last activations) and the primitive's.
  MaybeReorder fwd_weights_, fwd_src_, fwd_dst_;
  MaybeReorder bwd_weights_, bwd_diff_dst_, bwd_diff_src_;
  MaybeReorder wgt_src_, wgt_diff_dst_, diff_weights_out_;
  WeightCasts casts_;
  memory src_, dst_, weights_, bias_, diff_src_, diff_dst_, diff_weights_, diff_bias_;
};

class PoolRunner final : public CpuRunner {
 public:
  PoolRunner(CpuBackend& b, const Layer& layer, int64_t batch) : CpuRunner(b, layer, batch) {
    const auto& a = std::get<PoolAttrs>(layer.spec.attrs);
    const TensorShape& in = layer.input_shapes.front();
    const TensorShape& out = layer.output;
    memory::dims kernel = {a.kernel_h, a.kernel_w}, strides = {a.stride_h, a.stride_w};
    memory::dims pad_l = {a.pad_h, a.pad_w};
    if (a.global) {
      kernel = {in.height, in.width};
      strides = {1, 1};
      pad_l = {0, 0};
    }
    const memory::dims pad_r = {right_pad(in.height, out.height, kernel[0], strides[0], pad_l[0]),
                                right_pad(in.width, out.width, kernel[1], strides[1], pad_l[1])};
    // oneDNN divides an average by the window's size including padding, ceil_mode's extra
    // padding too; PyTorch leaves that extra out. No zoo model has a ceil-mode average pool.
    const auto alg = layer.kind() == LayerKind::max_pool ? dnnl::algorithm::pooling_max
                     : a.count_include_pad ? dnnl::algorithm::pooling_avg_include_padding
                                           : dnnl::algorithm::pooling_avg_exclude_padding;
    const memory::desc src = to_dnnl(input_desc(0));
    const memory::desc dst = to_dnnl(output_desc());
    const dnnl::pooling_forward::primitive_desc fwd_pd(
        dnnl::pooling_forward::desc(dnnl::prop_kind::forward_training, alg, src, dst, strides,
                                    kernel, pad_l, pad_r),
        user_scratchpad(), engine());
    forward_ = dnnl::pooling_forward(fwd_pd);
    if (fwd_pd.workspace_desc().get_size() > 0) workspace_ = owned(fwd_pd.workspace_desc());
    src_ = unbound(src);
    dst_ = unbound(dst);
    if (layer.needs_input_gradient) {
      const dnnl::pooling_backward::primitive_desc pd(
          dnnl::pooling_backward::desc(alg, src, dst, strides, kernel, pad_l, pad_r), engine(),
          fwd_pd);
      backward_ = dnnl::pooling_backward(pd);
    }
  }

  void forward(const LayerArgs& args) override {
    backend_.activate();
    bind(src_, args.inputs.at(0));
    bind(dst_, args.output);
    std::unordered_map<int, memory> m = {{DNNL_ARG_SRC, src_}, {DNNL_ARG_DST, dst_}};
    if (workspace_) m.emplace(DNNL_ARG_WORKSPACE, workspace_);
    run(forward_, m);
  }

  void backward_data(const LayerArgs& args) override {
    need_input_gradient();
    backend_.activate();
    bind(src_, args.diff_inputs.at(0));
    bind(dst_, args.diff_output);
    std::unordered_map<int, memory> m = {{DNNL_ARG_DIFF_SRC, src_}, {DNNL_ARG_DIFF_DST, dst_}};
    if (workspace_) m.emplace(DNNL_ARG_WORKSPACE, workspace_);
    run(*backward_, m);
  }

 private:
  dnnl::pooling_forward forward_;
  std::optional<dnnl::pooling_backward> backward_;
  memory src_, dst_, workspace_;
};

// The element-wise activations oneDNN has: ReLU, sigmoid (logistic), SiLU (swish with alpha 1:
// x * sigmoid(alpha x)) and hard swish (x * min(max(x + 3, 0), 6) / 6, PyTorch's nn.Hardswish).
// Backward recomputes from the input, which every pass reads anyway: the gradient of sigmoid
// from its saved (rounded) output would carry that rounding into 1 - y.
class EltwiseRunner final : public CpuRunner {
 public:
  EltwiseRunner(CpuBackend& b, const Layer& layer, int64_t batch, dnnl::algorithm alg, float alpha)
      : CpuRunner(b, layer, batch) {
    const memory::desc md = to_dnnl(input_desc(0));
    const dnnl::eltwise_forward::primitive_desc fwd_pd(
        dnnl::eltwise_forward::desc(dnnl::prop_kind::forward_training, alg, md, alpha, 0.0F),
        user_scratchpad(), engine());
    forward_ = dnnl::eltwise_forward(fwd_pd);
    backward_ = dnnl::eltwise_backward(dnnl::eltwise_backward::primitive_desc(
        dnnl::eltwise_backward::desc(alg, md, md, alpha, 0.0F), user_scratchpad(), engine(), fwd_pd));
    src_ = unbound(md);
    dst_ = unbound(md);
    diff_src_ = unbound(md);
    diff_dst_ = unbound(md);
  }

  void forward(const LayerArgs& args) override {
    backend_.activate();
    bind(src_, args.inputs.at(0));
    bind(dst_, args.output);
    run(forward_, {{DNNL_ARG_SRC, src_}, {DNNL_ARG_DST, dst_}});
  }

  void backward_data(const LayerArgs& args) override {
    need_input_gradient();
    backend_.activate();
    bind(src_, args.inputs.at(0));
    bind(diff_src_, args.diff_inputs.at(0));
    bind(diff_dst_, args.diff_output);
    run(backward_, {{DNNL_ARG_SRC, src_}, {DNNL_ARG_DIFF_SRC, diff_src_}, {DNNL_ARG_DIFF_DST, diff_dst_}});
  }

 private:
  dnnl::eltwise_forward forward_;
  dnnl::eltwise_backward backward_;
  memory src_, dst_, diff_src_, diff_dst_;
};

// The fewest elements a loop of this file splits between threads: below it, starting the threads
// costs more than the work (a squeeze-and-excitation gate is batch x C values, a few thousand).
constexpr int64_t kParallelElements = 1 << 14;

// Element i of an f32 or bf16 (uint16_t) array as a float, and a float stored into one: a BF16
// store rounds once, to nearest even.
template <class T>
float load(const T* p, int64_t i) {
  if constexpr (std::is_same_v<T, uint16_t>) {
    return from_bf16(p[i]);
  } else {
    return p[i];
  }
}
template <class T>
void store(T* p, int64_t i, float v) {
  if constexpr (std::is_same_v<T, uint16_t>) {
    p[i] = to_bf16(v);
  } else {
    p[i] = v;
  }
}

// Hard sigmoid, y = max(0, min(1, alpha x + beta)), which oneDNN 2.6 lacks (its eltwise algorithms
// end at hardswish, with alpha and beta ignored; dnnl_types.h of libdnnl-dev 2.6). The gradient is
// alpha inside the open interval where 0 < alpha x + beta < 1 and 0 outside, as PyTorch's
// hardsigmoid_backward (strict bounds: a value exactly at a clamp passes no gradient).
class HardSigmoidRunner final : public CpuRunner {
 public:
  HardSigmoidRunner(CpuBackend& b, const Layer& layer, int64_t batch) : CpuRunner(b, layer, batch) {
    const auto& a = std::get<HardSigmoidAttrs>(layer.spec.attrs);
    alpha_ = static_cast<float>(a.alpha);
    beta_ = static_cast<float>(a.beta);
    count_ = batch * layer.output.elements();
  }

  void forward(const LayerArgs& args) override {
    backend_.activate();
    const Tensor* x = args.inputs.at(0);
    Tensor* y = args.output;
    if (x == nullptr || y == nullptr) throw std::invalid_argument("a tensor the pass needs is missing");
    if (x->desc().type == DataType::bf16) {
      forward(x->bf16(), y->bf16());
    } else {
      forward(x->f32(), y->f32());
    }
  }

  void backward_data(const LayerArgs& args) override {
    need_input_gradient();
    backend_.activate();
    const Tensor* x = args.inputs.at(0);
    const Tensor* dy = args.diff_output;
    Tensor* dx = args.diff_inputs.at(0);
    if (x == nullptr || dy == nullptr || dx == nullptr) {
      throw std::invalid_argument("a tensor the pass needs is missing");
    }
    if (x->desc().type == DataType::bf16) {
      backward(x->bf16(), dy->bf16(), dx->bf16());
    } else {
      backward(x->f32(), dy->f32(), dx->f32());
    }
  }

 private:
  template <class T>
  void forward(const T* x, T* y) const {
    const float alpha = alpha_, beta = beta_;
#pragma omp parallel for simd if (count_ >= kParallelElements)
    for (int64_t i = 0; i < count_; ++i) {
      store(y, i, std::min(1.0F, std::max(0.0F, alpha * load(x, i) + beta)));
    }
  }
  template <class T>
  void backward(const T* x, const T* dy, T* dx) const {
    const float alpha = alpha_, beta = beta_;
#pragma omp parallel for simd if (count_ >= kParallelElements)
    for (int64_t i = 0; i < count_; ++i) {
      const float z = alpha * load(x, i) + beta;
      store(dx, i, z > 0.0F && z < 1.0F ? alpha * load(dy, i) : 0.0F);
    }
  }

  float alpha_ = 0.0F, beta_ = 0.0F;
  int64_t count_ = 0;
};

class LrnRunner final : public CpuRunner {
 public:
  LrnRunner(CpuBackend& b, const Layer& layer, int64_t batch) : CpuRunner(b, layer, batch) {
    const auto& a = std::get<LrnAttrs>(layer.spec.attrs);
    const memory::desc md = to_dnnl(input_desc(0));
    const auto alg = dnnl::algorithm::lrn_across_channels;
    const auto alpha = static_cast<float>(a.alpha), beta = static_cast<float>(a.beta);
    const auto k = static_cast<float>(a.k);
    const dnnl::lrn_forward::primitive_desc fwd_pd(
        dnnl::lrn_forward::desc(dnnl::prop_kind::forward_training, alg, md, a.size, alpha, beta, k),
        user_scratchpad(), engine());
    forward_ = dnnl::lrn_forward(fwd_pd);
    if (fwd_pd.workspace_desc().get_size() > 0) workspace_ = owned(fwd_pd.workspace_desc());
    backward_ = dnnl::lrn_backward(dnnl::lrn_backward::primitive_desc(
        dnnl::lrn_backward::desc(alg, md, md, a.size, alpha, beta, k), user_scratchpad(), engine(), fwd_pd));
    src_ = unbound(md);
    dst_ = unbound(md);
    diff_src_ = unbound(md);
    diff_dst_ = unbound(md);
  }

  void forward(const LayerArgs& args) override {
    backend_.activate();
    bind(src_, args.inputs.at(0));
    bind(dst_, args.output);
    std::unordered_map<int, memory> m = {{DNNL_ARG_SRC, src_}, {DNNL_ARG_DST, dst_}};
    if (workspace_) m.emplace(DNNL_ARG_WORKSPACE, workspace_);
    run(forward_, m);
  }

  void backward_data(const LayerArgs& args) override {
    need_input_gradient();
    backend_.activate();
    bind(src_, args.inputs.at(0));
    bind(diff_src_, args.diff_inputs.at(0));
    bind(diff_dst_, args.diff_output);
    std::unordered_map<int, memory> m = {
        {DNNL_ARG_SRC, src_}, {DNNL_ARG_DIFF_SRC, diff_src_}, {DNNL_ARG_DIFF_DST, diff_dst_}};
    if (workspace_) m.emplace(DNNL_ARG_WORKSPACE, workspace_);
    run(backward_, m);
  }

 private:
  dnnl::lrn_forward forward_;
  dnnl::lrn_backward backward_;
  memory src_, dst_, diff_src_, diff_dst_, workspace_;
};

class BatchNormRunner final : public CpuRunner {
 public:
  BatchNormRunner(CpuBackend& b, const Layer& layer, int64_t batch) : CpuRunner(b, layer, batch) {
    const auto eps = static_cast<float>(std::get<BatchNormAttrs>(layer.spec.attrs).epsilon);
    const memory::desc md = to_dnnl(input_desc(0));
    const auto flags = dnnl::normalization_flags::use_scale | dnnl::normalization_flags::use_shift;
    const dnnl::batch_normalization_forward::primitive_desc fwd_pd(
        dnnl::batch_normalization_forward::desc(dnnl::prop_kind::forward_training, md, eps, flags),
        user_scratchpad(), engine());
    forward_ = dnnl::batch_normalization_forward(fwd_pd);
    const dnnl::batch_normalization_backward::primitive_desc bwd_pd(
        dnnl::batch_normalization_backward::desc(dnnl::prop_kind::backward, md, md, eps, flags),
        user_scratchpad(), engine(), fwd_pd);
    backward_ = dnnl::batch_normalization_backward(bwd_pd);
    mean_ = owned(fwd_pd.mean_desc());
    variance_ = owned(fwd_pd.variance_desc());
    const memory::desc channels({layer.output.channels}, dt::f32, tag::a);
    diff_scale_ = owned(channels);
    diff_shift_ = owned(channels);
    scale_ = unbound(channels);
    shift_ = unbound(channels);
    src_ = unbound(md);
    dst_ = unbound(md);
    diff_src_ = unbound(md);
    diff_dst_ = unbound(md);
  }

  void forward(const LayerArgs& args) override {
    backend_.activate();
    bind(src_, args.inputs.at(0));
    bind(dst_, args.output);
    bind(scale_, args.weights);
    bind(shift_, args.bias);
    run(forward_, {{DNNL_ARG_SRC, src_},
                   {DNNL_ARG_DST, dst_},
                   {DNNL_ARG_SCALE, scale_},
                   {DNNL_ARG_SHIFT, shift_},
                   {DNNL_ARG_MEAN, mean_},
                   {DNNL_ARG_VARIANCE, variance_}});
    gradients_fresh_ = false;
  }

  void backward_data(const LayerArgs& args) override {
    need_input_gradient();
    backend_.activate();
    bind(diff_src_, args.diff_inputs.at(0));
    run_backward(args);
  }

  void backward_weight(const LayerArgs& args) override {
    backend_.activate();
    if (!gradients_fresh_) {
      if (!scratch_) scratch_ = owned(to_dnnl(input_desc(0)));
      diff_src_.set_data_handle(scratch_.get_data_handle());
      run_backward(args);
    }
    const size_t bytes = static_cast<size_t>(layer_.output.channels) * sizeof(float);
    std::memcpy(args.diff_weights->raw(), diff_scale_.get_data_handle(), bytes);
    std::memcpy(args.diff_bias->raw(), diff_shift_.get_data_handle(), bytes);
    gradients_fresh_ = false;
  }

 private:
  void run_backward(const LayerArgs& args) {
    bind(src_, args.inputs.at(0));
    bind(diff_dst_, args.diff_output);
    bind(scale_, args.weights);
    bind(shift_, args.bias);
    run(backward_, {{DNNL_ARG_SRC, src_},
                    {DNNL_ARG_SHIFT, shift_},
                    {DNNL_ARG_MEAN, mean_},
                    {DNNL_ARG_VARIANCE, variance_},
                    {DNNL_ARG_DIFF_DST, diff_dst_},
                    {DNNL_ARG_SCALE, scale_},
                    {DNNL_ARG_DIFF_SRC, diff_src_},
                    {DNNL_ARG_DIFF_SCALE, diff_scale_},
                    {DNNL_ARG_DIFF_SHIFT, diff_shift_}});
    gradients_fresh_ = true;
  }

  dnnl::batch_normalization_forward forward_;
  dnnl::batch_normalization_backward backward_;
  memory mean_, variance_, scale_, shift_, diff_scale_, diff_shift_;
  memory src_, dst_, diff_src_, diff_dst_, scratch_;
  bool gradients_fresh_ = false;
};

class FullyConnectedRunner final : public CpuRunner {
 public:
  FullyConnectedRunner(CpuBackend& b, const Layer& layer, int64_t batch)
      : CpuRunner(b, layer, batch) {
    const auto& a = std::get<FullyConnectedAttrs>(layer.spec.attrs);
    const TensorShape& in = layer.input_shapes.front();
    const PassLayouts layouts = pass_layouts(b, layer);
    // `w` is the weights as the passes read them (in the compute type), `user_w` the FP32 master
    // weights and FP32 weight gradients; the same description in FP32.
    memory::desc src, w, user_w;
    if (in.height * in.width == 1) {
      src = memory::desc({batch, in.channels}, compute_type(), tag::nc);
      w = memory::desc({a.out_features, in.channels}, compute_type(), tag::oi);
      user_w = memory::desc({a.out_features, in.channels}, dt::f32, tag::oi);
    } else {
      // A spatial input stays channels-last; oneDNN reads the OIHW weights in PyTorch's order.
      src = to_dnnl(input_desc(0));
      const memory::dims wdims = {a.out_features, in.channels, in.height, in.width};
      w = memory::desc(wdims, compute_type(), tag::oihw);
      user_w = memory::desc(wdims, dt::f32, tag::oihw);
    }
    const memory::desc dst({batch, a.out_features}, compute_type(), tag::nc);
    const memory::desc bias = a.bias ? memory::desc({a.out_features}, dt::f32, tag::a) : memory::desc();
    const auto src_of = [&](bool blocked) { return blocked ? any_layout(src) : src; };
    const auto w_of = [&](bool blocked) { return blocked ? any_layout(w) : w; };
    const auto diff_w_of = [&](bool blocked) { return blocked ? any_layout(user_w) : user_w; };
    const auto forward_pd = [&](bool blocked) {
      return dnnl::inner_product_forward::primitive_desc(
          dnnl::inner_product_forward::desc(dnnl::prop_kind::forward_training, src_of(blocked),
                                            w_of(blocked), bias, dst),
          user_scratchpad(), engine());
    };
    const auto fwd_pd = forward_pd(layouts.forward);
    forward_ = dnnl::inner_product_forward(fwd_pd);
    fwd_src_.prepare(src, fwd_pd.src_desc(), engine());
    fwd_weights_.prepare(user_w, fwd_pd.weights_desc(), engine());
    if (layer.needs_input_gradient) {
      const bool blocked = layouts.backward_data;
      const dnnl::inner_product_backward_data::primitive_desc pd(
          dnnl::inner_product_backward_data::desc(src_of(blocked), w_of(blocked), dst),
          user_scratchpad(), engine(), forward_pd(blocked));
      backward_data_ = dnnl::inner_product_backward_data(pd);
      bwd_weights_.prepare(user_w, pd.weights_desc(), engine());
      bwd_diff_src_.prepare_output(src, pd.diff_src_desc(), engine());
      casts_.prepare(fwd_weights_, bwd_weights_, compute_type() != dt::f32);
    }
    const bool blocked = layouts.backward_weight;
    const dnnl::inner_product_backward_weights::primitive_desc wpd(
        dnnl::inner_product_backward_weights::desc(src_of(blocked), diff_w_of(blocked), bias, dst),
        user_scratchpad(), engine(), forward_pd(blocked));
    backward_weights_ = dnnl::inner_product_backward_weights(wpd);
    wgt_src_.prepare(src, wpd.src_desc(), engine());
    diff_weights_out_.prepare_output(user_w, wpd.diff_weights_desc(), engine());
    src_ = unbound(src);
    dst_ = unbound(dst);
    weights_ = unbound(user_w);
    diff_src_ = unbound(src);
    diff_dst_ = unbound(dst);
    diff_weights_ = unbound(user_w);
    if (a.bias) {
      bias_ = unbound(bias);
      diff_bias_ = unbound(bias);
    }
  }

  void forward(const LayerArgs& args) override {
    backend_.activate();
    bind(src_, args.inputs.at(0));
    bind(dst_, args.output);
    bind(weights_, args.weights);
    dnnl::stream& s = backend_.stream();
    std::unordered_map<int, memory> m = {{DNNL_ARG_SRC, fwd_src_.to_wanted(src_, s)},
                                         {DNNL_ARG_WEIGHTS, casts_.for_forward(fwd_weights_, weights_, s)},
                                         {DNNL_ARG_DST, dst_}};
    if (has_bias()) {
      bind(bias_, args.bias);
      m.emplace(DNNL_ARG_BIAS, bias_);
    }
    run(forward_, m);
  }

  void backward_data(const LayerArgs& args) override {
    need_input_gradient();
    backend_.activate();
    bind(diff_src_, args.diff_inputs.at(0));
    bind(diff_dst_, args.diff_output);
    bind(weights_, args.weights);
    dnnl::stream& s = backend_.stream();
    run(*backward_data_, {{DNNL_ARG_DIFF_SRC, bwd_diff_src_.target(diff_src_)},
                          {DNNL_ARG_WEIGHTS, casts_.for_backward(fwd_weights_, bwd_weights_, weights_, s)},
                          {DNNL_ARG_DIFF_DST, diff_dst_}});
    bwd_diff_src_.from_wanted(diff_src_, s);
  }

  void backward_weight(const LayerArgs& args) override {
    backend_.activate();
    bind(src_, args.inputs.at(0));
    bind(diff_dst_, args.diff_output);
    bind(diff_weights_, args.diff_weights);
    dnnl::stream& s = backend_.stream();
    std::unordered_map<int, memory> m = {{DNNL_ARG_SRC, wgt_src_.to_wanted(src_, s)},
                                         {DNNL_ARG_DIFF_DST, diff_dst_},
                                         {DNNL_ARG_DIFF_WEIGHTS, diff_weights_out_.target(diff_weights_)}};
    if (has_bias()) {
      bind(diff_bias_, args.diff_bias);
      m.emplace(DNNL_ARG_DIFF_BIAS, diff_bias_);
    }
    run(backward_weights_, m);
    diff_weights_out_.from_wanted(diff_weights_, s);
  }

 private:
  dnnl::inner_product_forward forward_;
  std::optional<dnnl::inner_product_backward_data> backward_data_;
  dnnl::inner_product_backward_weights backward_weights_;
  MaybeReorder fwd_src_, fwd_weights_, bwd_weights_, bwd_diff_src_, wgt_src_, diff_weights_out_;
  WeightCasts casts_;
  memory src_, dst_, weights_, bias_, diff_src_, diff_dst_, diff_weights_, diff_bias_;
};

// Softmax by oneDNN; the loss (mean of -log p[label]) and its gradient ((p - onehot) / N) are
// N x classes scalar work. All in FP32: a 16-bit input (the logits of mixed precision) is
// converted first, and the gradient is rounded into the input's type last.
class SoftmaxLossRunner final : public CpuRunner {
 public:
  SoftmaxLossRunner(CpuBackend& b, const Layer& layer, int64_t batch) : CpuRunner(b, layer, batch) {
    classes_ = layer.output.channels;
    const memory::desc md({batch, classes_}, dt::f32, tag::nc);
    forward_ = dnnl::softmax_forward(dnnl::softmax_forward::primitive_desc(
        dnnl::softmax_forward::desc(dnnl::prop_kind::forward_training, md, 1), user_scratchpad(), engine()));
    src_ = unbound(md);
    dst_ = unbound(md);
    if (compute_type() != dt::f32) {
      const memory::desc in({batch, classes_}, compute_type(), tag::nc);
      input_ = unbound(in);
      logits_ = owned(md);
      to_f32_ = dnnl::reorder(dnnl::reorder::primitive_desc(engine(), in, engine(), md));
    }
  }

  void forward(const LayerArgs& args) override {
    backend_.activate();
    if (to_f32_) {
      bind(input_, args.inputs.at(0));
      run(*to_f32_, {{DNNL_ARG_FROM, input_}, {DNNL_ARG_TO, logits_}});
      src_.set_data_handle(logits_.get_data_handle());
    } else {
      bind(src_, args.inputs.at(0));
    }
    bind(dst_, args.output);
    run(forward_, {{DNNL_ARG_SRC, src_}, {DNNL_ARG_DST, dst_}});
    if (args.loss == nullptr) return;
    const float* p = args.output->f32();
    const int32_t* labels = checked_labels(args);
    double sum = 0.0;
    for (int64_t n = 0; n < batch_; ++n) {
      // The floor keeps a probability that underflowed to 0 from making the loss infinite.
      sum -= std::log(std::max(p[n * classes_ + labels[n]], 1e-30F));
    }
    *args.loss->f32() = static_cast<float>(sum / static_cast<double>(batch_));
  }

  void backward_data(const LayerArgs& args) override {
    need_input_gradient();
    const float* p = args.output->f32();
    Tensor& diff = *args.diff_inputs.at(0);
    const int32_t* labels = checked_labels(args);
    const float inv_batch = 1.0F / static_cast<float>(batch_);
    for (int64_t n = 0; n < batch_; ++n) {
      for (int64_t c = 0; c < classes_; ++c) {
        const float onehot = c == labels[n] ? 1.0F : 0.0F;
        const float d = (p[n * classes_ + c] - onehot) * inv_batch;
        if (diff.desc().type == DataType::bf16) {
          diff.bf16()[n * classes_ + c] = to_bf16(d);
        } else {
          diff.f32()[n * classes_ + c] = d;
        }
      }
    }
  }

 private:
  const int32_t* checked_labels(const LayerArgs& args) const {
    if (args.labels == nullptr) throw std::invalid_argument("the loss needs labels");
    const int32_t* labels = args.labels->s32();
    for (int64_t n = 0; n < batch_; ++n) {
      if (labels[n] < 0 || labels[n] >= classes_) {
        throw std::out_of_range("label " + std::to_string(labels[n]) + " outside [0, " +
                                std::to_string(classes_) + ")");
      }
    }
    return labels;
  }

  int64_t classes_ = 0;
  dnnl::softmax_forward forward_;
  std::optional<dnnl::reorder> to_f32_;  // a 16-bit input into FP32 logits
  memory src_, dst_, input_, logits_;
};

// Dropout's mask is regenerated from its key in both passes instead of stored.
class DropoutRunner final : public CpuRunner {
 public:
  DropoutRunner(CpuBackend& b, const Layer& layer, int64_t batch) : CpuRunner(b, layer, batch) {
    rate_ = static_cast<float>(std::get<DropoutAttrs>(layer.spec.attrs).rate);
  }

  void forward(const LayerArgs& args) override { apply(args.mask, *args.inputs.at(0), *args.output); }
  void backward_data(const LayerArgs& args) override {
    need_input_gradient();
    apply(args.mask, *args.diff_output, *args.diff_inputs.at(0));
  }

 private:
  void apply(const MaskKey& key, const Tensor& src, Tensor& dst) const {
    if (src.desc().type == DataType::bf16) {
      // A kept BF16 value times the scale, rounded back: one rounding, as a BF16 multiply.
      apply(key, src.bf16(), dst.bf16(), [](uint16_t v, float scale) {
        return to_bf16(from_bf16(v) * scale);
      });
    } else {
      apply(key, src.f32(), dst.f32(), [](float v, float scale) { return v * scale; });
    }
  }

  template <class T, class Scale>
  void apply(const MaskKey& key, const T* src, T* dst, Scale scaled) const {
    backend_.activate();
    const uint64_t stream = mask_stream(key.seed, key.step, key.worker, key.layer);
    const float scale = 1.0F / (1.0F - rate_);
    const float rate = rate_;
    const TensorShape& s = layer_.output;
    const int64_t c = s.channels, hw = s.height * s.width, images = batch_;
    // Memory is channels-last; the mask index is the element's plain NCHW position.
#pragma omp parallel for
    for (int64_t n = 0; n < images; ++n) {
      for (int64_t p = 0; p < hw; ++p) {
        for (int64_t ch = 0; ch < c; ++ch) {
          const int64_t laid = (n * hw + p) * c + ch;
          const auto plain = static_cast<uint64_t>((n * c + ch) * hw + p);
          dst[laid] = dropout_keeps(stream, plain, rate) ? scaled(src[laid], scale) : T{0};
        }
      }
    }
  }

  float rate_ = 0.5F;
};

// Flatten turns channels-last activations into the plain C*H*W order FC weights expect.
class FlattenRunner final : public CpuRunner {
 public:
  FlattenRunner(CpuBackend& b, const Layer& layer, int64_t batch) : CpuRunner(b, layer, batch) {
    const TensorShape& in = layer.input_shapes.front();
    const memory::desc laid = to_dnnl(input_desc(0));
    const memory::desc plain({batch, in.channels, in.height, in.width}, compute_type(), tag::nchw);
    to_plain_ = dnnl::reorder(dnnl::reorder::primitive_desc(engine(), laid, engine(), plain));
    from_plain_ = dnnl::reorder(dnnl::reorder::primitive_desc(engine(), plain, engine(), laid));
    laid_ = unbound(laid);
    plain_ = unbound(plain);
  }

  void forward(const LayerArgs& args) override {
    backend_.activate();
    bind(laid_, args.inputs.at(0));
    bind(plain_, args.output);
    run(to_plain_, {{DNNL_ARG_FROM, laid_}, {DNNL_ARG_TO, plain_}});
  }

  void backward_data(const LayerArgs& args) override {
    need_input_gradient();
    backend_.activate();
    bind(plain_, args.diff_output);
    bind(laid_, args.diff_inputs.at(0));
    run(from_plain_, {{DNNL_ARG_FROM, plain_}, {DNNL_ARG_TO, laid_}});
  }

 private:
  dnnl::reorder to_plain_, from_plain_;
  memory laid_, plain_;
};

class ConcatRunner final : public CpuRunner {
 public:
  ConcatRunner(CpuBackend& b, const Layer& layer, int64_t batch) : CpuRunner(b, layer, batch) {
    const memory::desc dst = to_dnnl(output_desc());
    std::vector<memory::desc> srcs;
    int64_t offset = 0;
    for (size_t i = 0; i < layer.input_shapes.size(); ++i) {
      const memory::desc src = to_dnnl(input_desc(i));
      srcs.push_back(src);
      inputs_.push_back(unbound(src));
      const TensorShape& s = layer.input_shapes[i];
      const memory::desc part = dst.submemory_desc({batch, s.channels, s.height, s.width},
                                                   {0, offset, 0, 0});
      parts_.push_back(unbound(part));
      splits_.emplace_back(dnnl::reorder::primitive_desc(engine(), part, engine(), src));
      offset += s.channels;
    }
    forward_ = dnnl::concat(dnnl::concat::primitive_desc(dst, 1, srcs, engine(), user_scratchpad()));
    output_ = unbound(dst);
  }

  void forward(const LayerArgs& args) override {
    backend_.activate();
    run_on_inputs(forward_, inputs_, output_, args);
  }

  void backward_data(const LayerArgs& args) override {
    need_input_gradient();
    backend_.activate();
    for (size_t i = 0; i < inputs_.size(); ++i) {
      if (args.diff_inputs.at(i) == nullptr) continue;
      bind(parts_[i], args.diff_output);
      bind(inputs_[i], args.diff_inputs[i]);
      run(splits_[i], {{DNNL_ARG_FROM, parts_[i]}, {DNNL_ARG_TO, inputs_[i]}});
    }
  }

 private:
  dnnl::concat forward_;
  std::vector<dnnl::reorder> splits_;
  std::vector<memory> inputs_, parts_;
  memory output_;
};

// Add's gradient reaches every input unchanged.
class AddRunner final : public CpuRunner {
 public:
  AddRunner(CpuBackend& b, const Layer& layer, int64_t batch) : CpuRunner(b, layer, batch) {
    const memory::desc md = to_dnnl(output_desc());
    const size_t n = layer.input_shapes.size();
    forward_ = dnnl::sum(dnnl::sum::primitive_desc(md, std::vector<float>(n, 1.0F),
                                                   std::vector<memory::desc>(n, md), engine(), user_scratchpad()));
    copy_ = dnnl::reorder(dnnl::reorder::primitive_desc(engine(), md, engine(), md));
    for (size_t i = 0; i < n; ++i) inputs_.push_back(unbound(md));
    output_ = unbound(md);
  }

  void forward(const LayerArgs& args) override {
    backend_.activate();
    run_on_inputs(forward_, inputs_, output_, args);
  }

  void backward_data(const LayerArgs& args) override {
    need_input_gradient();
    backend_.activate();
    bind(output_, args.diff_output);
    for (size_t i = 0; i < inputs_.size(); ++i) {
      if (args.diff_inputs.at(i) == nullptr) continue;
      bind(inputs_[i], args.diff_inputs[i]);
      run(copy_, {{DNNL_ARG_FROM, output_}, {DNNL_ARG_TO, inputs_[i]}});
    }
  }

 private:
  dnnl::sum forward_;
  dnnl::reorder copy_;
  std::vector<memory> inputs_;
  memory output_;
};

// first * second, the second of the first's shape or C x 1 x 1 and broadcast over H x W
// (squeeze-and-excitation's channel scale). Forward and the first input's gradient (dy * second)
// are oneDNN binary multiplications, which broadcast the second operand; the second input's
// gradient is dy * first with equal shapes, and with the broadcast its sum over H x W per image
// and channel: a loop accumulating in FP32 in a fixed order (deterministic whatever the threads).
class MulRunner final : public CpuRunner {
 public:
  MulRunner(CpuBackend& b, const Layer& layer, int64_t batch) : CpuRunner(b, layer, batch) {
    broadcast_ = layer.input_shapes[0] != layer.input_shapes[1];
    const memory::desc a = to_dnnl(input_desc(0));
    const memory::desc s = to_dnnl(input_desc(1));
    multiply_ = dnnl::binary(dnnl::binary::primitive_desc(
        dnnl::binary::desc(dnnl::algorithm::binary_mul, a, s, a), user_scratchpad(), engine()));
    src0_ = unbound(a);
    src1_ = unbound(s);
    dst_ = unbound(a);
  }

  void forward(const LayerArgs& args) override {
    backend_.activate();
    multiply(args.inputs.at(0), args.inputs.at(1), args.output);
  }

  void backward_data(const LayerArgs& args) override {
    need_input_gradient();
    backend_.activate();
    if (args.diff_inputs.at(0) != nullptr) {
      multiply(args.diff_output, args.inputs.at(1), args.diff_inputs[0]);
    }
    Tensor* diff_scale = args.diff_inputs.at(1);
    if (diff_scale == nullptr) return;
    if (!broadcast_) {
      multiply(args.diff_output, args.inputs.at(0), diff_scale);
      return;
    }
    const Tensor* dy = args.diff_output;
    const Tensor* x = args.inputs.at(0);
    if (dy == nullptr || x == nullptr) throw std::invalid_argument("a tensor the pass needs is missing");
    if (x->desc().type == DataType::bf16) {
      scale_gradient(dy->bf16(), x->bf16(), diff_scale->bf16());
    } else {
      scale_gradient(dy->f32(), x->f32(), diff_scale->f32());
    }
  }

 private:
  void multiply(const Tensor* first, const Tensor* second, Tensor* product) {
    bind(src0_, first);
    bind(src1_, second);
    bind(dst_, product);
    run(multiply_, {{DNNL_ARG_SRC_0, src0_}, {DNNL_ARG_SRC_1, src1_}, {DNNL_ARG_DST, dst_}});
  }

  // ds[n, c] = sum over h, w of dy[n, c, h, w] * x[n, c, h, w]; memory is channels-last, so each
  // image is hw rows of c values and the inner loop runs along contiguous channels.
  template <class T>
  void scale_gradient(const T* dy, const T* x, T* ds) const {
    const int64_t c = layer_.output.channels;
    const int64_t hw = layer_.output.height * layer_.output.width;
#pragma omp parallel for if (batch_ * c * hw >= kParallelElements)
    for (int64_t n = 0; n < batch_; ++n) {
      std::vector<float> sum(static_cast<size_t>(c), 0.0F);
      float* acc = sum.data();
      for (int64_t p = 0; p < hw; ++p) {
        const int64_t row = (n * hw + p) * c;
#pragma omp simd
        for (int64_t ch = 0; ch < c; ++ch) acc[ch] += load(dy, row + ch) * load(x, row + ch);
      }
      for (int64_t ch = 0; ch < c; ++ch) store(ds, n * c + ch, acc[ch]);
    }
  }

  bool broadcast_ = false;
  dnnl::binary multiply_;
  memory src0_, src1_, dst_;
};

}  // namespace

std::unique_ptr<LayerRunner> make_cpu_runner(CpuBackend& backend, const Layer& layer,
                                             int64_t batch) {
  switch (layer.kind()) {
    case LayerKind::conv2d:
      return std::make_unique<ConvRunner>(backend, layer, batch);
    case LayerKind::max_pool:
    case LayerKind::avg_pool:
      return std::make_unique<PoolRunner>(backend, layer, batch);
    case LayerKind::relu:
      return std::make_unique<EltwiseRunner>(backend, layer, batch, dnnl::algorithm::eltwise_relu, 0.0F);
    case LayerKind::sigmoid:
      return std::make_unique<EltwiseRunner>(backend, layer, batch,
                                             dnnl::algorithm::eltwise_logistic, 0.0F);
    case LayerKind::silu:
      return std::make_unique<EltwiseRunner>(backend, layer, batch, dnnl::algorithm::eltwise_swish,
                                             1.0F);
    case LayerKind::hard_swish:
      return std::make_unique<EltwiseRunner>(backend, layer, batch,
                                             dnnl::algorithm::eltwise_hardswish, 0.0F);
    case LayerKind::hard_sigmoid:
      return std::make_unique<HardSigmoidRunner>(backend, layer, batch);
    case LayerKind::mul:
      return std::make_unique<MulRunner>(backend, layer, batch);
    case LayerKind::lrn:
      return std::make_unique<LrnRunner>(backend, layer, batch);
    case LayerKind::batch_norm:
      return std::make_unique<BatchNormRunner>(backend, layer, batch);
    case LayerKind::dropout:
      return std::make_unique<DropoutRunner>(backend, layer, batch);
    case LayerKind::flatten:
      return std::make_unique<FlattenRunner>(backend, layer, batch);
    case LayerKind::fully_connected:
      return std::make_unique<FullyConnectedRunner>(backend, layer, batch);
    case LayerKind::concat:
      return std::make_unique<ConcatRunner>(backend, layer, batch);
    case LayerKind::add:
      return std::make_unique<AddRunner>(backend, layer, batch);
    case LayerKind::softmax_cross_entropy:
      return std::make_unique<SoftmaxLossRunner>(backend, layer, batch);
  }
  throw std::invalid_argument("no CPU kernel for layer '" + layer.name() + "'");
}

}  // namespace ralp::kernels::cpu
