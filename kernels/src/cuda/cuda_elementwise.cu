// CUDA kernels for filling, dropout, the cross-entropy loss, the SE and mobile activations and
// mul: memory-bound element-wise work with no cuDNN or cuBLAS routine. Grid-stride loops, so any
// grid size is correct.
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

__device__ float widen(float v) { return v; }
template <>
__device__ float narrow<float>(float v) { return v; }

__device__ float sigmoid(float x) { return 1.0F / (1.0F + expf(-x)); }

__device__ float activate(Activation op, float alpha, float beta, float x) {
  switch (op) {
    case Activation::sigmoid:
      return sigmoid(x);
    case Activation::silu:
      return x * sigmoid(x);
    case Activation::hard_sigmoid:
      return fminf(1.0F, fmaxf(0.0F, alpha * x + beta));
    case Activation::hard_swish:
      return x * fminf(fmaxf(x + 3.0F, 0.0F), 6.0F) / 6.0F;
  }
  return 0.0F;
}

__device__ float slope(Activation op, float alpha, float beta, float x) {
  switch (op) {
    case Activation::sigmoid: {
      const float s = sigmoid(x);
      return s * (1.0F - s);
    }
    case Activation::silu: {
      const float s = sigmoid(x);
      return s * (1.0F + x * (1.0F - s));
    }
    case Activation::hard_sigmoid: {
      const float z = alpha * x + beta;
      return z > 0.0F && z < 1.0F ? alpha : 0.0F;
    }
    case Activation::hard_swish:
      return x < -3.0F ? 0.0F : (x > 3.0F ? 1.0F : (2.0F * x + 3.0F) / 6.0F);
  }
  return 0.0F;
}

template <class T>
__global__ void activation_kernel(Activation op, float alpha, float beta, const T* x, T* y,
                                  int64_t count) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < count;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    y[i] = narrow<T>(activate(op, alpha, beta, widen(x[i])));
  }
}

template <class T>
__global__ void activation_backward_kernel(Activation op, float alpha, float beta, const T* x,
                                           const T* dy, T* dx, int64_t count) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < count;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    dx[i] = narrow<T>(widen(dy[i]) * slope(op, alpha, beta, widen(x[i])));
  }
}

template <class T>
__global__ void mul_kernel(const T* a, const T* b, T* y, int64_t count, int64_t span) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < count;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    y[i] = narrow<T>(widen(a[i]) * widen(b[i / span]));
  }
}

// Block-stride over rows; the block's threads stride along the row and a shared-memory tree adds
// their partial sums. Every thread of a block takes the same rows, so the barriers are uniform.
template <class T>
__global__ void scale_gradient_kernel(const T* dy, const T* x, T* ds, int64_t rows, int64_t span) {
  __shared__ float partial[kThreads];
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    float sum = 0.0F;
    for (int64_t j = threadIdx.x; j < span; j += blockDim.x) {
      sum += widen(dy[r * span + j]) * widen(x[r * span + j]);
    }
    partial[threadIdx.x] = sum;
    __syncthreads();
    for (int half = blockDim.x / 2; half > 0; half /= 2) {
      if (threadIdx.x < half) partial[threadIdx.x] += partial[threadIdx.x + half];
      __syncthreads();
    }
    if (threadIdx.x == 0) ds[r] = narrow<T>(partial[0]);
    __syncthreads();
  }
}

// Calls `run` with a null pointer of the element type `type` names.
template <class Run>
void with_element(Element type, Run run) {
  switch (type) {
    case Element::f32:
      run(static_cast<float*>(nullptr));
      return;
    case Element::f16:
      run(static_cast<__half*>(nullptr));
      return;
    case Element::bf16:
      run(static_cast<__nv_bfloat16*>(nullptr));
      return;
  }
}

}  // namespace

void launch_activation(Activation op, float alpha, float beta, const void* x, void* y,
                       int64_t count, Element type, cudaStream_t stream) {
  with_element(type, [&](auto* t) {
    using T = std::remove_pointer_t<decltype(t)>;
    activation_kernel<T><<<blocks_for(count), kThreads, 0, stream>>>(
        op, alpha, beta, static_cast<const T*>(x), static_cast<T*>(y), count);
  });
}

void launch_activation_backward(Activation op, float alpha, float beta, const void* x,
                                const void* dy, void* dx, int64_t count, Element type,
                                cudaStream_t stream) {
  with_element(type, [&](auto* t) {
    using T = std::remove_pointer_t<decltype(t)>;
    activation_backward_kernel<T><<<blocks_for(count), kThreads, 0, stream>>>(
        op, alpha, beta, static_cast<const T*>(x), static_cast<const T*>(dy), static_cast<T*>(dx),
        count);
  });
}

void launch_mul(const void* a, const void* b, void* y, int64_t count, int64_t span, Element type,
                cudaStream_t stream) {
  with_element(type, [&](auto* t) {
    using T = std::remove_pointer_t<decltype(t)>;
    mul_kernel<T><<<blocks_for(count), kThreads, 0, stream>>>(
        static_cast<const T*>(a), static_cast<const T*>(b), static_cast<T*>(y), count, span);
  });
}

void launch_scale_gradient(const void* dy, const void* x, void* ds, int64_t rows, int64_t span,
                           Element type, cudaStream_t stream) {
  with_element(type, [&](auto* t) {
    using T = std::remove_pointer_t<decltype(t)>;
    const int blocks = static_cast<int>(rows < kMaxBlocks ? (rows < 1 ? 1 : rows) : kMaxBlocks);
    scale_gradient_kernel<T><<<blocks, kThreads, 0, stream>>>(
        static_cast<const T*>(dy), static_cast<const T*>(x), static_cast<T*>(ds), rows, span);
  });
}

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
