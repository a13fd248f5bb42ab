// Optional parts built as loadable modules (the CUDA kernel backend), opened on first use so that
// commands which never need them do not pay for loading their libraries.
#pragma once

#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

namespace ralp {

// Where a module file named `file_name` is looked for, in order: beside the running executable,
// then in `build_folder` (where the build placed it, for the test and benchmark executables that
// run from elsewhere in the build tree). An empty `build_folder` adds nothing.
std::vector<std::filesystem::path> module_candidates(std::string_view file_name,
                                                     const std::filesystem::path& build_folder);

// The first candidate that exists, or the first candidate when none does (so that the error of
// opening it names where the module was expected).
std::filesystem::path find_module(std::string_view file_name,
                                  const std::filesystem::path& build_folder);

// A module's entry point, or why it cannot be had.
struct ModuleEntry {
  void* address = nullptr;  // the entry symbol's address; null when `error` says why
  std::string error;        // one line: "cannot open <path>: <loader's message>", ...
};

// Opens the shared object at `path` with every symbol bound now and none added to the process's
// global scope (RTLD_NOW | RTLD_LOCAL), and looks `symbol` up in it. An opened module stays
// loaded for the rest of the process: objects it made may outlive any owner. Never throws.
ModuleEntry open_module(const std::filesystem::path& path, const char* symbol);

}  // namespace ralp
