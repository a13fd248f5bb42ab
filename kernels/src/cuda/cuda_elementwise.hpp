// Launchers of the few CUDA kernels written here, for work cuDNN and cuBLAS have no routine for:
// filling, dropout with counter-based masks, the cross-entropy loss and its gradient, the
// activations of squeeze-and-excitation and mobile networks, and mul with its channel broadcast.
#pragma once

#include <cstdint>

#include <cuda_runtime_api.h>

namespace ralp::kernels::cuda {

void launch_fill(float* dst, int64_t count, float value, cudaStream_t stream);
// dst[i] = keep(i) ? src[i] / (1 - rate) : 0, i the element's plain NCHW index.
void launch_dropout(const float* src, float* dst, int64_t count, uint64_t mask_stream, float rate,
                    cudaStream_t stream);
// loss[0] = mean over the batch of -log(probabilities[n, labels[n]]).
void launch_cross_entropy(const float* probabilities, const int32_t* labels, int64_t batch,
                          int64_t classes, float* loss, cudaStream_t stream);
// diff[n, c] = (probabilities[n, c] - (c == labels[n])) / batch.
void launch_cross_entropy_gradient(const float* probabilities, const int32_t* labels,
                                   int64_t batch, int64_t classes, float* diff,
                                   cudaStream_t stream);

// 16-bit tensors of mixed precision: `bf16` picks BF16 (__nv_bfloat16), else FP16 (__half).
// Conversions round to nearest even; arithmetic is in FP32, rounded once into the result.
void launch_fill16(void* dst, int64_t count, float value, bool bf16, cudaStream_t stream);
void launch_to16(const float* src, void* dst, int64_t count, bool bf16, cudaStream_t stream);
void launch_from16(const void* src, float* dst, int64_t count, bool bf16, cudaStream_t stream);
// dst[i] += src[i].
void launch_add16(void* dst, const void* src, int64_t count, bool bf16, cudaStream_t stream);
void launch_dropout16(const void* src, void* dst, int64_t count, uint64_t mask_stream, float rate,
                      bool bf16, cudaStream_t stream);

// The element type of the launchers below, which take every activation type: FP32 and the 16-bit
// types of mixed precision. Arithmetic is in FP32, each result rounded once into its type.
enum class Element { f32, f16, bf16 };

// y = f(x), PyTorch's definitions:
//   sigmoid       1 / (1 + exp(-x))
//   silu          x * sigmoid(x)
//   hard_sigmoid  max(0, min(1, alpha x + beta))
//   hard_swish    x * min(max(x + 3, 0), 6) / 6
// alpha and beta are read by hard_sigmoid only.
enum class Activation { sigmoid, silu, hard_sigmoid, hard_swish };
void launch_activation(Activation op, float alpha, float beta, const void* x, void* y,
                       int64_t count, Element type, cudaStream_t stream);
// dx = dy * f'(x), recomputed from x; at the kinks PyTorch's choices: hard sigmoid passes no
// gradient where alpha x + beta is 0 or 1, hard swish's slope is (2x + 3) / 6 on [-3, 3].
void launch_activation_backward(Activation op, float alpha, float beta, const void* x,
                                const void* dy, void* dx, int64_t count, Element type,
                                cudaStream_t stream);
// y[i] = a[i] * b[i / span]: span 1 multiplies equal shapes, span H x W scales each channel of
// an NCHW tensor by one value of a C x 1 x 1 one.
void launch_mul(const void* a, const void* b, void* y, int64_t count, int64_t span, Element type,
                cudaStream_t stream);
// ds[r] = sum over j < span of dy[r * span + j] * x[r * span + j], for r < rows: the gradient of
// mul's broadcast scale, one block per row, in a fixed order.
void launch_scale_gradient(const void* dy, const void* x, void* ds, int64_t rows, int64_t span,
                           Element type, cudaStream_t stream);

}  // namespace ralp::kernels::cuda
