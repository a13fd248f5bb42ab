// The CPU backend: host memory, parameter-server operations as oneDNN sums, wall-clock timing.
// Every kernel runs on oneDNN's OpenMP threads: OpenBLAS keeps its own thread pool, whose workers
// spin after each call and, on the same cores, slowed the next oneDNN primitive by an order of
// magnitude; its GEMM was also slower than oneDNN's inner product for FC layers (see bench/).
#include "cpu/cpu_backend.hpp"
#include "../tensor_checks.hpp"
#include "ralp/devices/device_profile.hpp"
#include "ralp/kernels/bf16.hpp"

#include <omp.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <stdexcept>

namespace ralp::kernels::cpu {
namespace {

constexpr size_t kAlignment = 64;  // one cache line, the widest AVX-512 load
// The caches of the first CPU, as Linux describes them (index0 .. indexN, each with its level and
// size). sysconf(_SC_LEVEL3_CACHE_SIZE) reads CPUID instead, which virtual machines fill with
// figures that are not the host's (a measured profile records the size it used:
// last_level_cache_bytes).
constexpr const char* kSysfsCacheFolder = "/sys/devices/system/cpu/cpu0/cache";

class HostStorage final : public TensorStorage {
 public:
  explicit HostStorage(size_t bytes)
      : data_(std::aligned_alloc(kAlignment, (bytes + kAlignment - 1) / kAlignment * kAlignment +
                                                 kAlignment)) {
    if (data_ == nullptr) throw std::bad_alloc();
  }
  ~HostStorage() override { std::free(data_); }
  HostStorage(const HostStorage&) = delete;
  HostStorage& operator=(const HostStorage&) = delete;
  [[nodiscard]] void* data() override { return data_; }

 private:
  void* data_;
};

class WallTimer final : public DeviceTimer {
 public:
  void start() override { start_ = std::chrono::steady_clock::now(); }
  void stop() override { stop_ = std::chrono::steady_clock::now(); }
  [[nodiscard]] Seconds elapsed() override {
    return Seconds(std::chrono::duration<double>(stop_ - start_).count());
  }

