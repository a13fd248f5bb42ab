// The GPU kernel model: what cuDNN and cuBLAS run for a layer's pass, and how long it takes.
//
// Every convolution pass has candidate algorithms (implicit GEMM; GEMM for 1x1; Winograd fused
// F(2x2,3x3) and non-fused F(4x4,3x3) for 3x3 stride 1; FFT and FFT tiling for stride 1), each
// with the operation count its maths fixes, an efficiency and its memory traffic; the fastest is
// chosen, as cuDNN's autotuner does. GEMMs run as output tiles spread over the multiprocessors
// in waves; a tile's main loop streams its operands from the cache. On the tensor-core path
// (FP16, BF16, TF32 products) only the tensor-op algorithms run (implicit GEMM, and non-fused
// Winograd where offered), on channels padded to multiples of 8, at the tensor cores' peak with
// parameters fitted to tensor-core timings. docs/gpu-compute.md derives each formula.
#pragma once

#include <array>
#include <string_view>

#include "ralp/core/units.hpp"
#include "ralp/model/layer.hpp"

namespace ralp {

// The device as one precision's kernels see it (datasheet figures, never fitted).
struct GpuShape {
  FlopsPerSecond peak;       // FLOP/s of the products at boost clock: FP32's, or the precision's
  BytesPerSecond bandwidth;  // DRAM bandwidth
  int multiprocessors = 1;   // SMs (SMXs on Kepler)
  // Bytes of one operand the kernels read and write: 4 (FP32, TF32) or 2 (FP16, BF16). Partial
  // sums (split-K) stay FP32 whatever the operands.
  double element_bytes = 4.0;
  // Whether the products run on tensor cores, whose GEMM kernels (cuBLAS's and cuDNN's
  // 884 kernels) also tile the output in 256 x 128 and 128 x 256.
  bool tensor_cores = false;
  // FLOP/s of FP32 arithmetic on the CUDA cores, for kernels that never reach the tensor cores
  // or a 16-bit rate (depthwise convolutions accumulate in FP32); zero means `peak`.
  FlopsPerSecond cuda_core_peak;
};

// Fitted parameters, each with a physical meaning; bounds in kKernelParamBounds.
struct GpuKernelParams {
  double gemm_efficiency = 0.75;           // fraction of peak in a large SGEMM tile's main loop
  double implicit_gemm_efficiency = 0.65;  // the same in implicit-GEMM convolution
  double winograd_efficiency = 0.6;        // fraction of peak on Winograd's transformed products
  double fft_efficiency = 0.5;             // fraction of peak on FFT's pointwise complex products
  double memory_efficiency = 0.75;         // fraction of DRAM bandwidth streaming kernels reach
  double cache_ratio = 3.0;                // cache bandwidth feeding tiles, in DRAM bandwidths
  double tile_prologue = 16.0;  // K-steps a tile spends outside its main loop (loads, epilogue)
  // Filter-gradient kernels reduce over the batch and every pixel, which the other passes do
  // not: their main loops reach this fraction of the others' efficiency.
  double filter_gradient_efficiency = 0.8;
  Seconds launch;               // per kernel
  friend bool operator==(const GpuKernelParams&, const GpuKernelParams&) = default;
};

inline constexpr int kKernelParamCount = 9;
struct ParamBounds {
  std::string_view name;
  double low;
  double high;
};
// The order of as_array(); launch (last) in microseconds there, in seconds in profiles.
extern const std::array<ParamBounds, kKernelParamCount> kKernelParamBounds;
std::array<double, kKernelParamCount> as_array(const GpuKernelParams& params);
GpuKernelParams params_from_array(const std::array<double, kKernelParamCount>& values);

enum class ConvPass { forward, backward_data, backward_filter };
enum class ConvAlgorithm {
  implicit_gemm,
  gemm,
  winograd,
  winograd_nonfused,
  fft,
  fft_tiling,
  depthwise,
};
std::string_view to_string(ConvPass pass);
std::string_view to_string(ConvAlgorithm algorithm);

// One convolution as cuDNN sees it (NCHW): `groups` convolutions side by side, each of
// in_channels -> out_channels (the channels of one group).
struct ConvShape {
  int64_t batch = 1, in_channels = 1, out_channels = 1;
  int64_t groups = 1;
  int64_t height = 1, width = 1;  // input
  int kernel_h = 1, kernel_w = 1, stride_h = 1, stride_w = 1, pad_h = 0, pad_w = 0;
  [[nodiscard]] int64_t out_height() const { return (height + 2 * pad_h - kernel_h) / stride_h + 1; }
  [[nodiscard]] int64_t out_width() const { return (width + 2 * pad_w - kernel_w) / stride_w + 1; }
  // Multiply-adds x 2 of the direct convolution, all groups (what DeepBench's "effective" FLOPs
  // count).
  [[nodiscard]] double direct_flops() const;
  // One input channel per group (PyTorch's is_depthwise: groups == input channels, any number of
  // output channels per group).
  [[nodiscard]] bool depthwise() const { return groups > 1 && in_channels == 1; }
};

// The algorithms a cuDNN version offers: all of the above from cuDNN 5.1 on; cuDNN 5.0 has no
// non-fused Winograd, and versions before 5 no Winograd at all. With tensor_ops (cuDNN 7 and
// later with CUDNN_TENSOR_OP_MATH) only the algorithms with tensor-core kernels run: implicit
// GEMM, and non-fused Winograd where `winograd_nonfused` allows it; every pass then computes
// the shape with its channels padded to multiples of 8 (tensor_op_shape).
struct ConvAlgorithms {
  bool winograd = true;
  bool winograd_nonfused = true;
  bool tensor_ops = false;
};

// The multiple of 8 at or above n: tensor cores take operands in groups of 8 channels (cuDNN 7)
// and GEMM dimensions in multiples of 8 (cuBLAS 10's tensor-op restriction).
int64_t round_up_to_8(int64_t n);
// The shape tensor-op kernels compute: input and output channels padded to multiples of 8.
ConvShape tensor_op_shape(const ConvShape& conv);

struct KernelTime {
  Seconds seconds;
  ConvAlgorithm algorithm = ConvAlgorithm::implicit_gemm;
};

// Time of one algorithm for one pass; infinity when the algorithm does not apply. The shape is
// computed as given (tensor-op padding is conv_pass_time's). A grouped convolution (groups > 1)
// is one kernel for all groups: implicit GEMM as `groups` GEMMs of one group's shape in one
// launch, or, depthwise, the direct kernel: the longer of its bytes (input, output and weights
// once) at the streaming bandwidth and its direct FLOPs at `cuda_core_peak` x the implicit-GEMM
// efficiency. No other algorithm applies to it.
Seconds conv_algorithm_time(const ConvShape& conv, ConvPass pass, ConvAlgorithm algorithm,
                            const GpuShape& gpu, const GpuKernelParams& params);
// The fastest applicable algorithm of `available`, with its time (launch included). A depthwise
// convolution runs the direct kernel on the CUDA cores whatever `available` says; another grouped
// one runs implicit GEMM, on the tensor cores (with tensor_ops) only where each group's channels
// are multiples of 8, else on the CUDA cores at `cuda_core_peak`.
KernelTime conv_pass_time(const ConvShape& conv, ConvPass pass, const GpuShape& gpu,
                          const GpuKernelParams& params, const ConvAlgorithms& available = {});
// C (M x N) = A (M x K) B (K x N) through cuBLAS, operands of gpu.element_bytes (launch
// included); the caller pads the dimensions a tensor-op GEMM needs.
Seconds gemm_time(double m, double n, double k, const GpuShape& gpu, const GpuKernelParams& params);
// A memory-bound kernel moving `bytes` (launch included).
Seconds streaming_time(Bytes bytes, const GpuShape& gpu, const GpuKernelParams& params);

}  // namespace ralp
