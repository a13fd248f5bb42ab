// The CPU backend's internals shared by its backend and runner sources: oneDNN engine and
// stream, descriptor conversions, and the thread setting.
#pragma once

#include <compare>
#include <map>
#include <span>
#include <vector>
#include <utility>

#include <oneapi/dnnl/dnnl.hpp>

#include "ralp/kernels/backend.hpp"

namespace ralp::kernels::cpu {

class CpuBackend final : public Backend {
 public:
  CpuBackend(int threads, CpuPassLayout pass_layout, Precision precision);

  [[nodiscard]] BackendKind kind() const override { return BackendKind::cpu; }
  [[nodiscard]] std::string device_name() const override;
  [[nodiscard]] std::map<std::string, std::string> provenance() const override;
  [[nodiscard]] int threads() const override { return threads_; }
  [[nodiscard]] Layout activation_layout() const override { return Layout::channels_last; }
  [[nodiscard]] int64_t last_level_cache_bytes() const override;
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
  void synchronize() override {}
  [[nodiscard]] std::unique_ptr<DeviceTimer> make_timer() override;

  // Sets this backend's thread count for oneDNN (OpenMP) on the calling thread;
  // every entry point calls it, so backends of different thread counts can share a process.
  void activate() const;
  [[nodiscard]] CpuPassLayout pass_layout() const { return pass_layout_; }
  [[nodiscard]] dnnl::engine& engine() { return engine_; }
  [[nodiscard]] dnnl::stream& stream() { return stream_; }

 private:
  // dst = sum of scale * tensor, one multithreaded pass; dst may be the first term's tensor.
  void scaled_sum(const std::vector<std::pair<float, const Tensor*>>& terms, Tensor& dst);

  struct SumKey {
    int64_t elements = 0;
    DataType type = DataType::f32;
    std::vector<float> scales;
    friend auto operator<=>(const SumKey&, const SumKey&) = default;
  };

  int threads_;
  CpuPassLayout pass_layout_;
  Precision precision_;
  dnnl::engine engine_;
  dnnl::stream stream_;
  std::string cpu_model_;
  // Sum primitives by size and scales, made on first use.
  std::map<SumKey, dnnl::sum> sums_;
};

// The oneDNN description of a tensor description, and the oneDNN type of a data type.
dnnl::memory::desc to_dnnl(const TensorDesc& desc);
dnnl::memory::data_type to_dnnl(DataType type);
// A memory object without a buffer; runners point it at tensors with set_data_handle.
dnnl::memory unbound_memory(const dnnl::memory::desc& md, const dnnl::engine& engine);
void bind(dnnl::memory& memory, const Tensor* tensor);

std::unique_ptr<LayerRunner> make_cpu_runner(CpuBackend& backend, const Layer& layer,
                                             int64_t batch);

}  // namespace ralp::kernels::cpu
