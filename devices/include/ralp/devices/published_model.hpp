// The cost model of a published profile: every layer's passes through the GPU kernel model
// (gpu_kernels.hpp) with the parameters fitted to published kernel timings, in a precision: FP32
// on the CUDA cores with `kernel_model`; FP16, BF16 or TF32 on the tensor cores with
// `tensor_kernel_model` where the profile has one and lists the precision's peak, else on the
// CUDA cores at the precision's peak (P100's FP16) with `kernel_model`.
#pragma once

#include <string>

#include "ralp/devices/cost_model.hpp"
#include "ralp/devices/gpu_kernels.hpp"

namespace ralp {

// The kernel model's device figures from a profile in a precision: the peak FLOP/s of that
// precision's products (precision_peak) and the memory bandwidth, both times the architecture
// efficiency of a derived profile, its multiprocessors, and operands of activation_bytes.
GpuShape gpu_shape(const DeviceProfile& profile, Precision precision = Precision::fp32);
// Whether `precision` runs on the profile's tensor-core path: not FP32, a tensor_kernel_model,
// and a peak listed for the precision.
bool uses_tensor_cores(const DeviceProfile& profile, Precision precision);

// One layer's passes: convolutions by the fastest cuDNN algorithm, fully connected layers as
// cuBLAS GEMMs, every other layer as streaming kernels, each moving gpu.element_bytes per value;
// each pass with work also pays `framework` (a framework's own cost per layer and pass). With
// available.tensor_ops, a convolution whose channels are not multiples of 8 also pays a kernel
// that copies its input into the padded layout (forward) and one that pads its output's gradient
// (backward), and fully connected GEMMs run with dimensions padded to multiples of 8.
LayerCost gpu_layer_cost(const LayerKey& key, const GpuShape& gpu, const GpuKernelParams& params,
                         Seconds framework = Seconds(0.0), const ConvAlgorithms& available = {});

class PublishedGpuModel final : public CostModel {
 public:
  // The profile must be a published one (kernel_model and published present).
  explicit PublishedGpuModel(const DeviceProfile& profile, Precision precision = Precision::fp32);
  [[nodiscard]] LayerCost estimate(const LayerKey& key) const override;
  [[nodiscard]] std::string describe() const override;

 private:
  GpuShape gpu_;
  GpuKernelParams params_;
  ConvAlgorithms algorithms_;
  Seconds framework_;
  std::string name_;
  Precision precision_;
};

}  // namespace ralp
