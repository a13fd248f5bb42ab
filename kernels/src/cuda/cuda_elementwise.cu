// CUDA kernels for filling, dropout and the cross-entropy loss: memory-bound element-wise work
// with no cuDNN or cuBLAS routine. Grid-stride loops, so any grid size is correct.
#include "cuda/cuda_elementwise.hpp"
#include "ralp/kernels/dropout_mask.hpp"

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <type_traits>

namespace ralp::kernels::cuda {
namespace {

constexpr int kThreads = 256;
constexpr int64_t kMaxBlocks = 4096;

int blocks_for(int64_t count) {
  const int64_t blocks = (count + kThreads - 1) / kThreads;
  return static_cast<int>(blocks < 1 ? 1 : (blocks > kMaxBlocks ? kMaxBlocks : blocks));
}

__global__ void fill_kernel(float* dst, int64_t count, float value) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < count;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    dst[i] = value;
  }
}

__global__ void dropout_kernel(const float* src, float* dst, int64_t count, uint64_t stream,
                               float rate, float scale) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < count;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    dst[i] = dropout_keeps(stream, static_cast<uint64_t>(i), rate) ? src[i] * scale : 0.0F;
  }
}

// One block; batches are small (a micro-batch), so a shared-memory tree reduction suffices.
__global__ void cross_entropy_kernel(const float* p, const int32_t* labels, int64_t batch,
                                     int64_t classes, float* loss) {
  __shared__ float partial[kThreads];
  float sum = 0.0F;
  for (int64_t n = threadIdx.x; n < batch; n += blockDim.x) {
    sum -= logf(fmaxf(p[n * classes + labels[n]], 1e-30F));
  }
  partial[threadIdx.x] = sum;
  __syncthreads();
  for (int half = blockDim.x / 2; half > 0; half /= 2) {
    if (threadIdx.x < half) partial[threadIdx.x] += partial[threadIdx.x + half];
    __syncthreads();
  }
  if (threadIdx.x == 0) loss[0] = partial[0] / static_cast<float>(batch);
}

__global__ void cross_entropy_gradient_kernel(const float* p, const int32_t* labels, int64_t batch,
                                              int64_t classes, float* diff) {
  const float inv_batch = 1.0F / static_cast<float>(batch);
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
       i < batch * classes; i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t n = i / classes;
    const float onehot = (i - n * classes) == labels[n] ? 1.0F : 0.0F;
    diff[i] = (p[i] - onehot) * inv_batch;
  }
}

// Conversions between float and the 16-bit types, on the device.
__device__ float widen(__half v) { return __half2float(v); }
__device__ float widen(__nv_bfloat16 v) { return __bfloat162float(v); }
template <class T>
__device__ T narrow(float v);
template <>
__device__ __half narrow<__half>(float v) { return __float2half_rn(v); }
template <>
__device__ __nv_bfloat16 narrow<__nv_bfloat16>(float v) { return __float2bfloat16_rn(v); }

template <class T>
__global__ void fill16_kernel(T* dst, int64_t count, float value) {
  const T v = narrow<T>(value);
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < count;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    dst[i] = v;
  }
}

template <class T>
__global__ void to16_kernel(const float* src, T* dst, int64_t count) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < count;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    dst[i] = narrow<T>(src[i]);
  }
}

template <class T>
__global__ void from16_kernel(const T* src, float* dst, int64_t count) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < count;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    dst[i] = widen(src[i]);
  }
}

template <class T>
__global__ void add16_kernel(T* dst, const T* src, int64_t count) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < count;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    dst[i] = narrow<T>(widen(dst[i]) + widen(src[i]));
  }
}

template <class T>
__global__ void dropout16_kernel(const T* src, T* dst, int64_t count, uint64_t stream, float rate,
                                 float scale) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < count;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    dst[i] = narrow<T>(dropout_keeps(stream, static_cast<uint64_t>(i), rate) ? widen(src[i]) * scale
                                                                              : 0.0F);
  }
}

// Calls `run` with a null pointer of the 16-bit type `bf16` names.
template <class Run>
void with_type(bool bf16, Run run) {
  if (bf16) {
    run(static_cast<__nv_bfloat16*>(nullptr));
  } else {
    run(static_cast<__half*>(nullptr));
  }
}

}  // namespace

void launch_fill16(void* dst, int64_t count, float value, bool bf16, cudaStream_t stream) {
  with_type(bf16, [&](auto* type) {
    using T = std::remove_pointer_t<decltype(type)>;
    fill16_kernel<T><<<blocks_for(count), kThreads, 0, stream>>>(static_cast<T*>(dst), count, value);
  });
}

void launch_to16(const float* src, void* dst, int64_t count, bool bf16, cudaStream_t stream) {
  with_type(bf16, [&](auto* type) {
    using T = std::remove_pointer_t<decltype(type)>;
    to16_kernel<T><<<blocks_for(count), kThreads, 0, stream>>>(src, static_cast<T*>(dst), count);
  });
}

void launch_from16(const void* src, float* dst, int64_t count, bool bf16, cudaStream_t stream) {
  with_type(bf16, [&](auto* type) {
    using T = std::remove_pointer_t<decltype(type)>;
    from16_kernel<T><<<blocks_for(count), kThreads, 0, stream>>>(static_cast<const T*>(src), dst,
                                                                 count);
  });
}

void launch_add16(void* dst, const void* src, int64_t count, bool bf16, cudaStream_t stream) {
  with_type(bf16, [&](auto* type) {
    using T = std::remove_pointer_t<decltype(type)>;
    add16_kernel<T><<<blocks_for(count), kThreads, 0, stream>>>(static_cast<T*>(dst),
                                                                static_cast<const T*>(src), count);
  });
}

void launch_dropout16(const void* src, void* dst, int64_t count, uint64_t mask_stream, float rate,
                      bool bf16, cudaStream_t stream) {
  with_type(bf16, [&](auto* type) {
    using T = std::remove_pointer_t<decltype(type)>;
    dropout16_kernel<T><<<blocks_for(count), kThreads, 0, stream>>>(
        static_cast<const T*>(src), static_cast<T*>(dst), count, mask_stream, rate,
        1.0F / (1.0F - rate));
  });
}

void launch_fill(float* dst, int64_t count, float value, cudaStream_t stream) {
  fill_kernel<<<blocks_for(count), kThreads, 0, stream>>>(dst, count, value);
}

void launch_dropout(const float* src, float* dst, int64_t count, uint64_t mask_stream, float rate,
                    cudaStream_t stream) {
  dropout_kernel<<<blocks_for(count), kThreads, 0, stream>>>(src, dst, count, mask_stream, rate,
                                                            1.0F / (1.0F - rate));
}

void launch_cross_entropy(const float* probabilities, const int32_t* labels, int64_t batch,
                          int64_t classes, float* loss, cudaStream_t stream) {
  cross_entropy_kernel<<<1, kThreads, 0, stream>>>(probabilities, labels, batch, classes, loss);
}

void launch_cross_entropy_gradient(const float* probabilities, const int32_t* labels,
                                   int64_t batch, int64_t classes, float* diff,
                                   cudaStream_t stream) {
  cross_entropy_gradient_kernel<<<blocks_for(batch * classes), kThreads, 0, stream>>>(
      probabilities, labels, batch, classes, diff);
}

}  // namespace ralp::kernels::cuda
