// The datasheet cost model: a roofline from a profile's peak FLOP/s, memory bandwidth and
// efficiency factors. The fallback of last resort, and the only model of datasheet profiles.
#pragma once

#include "ralp/devices/roofline.hpp"

namespace ralp {

// In `precision`, convolutions and fully connected layers compute at that precision's peak
// (precision_peak) and every layer's memory traffic shrinks with its activations
// (activation_bytes): 16-bit tensors move half the bytes of FP32 ones.
Roofline make_datasheet_model(const DeviceProfile& profile, Precision precision = Precision::fp32);

// The layer kinds whose products reach a precision's own rate (tensor cores, AVX-512 BF16):
// convolutions and fully connected layers. Every other layer computes in FP32 on its values.
bool runs_products(LayerKind kind);

}  // namespace ralp
