// Seeds, random data, error measures and test backends.
#include "test_support.hpp"
#include "ralp/kernels/bf16.hpp"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <functional>
#include <map>
#include <memory>

namespace ralp::testing {

uint64_t test_seed() {
  static const uint64_t seed = [] {
    if (const char* env = std::getenv("RALP_TEST_SEED"); env != nullptr && *env != '\0') {
      return static_cast<uint64_t>(std::strtoull(env, nullptr, 10));
    }
    std::random_device device;
    return (static_cast<uint64_t>(device()) << 32) ^ device();
  }();
  return seed;
}

std::mt19937_64 test_rng() {
  const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
  const std::string name = info == nullptr ? "" : std::string(info->test_suite_name()) + "." + info->name();
  return std::mt19937_64(test_seed() ^ std::hash<std::string>{}(name));
}

std::vector<double> random_values(std::mt19937_64& rng, int64_t count) {
  std::uniform_real_distribution<double> dist(-1.0, 1.0);
  std::vector<double> out(static_cast<size_t>(count));
  bool any = false;
  for (double& v : out) {
    v = static_cast<float>(dist(rng));  // exactly representable in float32
    any = any || v != 0.0;
  }
  EXPECT_TRUE(any || count == 0) << "random data came out all zero";
  return out;
}

std::vector<double> random_distinct_values(std::mt19937_64& rng, int64_t count) {
  std::vector<double> out(static_cast<size_t>(count));
  for (int64_t k = 0; k < count; ++k) {
    out[static_cast<size_t>(k)] = static_cast<float>(2.0 * (static_cast<double>(k) + 0.5) / count - 1.0);
  }
  std::shuffle(out.begin(), out.end(), rng);
  return out;
}

std::vector<float> to_float(const std::vector<double>& v) { return {v.begin(), v.end()}; }
std::vector<double> to_double(const std::vector<float>& v) { return {v.begin(), v.end()}; }

double relative_error(const std::vector<float>& got, const std::vector<double>& want) {
  if (got.size() != want.size()) return INFINITY;
  double diff = 0.0, norm = 0.0;
  for (size_t i = 0; i < got.size(); ++i) {
    const double d = static_cast<double>(got[i]) - want[i];
    diff += d * d;
    norm += want[i] * want[i];
  }
  return norm > 0.0 ? std::sqrt(diff / norm) : std::sqrt(diff);
}

double relative_error(const std::vector<float>& got, const std::vector<float>& want) {
  return relative_error(got, to_double(want));
}

kernels::Backend* test_backend(kernels::BackendKind kind, std::string* why) {
  static std::map<kernels::BackendKind, std::unique_ptr<kernels::Backend>> made;
  if (auto it = made.find(kind); it != made.end()) return it->second.get();
  try {
    if (kind == kernels::BackendKind::cpu) {
      if (!kernels::cpu_backend_built()) {
        *why = "the CPU backend is not built (no oneDNN)";
        return nullptr;
      }
      return (made[kind] = kernels::make_cpu_backend(2)).get();
    }
    if (const std::string reason = kernels::cuda_unavailable_reason(); !reason.empty()) {
      *why = reason;
      return nullptr;
    }
    return (made[kind] = kernels::make_cuda_backend()).get();
  } catch (const std::exception& e) {
    *why = e.what();
    return nullptr;
  }
}

kernels::Backend* cpu_test_backend(kernels::CpuPassLayout layout, std::string* why) {
  static std::map<kernels::CpuPassLayout, std::unique_ptr<kernels::Backend>> made;
  if (auto it = made.find(layout); it != made.end()) return it->second.get();
  if (!kernels::cpu_backend_built()) {
    *why = "the CPU backend is not built (no oneDNN)";
    return nullptr;
  }
  return (made[layout] = kernels::make_cpu_backend(2, layout)).get();
}

kernels::Backend* cpu_bf16_test_backend(kernels::CpuPassLayout layout, std::string* why) {
  static std::map<kernels::CpuPassLayout, std::unique_ptr<kernels::Backend>> made;
  if (auto it = made.find(layout); it != made.end()) return it->second.get();
  if (!kernels::cpu_backend_built()) {
    *why = "the CPU backend is not built (no oneDNN)";
    return nullptr;
  }
  try {
    return (made[layout] = kernels::make_cpu_backend(2, layout, Precision::bf16)).get();
  } catch (const std::invalid_argument& e) {
    *why = e.what();
    return nullptr;
  }
}

kernels::Backend* cuda_precision_test_backend(Precision precision, std::string* why) {
  static std::map<Precision, std::unique_ptr<kernels::Backend>> backends;
  std::unique_ptr<kernels::Backend>& made = backends[precision];
  if (made) return made.get();
  if (const std::string reason = kernels::cuda_unavailable_reason(); !reason.empty()) {
    *why = reason;
    return nullptr;
  }
  try {
    made = kernels::make_cuda_backend(precision);
  } catch (const std::exception& e) {
    *why = e.what();
    return nullptr;
  }
  return made.get();
}

std::vector<double> round_to_bf16(const std::vector<double>& v) {
  std::vector<double> out;
  out.reserve(v.size());
  for (const double x : v) {
    out.push_back(kernels::round_to_bf16(static_cast<float>(x)));
  }
  return out;
}

}  // namespace ralp::testing
