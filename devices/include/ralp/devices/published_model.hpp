// The cost model of a published profile: every layer's passes through the GPU kernel model
// (gpu_kernels.hpp) with the parameters fitted to published kernel timings.
#pragma once

#include <string>

#include "ralp/devices/cost_model.hpp"
#include "ralp/devices/gpu_kernels.hpp"

namespace ralp {

// The kernel model's device figures from a profile: its peak FLOP/s and memory bandwidth, both
// times the architecture efficiency of a derived profile, and its multiprocessors.
GpuShape gpu_shape(const DeviceProfile& profile);

// One layer's passes: convolutions by the fastest cuDNN algorithm, fully connected layers as
// cuBLAS GEMMs, every other layer as streaming kernels; each pass with work also pays
// `framework` (a framework's own cost per layer and pass).
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
  Seconds framework_;
  std::string name_;
  Precision precision_;
};

}  // namespace ralp
