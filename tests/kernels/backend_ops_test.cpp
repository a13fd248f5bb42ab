// Backend memory and parameter-server operations (gradient sum, SGD with momentum), host copies
// across layouts, dropout masks, backend selection, the CUDA backend module, and the CPU cache
// size read from sysfs.
#include <dlfcn.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>

#include "ralp/kernels/backend.hpp"
#include "ralp/kernels/bf16.hpp"
#include "ralp/kernels/dropout_mask.hpp"
#include "test_support.hpp"

namespace ralp::testing {
namespace {

using kernels::Backend;
using kernels::BackendKind;

class BackendOps : public ::testing::TestWithParam<BackendKind> {
 protected:
  void SetUp() override {
    std::string why;
    backend_ = test_backend(GetParam(), &why);
    if (backend_ == nullptr) GTEST_SKIP() << why;
  }
  Backend* backend_ = nullptr;
};

TEST_P(BackendOps, HostCopiesRoundTripInEveryLayout) {
  RALP_TRACE_SEED();
  std::mt19937_64 rng = test_rng();
  const Vec values = random_values(rng, 2 * 3 * 4 * 5);
  for (const auto layout : {kernels::Layout::plain, kernels::Layout::channels_last}) {
    const kernels::Tensor t = backend_->upload(kernels::activation_desc(2, 3, 4, 5, layout), to_float(values));
    EXPECT_EQ(relative_error(backend_->download(t), values), 0.0);
  }
}

// BF16 host copies round each value to nearest even (in every layout) and read it back exactly;
// BF16 sums add in FP32 and round once.
TEST(CpuBf16Memory, RoundsOnUploadAndSumsWithOneRounding) {
  RALP_TRACE_SEED();
  std::string why;
  Backend* backend = cpu_bf16_test_backend(kernels::CpuPassLayout::automatic, &why);
  if (backend == nullptr) GTEST_SKIP() << why;
  std::mt19937_64 rng = test_rng();
  const Vec values = random_values(rng, 2 * 3 * 4 * 5);
  const Vec rounded = round_to_bf16(values);
  for (const auto layout : {kernels::Layout::plain, kernels::Layout::channels_last}) {
    const auto desc = kernels::activation_desc(2, 3, 4, 5, layout, kernels::DataType::bf16);
    kernels::Tensor t = backend->upload(desc, to_float(values));
    EXPECT_EQ(relative_error(backend->download(t), rounded), 0.0);
    const kernels::Tensor u = backend->upload(desc, to_float(rounded));
    backend->add_into(t, u);
    Vec want;
    for (const double v : rounded) want.push_back(kernels::round_to_bf16(static_cast<float>(2 * v)));
    EXPECT_EQ(relative_error(backend->download(t), want), 0.0);
  }
  kernels::Tensor filled = backend->allocate({{3}, kernels::DataType::bf16});
  backend->fill(filled, 1.0F / 3.0F);
  EXPECT_EQ(backend->download(filled), std::vector<float>(3, kernels::round_to_bf16(1.0F / 3.0F)));
  // 1 + 2^-8 lies halfway between BF16 neighbours 1 and 1 + 2^-7: ties round to the even one.
  EXPECT_EQ(kernels::round_to_bf16(1.0F + 1.0F / 256.0F), 1.0F);
  EXPECT_EQ(kernels::round_to_bf16(1.0F + 3.0F / 256.0F), 1.0F + 4.0F / 256.0F);
}

TEST(CpuPrecisions, RefusesThoseTheCpuCannotRun) {
  if (!kernels::cpu_backend_built()) GTEST_SKIP() << "no CPU backend";
  EXPECT_THROW((void)kernels::make_cpu_backend(1, kernels::CpuPassLayout::automatic, Precision::tf32),
               std::invalid_argument);
  EXPECT_THROW((void)kernels::make_cpu_backend(1, kernels::CpuPassLayout::automatic, Precision::fp16),
               std::invalid_argument);
  EXPECT_EQ(kernels::make_cpu_backend(1)->precision(), Precision::fp32);
  EXPECT_EQ(kernels::make_cpu_backend(1)->provenance().count("precision"), 0U);
}

TEST_P(BackendOps, SumOfSeveralBuffers) {
  RALP_TRACE_SEED();
  std::mt19937_64 rng = test_rng();
  constexpr int64_t kCount = 1000;
  std::vector<kernels::Tensor> buffers;
  Vec want(kCount, 0.0);
  for (int w = 0; w < 3; ++w) {
    const Vec v = random_values(rng, kCount);
    for (int64_t i = 0; i < kCount; ++i) want[static_cast<size_t>(i)] += v[static_cast<size_t>(i)];
    buffers.push_back(backend_->upload({{kCount}}, to_float(v)));
  }
  std::vector<const kernels::Tensor*> srcs;
  for (const auto& b : buffers) srcs.push_back(&b);
  kernels::Tensor dst = backend_->allocate({{kCount}});
  backend_->sum(srcs, dst);
  EXPECT_LT(relative_error(backend_->download(dst), want), kReferenceTolerance);

  backend_->add_into(dst, buffers[0]);
  for (int64_t i = 0; i < kCount; ++i) {
    want[static_cast<size_t>(i)] += static_cast<double>(backend_->download(buffers[0])[static_cast<size_t>(i)]);
  }
  EXPECT_LT(relative_error(backend_->download(dst), want), kReferenceTolerance);
}

TEST_P(BackendOps, SgdWithMomentumFollowsItsFormula) {
  RALP_TRACE_SEED();
  std::mt19937_64 rng = test_rng();
  constexpr int64_t kCount = 777;
  Vec w = random_values(rng, kCount), g = random_values(rng, kCount), v = random_values(rng, kCount);
  kernels::Tensor tw = backend_->upload({{kCount}}, to_float(w));
  kernels::Tensor tg = backend_->upload({{kCount}}, to_float(g));
  kernels::Tensor tv = backend_->upload({{kCount}}, to_float(v));
  const kernels::SgdOptions options{.learning_rate = 0.1F, .momentum = 0.9F, .weight_decay = 0.01F};
  const float scale = 0.25F;  // four workers' summed gradients
  backend_->sgd_update(tw, tg, tv, options, scale);
  for (size_t i = 0; i < w.size(); ++i) {
    v[i] = 0.9 * v[i] + 0.25 * g[i] + 0.01 * w[i];
    w[i] -= 0.1 * v[i];
  }
  EXPECT_LT(relative_error(backend_->download(tv), v), kReferenceTolerance);
  EXPECT_LT(relative_error(backend_->download(tw), w), kReferenceTolerance);
}

TEST_P(BackendOps, FillAndCopy) {
  kernels::Tensor a = backend_->allocate({{10}});
  kernels::Tensor b = backend_->allocate({{10}});
  backend_->fill(a, 2.5F);
  backend_->copy(a, b);
  EXPECT_EQ(backend_->download(b), std::vector<float>(10, 2.5F));
}

INSTANTIATE_TEST_SUITE_P(Backends, BackendOps, ::testing::Values(BackendKind::cpu, BackendKind::cuda),
                         [](const auto& p) { return std::string(kernels::to_string(p.param)); });

TEST(DropoutMask, KeepsTheRightFractionAndDependsOnEveryKeyPart) {
  constexpr int kDraws = 100000;
  constexpr float kRate = 0.3F;
  const uint64_t stream = kernels::mask_stream(1, 2, 3, 4);
  int kept = 0;
  for (int i = 0; i < kDraws; ++i) kept += kernels::dropout_keeps(stream, i, kRate) ? 1 : 0;
  // Binomial(100000, 0.7): standard deviation 145; 5 sigma.
  EXPECT_NEAR(kept, 0.7 * kDraws, 5 * 145);
  for (const uint64_t other : {kernels::mask_stream(9, 2, 3, 4), kernels::mask_stream(1, 9, 3, 4),
                               kernels::mask_stream(1, 2, 9, 4), kernels::mask_stream(1, 2, 3, 9)}) {
    int same = 0;
    for (int i = 0; i < 1000; ++i) {
      same += kernels::dropout_keeps(stream, i, 0.5F) == kernels::dropout_keeps(other, i, 0.5F) ? 1 : 0;
    }
    EXPECT_LT(same, 600) << "masks of different keys agree too often";
  }
}

TEST(BackendSelection, FallsBackToTheCpuWithOneLine) {
  if (!kernels::cpu_backend_built()) GTEST_SKIP() << "the CPU backend is not built";
  const std::string reason = kernels::cuda_unavailable_reason();
  const auto chosen = kernels::select_backend({kernels::DeviceChoice::cuda, 1});
  ASSERT_NE(chosen.backend, nullptr);
  if (reason.empty()) {
    EXPECT_EQ(chosen.backend->kind(), BackendKind::cuda);
  } else {
    EXPECT_EQ(chosen.backend->kind(), BackendKind::cpu);
    EXPECT_NE(chosen.note.find("using the CPU"), std::string::npos) << chosen.note;
    EXPECT_EQ(chosen.note.find('\n'), std::string::npos);
  }
  const auto cpu = kernels::select_backend({kernels::DeviceChoice::cpu, 2});
  EXPECT_EQ(cpu.backend->kind(), BackendKind::cpu);
  EXPECT_EQ(cpu.backend->threads(), 2);
  EXPECT_TRUE(cpu.note.empty());
  EXPECT_THROW(kernels::select_backend({kernels::DeviceChoice::cpu, 0}), std::invalid_argument);
}

// Whether this process has mapped a file whose name contains `name` (from /proc/self/maps).
bool maps_library(const std::string& name) {
  std::ifstream maps("/proc/self/maps");
  for (std::string line; std::getline(maps, line);) {
    if (line.find(name) != std::string::npos) return true;
  }
  return false;
}

TEST(CudaModule, AMissingModuleLeavesCudaUnavailableWithTheReason) {
  const auto status = kernels::probe_cuda_module("/nonexistent/libralp_cuda.so");
  EXPECT_FALSE(status.opened);
  EXPECT_EQ(status.reason.rfind("no CUDA backend: cannot open /nonexistent/libralp_cuda.so: ", 0), 0u)
      << status.reason;
  EXPECT_EQ(status.reason.find('\n'), std::string::npos);
}

TEST(CudaModule, ALibraryWithoutTheEntryPointIsNoModule) {
  Dl_info info{};
  ASSERT_NE(dladdr(reinterpret_cast<void*>(&getpid), &info), 0);
  const auto status = kernels::probe_cuda_module(info.dli_fname);
  EXPECT_FALSE(status.opened);
  EXPECT_EQ(status.reason,
            "no CUDA backend: " + std::string(info.dli_fname) + " has no entry point ralp_cuda_module");
}

TEST(CudaModule, WithoutACudaBuildTheReasonSaysSo) {
  if (kernels::cuda_backend_built()) GTEST_SKIP() << "this build has the CUDA backend";
  EXPECT_TRUE(kernels::cuda_module_path().empty());
  EXPECT_EQ(kernels::cuda_unavailable_reason(), "this build has no CUDA backend");
  EXPECT_THROW((void)kernels::make_cuda_backend(), std::runtime_error);
}

// The module the build placed opens whether or not a device exists; without one, the reason is
// the device's, not the module's, and asking for a backend throws it.
TEST(CudaModule, TheBuiltModuleOpensAndAnswersForTheDevice) {
  if (!kernels::cuda_backend_built()) GTEST_SKIP() << "this build has no CUDA backend";
  const auto path = kernels::cuda_module_path();
  ASSERT_TRUE(std::filesystem::is_regular_file(path)) << path;
  const auto status = kernels::probe_cuda_module(path);
  ASSERT_TRUE(status.opened) << status.reason;
  // Opening the module is what maps cuBLAS (the CLI test checks that `ralp --version` does not).
  EXPECT_TRUE(maps_library("libcublas")) << "the module links cuBLAS";
  EXPECT_EQ(kernels::cuda_unavailable_reason(), status.reason);
  if (status.reason.empty()) {
    EXPECT_EQ(kernels::make_cuda_backend()->kind(), BackendKind::cuda);
    return;
  }
  EXPECT_TRUE(status.reason.starts_with("no CUDA device") ||
              status.reason.starts_with("CUDA device found but"))
      << status.reason;
  EXPECT_EQ(status.reason.find('\n'), std::string::npos);
  try {
    (void)kernels::make_cuda_backend();
    ADD_FAILURE() << "make_cuda_backend without a device did not throw";
  } catch (const std::runtime_error& e) {
    EXPECT_EQ(std::string(e.what()), status.reason);
  }
}

// A sysfs cache folder as Linux lays it out, made in a fresh temporary folder.
class SysfsCaches : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("ralp-sysfs-cache-" + std::to_string(getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  void add(int index, int level, const std::string& type, const std::string& size) {
    const auto folder = dir_ / ("index" + std::to_string(index));
    std::filesystem::create_directories(folder);
    std::ofstream(folder / "level") << level << "\n";
    std::ofstream(folder / "type") << type << "\n";
    std::ofstream(folder / "size") << size << "\n";
  }
  std::filesystem::path dir_;
};

constexpr int64_t kMiB = int64_t{1} << 20;

TEST_F(SysfsCaches, TheHighestLevelDataOrUnifiedCache) {
  add(0, 1, "Data", "32K");
  add(1, 1, "Instruction", "32K");
  add(2, 2, "Unified", "512K");
  add(3, 3, "Unified", "32768K");
  EXPECT_EQ(kernels::cpu_last_level_cache_bytes(dir_), 32 * kMiB);
}

TEST_F(SysfsCaches, AnInstructionCacheIsNeverTheLastLevel) {
  add(0, 2, "Unified", "1M");
  add(1, 3, "Instruction", "64M");
  EXPECT_EQ(kernels::cpu_last_level_cache_bytes(dir_), 1 * kMiB);
}

// Sizes no CPU cache has, unreadable sizes and no folder at all give the 32 MiB assumption.
TEST_F(SysfsCaches, ImplausibleOrMissingSizesFallBack) {
  add(0, 3, "Unified", "2G");
  EXPECT_EQ(kernels::cpu_last_level_cache_bytes(dir_), 32 * kMiB);
  add(0, 3, "Unified", "16");
  EXPECT_EQ(kernels::cpu_last_level_cache_bytes(dir_), 32 * kMiB);
  add(0, 3, "Unified", "lots");
  EXPECT_EQ(kernels::cpu_last_level_cache_bytes(dir_), 32 * kMiB);
  EXPECT_EQ(kernels::cpu_last_level_cache_bytes(dir_ / "absent"), 32 * kMiB);
}

}  // namespace
}  // namespace ralp::testing
