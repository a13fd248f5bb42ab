// The CUDA backend module: device detection that never aborts, device memory, cuBLAS
// parameter-server operations, CUDA-event timing, and the entry point the registry opens.
#include "cuda/cuda_backend.hpp"

#include <stdexcept>
#include <vector>

#include "cuda/cuda_elementwise.hpp"
#include "../cuda_module.hpp"
#include "../tensor_checks.hpp"

namespace ralp::kernels::cuda {
namespace {

class DeviceStorage final : public TensorStorage {
 public:
  explicit DeviceStorage(size_t bytes) { check(cudaMalloc(&data_, bytes == 0 ? 1 : bytes), "cudaMalloc"); }
  ~DeviceStorage() override { cudaFree(data_); }
  DeviceStorage(const DeviceStorage&) = delete;
  DeviceStorage& operator=(const DeviceStorage&) = delete;
  [[nodiscard]] void* data() override { return data_; }

 private:
  void* data_ = nullptr;
};

class EventTimer final : public DeviceTimer {
 public:
  explicit EventTimer(cudaStream_t stream) : stream_(stream) {
    check(cudaEventCreate(&start_), "cudaEventCreate");
    check(cudaEventCreate(&stop_), "cudaEventCreate");
  }
  ~EventTimer() override {
    cudaEventDestroy(start_);
    cudaEventDestroy(stop_);
  }
  EventTimer(const EventTimer&) = delete;
  EventTimer& operator=(const EventTimer&) = delete;
  void start() override { check(cudaEventRecord(start_, stream_), "cudaEventRecord"); }
  void stop() override { check(cudaEventRecord(stop_, stream_), "cudaEventRecord"); }
  [[nodiscard]] Seconds elapsed() override {
    check(cudaEventSynchronize(stop_), "cudaEventSynchronize");
    float ms = 0.0F;
    check(cudaEventElapsedTime(&ms, start_, stop_), "cudaEventElapsedTime");
    return Seconds(static_cast<double>(ms) * 1e-3);
  }

