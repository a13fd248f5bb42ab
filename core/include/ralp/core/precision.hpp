// Training precisions: the arithmetic a training step computes in, and what each stores.
//
// fp32: every tensor and every product in FP32 (CUDA cores; the CPU's FP32 units).
// tf32: tensors in FP32, convolution and matrix products on Ampere-and-later tensor cores with
//       TF32 inputs (10-bit mantissa) and FP32 accumulation (PyTorch's default on an A100).
// fp16, bf16: mixed precision as automatic mixed precision (AMP) runs it: FP32 master weights and
//       optimizer state; activations, weights in compute and gradients of activations in 16 bits;
//       products accumulate in FP32; FP16 pays loss scaling (a scale of the loss, an unscale and
//       an overflow check of the gradients each step). MXNet's float16 with multi-precision SGD
//       is fp16 too.
#pragma once

#include <array>
#include <optional>
#include <string>
#include <string_view>

namespace ralp {

enum class Precision { fp32, tf32, fp16, bf16 };

inline constexpr std::array<Precision, 4> kPrecisions = {Precision::fp32, Precision::tf32,
                                                         Precision::fp16, Precision::bf16};

std::string_view to_string(Precision precision);
// "fp32", "tf32", "fp16", "bf16" (as to_string writes them); nullopt otherwise.
std::optional<Precision> parse_precision(std::string_view text);
// The names, in kPrecisions' order, for choices and errors.
const std::array<std::string, 4>& precision_names();

// Bytes of one activation (and of one weight as the kernels read it) in this precision: 4 for
// fp32 and tf32 (TF32 is a rounding inside the tensor cores, not a storage format), 2 for the
// 16-bit mixed precisions.
double activation_bytes(Precision precision);
// Whether the precision keeps FP32 master weights beside 16-bit copies (fp16, bf16).
bool is_mixed(Precision precision);
// How much longer the optimizer's update of one FP32 gradient byte takes in this precision than
// in FP32, whose SGD with momentum streams 5 arrays (reads weights, gradient and velocity, writes
// weights and velocity). Mixed precision also writes the 16-bit copy of the weights (half an
// array); FP16 also unscales the gradients and checks them for overflow (reads and writes the
// gradient: 2 arrays). fp32 and tf32: 1; bf16: 5.5 / 5; fp16: 7.5 / 5.
double update_cost_factor(Precision precision);

}  // namespace ralp
