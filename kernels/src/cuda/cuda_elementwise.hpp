// Launchers of the few CUDA kernels written here, for work cuDNN and cuBLAS have no routine for:
// filling, dropout with counter-based masks, and the cross-entropy loss and its gradient.
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

}  // namespace ralp::kernels::cuda
