// Argument checks shared by the backends' memory operations (internal to kernels/).
#pragma once

#include <cstddef>

#include "ralp/kernels/tensor.hpp"

namespace ralp::kernels {

// Throws std::invalid_argument, naming `what` and both descriptions, unless a and b hold as many
// elements.
void check_same_size(const Tensor& a, const Tensor& b, const char* what);
// Throws std::invalid_argument unless a host span of `size` values matches t's element count.
void check_span(const Tensor& t, size_t size);

}  // namespace ralp::kernels
