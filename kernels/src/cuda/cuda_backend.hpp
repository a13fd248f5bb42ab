// The CUDA backend's internals shared by its backend and runner sources: handles, stream,
// error checks and cuDNN descriptor helpers. Runtime API only (no driver-API link).
#pragma once

#include <string>

#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <cudnn.h>

#include "ralp/kernels/backend.hpp"

namespace ralp::kernels::cuda {

// Throw std::runtime_error naming the call and the library's message on failure.
void check(cudaError_t status, const char* call);
void check(cudnnStatus_t status, const char* call);
void check(cublasStatus_t status, const char* call);

// Why the backend cannot compute in `precision` on a device of compute capability major.x, or
// empty when it can.
std::string precision_unavailable_reason(Precision precision, int major);

class CudaBackend final : public Backend {
 public:
  explicit CudaBackend(Precision precision);
  ~CudaBackend() override;
  CudaBackend(const CudaBackend&) = delete;
  CudaBackend& operator=(const CudaBackend&) = delete;

  [[nodiscard]] BackendKind kind() const override { return BackendKind::cuda; }
  [[nodiscard]] std::string device_name() const override { return device_name_; }
  [[nodiscard]] std::map<std::string, std::string> provenance() const override;
  [[nodiscard]] int threads() const override { return 1; }
  [[nodiscard]] Layout activation_layout() const override { return Layout::plain; }
  [[nodiscard]] int64_t last_level_cache_bytes() const override { return l2_bytes_; }
  [[nodiscard]] Precision precision() const override { return precision_; }

  [[nodiscard]] Tensor allocate(const TensorDesc& desc) override;
  void copy_from_host(Tensor& dst, std::span<const float> src) override;
  void copy_to_host(const Tensor& src, std::span<float> dst) override;
  void copy_labels_from_host(Tensor& dst, std::span<const int32_t> src) override;
  void fill(Tensor& dst, float value) override;
  void copy(const Tensor& src, Tensor& dst) override;
  void add_into(Tensor& dst, const Tensor& src) override;
  void sum(std::span<const Tensor* const> srcs, Tensor& dst) override;
  void sgd_update(Tensor& weights, const Tensor& gradient, Tensor& velocity,
                  const SgdOptions& options, float gradient_scale) override;
  [[nodiscard]] std::unique_ptr<LayerRunner> make_runner(const Layer& layer,
                                                         int64_t batch) override;
  void synchronize() override;
  [[nodiscard]] std::unique_ptr<DeviceTimer> make_timer() override;

  [[nodiscard]] cudnnHandle_t cudnn() const { return cudnn_; }
  [[nodiscard]] cublasHandle_t cublas() const { return cublas_; }
  [[nodiscard]] cudaStream_t stream() const { return stream_; }
  // Device memory the size of `bytes`, freed with the returned tensor (workspaces, scratch).
  [[nodiscard]] Tensor scratch(int64_t bytes);

 private:
  cudaStream_t stream_ = nullptr;
  cudnnHandle_t cudnn_ = nullptr;
  cublasHandle_t cublas_ = nullptr;
  std::string device_name_;
  int64_t l2_bytes_ = 0;
  Precision precision_ = Precision::fp32;
};

// cuDNN's data type of a tensor data type (f32, bf16, f16).
cudnnDataType_t to_cudnn(DataType type);
// Whether a data type is one of the 16-bit ones, and whether that one is BF16.
inline bool is_16bit(DataType type) { return type == DataType::bf16 || type == DataType::f16; }

// An NCHW tensor descriptor (float unless said), destroyed with the object.
class TensorDescriptor {
 public:
  TensorDescriptor(int64_t n, int64_t c, int64_t h, int64_t w,
                   cudnnDataType_t type = CUDNN_DATA_FLOAT);
  ~TensorDescriptor();
  TensorDescriptor(const TensorDescriptor&) = delete;
  TensorDescriptor& operator=(const TensorDescriptor&) = delete;
  [[nodiscard]] cudnnTensorDescriptor_t get() const { return desc_; }

 private:
  cudnnTensorDescriptor_t desc_ = nullptr;
};

std::unique_ptr<LayerRunner> make_cuda_runner(CudaBackend& backend, const Layer& layer,
                                              int64_t batch);

}  // namespace ralp::kernels::cuda
