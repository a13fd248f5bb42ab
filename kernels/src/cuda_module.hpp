// The interface between the kernels' backend registry and the CUDA backend module
// (libralp_cuda.so): the one symbol the module exports and the table of functions it returns.
// No CUDA header here: the registry opens the module without linking any CUDA library.
#pragma once

#include <memory>
#include <string>

#include "ralp/kernels/backend.hpp"

namespace ralp::kernels {

// Changes whenever CudaModuleInterface or the Backend interface changes, so that a module from
// another build is refused with a reason instead of crashing.
inline constexpr int kCudaModuleInterfaceVersion = 2;

struct CudaModuleInterface {
  int version = 0;
  // Why no CUDA device can be used, or empty when one can (cuda_unavailable_reason's meaning).
  std::string (*unavailable_reason)() = nullptr;
  // A backend on device 0 computing in `precision`; throws std::runtime_error when no device can
  // be used, std::invalid_argument when the device cannot compute in that precision.
  std::unique_ptr<Backend> (*make_backend)(Precision precision) = nullptr;
};

// The module's entry point, looked up by this name.
inline constexpr const char* kCudaModuleEntry = "ralp_cuda_module";
using CudaModuleEntry = const CudaModuleInterface* (*)();

}  // namespace ralp::kernels
