// Finding and opening loadable modules: where they are looked for, and the one-line reasons a
// missing file, a file that is no shared object and a library without the entry point give.
#include <dlfcn.h>
#include <unistd.h>

#include <filesystem>

#include <gtest/gtest.h>

#include "ralp/core/loadable_module.hpp"

namespace ralp {
namespace {

// The C library this process runs with: a shared object certain to exist.
std::filesystem::path c_library() {
  Dl_info info{};
  EXPECT_NE(dladdr(reinterpret_cast<void*>(&getpid), &info), 0);
  return info.dli_fname;
}

TEST(LoadableModule, IsLookedForBesideTheExecutableThenInTheBuildFolder) {
  const auto self = std::filesystem::read_symlink("/proc/self/exe");
  const auto candidates = module_candidates("libralp_x.so", "/nonexistent/build");
  ASSERT_EQ(candidates.size(), 2u);
  EXPECT_EQ(candidates[0], self.parent_path() / "libralp_x.so");
  EXPECT_EQ(candidates[1], std::filesystem::path("/nonexistent/build/libralp_x.so"));
  // The executable's own folder is not listed twice.
  EXPECT_EQ(module_candidates("libralp_x.so", self.parent_path()).size(), 1u);
  EXPECT_EQ(module_candidates("libralp_x.so", "").size(), 1u);
}

TEST(LoadableModule, FindTakesTheFirstThatExistsElseNamesWhereItWasExpected) {
  const auto self = std::filesystem::read_symlink("/proc/self/exe");
  // The test executable stands for a module: it exists only beside itself.
  EXPECT_EQ(find_module(self.filename().string(), "/nonexistent/build"), self);
  const auto library = c_library();
  EXPECT_EQ(find_module(library.filename().string(), library.parent_path()), library);
  EXPECT_EQ(find_module("libralp_absent.so", "/nonexistent/build"),
            self.parent_path() / "libralp_absent.so");
}

TEST(LoadableModule, AMissingFileSaysItCannotBeOpened) {
  const ModuleEntry entry = open_module("/nonexistent/libralp_x.so", "entry");
  EXPECT_EQ(entry.address, nullptr);
  EXPECT_EQ(entry.error.rfind("cannot open /nonexistent/libralp_x.so: ", 0), 0u) << entry.error;
  EXPECT_EQ(entry.error.find('\n'), std::string::npos);
}

TEST(LoadableModule, AFileThatIsNoSharedObjectIsRefused) {
  const std::string text_file = RALP_TEST_DATA_DIR "/CMakeLists.txt";
  const ModuleEntry entry = open_module(text_file, "entry");
  EXPECT_EQ(entry.address, nullptr);
  EXPECT_EQ(entry.error.rfind("cannot open " + text_file + ": ", 0), 0u) << entry.error;
}

TEST(LoadableModule, TheEntryPointIsLookedUpByName) {
  const auto library = c_library();
  const ModuleEntry found = open_module(library, "getpid");
  EXPECT_EQ(found.address, reinterpret_cast<void*>(&getpid));
  EXPECT_TRUE(found.error.empty()) << found.error;
  const ModuleEntry missing = open_module(library, "ralp_no_such_entry");
  EXPECT_EQ(missing.address, nullptr);
  EXPECT_EQ(missing.error, library.string() + " has no entry point ralp_no_such_entry");
}

}  // namespace
}  // namespace ralp
