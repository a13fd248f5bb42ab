// CUDA layer runners: cuDNN descriptors, algorithms (chosen by cuDNN's finder) and workspaces
// made once per layer and batch; cuBLAS for fully connected layers. Activations are NCHW.
#include <algorithm>
#include <optional>
#include <stdexcept>

#include "cuda/cuda_backend.hpp"
#include "cuda/cuda_elementwise.hpp"
#include "ralp/kernels/dropout_mask.hpp"

namespace ralp::kernels::cuda {
namespace {

constexpr float kOne = 1.0F;
constexpr float kZero = 0.0F;
// The most workspace cuDNN's finder may try algorithms with.
constexpr size_t kMaxWorkspaceBytes = size_t{1} << 30;

class CudaRunner : public LayerRunner {
 public:
  CudaRunner(CudaBackend& backend, const Layer& layer, int64_t batch)
      : LayerRunner(layer, batch, Layout::plain, backend.activation_type()), backend_(backend) {}

  void backward_data(const LayerArgs&) override {
    throw std::logic_error("layer '" + layer_.name() + "' has no backward-data pass");
  }
  void backward_weight(const LayerArgs&) override {
    throw std::logic_error("layer '" + layer_.name() + "' has no parameters");
  }

 protected:
  // Activations in the runner's type (float, or the 16-bit type of mixed precision).
  [[nodiscard]] TensorDescriptor describe(const TensorShape& s) const {
    return {batch_, s.channels, s.height, s.width, to_cudnn(activation_type_)};
  }
  [[nodiscard]] bool half() const { return is_16bit(activation_type_); }
  [[nodiscard]] bool bf16() const { return activation_type_ == DataType::bf16; }
  // The activation type as cuda_elementwise.hpp's launchers take it.
  [[nodiscard]] Element element() const {
    return half() ? (bf16() ? Element::bf16 : Element::f16) : Element::f32;
  }
  // A 16-bit device copy of an FP32 tensor (master weights, biases), converted into `copy`,
  // which is allocated on first use.
  const void* narrowed(const Tensor* t, Tensor& copy) const {
    if (t == nullptr) throw std::invalid_argument("a tensor the pass needs is missing");
    if (copy.empty()) copy = backend_.allocate({t->desc().dims, activation_type_});
    launch_to16(t->f32(), copy.raw(), t->elements(), bf16(), stream());
    check(cudaGetLastError(), "conversion kernel");
    return copy.raw();
  }
  // Writes a 16-bit result held in `wide` into the FP32 tensor `t` (weight and bias gradients).
  void widen_into(const Tensor& narrow, Tensor* t) const {
    if (t == nullptr) throw std::invalid_argument("a tensor the pass needs is missing");
    launch_from16(narrow.raw(), t->f32(), t->elements(), bf16(), stream());
    check(cudaGetLastError(), "conversion kernel");
  }
  void need_input_gradient() const {
    if (!layer_.needs_input_gradient) {
      throw std::logic_error("layer '" + layer_.name() + "' needs no input gradient");
    }
  }
  [[nodiscard]] cudnnHandle_t cudnn() const { return backend_.cudnn(); }
  [[nodiscard]] cudaStream_t stream() const { return backend_.stream(); }
  static const float* in(const Tensor* t) {
    if (t == nullptr) throw std::invalid_argument("a tensor the pass needs is missing");
    return t->f32();
  }
  static float* out(Tensor* t) {
    if (t == nullptr) throw std::invalid_argument("a tensor the pass needs is missing");
    return t->f32();
  }
  // The same for tensors of any type, as cuDNN takes them.
  static const void* in_raw(const Tensor* t) {
    if (t == nullptr) throw std::invalid_argument("a tensor the pass needs is missing");
    return t->raw();
  }
  static void* out_raw(Tensor* t) {
    if (t == nullptr) throw std::invalid_argument("a tensor the pass needs is missing");
    return t->raw();
  }

