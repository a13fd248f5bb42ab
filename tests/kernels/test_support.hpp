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
// The CPU backend (2 threads) with its convolution and FC passes in one layout, or null.
kernels::Backend* cpu_test_backend(kernels::CpuPassLayout layout, std::string* why);

}  // namespace ralp::testing

// Prints the seed with every failure of the enclosing test.
#define RALP_TRACE_SEED() SCOPED_TRACE("RALP_TEST_SEED=" + std::to_string(::ralp::testing::test_seed()))
