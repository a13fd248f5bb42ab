// The GPU kernel model: cuDNN's convolution algorithms and cuBLAS's tiled GEMM.
#include "ralp/devices/gpu_kernels.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <span>

namespace ralp {
namespace {

constexpr double kInfinity = std::numeric_limits<double>::infinity();
constexpr double kFloat = 4.0;          // bytes of an FP32 value
constexpr double kComplex = 8.0;        // bytes of a complex FP32 value
constexpr double kMinSplitDepth = 128;  // split-K never cuts K below this many steps
constexpr int kMaxFftSize = 256;        // cuDNN's FFT handles padded planes up to this size
constexpr int kFftTile = 32;            // FFT tiling's transform size

// Output tiles SGEMM kernels use.
struct Tile {
  double m, n;
};
constexpr Tile kTiles[] = {{128, 128}, {128, 64}, {64, 128}, {64, 64}, {64, 32}, {32, 64}, {32, 32}};
// Tensor-core kernels add larger tiles, which load fewer operand bytes per FLOP.
constexpr Tile kTensorTiles[] = {{256, 128}, {128, 256}, {128, 128}, {128, 64}, {64, 128},
                                 {64, 64},   {64, 32},   {32, 64},   {32, 32}};

// `batch` independent GEMMs of M x N x K, each split into output tiles spread evenly over the
// multiprocessors. The busiest multiprocessor's tiles take the longer of their arithmetic (K plus
// the prologue, at `efficiency` of its share of peak) and their operand loads at its share of the
// cache bandwidth: small tiles waste less at the edges but load more per FLOP. With split-K (where
// the tiles cannot fill the device) partial sums are reduced through memory afterwards. The best
// tile wins.
double tiled_seconds(double m, double n, double k, double batch, double efficiency, bool split_k,
                     const GpuShape& gpu, const GpuKernelParams& p) {
  const double sms = gpu.multiprocessors;
  const double sm_flops = gpu.peak.value() / sms * efficiency;
  const double sm_cache = gpu.bandwidth.value() * p.cache_ratio / sms;
  double best = kInfinity;
  const std::span<const Tile> tiles_offered =
      gpu.tensor_cores ? std::span<const Tile>(kTensorTiles) : std::span<const Tile>(kTiles);
  for (const Tile& t : tiles_offered) {
    const double tiles = std::ceil(m / t.m) * std::ceil(n / t.n) * batch;
    double split = 1.0;
    if (split_k && tiles < sms) {
      split = std::clamp(std::floor(sms / tiles), 1.0, std::max(1.0, std::floor(k / kMinSplitDepth)));
    }
    const double depth = std::ceil(k / split);
    const double load = std::ceil(tiles * split / sms);
    const double flops = 2.0 * t.m * t.n * (depth + p.tile_prologue);
    const double bytes = (t.m + t.n) * depth * gpu.element_bytes;
    double seconds = load * std::max(flops / sm_flops, bytes / sm_cache);
    if (split > 1.0) {
      seconds += m * n * batch * kFloat * (split + 1.0) /
                 (gpu.bandwidth.value() * p.memory_efficiency);
    }
    best = std::min(best, seconds);
  }
  return best;
}

double stream_seconds(double bytes, const GpuShape& gpu, const GpuKernelParams& p) {
  return bytes / (gpu.bandwidth.value() * p.memory_efficiency);
}

// Bytes every algorithm of a pass must move at least: its input, output and weights once (every
// group's). Each pass moves the same amount: the forward reads x and w and writes y, the data
// gradient reads dy and w and writes dx, the filter gradient reads x and dy and writes dw.
double floor_bytes(const ConvShape& c, double element_bytes) {
  const double groups = static_cast<double>(c.groups);
  const double in = static_cast<double>(c.batch * c.in_channels * c.height * c.width);
  const double out = static_cast<double>(c.batch * c.out_channels * c.out_height() * c.out_width());
  const double weights = static_cast<double>(c.in_channels * c.out_channels) * c.kernel_h * c.kernel_w;
  return groups * (in + out + weights) * element_bytes;
}

// The CUDA cores' view of the device: FP32 arithmetic, no tensor-core tiles, the same bandwidth
// and operand width.
GpuShape cuda_cores(const GpuShape& gpu) {
  GpuShape cores = gpu;
  if (gpu.cuda_core_peak.value() > 0.0) cores.peak = gpu.cuda_core_peak;
  cores.tensor_cores = false;
  return cores;
}

// A depthwise convolution's pass as the frameworks run it: one direct kernel in which each thread
// computes an output (or input-gradient) value from its window, or a block reduces one filter
// tap's gradient over the batch and pixels; PyTorch's CUDA depthwise kernels
// (aten/src/ATen/native/cuda/DepthwiseConv2d.cu, chosen by ConvParams::use_cudnn_depthwise in
// aten/src/ATen/native/Convolution.cpp for FP32, and cuDNN's from 8.2 for FP16) and TensorFlow's
// (tensorflow/core/kernels/depthwise_conv_op_gpu.h) both do. With one input channel per output
// channel a value is used kh x kw times at most, from the cache: the pass moves its tensors
// once, and its FLOPs (at most 2 kh kw per 8 bytes moved in FP32) rarely bind.
double depthwise_seconds(const ConvShape& c, const GpuShape& gpu, const GpuKernelParams& p) {
  const double compute = c.direct_flops() / (gpu.peak.value() * p.implicit_gemm_efficiency);
  return std::max(compute, stream_seconds(floor_bytes(c, gpu.element_bytes), gpu, p));
}

bool is_3x3_stride_1(const ConvShape& c) {
  return c.kernel_h == 3 && c.kernel_w == 3 && c.stride_h == 1 && c.stride_w == 1;
}

// The GEMM a pass is, as (M, N, K), with the data pass's rows for a strided convolution: a
// backward-data tile covers whole rows of dx; the rows no output row reaches are skipped, so it
// computes 1/stride_h of the input pixels, each over ceil(R/stride_h) x S taps.
struct Gemm {
  double m, n, k;
};
Gemm implicit_gemm(const ConvShape& c, ConvPass pass) {
  const double n = static_cast<double>(c.batch);
  const double out_pixels = static_cast<double>(c.out_height() * c.out_width());
  const double taps = static_cast<double>(c.kernel_h) * c.kernel_w;
  switch (pass) {
    case ConvPass::forward:
      return {n * out_pixels, double(c.out_channels), double(c.in_channels) * taps};
    case ConvPass::backward_data: {
      const double rows = std::ceil(static_cast<double>(c.kernel_h) / c.stride_h);
      return {n * static_cast<double>(c.height * c.width) / c.stride_h, double(c.in_channels),
              double(c.out_channels) * rows * c.kernel_w};
    }
    case ConvPass::backward_filter:
      return {double(c.out_channels), double(c.in_channels) * taps, n * out_pixels};
  }
  return {};
}

// Winograd F(m x m, 3x3) as `transformed` = (m+2)^2 batched GEMMs over the output's m x m tiles.
double winograd_seconds(const ConvShape& c, ConvPass pass, int m, double efficiency,
                        const GpuShape& gpu, const GpuKernelParams& p, double* transform_bytes) {
  const double tiles = static_cast<double>(c.batch) * std::ceil(double(c.out_height()) / m) *
                       std::ceil(double(c.out_width()) / m);
  const double transformed = (m + 2.0) * (m + 2.0);
  const double cin = static_cast<double>(c.in_channels);
  const double cout = static_cast<double>(c.out_channels);
  *transform_bytes = 2.0 * transformed * (tiles * (cin + cout) + cin * cout) * gpu.element_bytes;
  switch (pass) {
    case ConvPass::forward:
      return tiled_seconds(tiles, cout, cin, transformed, efficiency, false, gpu, p);
    case ConvPass::backward_data:
      return tiled_seconds(tiles, cin, cout, transformed, efficiency, false, gpu, p);
    case ConvPass::backward_filter:
      return tiled_seconds(cout, cin, tiles, transformed, efficiency, true, gpu, p);
  }
  return kInfinity;
}

// The smallest size >= n whose only prime factors are 2, 3, 5 and 7 (cuFFT's fast sizes).
int fft_size(int64_t n) {
  for (int64_t s = n;; ++s) {
    int64_t r = s;
    for (const int f : {2, 3, 5, 7}) {
      while (r % f == 0) r /= f;
    }
    if (r == 1) return static_cast<int>(s);
  }
}

// FFT convolution over planes of `fh` x `fw`, `planes` of them per image: the pointwise
// products are one complex GEMM per frequency (a complex multiply-add is four real ones); the
// transformed inputs, filters and outputs are written and read once each.
double fft_seconds(const ConvShape& c, ConvPass pass, int fh, int fw, double planes,
                   const GpuShape& gpu, const GpuKernelParams& p) {
  const double freqs = fh * (fw / 2.0 + 1.0);
  const double n = static_cast<double>(c.batch) * planes;
  const double cin = static_cast<double>(c.in_channels);
  const double cout = static_cast<double>(c.out_channels);
  double products = 0.0;
  switch (pass) {
    case ConvPass::forward:
      products = tiled_seconds(n, cout, cin, freqs, p.fft_efficiency, false, gpu, p);
      break;
    case ConvPass::backward_data:
      products = tiled_seconds(n, cin, cout, freqs, p.fft_efficiency, false, gpu, p);
      break;
    case ConvPass::backward_filter:
      products = tiled_seconds(cout, cin, n, freqs, p.fft_efficiency, true, gpu, p);
      break;
  }
  const double transformed = 2.0 * freqs * (n * (cin + cout) + cin * cout) * kComplex;
  return 4.0 * products + stream_seconds(transformed + floor_bytes(c, kFloat), gpu, p);
}

}  // namespace

const std::array<ParamBounds, kKernelParamCount> kKernelParamBounds{{
    {"gemm_efficiency", 0.3, 1.0},
    {"implicit_gemm_efficiency", 0.2, 1.0},
    {"winograd_efficiency", 0.2, 1.0},
    {"fft_efficiency", 0.1, 1.0},
    {"memory_efficiency", 0.6, 0.9},
    {"cache_ratio", 1.0, 8.0},
    {"tile_prologue", 0.0, 256.0},
    {"filter_gradient_efficiency", 0.2, 1.0},
    {"launch_us", 0.0, 30.0},
}};

std::array<double, kKernelParamCount> as_array(const GpuKernelParams& p) {
  return {p.gemm_efficiency, p.implicit_gemm_efficiency, p.winograd_efficiency, p.fft_efficiency,
          p.memory_efficiency, p.cache_ratio, p.tile_prologue, p.filter_gradient_efficiency,
          p.launch.value() * 1e6};
}

GpuKernelParams params_from_array(const std::array<double, kKernelParamCount>& v) {
  return {v[0], v[1], v[2], v[3], v[4], v[5], v[6], v[7], Seconds(v[8] * 1e-6)};
}

std::string_view to_string(ConvPass pass) {
  switch (pass) {
    case ConvPass::forward:
      return "forward";
    case ConvPass::backward_data:
      return "backward_data";
    case ConvPass::backward_filter:
      return "backward_filter";
  }
  return "unknown";
}

std::string_view to_string(ConvAlgorithm algorithm) {
  switch (algorithm) {
    case ConvAlgorithm::implicit_gemm:
      return "implicit_gemm";
    case ConvAlgorithm::gemm:
      return "gemm";
    case ConvAlgorithm::winograd:
      return "winograd";
    case ConvAlgorithm::winograd_nonfused:
      return "winograd_nonfused";
    case ConvAlgorithm::fft:
      return "fft";
    case ConvAlgorithm::fft_tiling:
      return "fft_tiling";
    case ConvAlgorithm::depthwise:
      return "depthwise";
  }
  return "unknown";
}

int64_t round_up_to_8(int64_t n) { return (n + 7) / 8 * 8; }

ConvShape tensor_op_shape(const ConvShape& conv) {
  ConvShape padded = conv;
  padded.in_channels = round_up_to_8(conv.in_channels);
  padded.out_channels = round_up_to_8(conv.out_channels);
  return padded;
}

double ConvShape::direct_flops() const {
  return 2.0 * static_cast<double>(groups * batch * out_channels * out_height() * out_width()) *
         static_cast<double>(in_channels) * kernel_h * kernel_w;
}

Seconds conv_algorithm_time(const ConvShape& c, ConvPass pass, ConvAlgorithm algorithm,
                            const GpuShape& gpu, const GpuKernelParams& params) {
  GpuKernelParams p = params;
  if (pass == ConvPass::backward_filter) {
    for (double* e : {&p.gemm_efficiency, &p.implicit_gemm_efficiency, &p.winograd_efficiency,
                      &p.fft_efficiency}) {
      *e *= params.filter_gradient_efficiency;
    }
  }
  const bool stride_1 = c.stride_h == 1 && c.stride_w == 1;
  if (c.groups > 1 && algorithm != ConvAlgorithm::implicit_gemm &&
      algorithm != ConvAlgorithm::depthwise) {
    return Seconds(kInfinity);
  }
  double compute = kInfinity;
  double extra_bytes = 0.0;
  switch (algorithm) {
    case ConvAlgorithm::implicit_gemm: {
      // A grouped convolution's groups are independent GEMMs of one group's shape, tiled
      // together in one launch (cuDNN's grouped implicit GEMM, cudnnSetConvolutionGroupCount).
      const Gemm g = implicit_gemm(c, pass);
      compute = tiled_seconds(g.m, g.n, g.k, static_cast<double>(c.groups),
                              p.implicit_gemm_efficiency, pass == ConvPass::backward_filter, gpu, p);
      break;
    }
    case ConvAlgorithm::depthwise:
      if (c.depthwise()) return Seconds(depthwise_seconds(c, gpu, p)) + p.launch;
      break;
    case ConvAlgorithm::gemm:
      if (c.kernel_h == 1 && c.kernel_w == 1 && stride_1 && c.pad_h == 0 && c.pad_w == 0) {
        const Gemm g = implicit_gemm(c, pass);
        compute = tiled_seconds(g.m, g.n, g.k, 1.0, p.gemm_efficiency,
                                pass == ConvPass::backward_filter, gpu, p);
      }
      break;
    case ConvAlgorithm::winograd:
      if (is_3x3_stride_1(c) && pass != ConvPass::backward_filter) {
        compute = winograd_seconds(c, pass, 2, p.winograd_efficiency, gpu, p, &extra_bytes);
        extra_bytes = 0.0;  // fused: the transforms stay on chip
      }
      break;
    case ConvAlgorithm::winograd_nonfused:
      if (is_3x3_stride_1(c)) {
        compute = winograd_seconds(c, pass, 4, p.gemm_efficiency, gpu, p, &extra_bytes);
      }
      break;
    case ConvAlgorithm::fft: {
      const int fh = fft_size(c.height + 2 * c.pad_h);
      const int fw = fft_size(c.width + 2 * c.pad_w);
      if (stride_1 && fh <= kMaxFftSize && fw <= kMaxFftSize) {
        return Seconds(fft_seconds(c, pass, fh, fw, 1.0, gpu, p)) + p.launch * 3.0;
      }
      break;
    }
    case ConvAlgorithm::fft_tiling: {
      const int64_t out_h = kFftTile - c.kernel_h + 1;
      const int64_t out_w = kFftTile - c.kernel_w + 1;
      if (stride_1 && pass != ConvPass::backward_filter && out_h > 0 && out_w > 0) {
        const double planes = std::ceil(double(c.out_height()) / double(out_h)) *
                              std::ceil(double(c.out_width()) / double(out_w));
        return Seconds(fft_seconds(c, pass, kFftTile, kFftTile, planes, gpu, p)) + p.launch * 3.0;
      }
      break;
    }
  }
  if (!std::isfinite(compute)) return Seconds(kInfinity);
  const double memory = stream_seconds(floor_bytes(c, gpu.element_bytes), gpu, p);
  if (extra_bytes > 0.0) {  // non-fused: the transforms are kernels of their own, before and after
    return Seconds(compute + stream_seconds(extra_bytes, gpu, p)) + p.launch * 3.0;
  }
  return Seconds(std::max(compute, memory)) + p.launch;
}

namespace {

// A grouped convolution: depthwise runs the direct kernel on the CUDA cores (no tensor-op
// depthwise kernel exists in cuDNN 7; PyTorch's FP32 and TensorFlow's kernels are CUDA-core
// code); another grouped one runs implicit GEMM over all groups, on the tensor cores only where
// every group's channels are multiples of 8 (cuDNN 7's tensor-op condition, per group), else on
// the CUDA cores: PyTorch computes a 16-bit convolution off the tensor cores in FP32
// (aten/src/ATen/cudnn/Descriptors.h, ConvolutionDescriptor::set: half data, float math).
KernelTime grouped_pass_time(const ConvShape& c, ConvPass pass, const GpuShape& gpu,
                             const GpuKernelParams& p, const ConvAlgorithms& available) {
  if (c.depthwise()) {
    return {conv_algorithm_time(c, pass, ConvAlgorithm::depthwise, cuda_cores(gpu), p),
            ConvAlgorithm::depthwise};
  }
  const bool aligned = c.in_channels % 8 == 0 && c.out_channels % 8 == 0;
  const GpuShape runs_on = available.tensor_ops && aligned ? gpu : cuda_cores(gpu);
  return {conv_algorithm_time(c, pass, ConvAlgorithm::implicit_gemm, runs_on, p),
          ConvAlgorithm::implicit_gemm};
}

}  // namespace

KernelTime conv_pass_time(const ConvShape& conv, ConvPass pass, const GpuShape& gpu,
                          const GpuKernelParams& p, const ConvAlgorithms& available) {
  if (conv.groups > 1) return grouped_pass_time(conv, pass, gpu, p, available);
  const ConvShape c = available.tensor_ops ? tensor_op_shape(conv) : conv;
  KernelTime best{Seconds(kInfinity), ConvAlgorithm::implicit_gemm};
  for (const ConvAlgorithm a :
       {ConvAlgorithm::implicit_gemm, ConvAlgorithm::gemm, ConvAlgorithm::winograd,
        ConvAlgorithm::winograd_nonfused, ConvAlgorithm::fft, ConvAlgorithm::fft_tiling}) {
    if (a == ConvAlgorithm::winograd_nonfused && !available.winograd_nonfused) continue;
    if (a == ConvAlgorithm::winograd && !available.winograd) continue;
    // cuDNN's tensor-op kernels: implicit GEMM and non-fused Winograd only.
    if (available.tensor_ops && a != ConvAlgorithm::implicit_gemm &&
        a != ConvAlgorithm::winograd_nonfused) {
      continue;
    }
    const Seconds t = conv_algorithm_time(c, pass, a, gpu, p);
    if (t < best.seconds) best = {t, a};
  }
  return best;
}

Seconds gemm_time(double m, double n, double k, const GpuShape& gpu, const GpuKernelParams& p) {
  const double compute = tiled_seconds(m, n, k, 1.0, p.gemm_efficiency, true, gpu, p);
  const double memory = stream_seconds((m * k + k * n + m * n) * gpu.element_bytes, gpu, p);
  return Seconds(std::max(compute, memory)) + p.launch;
}

Seconds streaming_time(Bytes bytes, const GpuShape& gpu, const GpuKernelParams& p) {
  return Seconds(stream_seconds(bytes.value(), gpu, p)) + p.launch;
}

}  // namespace ralp