 private:
  cudaStream_t stream_;
  cudaEvent_t start_ = nullptr, stop_ = nullptr;
};

std::string version_string(int v) {
  // CUDA encodes 13.0 as 13000, cuDNN 9.19.0 as 91900.
  return std::to_string(v / 1000) + "." + std::to_string(v % 1000 / 10);
}

}  // namespace

void check(cudaError_t status, const char* call) {
  if (status != cudaSuccess) {
    throw std::runtime_error(std::string(call) + ": " + cudaGetErrorString(status));
  }
}

void check(cudnnStatus_t status, const char* call) {
  if (status != CUDNN_STATUS_SUCCESS) {
    throw std::runtime_error(std::string(call) + ": " + cudnnGetErrorString(status));
  }
}

void check(cublasStatus_t status, const char* call) {
  if (status != CUBLAS_STATUS_SUCCESS) {
    throw std::runtime_error(std::string(call) + ": " + cublasGetStatusString(status));
  }
}

// Why this backend cannot compute in `precision` on a device of compute capability `major`.x,
// or empty when it can: FP32 everywhere, FP16 from Volta's tensor cores, TF32 (FP32 tensors,
// tensor-core products) and BF16 from Ampere.
std::string precision_unavailable_reason(Precision precision, int major) {
  switch (precision) {
    case Precision::fp32:
      return {};
    case Precision::tf32:
      if (major >= 8) return {};
      return "tf32 needs compute capability 8.0 (Ampere) or later; this device has " +
             std::to_string(major) + ".x";
    case Precision::fp16:
      if (major >= 7) return {};
      return "fp16 needs tensor cores, compute capability 7.0 (Volta) or later; this device has " +
             std::to_string(major) + ".x";
    case Precision::bf16:
      if (major >= 8) return {};
      return "bf16 needs compute capability 8.0 (Ampere) or later; this device has " +
             std::to_string(major) + ".x";
  }
  return "unknown precision";
}

cudnnDataType_t to_cudnn(DataType type) {
  switch (type) {
    case DataType::bf16:
      return CUDNN_DATA_BFLOAT16;
    case DataType::f16:
      return CUDNN_DATA_HALF;
    case DataType::s32:
      return CUDNN_DATA_INT32;
    case DataType::f32:
      break;
  }
  return CUDNN_DATA_FLOAT;
}

TensorDescriptor::TensorDescriptor(int64_t n, int64_t c, int64_t h, int64_t w,
                                   cudnnDataType_t type) {
  check(cudnnCreateTensorDescriptor(&desc_), "cudnnCreateTensorDescriptor");
  check(cudnnSetTensor4dDescriptor(desc_, CUDNN_TENSOR_NCHW, type,
                                   static_cast<int>(n), static_cast<int>(c), static_cast<int>(h),
                                   static_cast<int>(w)),
        "cudnnSetTensor4dDescriptor");
}

TensorDescriptor::~TensorDescriptor() { cudnnDestroyTensorDescriptor(desc_); }

CudaBackend::CudaBackend(Precision precision) : precision_(precision) {
  check(cudaSetDevice(0), "cudaSetDevice");
  cudaDeviceProp prop{};
  check(cudaGetDeviceProperties(&prop, 0), "cudaGetDeviceProperties");
  if (const std::string why = precision_unavailable_reason(precision, prop.major); !why.empty()) {
    throw std::invalid_argument(why);
  }
  device_name_ = prop.name;
  l2_bytes_ = prop.l2CacheSize;
  check(cudaStreamCreate(&stream_), "cudaStreamCreate");
  check(cudnnCreate(&cudnn_), "cudnnCreate");
  check(cudnnSetStream(cudnn_, stream_), "cudnnSetStream");
  check(cublasCreate(&cublas_), "cublasCreate");
  check(cublasSetStream(cublas_, stream_), "cublasSetStream");
  // FP32: default math, without TF32 rounding, so the kernels meet the CPU's accuracy. TF32:
  // cuBLAS's FP32 GEMMs on tensor cores with TF32 inputs and FP32 accumulation.
  check(cublasSetMathMode(cublas_, precision_ == Precision::tf32 ? CUBLAS_TF32_TENSOR_OP_MATH
                                                                 : CUBLAS_DEFAULT_MATH),
        "cublasSetMathMode");
}

CudaBackend::~CudaBackend() {
  if (cublas_ != nullptr) cublasDestroy(cublas_);
  if (cudnn_ != nullptr) cudnnDestroy(cudnn_);
  if (stream_ != nullptr) cudaStreamDestroy(stream_);
}

std::map<std::string, std::string> CudaBackend::provenance() const {
  int driver = 0, runtime = 0, cublas_version = 0;
  cudaDriverGetVersion(&driver);
  cudaRuntimeGetVersion(&runtime);
  cublasGetVersion(cublas_, &cublas_version);
  const size_t cudnn_version = cudnnGetVersion();
  std::map<std::string, std::string> out = {{"device", device_name_},
          {"driver", "CUDA " + version_string(driver)},
          {"cuda_runtime", version_string(runtime)},
          {"cudnn", std::to_string(cudnn_version / 10000) + "." +
                        std::to_string(cudnn_version % 10000 / 100) + "." +
                        std::to_string(cudnn_version % 100)},
          {"cublas", std::to_string(cublas_version / 10000) + "." +
                         std::to_string(cublas_version % 10000 / 100) + "." +
                         std::to_string(cublas_version % 100)},
          {"threads", "1"}};
  if (precision_ != Precision::fp32) out["precision"] = std::string(to_string(precision_));
  return out;
}

Tensor CudaBackend::allocate(const TensorDesc& desc) {
  return {desc, std::make_unique<DeviceStorage>(static_cast<size_t>(desc.bytes()))};
}

Tensor CudaBackend::scratch(int64_t bytes) {
  return allocate({{(bytes + 3) / 4}});
}

// 16-bit tensors go through the device: the floats are copied into a staging buffer and converted
// there (launch_to16, launch_from16), rounding to nearest even.
void CudaBackend::copy_from_host(Tensor& dst, std::span<const float> src) {
  check_span(dst, src.size());
  if (is_16bit(dst.desc().type)) {
    Tensor staging = allocate({{dst.elements()}});
    copy_from_host(staging, src);
    launch_to16(staging.f32(), dst.raw(), dst.elements(), dst.desc().type == DataType::bf16,
                stream_);
    check(cudaGetLastError(), "conversion kernel");
    synchronize();
    return;
  }
  check(cudaMemcpyAsync(dst.raw(), src.data(), src.size_bytes(), cudaMemcpyHostToDevice, stream_),
        "cudaMemcpyAsync");
  synchronize();
}

void CudaBackend::copy_to_host(const Tensor& src, std::span<float> dst) {
  check_span(src, dst.size());
  if (is_16bit(src.desc().type)) {
    Tensor staging = allocate({{src.elements()}});
    launch_from16(src.raw(), staging.f32(), src.elements(), src.desc().type == DataType::bf16,
                  stream_);
    check(cudaGetLastError(), "conversion kernel");
    copy_to_host(staging, dst);
    return;
  }
  check(cudaMemcpyAsync(dst.data(), src.raw(), dst.size_bytes(), cudaMemcpyDeviceToHost, stream_),
        "cudaMemcpyAsync");
  synchronize();
}

void CudaBackend::copy_labels_from_host(Tensor& dst, std::span<const int32_t> src) {
  check_span(dst, src.size());
  check(cudaMemcpyAsync(dst.raw(), src.data(), src.size_bytes(), cudaMemcpyHostToDevice, stream_),
        "cudaMemcpyAsync");
  synchronize();
}

void CudaBackend::fill(Tensor& dst, float value) {
  if (value == 0.0F) {
    check(cudaMemsetAsync(dst.raw(), 0, static_cast<size_t>(dst.desc().bytes()), stream_),
          "cudaMemsetAsync");
  } else if (is_16bit(dst.desc().type)) {
    launch_fill16(dst.raw(), dst.elements(), value, dst.desc().type == DataType::bf16, stream_);
    check(cudaGetLastError(), "fill kernel");
  } else {
    launch_fill(dst.f32(), dst.elements(), value, stream_);
    check(cudaGetLastError(), "fill kernel");
  }
}

void CudaBackend::copy(const Tensor& src, Tensor& dst) {
  check_same_size(src, dst, "copy");
  check(cudaMemcpyAsync(dst.raw(), src.raw(), static_cast<size_t>(src.desc().bytes()),
                        cudaMemcpyDeviceToDevice, stream_),
        "cudaMemcpyAsync");
}

void CudaBackend::add_into(Tensor& dst, const Tensor& src) {
  check_same_size(src, dst, "add_into");
  if (src.desc().type != dst.desc().type) {
    throw std::invalid_argument("add_into of " + src.desc().to_string() + " into " +
                                dst.desc().to_string());
  }
  if (is_16bit(dst.desc().type)) {
    launch_add16(dst.raw(), src.raw(), dst.elements(), dst.desc().type == DataType::bf16, stream_);
    check(cudaGetLastError(), "add kernel");
    return;
  }
  const float one = 1.0F;
  check(cublasSaxpy(cublas_, static_cast<int>(dst.elements()), &one, src.f32(), 1, dst.f32(), 1),
        "cublasSaxpy");
}

void CudaBackend::sum(std::span<const Tensor* const> srcs, Tensor& dst) {
  if (srcs.empty()) throw std::invalid_argument("sum of no buffers");
  for (const Tensor* s : srcs) check_same_size(*s, dst, "sum");
  copy(*srcs[0], dst);
  for (size_t i = 1; i < srcs.size(); ++i) add_into(dst, *srcs[i]);
}

void CudaBackend::sgd_update(Tensor& weights, const Tensor& gradient, Tensor& velocity,
                             const SgdOptions& options, float gradient_scale) {
  check_same_size(weights, gradient, "sgd_update");
  check_same_size(weights, velocity, "sgd_update");
  const int n = static_cast<int>(weights.elements());
  const float minus_lr = -options.learning_rate;
  check(cublasSscal(cublas_, n, &options.momentum, velocity.f32(), 1), "cublasSscal");
  check(cublasSaxpy(cublas_, n, &gradient_scale, gradient.f32(), 1, velocity.f32(), 1),
        "cublasSaxpy");
  if (options.weight_decay != 0.0F) {
    check(cublasSaxpy(cublas_, n, &options.weight_decay, weights.f32(), 1, velocity.f32(), 1),
          "cublasSaxpy");
  }
  check(cublasSaxpy(cublas_, n, &minus_lr, velocity.f32(), 1, weights.f32(), 1), "cublasSaxpy");
}

std::unique_ptr<LayerRunner> CudaBackend::make_runner(const Layer& layer, int64_t batch) {
  return make_cuda_runner(*this, layer, batch);
}

void CudaBackend::synchronize() { check(cudaStreamSynchronize(stream_), "cudaStreamSynchronize"); }

std::unique_ptr<DeviceTimer> CudaBackend::make_timer() {
  return std::make_unique<EventTimer>(stream_);
}

}  // namespace ralp::kernels::cuda

