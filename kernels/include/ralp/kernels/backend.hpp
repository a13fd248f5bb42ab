// The kernel backend interface: tensors, per-layer runners (forward, backward-data,
// backward-weight) and the parameter-server operations (gradient sum, SGD), with the CPU
// (oneDNN) and CUDA (cuDNN, cuBLAS) implementations behind it.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "ralp/core/precision.hpp"
#include "ralp/core/units.hpp"
#include "ralp/kernels/tensor.hpp"
#include "ralp/model/layer.hpp"

namespace ralp::kernels {

enum class BackendKind { cpu, cuda };
std::string_view to_string(BackendKind kind);

// Identifies one dropout mask: element i of the mask drawn for (seed, step, worker, layer) is a
// pure function of those and i (see dropout_mask.hpp), so a layer draws the same mask wherever it
// runs, on a worker or on the parameter server.
struct MaskKey {
  uint64_t seed = 0;
  uint64_t step = 0;
  uint32_t worker = 0;
  uint32_t layer = 0;
};

// The tensors one pass of a layer reads and writes. Each pass documents the fields it uses; the
// others may stay null. Descriptions must match the runner's *_desc() accessors.
struct LayerArgs {
  std::vector<Tensor*> inputs;       // forward inputs, one per layer input
  Tensor* output = nullptr;          // forward output (the loss layer: softmax probabilities)
  Tensor* weights = nullptr;         // conv/fc weights, batch norm scale
  Tensor* bias = nullptr;            // conv/fc bias, batch norm shift
  Tensor* diff_output = nullptr;     // gradient of the loss with respect to `output`
  std::vector<Tensor*> diff_inputs;  // gradient with respect to each input; null entries skip it
  Tensor* diff_weights = nullptr;
  Tensor* diff_bias = nullptr;
  Tensor* labels = nullptr;  // loss layer: s32 [N], each in [0, classes)
  Tensor* loss = nullptr;    // loss layer forward: f32 [1], the mean over the batch
  MaskKey mask;              // dropout
};

// Runs one layer at one batch size. Built once (primitives, descriptors, algorithm choice and
// workspaces are made and cached then) and run many times: the unit both calibration and
// training use.
//   forward          reads inputs, weights, bias (labels for the loss); writes output (and loss)
//   backward_data    reads inputs, output, weights, diff_output (labels for the loss, whose
//                    gradient is that of the mean loss); writes the non-null diff_inputs. Only
//                    for layers with needs_input_gradient.
//   backward_weight  reads inputs, diff_output; writes diff_weights and diff_bias. Only for
//                    layers with parameters. Batch norm computes its parameter gradients in
//                    backward_data's primitive and hands them over here; without a preceding
//                    backward_data it runs that primitive itself.
// Both backward passes use the state of the last forward (max-pool indices, batch statistics).
//
// Precision. A runner's activations (inputs, outputs and their gradients) are of its activation
// type: f32, or bf16 / f16 under mixed precision. Whatever the precision, weights, biases and
// their gradients are f32 (the master copy; a mixed-precision pass converts the weights into its
// compute type itself and returns FP32 weight gradients), and the loss layer's output (softmax
// probabilities) and loss are f32: the loss is computed in FP32 from its 16-bit input.
class LayerRunner {
 public:
  LayerRunner(const Layer& layer, int64_t batch, Layout layout,
              DataType activation_type = DataType::f32);
  virtual ~LayerRunner() = default;
  LayerRunner(const LayerRunner&) = delete;
  LayerRunner& operator=(const LayerRunner&) = delete;

  [[nodiscard]] const Layer& layer() const { return layer_; }
  [[nodiscard]] int64_t batch() const { return batch_; }
  [[nodiscard]] DataType activation_type() const { return activation_type_; }
  [[nodiscard]] TensorDesc input_desc(size_t i) const;
  [[nodiscard]] TensorDesc output_desc() const;
  [[nodiscard]] bool has_weights() const { return layer_.weight_params > 0; }
  [[nodiscard]] bool has_bias() const { return layer_.bias_params > 0; }
  [[nodiscard]] TensorDesc weight_desc() const;  // plain; precondition: has_weights()
  [[nodiscard]] TensorDesc bias_desc() const;    // plain; precondition: has_bias()
  [[nodiscard]] TensorDesc labels_desc() const { return {{batch_}, DataType::s32, Layout::plain}; }

