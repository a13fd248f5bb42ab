// Shared test helpers: the run's random seed (fresh each run, RALP_TEST_SEED overrides it,
// printed on failure), random data, error measures and the backends under test.
#pragma once

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "ralp/kernels/backend.hpp"

namespace ralp::testing {

using Vec = std::vector<double>;

// Tolerances: float32 kernels against the double reference (the norm of the difference over the
// norm of the reference), and finite differences of float32 kernels (which also cross a ReLU's or
// max-pool's kinks now and then).
inline constexpr double kReferenceTolerance = 1e-4;
inline constexpr double kFiniteDifferenceTolerance = 1e-2;

// BF16 kernels against the double reference computed on the operands the kernel reads, that is
// on inputs, weights and output gradients rounded to BF16 (round_to_bf16). BF16 keeps 8
// significant bits, so rounding to nearest errs by at most u = 2^-9 of a value. What remains
// between kernel and reference is (1) the rounding of each result into BF16: at most u per value,
// so at most u in the norm-relative error; (2) oneDNN's FP32 accumulation of K products: at most
// K * 2^-24 of the sum of their magnitudes, 2.7e-4 for the longest reduction here
// (conv_deep_small: K = 512 * 3 * 3 = 4,608), and about sqrt(K) * 2^-24 = 4e-6 in practice; (3)
// FP32 intermediates of batch norm, LRN and the loss, a few 2^-24. Together at most 2^-9 + 2.7e-4
// = 2.2e-3: the tolerance 2^-8 = 3.9e-3 leaves a factor 1.7 over the worst case. Without
// rounding the operands, the reference would differ by the operands' own rounding too: up to u
// per factor, growing with how much the reduction cancels.
inline constexpr double kBf16ReferenceTolerance = 1.0 / 256.0;
// The same derivation for FP16 (11 significant bits, u = 2^-12; accumulation in FP32 as above,
// 2.7e-4 at worst): at most 2^-12 + 2.7e-4 = 5.1e-4, and the tolerance 2^-10 = 9.8e-4 leaves a
// factor 1.9.
inline constexpr double kFp16ReferenceTolerance = 1.0 / 1024.0;

// The run's seed: $RALP_TEST_SEED, else drawn from std::random_device once per process.
uint64_t test_seed();

// A generator for one test, derived from the run's seed and the test's name.
std::mt19937_64 test_rng();

// Uniform values in [-1, 1); never all zero (asserted).
std::vector<double> random_values(std::mt19937_64& rng, int64_t count);
// A random permutation of `count` evenly spaced values in (-1, 1): as random as the above for
// a test, but with gaps of 2 / count between any two values and around zero, so that a small
// finite-difference step crosses no ReLU kink and changes no max-pool winner.
std::vector<double> random_distinct_values(std::mt19937_64& rng, int64_t count);
std::vector<float> to_float(const std::vector<double>& v);
std::vector<double> to_double(const std::vector<float>& v);

// ||got - want|| / ||want|| (absolute when want is zero).
double relative_error(const std::vector<float>& got, const std::vector<double>& want);
double relative_error(const std::vector<float>& got, const std::vector<float>& want);

// The backend of a kind for tests (2 CPU threads), or null with `why` set when it cannot run.
kernels::Backend* test_backend(kernels::BackendKind kind, std::string* why);
// TF32 kernels (the CUDA backend's tf32 precision: FP32 tensors, tensor-core products with both
// factors rounded to TF32's 11 significant bits, FP32 accumulation) against the double reference
// on the FP32 operands. Each rounded factor errs by at most 2^-11, a product by 2^-10 of itself;
// the K products of an output carry independent errors, so their sum errs by about
// 2^-10 / sqrt(3) = 5.6e-4 of its norm (uniform rounding errors), and at worst by 2^-10 of the
// sum of the products' magnitudes, which cancellation can make larger than the result. The
// tolerance 2^-7 = 7.8e-3 is 14 times the typical error.
inline constexpr double kTf32ReferenceTolerance = 1.0 / 128.0;

// The CPU backend (2 threads) with its convolution and FC passes in one layout, or null.
kernels::Backend* cpu_test_backend(kernels::CpuPassLayout layout, std::string* why);
// The same computing in BF16 mixed precision, or null with `why` set where the CPU has no BF16
// kernels.
kernels::Backend* cpu_bf16_test_backend(kernels::CpuPassLayout layout, std::string* why);

// The CUDA backend computing in `precision`, or null with `why` set (no device, or one whose
// compute capability lacks the precision).
kernels::Backend* cuda_precision_test_backend(Precision precision, std::string* why);

// Each value rounded to the nearest BF16 value (what a BF16 tensor holds after an upload).
std::vector<double> round_to_bf16(const std::vector<double>& v);

}  // namespace ralp::testing

// Prints the seed with every failure of the enclosing test.
#define RALP_TRACE_SEED() SCOPED_TRACE("RALP_TEST_SEED=" + std::to_string(::ralp::testing::test_seed()))