namespace ralp::kernels::cuda {
namespace {

std::string unavailable_reason() {
  // Without a driver this returns an error and leaves the count alone: start from zero.
  int count = 0;
  const cudaError_t status = cudaGetDeviceCount(&count);
  if (status != cudaSuccess) {
    return std::string("no CUDA device (cudaGetDeviceCount: ") + cudaGetErrorString(status) + ")";
  }
  if (count == 0) return "no CUDA device";
  // A device without a usable cuDNN or cuBLAS is no device for this backend.
  cudnnHandle_t cudnn = nullptr;
  if (const cudnnStatus_t s = cudnnCreate(&cudnn); s != CUDNN_STATUS_SUCCESS) {
    return std::string("CUDA device found but cudnnCreate failed: ") + cudnnGetErrorString(s);
  }
  cudnnDestroy(cudnn);
  cublasHandle_t cublas = nullptr;
  if (const cublasStatus_t s = cublasCreate(&cublas); s != CUBLAS_STATUS_SUCCESS) {
    return std::string("CUDA device found but cublasCreate failed: ") + cublasGetStatusString(s);
  }
  cublasDestroy(cublas);
  return {};
}

std::unique_ptr<Backend> make_backend(Precision precision) {
  if (const std::string reason = unavailable_reason(); !reason.empty()) {
    throw std::runtime_error(reason);
  }
  return std::make_unique<CudaBackend>(precision);
}

constexpr CudaModuleInterface kInterface{kCudaModuleInterfaceVersion, &unavailable_reason,
                                         &make_backend};

}  // namespace
}  // namespace ralp::kernels::cuda

// The module's one exported symbol (everything else in it is hidden): the registry in
// backend_registry.cpp looks it up by name.
extern "C" __attribute__((visibility("default"))) const ralp::kernels::CudaModuleInterface*
ralp_cuda_module() {
  return &ralp::kernels::cuda::kInterface;
}