  virtual void forward(const LayerArgs& args) = 0;
  virtual void backward_data(const LayerArgs& args) = 0;
  virtual void backward_weight(const LayerArgs& args) = 0;

 protected:
  Layer layer_;
  int64_t batch_;
  Layout layout_;
  DataType activation_type_;
};

// The activations' type in a precision: bf16, f16, else f32 (TF32 stores FP32).
DataType activation_type(Precision precision);

struct SgdOptions {
  float learning_rate = 0.01F;
  float momentum = 0.9F;
  float weight_decay = 0.0F;
};

// Times device work: start() and stop() bracket work submitted by the calling thread; elapsed()
// waits for it. Wall clock on the CPU, CUDA events on a GPU.
class DeviceTimer {
 public:
  virtual ~DeviceTimer() = default;
  virtual void start() = 0;
  virtual void stop() = 0;
  [[nodiscard]] virtual Seconds elapsed() = 0;
};

class Backend {
 public:
  virtual ~Backend() = default;

  [[nodiscard]] virtual BackendKind kind() const = 0;
  // The device in words, without host names: "AMD EPYC (2 threads)", "NVIDIA H200".
  [[nodiscard]] virtual std::string device_name() const = 0;
  // Provenance for profiles: device, cpu_model or driver, library versions, threads.
  [[nodiscard]] virtual std::map<std::string, std::string> provenance() const = 0;
  // CPU threads the kernels use (the GPU backend: 1, the host thread that launches).
  [[nodiscard]] virtual int threads() const = 0;
  // Size of the last-level cache the kernels' data passes through (CPU L3, GPU L2), in bytes;
  // calibration keeps weights from staying in it between repetitions, as they do not in training.
  [[nodiscard]] virtual int64_t last_level_cache_bytes() const = 0;
  // The layout this backend keeps activations in.
  [[nodiscard]] virtual Layout activation_layout() const = 0;
  // The precision this backend's runners compute in, chosen when it is made; its activations
  // are of activation_type(precision()). Host copies convert: a host span is always floats.
  [[nodiscard]] virtual Precision precision() const = 0;
  [[nodiscard]] DataType activation_type() const { return kernels::activation_type(precision()); }

  // Memory. allocate leaves contents unspecified. Host copies are in plain (NCHW) order whatever
  // the tensor's layout; spans must hold exactly desc.elements() values of the tensor's type.
  [[nodiscard]] virtual Tensor allocate(const TensorDesc& desc) = 0;
  virtual void copy_from_host(Tensor& dst, std::span<const float> src) = 0;
  virtual void copy_to_host(const Tensor& src, std::span<float> dst) = 0;
  virtual void copy_labels_from_host(Tensor& dst, std::span<const int32_t> src) = 0;
  virtual void fill(Tensor& dst, float value) = 0;
  virtual void copy(const Tensor& src, Tensor& dst) = 0;  // same desc

  // Parameter-server side. Tensors of one call have equal element counts.
  virtual void add_into(Tensor& dst, const Tensor& src) = 0;  // dst += src
  // dst = sum of srcs (the W workers' gradients of one variable); dst may not alias a src.
  virtual void sum(std::span<const Tensor* const> srcs, Tensor& dst) = 0;
  // SGD with momentum, gradient first scaled by `gradient_scale` (1/W when summing W workers'
  // gradients): v = momentum * v + scale * g + weight_decay * w; w -= learning_rate * v.
  virtual void sgd_update(Tensor& weights, const Tensor& gradient, Tensor& velocity,
                          const SgdOptions& options, float gradient_scale) = 0;

  // A runner for `layer` at `batch` images. Throws std::invalid_argument for a layer the
  // backend cannot run, saying why.
  [[nodiscard]] virtual std::unique_ptr<LayerRunner> make_runner(const Layer& layer,
                                                                 int64_t batch) = 0;

  // Waits for all submitted work (a no-op on the CPU, whose kernels are synchronous).
  virtual void synchronize() = 0;
  [[nodiscard]] virtual std::unique_ptr<DeviceTimer> make_timer() = 0;

