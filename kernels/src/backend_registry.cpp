// Backend selection, and the CUDA backend module opened on first request for a CUDA device.
#include "cuda_module.hpp"
#include "ralp/core/loadable_module.hpp"
#include "ralp/kernels/backend.hpp"

#include <stdexcept>

namespace ralp::kernels {

bool cpu_backend_built() {
#ifdef RALP_HAVE_CPU_KERNELS
  return true;
#else
  return false;
#endif
}

bool cuda_backend_built() {
#ifdef RALP_HAVE_CUDA_KERNELS
  return true;
#else
  return false;
#endif
}

#ifndef RALP_HAVE_CPU_KERNELS
CpuPassLayout automatic_cpu_pass_layout(const Layer& /*layer*/, KernelPass /*pass*/) {
  return CpuPassLayout::channels_last;
}

std::unique_ptr<Backend> make_cpu_backend(int /*threads*/, CpuPassLayout /*layout*/,
                                          Precision /*precision*/) {
  throw std::runtime_error(
      "this build has no CPU kernel backend (oneDNN was not found)");
}
#endif

namespace {

constexpr const char* kNotBuilt = "this build has no CUDA backend";

// An opened CUDA module's functions, or why the module cannot serve.
struct OpenedCudaModule {
  const CudaModuleInterface* api = nullptr;
  std::string error;
};

OpenedCudaModule open_cuda_module(const std::filesystem::path& path) {
  const ModuleEntry entry = open_module(path, kCudaModuleEntry);
  if (entry.address == nullptr) return {nullptr, "no CUDA backend: " + entry.error};
  const CudaModuleInterface* api = reinterpret_cast<CudaModuleEntry>(entry.address)();
  if (api == nullptr || api->version != kCudaModuleInterfaceVersion) {
    return {nullptr, "no CUDA backend: " + path.string() + " was built for interface " +
                         std::to_string(api == nullptr ? 0 : api->version) + ", expected " +
                         std::to_string(kCudaModuleInterfaceVersion)};
  }
  return {api, {}};
}

// The module this process uses, opened the first time it is asked for.
const OpenedCudaModule& process_cuda_module() {
  static const OpenedCudaModule opened = open_cuda_module(cuda_module_path());
  return opened;
}

}  // namespace

std::filesystem::path cuda_module_path() {
#ifdef RALP_HAVE_CUDA_KERNELS
  return find_module(RALP_CUDA_MODULE_FILE, RALP_CUDA_MODULE_DIR);
#else
  return {};
#endif
}

CudaModuleStatus probe_cuda_module(const std::filesystem::path& path) {
  const OpenedCudaModule opened = open_cuda_module(path);
  if (opened.api == nullptr) return {false, opened.error};
  return {true, opened.api->unavailable_reason()};
}

std::string cuda_unavailable_reason() {
  if (!cuda_backend_built()) return kNotBuilt;
  const OpenedCudaModule& opened = process_cuda_module();
  return opened.api == nullptr ? opened.error : opened.api->unavailable_reason();
}

std::unique_ptr<Backend> make_cuda_backend(Precision precision) {
  if (!cuda_backend_built()) throw std::runtime_error(kNotBuilt);
  const OpenedCudaModule& opened = process_cuda_module();
  if (opened.api == nullptr) throw std::runtime_error(opened.error);
  return opened.api->make_backend(precision);
}

BackendSelection select_backend(const BackendOptions& options) {
  if (options.threads < 1) throw std::invalid_argument("threads must be >= 1");
  BackendSelection out;
  if (options.device == DeviceChoice::cpu) {
    out.backend = make_cpu_backend(options.threads, CpuPassLayout::automatic, options.precision);
    return out;
  }
  const std::string reason = cuda_unavailable_reason();
  if (reason.empty()) {
    out.backend = make_cuda_backend(options.precision);
    return out;
  }
  if (!cpu_backend_built()) {
    throw std::runtime_error(reason + ", and this build has no CPU kernel backend");
  }
  out.backend = make_cpu_backend(options.threads, CpuPassLayout::automatic, options.precision);
  if (options.device == DeviceChoice::cuda || cuda_backend_built()) {
    out.note = reason + ": using the CPU (" + out.backend->device_name() + ")";
  }
  return out;
}

}  // namespace ralp::kernels