  CudaBackend& backend_;
};

// Picks the fastest algorithm the finder ran successfully: in FP32, one without tensor-op
// rounding; in TF32, FP16 and BF16, any (tensor cores where cuDNN has them).
template <class Perf>
Perf fastest(const std::vector<Perf>& results, int count, const char* what, Precision precision) {
  for (int i = 0; i < count; ++i) {
    if (results[i].status != CUDNN_STATUS_SUCCESS) continue;
    if (precision != Precision::fp32) return results[i];
    if (results[i].mathType != CUDNN_TENSOR_OP_MATH &&
        results[i].mathType != CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION) {
      return results[i];
    }
  }
  throw std::invalid_argument(std::string("cuDNN found no ") + std::string(to_string(precision)) +
                              " algorithm for " + what);
}

// The convolution math type of a precision: FMA only in FP32 (no TF32 rounding), cuDNN's default
// in TF32 (TF32 tensor cores on Ampere and later), tensor ops on FP16 and BF16 data (FP32
// accumulation: the convolution descriptor's compute type is FLOAT).
cudnnMathType_t conv_math(Precision precision) {
  switch (precision) {
    case Precision::fp32:
      return CUDNN_FMA_MATH;
    case Precision::tf32:
      return CUDNN_DEFAULT_MATH;
    case Precision::fp16:
    case Precision::bf16:
      break;
  }
  return CUDNN_TENSOR_OP_MATH;
}

class ConvRunner final : public CudaRunner {
 public:
  ConvRunner(CudaBackend& b, const Layer& layer, int64_t batch)
      : CudaRunner(b, layer, batch),
        x_(describe(layer.input_shapes.front())),
        y_(describe(layer.output)),
        bias_(1, layer.output.channels, 1, 1, to_cudnn(b.activation_type())) {
    const auto& a = std::get<Conv2dAttrs>(layer.spec.attrs);
    const TensorShape& s = layer.input_shapes.front();
    check(cudnnCreateFilterDescriptor(&w_), "cudnnCreateFilterDescriptor");
    check(cudnnSetFilter4dDescriptor(w_, to_cudnn(activation_type_), CUDNN_TENSOR_NCHW,
                                     static_cast<int>(a.out_channels),
                                     static_cast<int>(s.channels / a.groups), a.kernel_h, a.kernel_w),
          "cudnnSetFilter4dDescriptor");
    check(cudnnCreateConvolutionDescriptor(&conv_), "cudnnCreateConvolutionDescriptor");
    check(cudnnSetConvolution2dDescriptor(conv_, a.pad_h, a.pad_w, a.stride_h, a.stride_w,
                                          a.dilation_h, a.dilation_w, CUDNN_CROSS_CORRELATION,
                                          CUDNN_DATA_FLOAT),
          "cudnnSetConvolution2dDescriptor");
    check(cudnnSetConvolutionGroupCount(conv_, static_cast<int>(a.groups)),
          "cudnnSetConvolutionGroupCount");
    check(cudnnSetConvolutionMathType(conv_, conv_math(b.precision())),
          "cudnnSetConvolutionMathType");
    int n = 0, c = 0, h = 0, w = 0;
    check(cudnnGetConvolution2dForwardOutputDim(conv_, x_.get(), w_, &n, &c, &h, &w),
          "cudnnGetConvolution2dForwardOutputDim");
    if (c != layer.output.channels || h != layer.output.height || w != layer.output.width) {
      throw std::invalid_argument("cuDNN's output size for '" + layer.name() + "' differs");
    }
    find_algorithms();
  }

  ~ConvRunner() override {
    cudnnDestroyConvolutionDescriptor(conv_);
    cudnnDestroyFilterDescriptor(w_);
  }
  ConvRunner(const ConvRunner&) = delete;
  ConvRunner& operator=(const ConvRunner&) = delete;

  // Under mixed precision the FP32 master weights and bias are converted into 16-bit copies for
  // each pass that reads them, and the 16-bit weight and bias gradients cuDNN computes (with FP32
  // accumulation) are widened into the FP32 gradient tensors.
  void forward(const LayerArgs& args) override {
    const void* weights = half() ? narrowed(args.weights, weights16_) : in(args.weights);
    check(cudnnConvolutionForward(cudnn(), &kOne, x_.get(), in_raw(args.inputs.at(0)), w_, weights,
                                  conv_, forward_algo_, workspace(), workspace_bytes_, &kZero,
                                  y_.get(), out_raw(args.output)),
          "cudnnConvolutionForward");
    if (has_bias()) {
      const void* bias = half() ? narrowed(args.bias, bias16_) : in(args.bias);
      check(cudnnAddTensor(cudnn(), &kOne, bias_.get(), bias, &kOne, y_.get(), out_raw(args.output)),
            "cudnnAddTensor");
    }
  }

  void backward_data(const LayerArgs& args) override {
    need_input_gradient();
    const void* weights = half() ? narrowed(args.weights, weights16_) : in(args.weights);
    check(cudnnConvolutionBackwardData(cudnn(), &kOne, w_, weights, y_.get(),
                                       in_raw(args.diff_output), conv_, data_algo_, workspace(),
                                       workspace_bytes_, &kZero, x_.get(),
                                       out_raw(args.diff_inputs.at(0))),
          "cudnnConvolutionBackwardData");
  }

