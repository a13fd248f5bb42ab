// Finding and opening loadable modules with the dynamic loader.
#include "ralp/core/loadable_module.hpp"

#include <dlfcn.h>

#include <system_error>

namespace ralp {

std::vector<std::filesystem::path> module_candidates(std::string_view file_name,
                                                     const std::filesystem::path& build_folder) {
  std::vector<std::filesystem::path> out;
  std::error_code ec;
  const std::filesystem::path self = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (!ec) out.push_back(self.parent_path() / file_name);
  if (!build_folder.empty()) {
    const std::filesystem::path built = build_folder / file_name;
    if (out.empty() || out.front() != built) out.push_back(built);
  }
  return out;
}

std::filesystem::path find_module(std::string_view file_name,
                                  const std::filesystem::path& build_folder) {
  const auto candidates = module_candidates(file_name, build_folder);
  if (candidates.empty()) return std::filesystem::path(file_name);
  std::error_code ec;
  for (const auto& path : candidates) {
    if (std::filesystem::is_regular_file(path, ec)) return path;
  }
  return candidates.front();
}

ModuleEntry open_module(const std::filesystem::path& path, const char* symbol) {
  dlerror();  // clear any earlier message
  void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    const char* why = dlerror();
    // The loader's message usually starts with the path already.
    std::string text = why != nullptr ? why : "unknown error";
    if (text.rfind(path.string(), 0) != 0) text = path.string() + ": " + text;
    return {nullptr, "cannot open " + text};
  }
  dlerror();
  void* address = dlsym(handle, symbol);
  if (address == nullptr) {
    // The handle stays open, as every opened module's does (see the header).
    return {nullptr, path.string() + " has no entry point " + symbol};
  }
  return {address, {}};
}

}  // namespace ralp