 private:
  std::chrono::steady_clock::time_point start_, stop_;
};

// Whether oneDNN runs AVX-512 code here: its BF16 kernels need it (native BF16 instructions on
// avx512_core_bf16 and later, emulated on plain avx512_core).
bool has_avx512_core() {
  using dnnl::cpu_isa;
  const cpu_isa isa = dnnl::get_effective_cpu_isa();
  return isa == cpu_isa::avx512_core || isa == cpu_isa::avx512_core_vnni ||
         isa == cpu_isa::avx512_core_bf16 || isa == cpu_isa::avx512_core_amx;
}

// The instruction set oneDNN's kernels use here, in oneDNN's words.
std::string isa_name() {
  using dnnl::cpu_isa;
  switch (dnnl::get_effective_cpu_isa()) {
    case cpu_isa::avx512_core:
      return "avx512_core";
    case cpu_isa::avx512_core_vnni:
      return "avx512_core_vnni";
    case cpu_isa::avx512_core_bf16:
      return "avx512_core_bf16";
    case cpu_isa::avx512_core_amx:
      return "avx512_core_amx";
    case cpu_isa::avx2:
      return "avx2";
    default:
      return "other";
  }
}

std::string cpu_precision_unavailable_reason(Precision precision) {
  switch (precision) {
    case Precision::fp32:
      return {};
    case Precision::bf16:
      if (has_avx512_core()) return {};
      return "the CPU backend computes in bf16 only with AVX-512 (oneDNN's BF16 kernels); this "
             "CPU has none";
    case Precision::tf32:
      return "the CPU backend cannot compute in tf32 (a GPU tensor-core format)";
    case Precision::fp16:
      return "the CPU backend cannot compute in fp16 (oneDNN 2.6 has no FP16 convolution for "
             "x86 CPUs)";
  }
  return "unknown precision";
}

}  // namespace

dnnl::memory::data_type to_dnnl(DataType type) {
  using dt = dnnl::memory::data_type;
  switch (type) {
    case DataType::f32:
      return dt::f32;
    case DataType::s32:
      return dt::s32;
    case DataType::bf16:
      return dt::bf16;
    case DataType::f16:
      return dt::f16;
  }
  return dt::undef;
}

dnnl::memory::desc to_dnnl(const TensorDesc& desc) {
  using tag = dnnl::memory::format_tag;
  const dnnl::memory::dims dims(desc.dims.begin(), desc.dims.end());
  const auto type = to_dnnl(desc.type);
  if (desc.layout == Layout::channels_last && dims.size() == 4) return {dims, type, tag::nhwc};
  static const tag plain[] = {tag::undef, tag::a, tag::ab, tag::abc, tag::abcd, tag::abcde};
  if (dims.empty() || dims.size() > 5) throw std::invalid_argument("unsupported tensor rank");
  return {dims, type, plain[dims.size()]};
}

dnnl::memory unbound_memory(const dnnl::memory::desc& md, const dnnl::engine& engine) {
  return dnnl::memory(md, engine, DNNL_MEMORY_NONE);
}

void bind(dnnl::memory& memory, const Tensor* tensor) {
  if (tensor == nullptr) throw std::invalid_argument("a tensor the pass needs is missing");
  memory.set_data_handle(tensor->raw());
}

CpuBackend::CpuBackend(int threads, CpuPassLayout pass_layout, Precision precision)
    : threads_(threads),
      pass_layout_(pass_layout),
      precision_(precision),
      engine_(dnnl::engine::kind::cpu, 0),
      stream_(engine_),
      cpu_model_(this_machine_cpu_model()) {
  if (threads < 1) throw std::invalid_argument("threads must be >= 1");
  if (const std::string why = cpu_precision_unavailable_reason(precision); !why.empty()) {
    throw std::invalid_argument(why);
  }
  activate();
}

void CpuBackend::activate() const {
  if (omp_get_max_threads() != threads_) omp_set_num_threads(threads_);
}

int64_t CpuBackend::last_level_cache_bytes() const {
  return cpu_last_level_cache_bytes(kSysfsCacheFolder);
}

std::string CpuBackend::device_name() const {
  return cpu_model_ + " (" + std::to_string(threads_) + (threads_ == 1 ? " thread)" : " threads)");
}

std::map<std::string, std::string> CpuBackend::provenance() const {
  const dnnl_version_t* v = dnnl_version();
  std::map<std::string, std::string> out = {
      {"device", "cpu"},
      {"cpu_model", cpu_model_},
      {"onednn", std::to_string(v->major) + "." + std::to_string(v->minor) + "." +
                     std::to_string(v->patch) + " (" + v->hash + ")"},
      {"threads", std::to_string(threads_)}};
  if (precision_ != Precision::fp32) {
    out["precision"] = std::string(to_string(precision_));
    out["onednn_isa"] = isa_name();
  }
  return out;
}

Tensor CpuBackend::allocate(const TensorDesc& desc) {
  return {desc, std::make_unique<HostStorage>(static_cast<size_t>(desc.bytes()))};
}

void CpuBackend::copy_from_host(Tensor& dst, std::span<const float> src) {
  check_span(dst, src.size());
  if (dst.desc().type == DataType::bf16) {
    from_plain_order(dst.desc(), src.data(), dst.bf16());
  } else {
    from_plain_order(dst.desc(), src.data(), dst.f32());
  }
}

void CpuBackend::copy_to_host(const Tensor& src, std::span<float> dst) {
  check_span(src, dst.size());
  if (src.desc().type == DataType::bf16) {
    to_plain_order(src.desc(), src.bf16(), dst.data());
  } else {
    to_plain_order(src.desc(), src.f32(), dst.data());
  }
}

void CpuBackend::copy_labels_from_host(Tensor& dst, std::span<const int32_t> src) {
  check_span(dst, src.size());
  std::memcpy(dst.raw(), src.data(), src.size_bytes());
}

void CpuBackend::fill(Tensor& dst, float value) {
  if (dst.desc().type == DataType::bf16) {
    std::fill(dst.bf16(), dst.bf16() + dst.elements(), to_bf16(value));
  } else {
    std::fill(dst.f32(), dst.f32() + dst.elements(), value);
  }
}

void CpuBackend::copy(const Tensor& src, Tensor& dst) {
  check_same_size(src, dst, "copy");
  std::memcpy(dst.raw(), src.raw(), static_cast<size_t>(src.desc().bytes()));
}

void CpuBackend::add_into(Tensor& dst, const Tensor& src) {
  check_same_size(src, dst, "add_into");
  scaled_sum({{1.0F, &dst}, {1.0F, &src}}, dst);
}

void CpuBackend::sum(std::span<const Tensor* const> srcs, Tensor& dst) {
  if (srcs.empty()) throw std::invalid_argument("sum of no buffers");
  std::vector<std::pair<float, const Tensor*>> terms;
  for (const Tensor* t : srcs) {
    check_same_size(*t, dst, "sum");
    terms.emplace_back(1.0F, t);
  }
  scaled_sum(terms, dst);
}

void CpuBackend::sgd_update(Tensor& weights, const Tensor& gradient, Tensor& velocity,
                            const SgdOptions& options, float gradient_scale) {
  check_same_size(weights, gradient, "sgd_update");
  check_same_size(weights, velocity, "sgd_update");
  std::vector<std::pair<float, const Tensor*>> terms = {{options.momentum, &velocity},
                                                        {gradient_scale, &gradient}};
  if (options.weight_decay != 0.0F) terms.emplace_back(options.weight_decay, &weights);
  scaled_sum(terms, velocity);
  scaled_sum({{1.0F, &weights}, {-options.learning_rate, &velocity}}, weights);
}

void CpuBackend::scaled_sum(const std::vector<std::pair<float, const Tensor*>>& terms, Tensor& dst) {
  activate();
  const int64_t n = dst.elements();
  const DataType type = dst.desc().type;
  for (const auto& [scale, tensor] : terms) {
    if (tensor->desc().type != type) {
      throw std::invalid_argument("sum of tensors of types " + tensor->desc().to_string() +
                                  " and " + dst.desc().to_string());
    }
  }
  const dnnl::memory::desc md({n}, to_dnnl(type), dnnl::memory::format_tag::a);
  std::vector<float> scales;
  for (const auto& [scale, tensor] : terms) scales.push_back(scale);
  SumKey key{n, type, scales};
  auto it = sums_.find(key);
  if (it == sums_.end()) {
    const std::vector<dnnl::memory::desc> mds(terms.size(), md);
    it = sums_.emplace(std::move(key), dnnl::sum(dnnl::sum::primitive_desc(md, scales, mds, engine_)))
             .first;
  }
  std::unordered_map<int, dnnl::memory> args;
  for (size_t i = 0; i < terms.size(); ++i) {
    args.emplace(DNNL_ARG_MULTIPLE_SRC + static_cast<int>(i),
                 dnnl::memory(md, engine_, terms[i].second->raw()));
  }
  args.emplace(DNNL_ARG_DST, dnnl::memory(md, engine_, dst.raw()));
  it->second.execute(stream_, args);
  stream_.wait();
}

std::unique_ptr<LayerRunner> CpuBackend::make_runner(const Layer& layer, int64_t batch) {
  activate();
  return make_cpu_runner(*this, layer, batch);
}

std::unique_ptr<DeviceTimer> CpuBackend::make_timer() { return std::make_unique<WallTimer>(); }

}  // namespace ralp::kernels::cpu