  void backward_weight(const LayerArgs& args) override {
    if (half() && diff_weights16_.empty()) {
      diff_weights16_ = backend_.allocate({weight_desc().dims, activation_type_});
      if (has_bias()) diff_bias16_ = backend_.allocate({bias_desc().dims, activation_type_});
    }
    void* diff_weights = half() ? diff_weights16_.raw() : out(args.diff_weights);
    check(cudnnConvolutionBackwardFilter(cudnn(), &kOne, x_.get(), in_raw(args.inputs.at(0)),
                                         y_.get(), in_raw(args.diff_output), conv_, filter_algo_,
                                         workspace(), workspace_bytes_, &kZero, w_, diff_weights),
          "cudnnConvolutionBackwardFilter");
    if (half()) widen_into(diff_weights16_, args.diff_weights);
    if (has_bias()) {
      void* diff_bias = half() ? diff_bias16_.raw() : out(args.diff_bias);
      check(cudnnConvolutionBackwardBias(cudnn(), &kOne, y_.get(), in_raw(args.diff_output), &kZero,
                                         bias_.get(), diff_bias),
            "cudnnConvolutionBackwardBias");
      if (half()) widen_into(diff_bias16_, args.diff_bias);
    }
  }

 private:
  void* workspace() const { return workspace_.raw(); }

  // cuDNN's finder times every algorithm on scratch tensors of the real shapes.
  void find_algorithms() {
    Tensor x = backend_.allocate(input_desc(0));
    Tensor y = backend_.allocate(output_desc());
    Tensor w = backend_.allocate({weight_desc().dims, activation_type_});
    size_t free_bytes = 0, total_bytes = 0;
    check(cudaMemGetInfo(&free_bytes, &total_bytes), "cudaMemGetInfo");
    const size_t limit = std::min(kMaxWorkspaceBytes, free_bytes / 4);
    Tensor trial = backend_.scratch(static_cast<int64_t>(limit));
    int count = 0;
    int returned = 0;

    check(cudnnGetConvolutionForwardAlgorithmMaxCount(cudnn(), &count), "max count");
    std::vector<cudnnConvolutionFwdAlgoPerf_t> fwd(static_cast<size_t>(count));
    check(cudnnFindConvolutionForwardAlgorithmEx(cudnn(), x_.get(), x.raw(), w_, w.raw(), conv_,
                                                 y_.get(), y.raw(), count, &returned, fwd.data(),
                                                 trial.raw(), limit),
          "cudnnFindConvolutionForwardAlgorithmEx");
    const auto f = fastest(fwd, returned, "the forward convolution", backend_.precision());
    forward_algo_ = f.algo;
    size_t bytes = f.memory;

    if (layer_.needs_input_gradient) {
      check(cudnnGetConvolutionBackwardDataAlgorithmMaxCount(cudnn(), &count), "max count");
      std::vector<cudnnConvolutionBwdDataAlgoPerf_t> data(static_cast<size_t>(count));
      check(cudnnFindConvolutionBackwardDataAlgorithmEx(cudnn(), w_, w.raw(), y_.get(), y.raw(),
                                                        conv_, x_.get(), x.raw(), count, &returned,
                                                        data.data(), trial.raw(), limit),
            "cudnnFindConvolutionBackwardDataAlgorithmEx");
      const auto d = fastest(data, returned, "the backward-data convolution", backend_.precision());
      data_algo_ = d.algo;
      bytes = std::max(bytes, d.memory);
    }

    check(cudnnGetConvolutionBackwardFilterAlgorithmMaxCount(cudnn(), &count), "max count");
    std::vector<cudnnConvolutionBwdFilterAlgoPerf_t> filter(static_cast<size_t>(count));
    check(cudnnFindConvolutionBackwardFilterAlgorithmEx(cudnn(), x_.get(), x.raw(), y_.get(),
                                                        y.raw(), conv_, w_, w.raw(), count,
                                                        &returned, filter.data(), trial.raw(), limit),
          "cudnnFindConvolutionBackwardFilterAlgorithmEx");
    const auto fl = fastest(filter, returned, "the backward-filter convolution", backend_.precision());
    filter_algo_ = fl.algo;
    bytes = std::max(bytes, fl.memory);

    workspace_bytes_ = bytes;
    workspace_ = backend_.scratch(static_cast<int64_t>(bytes));
  }