  // Convenience: allocate and fill from host / read back to a new vector.
  [[nodiscard]] Tensor upload(const TensorDesc& desc, std::span<const float> values);
  [[nodiscard]] std::vector<float> download(const Tensor& src);
};

// The size in bytes of a CPU's last-level cache from a Linux sysfs cache folder
// (/sys/devices/system/cpu/cpu0/cache: index0 .. indexN, each with `level`, `type` and `size`
// such as "32768K"): its highest-level data or unified cache. A missing or unreadable folder, or
// a size outside 64 KiB .. 1 GiB (no CPU's cache; a sign of a virtual machine's made-up figures),
// gives 32 MiB.
int64_t cpu_last_level_cache_bytes(const std::filesystem::path& sysfs_cache_folder);

// Which backends this build has (run-time availability aside).
bool cpu_backend_built();
bool cuda_backend_built();

// The CUDA backend is a loadable module, libralp_cuda.so, that the build places beside the ralp
// executable. The first request for a CUDA device (cuda_unavailable_reason, make_cuda_backend,
// select_backend with a device other than cpu) opens it, so that commands which never ask for
// one do not load CUDA, cuDNN and cuBLAS. Without the module the CUDA backend is unavailable and
// the reason names the file.

// The module file this process opens: beside the executable, else in the build folder (see
// ralp/core/loadable_module.hpp). Empty when this build has no CUDA backend.
std::filesystem::path cuda_module_path();

struct CudaModuleStatus {
  bool opened = false;  // the module loaded and speaks this build's interface
  std::string reason;   // why no CUDA device can be used; empty when one can
};

// Opens the CUDA backend module at `path` (it stays loaded) and asks it for a device. Never
// throws: a missing file, a file that is no module or a module of another build gives
// opened = false and the reason.
CudaModuleStatus probe_cuda_module(const std::filesystem::path& path);

// Why no CUDA device can be used ("no CUDA device (cudaGetDeviceCount: insufficient driver)",
// "no CUDA backend: cannot open .../libralp_cuda.so: ..."), or empty when one can. Never aborts,
// whatever the machine.
std::string cuda_unavailable_reason();

enum class DeviceChoice { automatic, cpu, cuda };

struct BackendOptions {
  DeviceChoice device = DeviceChoice::automatic;
  int threads = 1;  // CPU backend; >= 1
  Precision precision = Precision::fp32;
};

struct BackendSelection {
  std::unique_ptr<Backend> backend;
  std::string note;  // one line when the choice fell back to the CPU, else empty
};

// automatic: CUDA when built and a device answers, else the CPU. cuda: the same, with a note when
// it falls back. cpu: the CPU. Throws std::runtime_error when no backend can serve (the CPU
// backend not built and no CUDA device).
BackendSelection select_backend(const BackendOptions& options);

// Where the CPU backend's convolution and FC passes keep their data. Activations between layers
// are channels-last whatever the choice; a pass in the blocked layout runs oneDNN's primitive in
// the layouts it prefers (format_tag::any: nChw16c activations and blocked weights on AVX-512),
// reordering its inputs from channels-last and plain weights and its outputs back.
//   automatic      per pass and shape, whichever measured faster (the default)
//   channels_last  every pass on channels-last activations and plain weights
//   blocked        every pass blocked
// Results differ only by rounding; benchmarks and tests force the two layouts to compare them.
enum class CpuPassLayout { automatic, channels_last, blocked };

enum class KernelPass { forward, backward_data, backward_weight };

// The layout the automatic choice runs one pass of `layer` in (channels_last or blocked).
CpuPassLayout automatic_cpu_pass_layout(const Layer& layer, KernelPass pass);

// Individual constructors. They throw std::runtime_error when not built or no device, and
// std::invalid_argument, saying why, for a precision the device cannot run: the CPU backend runs
// fp32 everywhere and bf16 where oneDNN has BF16 kernels for the CPU (AVX-512), never tf32 or
// fp16 (oneDNN 2.6 has no FP16 convolution for x86 CPUs); the CUDA backend runs fp32 everywhere,
// fp16 from compute capability 7.0, bf16 and tf32 from 8.0.
std::unique_ptr<Backend> make_cpu_backend(int threads,
                                          CpuPassLayout layout = CpuPassLayout::automatic,
                                          Precision precision = Precision::fp32);
std::unique_ptr<Backend> make_cuda_backend(Precision precision = Precision::fp32);

}  // namespace ralp::kernels