namespace ralp::kernels {

namespace {

// On AVX-512, convolutions from this many input channels or on images of fewer pixels than this
// run their backward-data pass in oneDNN's blocked layout, and convolutions on images from this
// many pixels on their backward-weight pass.
constexpr int64_t kBlockedBackwardDataMinChannels = 128;
constexpr int64_t kBlockedPixels = 28 * 28;
// Without AVX-512, convolutions of fewer input channels than this (a model's first layer, on
// RGB images) run their forward on channels-last data.
constexpr int64_t kBlockedForwardMinChannels = 8;

bool has_avx512() {
  using dnnl::cpu_isa;
  const cpu_isa isa = dnnl::get_effective_cpu_isa();
  return isa == cpu_isa::avx512_core || isa == cpu_isa::avx512_core_vnni ||
         isa == cpu_isa::avx512_core_bf16 || isa == cpu_isa::avx512_core_amx;
}

}  // namespace

// From both layouts of every AlexNet and VGG-16 convolution and FC pass measured side by side
// (bench/kernels_bench.cpp prints them, marking the layout this function picks). With AVX-512
// (oneDNN 2.6's avx512_core kernels), forward passes are faster channels-last; backward-data
// passes are faster blocked from 128 input channels on and on AlexNet's 27x27 conv2,
// channels-last on VGG-16's 64-channel images; backward-weight passes are faster blocked on
// images from 28x28 on and channels-last on smaller ones. With AVX2 only, oneDNN's channels-last
// kernels lose to the blocked ones in nearly every pass, reorders included; only a first layer's
// forward, whose 3 input channels fill no block, is faster channels-last. FC layers are faster on
// plain weights everywhere: a blocked layout's weight reorder re-reads every weight each pass.
CpuPassLayout automatic_cpu_pass_layout(const Layer& layer, KernelPass pass) {
  if (layer.kind() != LayerKind::conv2d) return CpuPassLayout::channels_last;
  const TensorShape& in = layer.input_shapes.front();
  bool blocked = false;
  if (has_avx512()) {
    switch (pass) {
      case KernelPass::forward:
        break;
      case KernelPass::backward_data:
        blocked = in.channels >= kBlockedBackwardDataMinChannels ||
                  in.height * in.width < kBlockedPixels;
        break;
      case KernelPass::backward_weight:
        blocked = in.height * in.width >= kBlockedPixels;
        break;
    }
  } else {
    blocked = pass != KernelPass::forward || in.channels >= kBlockedForwardMinChannels;
  }
  return blocked ? CpuPassLayout::blocked : CpuPassLayout::channels_last;
}

std::unique_ptr<Backend> make_cpu_backend(int threads, CpuPassLayout layout, Precision precision) {
  return std::make_unique<cpu::CpuBackend>(threads, layout, precision);
}

}  // namespace ralp::kernels