  TensorDescriptor x_, y_, bias_;
  cudnnFilterDescriptor_t w_ = nullptr;
  cudnnConvolutionDescriptor_t conv_ = nullptr;
  cudnnConvolutionFwdAlgo_t forward_algo_{};
  cudnnConvolutionBwdDataAlgo_t data_algo_{};
  cudnnConvolutionBwdFilterAlgo_t filter_algo_{};
  Tensor workspace_;
  size_t workspace_bytes_ = 0;
  Tensor weights16_, bias16_, diff_weights16_, diff_bias16_;  // mixed precision only
};

class PoolRunner final : public CudaRunner {
 public:
  PoolRunner(CudaBackend& b, const Layer& layer, int64_t batch)
      : CudaRunner(b, layer, batch), x_(describe(layer.input_shapes.front())), y_(describe(layer.output)) {
    const auto& a = std::get<PoolAttrs>(layer.spec.attrs);
    const TensorShape& s = layer.input_shapes.front();
    int kh = a.kernel_h, kw = a.kernel_w, sh = a.stride_h, sw = a.stride_w, ph = a.pad_h, pw = a.pad_w;
    if (a.global) {
      kh = static_cast<int>(s.height);
      kw = static_cast<int>(s.width);
      sh = sw = 1;
      ph = pw = 0;
    }
    const cudnnPoolingMode_t mode = layer.kind() == LayerKind::max_pool ? CUDNN_POOLING_MAX
                                    : a.count_include_pad ? CUDNN_POOLING_AVERAGE_COUNT_INCLUDE_PADDING
                                                          : CUDNN_POOLING_AVERAGE_COUNT_EXCLUDE_PADDING;
    check(cudnnCreatePoolingDescriptor(&pool_), "cudnnCreatePoolingDescriptor");
    check(cudnnSetPooling2dDescriptor(pool_, mode, CUDNN_NOT_PROPAGATE_NAN, kh, kw, ph, pw, sh, sw),
          "cudnnSetPooling2dDescriptor");
    int n = 0, c = 0, h = 0, w = 0;
    check(cudnnGetPooling2dForwardOutputDim(pool_, x_.get(), &n, &c, &h, &w),
          "cudnnGetPooling2dForwardOutputDim");
    if (h != layer.output.height || w != layer.output.width) {
      cudnnDestroyPoolingDescriptor(pool_);
      // cuDNN rounds pooled sizes down; ceil_mode's extra window has no cuDNN equivalent.
      throw std::invalid_argument("cuDNN pooling cannot produce " + layer.output.to_string() +
                                  " for '" + layer.name() + "' (ceil_mode)");
    }
  }
  ~PoolRunner() override { cudnnDestroyPoolingDescriptor(pool_); }
  PoolRunner(const PoolRunner&) = delete;
  PoolRunner& operator=(const PoolRunner&) = delete;

  void forward(const LayerArgs& args) override {
    check(cudnnPoolingForward(cudnn(), pool_, &kOne, x_.get(), in_raw(args.inputs.at(0)), &kZero,
                              y_.get(), out_raw(args.output)),
          "cudnnPoolingForward");
  }
  void backward_data(const LayerArgs& args) override {
    need_input_gradient();
    check(cudnnPoolingBackward(cudnn(), pool_, &kOne, y_.get(), in_raw(args.output), y_.get(),
                               in_raw(args.diff_output), x_.get(), in_raw(args.inputs.at(0)), &kZero,
                               x_.get(), out_raw(args.diff_inputs.at(0))),
          "cudnnPoolingBackward");
  }

 private:
  TensorDescriptor x_, y_;
  cudnnPoolingDescriptor_t pool_ = nullptr;
};

class ReluRunner final : public CudaRunner {
 public:
  ReluRunner(CudaBackend& b, const Layer& layer, int64_t batch)
      : CudaRunner(b, layer, batch), x_(describe(layer.output)) {
    check(cudnnCreateActivationDescriptor(&act_), "cudnnCreateActivationDescriptor");
    check(cudnnSetActivationDescriptor(act_, CUDNN_ACTIVATION_RELU, CUDNN_NOT_PROPAGATE_NAN, 0.0),
          "cudnnSetActivationDescriptor");
  }
  ~ReluRunner() override { cudnnDestroyActivationDescriptor(act_); }
  ReluRunner(const ReluRunner&) = delete;
  ReluRunner& operator=(const ReluRunner&) = delete;

  void forward(const LayerArgs& args) override {
    check(cudnnActivationForward(cudnn(), act_, &kOne, x_.get(), in_raw(args.inputs.at(0)), &kZero,
                                 x_.get(), out_raw(args.output)),
          "cudnnActivationForward");
  }
  void backward_data(const LayerArgs& args) override {
    need_input_gradient();
    check(cudnnActivationBackward(cudnn(), act_, &kOne, x_.get(), in_raw(args.output), x_.get(),
                                  in_raw(args.diff_output), x_.get(), in_raw(args.inputs.at(0)), &kZero,
                                  x_.get(), out_raw(args.diff_inputs.at(0))),
          "cudnnActivationBackward");
  }

 private:
  TensorDescriptor x_;
  cudnnActivationDescriptor_t act_ = nullptr;
};

class LrnRunner final : public CudaRunner {
 public:
  LrnRunner(CudaBackend& b, const Layer& layer, int64_t batch)
      : CudaRunner(b, layer, batch), x_(describe(layer.output)) {
    const auto& a = std::get<LrnAttrs>(layer.spec.attrs);
    check(cudnnCreateLRNDescriptor(&lrn_), "cudnnCreateLRNDescriptor");
    // cuDNN divides alpha by the window size itself, as oneDNN and PyTorch do.
    if (cudnnSetLRNDescriptor(lrn_, static_cast<unsigned>(a.size), a.alpha, a.beta, a.k) !=
        CUDNN_STATUS_SUCCESS) {
      cudnnDestroyLRNDescriptor(lrn_);
      throw std::invalid_argument("cuDNN LRN cannot run '" + layer.name() +
                                  "' (size must be 1-16, k >= 1e-5, beta >= 0.01)");
    }
  }
  ~LrnRunner() override { cudnnDestroyLRNDescriptor(lrn_); }
  LrnRunner(const LrnRunner&) = delete;
  LrnRunner& operator=(const LrnRunner&) = delete;

  void forward(const LayerArgs& args) override {
    check(cudnnLRNCrossChannelForward(cudnn(), lrn_, CUDNN_LRN_CROSS_CHANNEL_DIM1, &kOne, x_.get(),
                                      in_raw(args.inputs.at(0)), &kZero, x_.get(), out_raw(args.output)),
          "cudnnLRNCrossChannelForward");
  }
  void backward_data(const LayerArgs& args) override {
    need_input_gradient();
    check(cudnnLRNCrossChannelBackward(cudnn(), lrn_, CUDNN_LRN_CROSS_CHANNEL_DIM1, &kOne, x_.get(),
                                       in_raw(args.output), x_.get(), in_raw(args.diff_output), x_.get(),
                                       in_raw(args.inputs.at(0)), &kZero, x_.get(),
                                       out_raw(args.diff_inputs.at(0))),
          "cudnnLRNCrossChannelBackward");
  }

 private:
  TensorDescriptor x_;
  cudnnLRNDescriptor_t lrn_ = nullptr;
};

class BatchNormRunner final : public CudaRunner {
 public:
  BatchNormRunner(CudaBackend& b, const Layer& layer, int64_t batch)
      : CudaRunner(b, layer, batch),
        x_(describe(layer.output)),
        channels_(1, layer.output.channels, 1, 1),
        epsilon_(std::max(std::get<BatchNormAttrs>(layer.spec.attrs).epsilon, CUDNN_BN_MIN_EPSILON)) {
    const TensorDesc c{{layer.output.channels}};
    mean_ = b.allocate(c);
    inv_std_ = b.allocate(c);
    diff_scale_ = b.allocate(c);
    diff_shift_ = b.allocate(c);
  }

  void forward(const LayerArgs& args) override {
    // No running averages: training mode normalises with the micro-batch's own statistics.
    check(cudnnBatchNormalizationForwardTraining(
              cudnn(), CUDNN_BATCHNORM_SPATIAL, &kOne, &kZero, x_.get(), in_raw(args.inputs.at(0)),
              x_.get(), out_raw(args.output), channels_.get(), in(args.weights), in(args.bias), 0.0,
              nullptr, nullptr, epsilon_, mean_.f32(), inv_std_.f32()),
          "cudnnBatchNormalizationForwardTraining");
    gradients_fresh_ = false;
  }

  void backward_data(const LayerArgs& args) override {
    need_input_gradient();
    run_backward(args, out_raw(args.diff_inputs.at(0)));
  }

  void backward_weight(const LayerArgs& args) override {
    if (!gradients_fresh_) {
      if (scratch_.empty()) scratch_ = backend_.allocate(input_desc(0));
      run_backward(args, scratch_.raw());
    }
    backend_.copy(diff_scale_, *args.diff_weights);
    backend_.copy(diff_shift_, *args.diff_bias);
    gradients_fresh_ = false;
  }

 private:
  // Scale, shift, their gradients and the statistics are FP32 whatever the activations' type.
  void run_backward(const LayerArgs& args, void* diff_input) {
    check(cudnnBatchNormalizationBackward(
              cudnn(), CUDNN_BATCHNORM_SPATIAL, &kOne, &kZero, &kOne, &kZero, x_.get(),
              in_raw(args.inputs.at(0)), x_.get(), in_raw(args.diff_output), x_.get(), diff_input,
              channels_.get(), in(args.weights), diff_scale_.f32(), diff_shift_.f32(), epsilon_,
              mean_.f32(), inv_std_.f32()),
          "cudnnBatchNormalizationBackward");
    gradients_fresh_ = true;
  }

  TensorDescriptor x_, channels_;
  double epsilon_;
  Tensor mean_, inv_std_, diff_scale_, diff_shift_, scratch_;
  bool gradients_fresh_ = false;
};

// Row-major X [N x K], W [O x K], Y [N x O] are column-major X^T, W^T, Y^T for cuBLAS:
// Y^T = W X^T, dX^T = W^T dY^T, dW^T = X^T dY, db = dY^T 1.
class FullyConnectedRunner final : public CudaRunner {
 public:
  FullyConnectedRunner(CudaBackend& b, const Layer& layer, int64_t batch)
      : CudaRunner(b, layer, batch),
        k_(static_cast<int>(layer.input_shapes.front().elements())),
        o_(static_cast<int>(layer.output.channels)),
        n_(static_cast<int>(batch)) {
    ones_ = b.allocate({{batch}, activation_type_});
    b.fill(ones_, 1.0F);
  }

  void forward(const LayerArgs& args) override {
    if (half()) {
      forward16(args);
      return;
    }
    check(cublasSgemm(backend_.cublas(), CUBLAS_OP_T, CUBLAS_OP_N, o_, n_, k_, &kOne,
                      in(args.weights), k_, in(args.inputs.at(0)), k_, &kZero, out(args.output), o_),
          "cublasSgemm");
    if (has_bias()) {
      check(cublasSgemm(backend_.cublas(), CUBLAS_OP_N, CUBLAS_OP_N, o_, n_, 1, &kOne,
                        in(args.bias), o_, ones_.f32(), 1, &kOne, out(args.output), o_),
            "cublasSgemm");
    }
  }

  void backward_data(const LayerArgs& args) override {
    need_input_gradient();
    if (half()) {
      gemm16(CUBLAS_OP_N, CUBLAS_OP_N, k_, n_, o_, narrowed(args.weights, weights16_), k_,
             in_raw(args.diff_output), o_, 0.0F, out_raw(args.diff_inputs.at(0)), type16(), k_);
      return;
    }
    check(cublasSgemm(backend_.cublas(), CUBLAS_OP_N, CUBLAS_OP_N, k_, n_, o_, &kOne,
                      in(args.weights), k_, in(args.diff_output), o_, &kZero,
                      out(args.diff_inputs.at(0)), k_),
          "cublasSgemm");
  }

  void backward_weight(const LayerArgs& args) override {
    if (half()) {
      // 16-bit products, FP32 accumulation, FP32 gradients written directly.
      gemm16(CUBLAS_OP_N, CUBLAS_OP_T, k_, o_, n_, in_raw(args.inputs.at(0)), k_,
             in_raw(args.diff_output), o_, 0.0F, out(args.diff_weights), CUDA_R_32F, k_);
      if (has_bias()) {
        gemm16(CUBLAS_OP_N, CUBLAS_OP_N, o_, 1, n_, in_raw(args.diff_output), o_, ones_.raw(), n_,
               0.0F, out(args.diff_bias), CUDA_R_32F, o_);
      }
      return;
    }
    check(cublasSgemm(backend_.cublas(), CUBLAS_OP_N, CUBLAS_OP_T, k_, o_, n_, &kOne,
                      in(args.inputs.at(0)), k_, in(args.diff_output), o_, &kZero,
                      out(args.diff_weights), k_),
          "cublasSgemm");
    if (has_bias()) {
      check(cublasSgemv(backend_.cublas(), CUBLAS_OP_N, o_, n_, &kOne, in(args.diff_output), o_,
                        ones_.f32(), 1, &kZero, out(args.diff_bias), 1),
            "cublasSgemv");
    }
  }

 private:
  [[nodiscard]] cudaDataType_t type16() const { return bf16() ? CUDA_R_16BF : CUDA_R_16F; }
  // C = A B + beta C with 16-bit A and B, FP32 compute (tensor cores), C of type c_type.
  void gemm16(cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k, const void* a,
              int lda, const void* b, int ldb, float beta, void* c, cudaDataType_t c_type,
              int ldc) const {
    check(cublasGemmEx(backend_.cublas(), ta, tb, m, n, k, &kOne, a, type16(), lda, b, type16(), ldb,
                       &beta, c, c_type, ldc, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT),
          "cublasGemmEx");
  }
  void forward16(const LayerArgs& args) {
    gemm16(CUBLAS_OP_T, CUBLAS_OP_N, o_, n_, k_, narrowed(args.weights, weights16_), k_,
           in_raw(args.inputs.at(0)), k_, 0.0F, out_raw(args.output), type16(), o_);
    if (has_bias()) {
      gemm16(CUBLAS_OP_N, CUBLAS_OP_N, o_, n_, 1, narrowed(args.bias, bias16_), o_, ones_.raw(), 1,
             1.0F, out_raw(args.output), type16(), o_);
    }
  }

  int k_, o_, n_;
  Tensor ones_;
  Tensor weights16_, bias16_;  // mixed precision: 16-bit copies of the FP32 master values
};

// In FP32 whatever the precision: a 16-bit input is widened into FP32 logits first, and the
// gradient is computed in FP32 and rounded into the input's type last.
class SoftmaxLossRunner final : public CudaRunner {
 public:
  SoftmaxLossRunner(CudaBackend& b, const Layer& layer, int64_t batch)
      : CudaRunner(b, layer, batch),
        x_(batch, layer.output.channels, layer.output.height, layer.output.width) {
    if (half()) {
      logits_ = b.allocate({{batch * layer.output.elements()}});
      gradient_ = b.allocate({{batch * layer.output.elements()}});
    }
  }

  void forward(const LayerArgs& args) override {
    const float* logits = in(args.inputs.at(0));
    if (half()) {
      launch_from16(in_raw(args.inputs.at(0)), logits_.f32(), logits_.elements(), bf16(), stream());
      check(cudaGetLastError(), "conversion kernel");
      logits = logits_.f32();
    }
    check(cudnnSoftmaxForward(cudnn(), CUDNN_SOFTMAX_ACCURATE, CUDNN_SOFTMAX_MODE_INSTANCE, &kOne,
                              x_.get(), logits, &kZero, x_.get(), out(args.output)),
          "cudnnSoftmaxForward");
    if (args.loss == nullptr) return;
    launch_cross_entropy(in(args.output), labels(args), batch_, layer_.output.channels,
                         out(args.loss), stream());
    check(cudaGetLastError(), "cross-entropy kernel");
  }

  void backward_data(const LayerArgs& args) override {
    need_input_gradient();
    float* gradient = half() ? gradient_.f32() : out(args.diff_inputs.at(0));
    launch_cross_entropy_gradient(in(args.output), labels(args), batch_, layer_.output.channels,
                                  gradient, stream());
    check(cudaGetLastError(), "cross-entropy gradient kernel");
    if (half()) {
      launch_to16(gradient, out_raw(args.diff_inputs.at(0)), gradient_.elements(), bf16(), stream());
      check(cudaGetLastError(), "conversion kernel");
    }
  }

 private:
  static const int32_t* labels(const LayerArgs& args) {
    if (args.labels == nullptr) throw std::invalid_argument("the loss needs labels");
    return args.labels->s32();
  }
  TensorDescriptor x_;       // FP32
  Tensor logits_, gradient_;  // mixed precision: the FP32 logits and gradient
};

class DropoutRunner final : public CudaRunner {
 public:
  DropoutRunner(CudaBackend& b, const Layer& layer, int64_t batch)
      : CudaRunner(b, layer, batch),
        rate_(static_cast<float>(std::get<DropoutAttrs>(layer.spec.attrs).rate)) {}

  void forward(const LayerArgs& args) override {
    apply(args.mask, args.inputs.at(0), args.output);
  }
  void backward_data(const LayerArgs& args) override {
    need_input_gradient();
    apply(args.mask, args.diff_output, args.diff_inputs.at(0));
  }

 private:
  void apply(const MaskKey& k, const Tensor* src, Tensor* dst) const {
    const int64_t count = batch_ * layer_.output.elements();
    const uint64_t mask = mask_stream(k.seed, k.step, k.worker, k.layer);
    if (half()) {
      launch_dropout16(in_raw(src), out_raw(dst), count, mask, rate_, bf16(), stream());
    } else {
      launch_dropout(in(src), out(dst), count, mask, rate_, stream());
    }
    check(cudaGetLastError(), "dropout kernel");
  }
  float rate_;
};

// NCHW is already flat in C*H*W order: flatten is a copy.
class FlattenRunner final : public CudaRunner {
 public:
  using CudaRunner::CudaRunner;
  void forward(const LayerArgs& args) override { backend_.copy(*args.inputs.at(0), *args.output); }
  void backward_data(const LayerArgs& args) override {
    need_input_gradient();
    backend_.copy(*args.diff_output, *args.diff_inputs.at(0));
  }
};

// Each image's inputs sit one after another along channels: one strided copy per input.
class ConcatRunner final : public CudaRunner {
 public:
  using CudaRunner::CudaRunner;

  void forward(const LayerArgs& args) override {
    copy_parts(args, /*into_output=*/true);
  }
  void backward_data(const LayerArgs& args) override {
    need_input_gradient();
    copy_parts(args, /*into_output=*/false);
  }

 private:
  void copy_parts(const LayerArgs& args, bool into_output) const {
    const auto value = static_cast<size_t>(element_bytes(activation_type_));
    const size_t image = static_cast<size_t>(layer_.output.elements()) * value;
    size_t offset = 0;
    for (size_t i = 0; i < layer_.input_shapes.size(); ++i) {
      const size_t part = static_cast<size_t>(layer_.input_shapes[i].elements()) * value;
      if (into_output) {
        check(cudaMemcpy2DAsync(static_cast<char*>(args.output->raw()) + offset, image,
                                args.inputs.at(i)->raw(), part, part, static_cast<size_t>(batch_),
                                cudaMemcpyDeviceToDevice, stream()),
              "cudaMemcpy2DAsync");
      } else if (args.diff_inputs.at(i) != nullptr) {
        check(cudaMemcpy2DAsync(args.diff_inputs[i]->raw(), part,
                                static_cast<const char*>(args.diff_output->raw()) + offset, image,
                                part, static_cast<size_t>(batch_), cudaMemcpyDeviceToDevice, stream()),
              "cudaMemcpy2DAsync");
      }
      offset += part;
    }
  }
};

class AddRunner final : public CudaRunner {
 public:
  using CudaRunner::CudaRunner;

  void forward(const LayerArgs& args) override {
    backend_.copy(*args.inputs.at(0), *args.output);
    for (size_t i = 1; i < args.inputs.size(); ++i) backend_.add_into(*args.output, *args.inputs[i]);
  }
  void backward_data(const LayerArgs& args) override {
    need_input_gradient();
    for (Tensor* d : args.diff_inputs) {
      if (d != nullptr) backend_.copy(*args.diff_output, *d);
    }
  }
};

// Sigmoid, SiLU, hard sigmoid and hard swish: kernels of cuda_elementwise.cu in every activation
// type (cuDNN's activations have no hard sigmoid or hard swish, and its FP16 and BF16 paths
// would differ from the FP32 one in where they round). Backward recomputes from the input.
class ActivationRunner final : public CudaRunner {
 public:
  ActivationRunner(CudaBackend& b, const Layer& layer, int64_t batch, Activation op)
      : CudaRunner(b, layer, batch), op_(op), count_(batch * layer.output.elements()) {
    if (op == Activation::hard_sigmoid) {
      const auto& a = std::get<HardSigmoidAttrs>(layer.spec.attrs);
      alpha_ = static_cast<float>(a.alpha);
      beta_ = static_cast<float>(a.beta);
    }
  }

  void forward(const LayerArgs& args) override {
    launch_activation(op_, alpha_, beta_, in_raw(args.inputs.at(0)), out_raw(args.output), count_,
                      element(), stream());
    check(cudaGetLastError(), "activation kernel");
  }
  void backward_data(const LayerArgs& args) override {
    need_input_gradient();
    launch_activation_backward(op_, alpha_, beta_, in_raw(args.inputs.at(0)),
                               in_raw(args.diff_output), out_raw(args.diff_inputs.at(0)), count_,
                               element(), stream());
    check(cudaGetLastError(), "activation backward kernel");
  }

 private:
  Activation op_;
  float alpha_ = 0.0F, beta_ = 0.0F;
  int64_t count_;
};

// first * second, the second of the first's shape or C x 1 x 1 and broadcast over H x W: on NCHW
// data each of the second's values scales a contiguous span of H x W. The broadcast scale's
// gradient sums dy * first over each span.
class MulRunner final : public CudaRunner {
 public:
  MulRunner(CudaBackend& b, const Layer& layer, int64_t batch)
      : CudaRunner(b, layer, batch),
        count_(batch * layer.output.elements()),
        span_(layer.input_shapes[1] == layer.input_shapes[0]
                  ? 1
                  : layer.output.height * layer.output.width) {}

  void forward(const LayerArgs& args) override {
    multiply(args.inputs.at(0), args.inputs.at(1), args.output, span_);
  }
  void backward_data(const LayerArgs& args) override {
    need_input_gradient();
    if (args.diff_inputs.at(0) != nullptr) {
      multiply(args.diff_output, args.inputs.at(1), args.diff_inputs[0], span_);
    }
    Tensor* diff_scale = args.diff_inputs.at(1);
    if (diff_scale == nullptr) return;
    if (span_ == 1) {
      multiply(args.diff_output, args.inputs.at(0), diff_scale, 1);
      return;
    }
    launch_scale_gradient(in_raw(args.diff_output), in_raw(args.inputs.at(0)), out_raw(diff_scale),
                          count_ / span_, span_, element(), stream());
    check(cudaGetLastError(), "scale gradient kernel");
  }

 private:
  void multiply(const Tensor* a, const Tensor* b, Tensor* y, int64_t span) const {
    launch_mul(in_raw(a), in_raw(b), out_raw(y), count_, span, element(), stream());
    check(cudaGetLastError(), "mul kernel");
  }

  int64_t count_, span_;
};

}  // namespace

std::unique_ptr<LayerRunner> make_cuda_runner(CudaBackend& backend, const Layer& layer,
                                              int64_t batch) {
  switch (layer.kind()) {
    case LayerKind::conv2d:
      return std::make_unique<ConvRunner>(backend, layer, batch);
    case LayerKind::max_pool:
    case LayerKind::avg_pool:
      return std::make_unique<PoolRunner>(backend, layer, batch);
    case LayerKind::relu:
      return std::make_unique<ReluRunner>(backend, layer, batch);
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
    case LayerKind::sigmoid:
      return std::make_unique<ActivationRunner>(backend, layer, batch, Activation::sigmoid);
    case LayerKind::silu:
      return std::make_unique<ActivationRunner>(backend, layer, batch, Activation::silu);
    case LayerKind::hard_sigmoid:
      return std::make_unique<ActivationRunner>(backend, layer, batch, Activation::hard_sigmoid);
    case LayerKind::hard_swish:
      return std::make_unique<ActivationRunner>(backend, layer, batch, Activation::hard_swish);
    case LayerKind::mul:
      return std::make_unique<MulRunner>(backend, layer, batch);
  }
  throw std::invalid_argument("no CUDA kernel for layer '" + layer.name() + "'");
}

}  // namespace ralp::kernels::cuda
