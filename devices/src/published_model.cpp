// The cost model of published profiles.
#include "ralp/devices/published_model.hpp"

#include <stdexcept>
#include <variant>

namespace ralp {
namespace {

constexpr double kFloat = 4.0;

bool has_work(const PassWork& w) { return w.flops.value() > 0.0 || w.bytes.value() > 0.0; }

ConvShape conv_shape(const LayerKey& key, const Conv2dAttrs& a) {
  ConvShape c;
  c.batch = key.batch;
  c.in_channels = key.input.channels / a.groups;
  c.out_channels = a.out_channels / a.groups;
  c.groups = a.groups;
  c.height = key.input.height;
  c.width = key.input.width;
  c.kernel_h = a.kernel_h;
  c.kernel_w = a.kernel_w;
  c.stride_h = a.stride_h;
  c.stride_w = a.stride_w;
  c.pad_h = a.pad_h;
  c.pad_w = a.pad_w;
  return c;
}

// The copies tensor-op kernels need when a convolution's channels are not multiples of 8: its
// input read and written again with padded channels before the forward pass (the filter
// gradient reuses it), and its output's gradient the same before the backward passes. Zero
// where no padding is needed, and for grouped convolutions, which run on the CUDA cores where
// a group's channels are not multiples of 8 (conv_pass_time).
LayerCost padding_cost(const ConvShape& c, const GpuShape& gpu, const GpuKernelParams& p) {
  if (c.groups > 1) return {};
  const ConvShape padded = tensor_op_shape(c);
  const auto copy = [&](double pixels, int64_t channels, int64_t padded_channels) {
    const double values = pixels * static_cast<double>(channels + padded_channels);
    return streaming_time(Bytes(values * gpu.element_bytes), gpu, p);
  };
  const double batch = static_cast<double>(c.batch);
  LayerCost cost;
  if (padded.in_channels != c.in_channels) {
    cost.forward = copy(batch * double(c.height * c.width), c.in_channels, padded.in_channels);
  }
  if (padded.out_channels != c.out_channels) {
    cost.backward_weight = copy(batch * double(c.out_height() * c.out_width()), c.out_channels,
                                padded.out_channels);
  }
  return cost;
}

// Every pass is one kernel for all groups (conv_pass_time).
LayerCost conv_cost(const LayerKey& key, const Conv2dAttrs& a, const GpuShape& gpu,
                    const GpuKernelParams& p, const ConvAlgorithms& available) {
  const ConvShape c = conv_shape(key, a);
  LayerCost cost;
  if (available.tensor_ops) cost = padding_cost(c, gpu, p);
  cost.forward += conv_pass_time(c, ConvPass::forward, gpu, p, available).seconds;
  if (key.needs_input_gradient) {
    cost.backward_data += conv_pass_time(c, ConvPass::backward_data, gpu, p, available).seconds;
  }
  cost.backward_weight += conv_pass_time(c, ConvPass::backward_filter, gpu, p, available).seconds;
  if (a.bias) {  // the bias is added, and its gradient summed, by kernels of their own
    const Bytes out(static_cast<double>(key.batch * key.output.elements()) * gpu.element_bytes);
    cost.forward += streaming_time(out * 2.0, gpu, p);
    cost.backward_weight += streaming_time(out, gpu, p);
  }
  return cost;
}

LayerCost fc_cost(const LayerKey& key, const FullyConnectedAttrs& a, const GpuShape& gpu,
                  const GpuKernelParams& p, bool tensor_ops) {
  const auto dimension = [tensor_ops](int64_t n) {
    return static_cast<double>(tensor_ops ? round_up_to_8(n) : n);
  };
  const double batch = dimension(key.batch);
  const double in = dimension(key.input.elements());
  const double out = dimension(a.out_features);
  LayerCost cost;
  cost.forward = gemm_time(batch, out, in, gpu, p);
  if (key.needs_input_gradient) cost.backward_data = gemm_time(batch, in, out, gpu, p);
  cost.backward_weight = gemm_time(out, in, batch, gpu, p);
  if (a.bias) {
    const Bytes bytes(batch * out * gpu.element_bytes);
    cost.forward += streaming_time(bytes * 2.0, gpu, p);
    cost.backward_weight += streaming_time(bytes, gpu, p);
  }
  return cost;
}

// The bytes a pass of an element-wise or pooling layer moves, as cuDNN's and TensorFlow's kernels
// move them. LayerWork counts its input and output once; some kernels read more: max pooling's
// and LRN's backward read the forward's input and output besides the gradient (cuDNN's
// signatures), ReLU's backward reads its features besides the gradient, fused batch norm reads
// its input once for the statistics and again to normalize (forward) or to rebuild the
// normalized input (backward); a residual sum's gradient is its output's, passed on with no
// kernel. Every value is `element_bytes` wide (LayerWork counts 4).
Bytes streaming_bytes(const LayerKey& key, ConvPass pass, double element_bytes) {
  const double n = static_cast<double>(key.batch) * element_bytes;
  const double in = n * static_cast<double>(key.input.elements());
  const double out = n * static_cast<double>(key.output.elements());
  const PassWork& w = pass == ConvPass::forward         ? key.work.forward
                      : pass == ConvPass::backward_data ? key.work.backward_data
                                                        : key.work.backward_weight;
  double extra = 0.0;
  switch (key.kind) {
    case LayerKind::max_pool:
    case LayerKind::lrn:
      if (pass == ConvPass::backward_data) extra = in + out;
      break;
    case LayerKind::relu:
      if (pass == ConvPass::backward_data) extra = out;
      break;
    case LayerKind::batch_norm:
      if (pass != ConvPass::backward_filter) extra = in;
      break;
    case LayerKind::add:
      if (pass == ConvPass::backward_data) return Bytes(0.0);
      break;
    default:
      break;
  }
  return w.bytes * (element_bytes / kFloat) + Bytes(extra);
}

}  // namespace

GpuShape gpu_shape(const DeviceProfile& profile, Precision precision) {
  const double efficiency = architecture_efficiency(profile, precision);
  return {precision_peak(profile, precision) * efficiency, profile.memory_bandwidth * efficiency,
          profile.multiprocessors, activation_bytes(precision), uses_tensor_cores(profile, precision),
          profile.peak_flops * efficiency};
}

bool uses_tensor_cores(const DeviceProfile& profile, Precision precision) {
  return precision != Precision::fp32 && profile.tensor_kernel_model &&
         profile.precision_peaks.contains(precision);
}

LayerCost gpu_layer_cost(const LayerKey& key, const GpuShape& gpu, const GpuKernelParams& p,
                         Seconds framework, const ConvAlgorithms& available) {
  LayerCost cost;
  if (const auto* conv = std::get_if<Conv2dAttrs>(&key.attrs); conv && key.kind == LayerKind::conv2d) {
    cost = conv_cost(key, *conv, gpu, p, available);
  } else if (const auto* fc = std::get_if<FullyConnectedAttrs>(&key.attrs);
             fc && key.kind == LayerKind::fully_connected) {
    cost = fc_cost(key, *fc, gpu, p, available.tensor_ops);
  } else {
    const auto time = [&](ConvPass pass) {
      const Bytes bytes = streaming_bytes(key, pass, gpu.element_bytes);
      return bytes.value() > 0.0 ? streaming_time(bytes, gpu, p) : Seconds(0.0);
    };
    if (has_work(key.work.forward)) cost.forward = time(ConvPass::forward);
    if (has_work(key.work.backward_data)) cost.backward_data = time(ConvPass::backward_data);
    if (has_work(key.work.backward_weight)) cost.backward_weight = time(ConvPass::backward_filter);
  }
  if (has_work(key.work.forward)) cost.forward += framework;
  if (has_work(key.work.backward_data)) cost.backward_data += framework;
  if (has_work(key.work.backward_weight)) cost.backward_weight += framework;
  if (!has_work(key.work.forward)) cost.forward = Seconds(0.0);
  if (!has_work(key.work.backward_data)) cost.backward_data = Seconds(0.0);
  if (!has_work(key.work.backward_weight)) cost.backward_weight = Seconds(0.0);
  cost.source = CostSource::published;
  return cost;
}

PublishedGpuModel::PublishedGpuModel(const DeviceProfile& profile, Precision precision)
    : gpu_(gpu_shape(profile, precision)),
      params_(uses_tensor_cores(profile, precision)
                  ? *profile.tensor_kernel_model
                  : profile.kernel_model.value_or(GpuKernelParams{})),
      algorithms_{true, true, uses_tensor_cores(profile, precision)},
      framework_(profile.published ? profile.published->framework_layer_overhead : Seconds(0.0)),
      name_(profile.name),
      precision_(precision) {
  if (!profile.kernel_model || profile.multiprocessors <= 0) {
    throw std::invalid_argument("profile " + profile.name + " has no GPU kernel model");
  }
}

LayerCost PublishedGpuModel::estimate(const LayerKey& key) const {
  return gpu_layer_cost(key, gpu_, params_, framework_, algorithms_);
}

std::string PublishedGpuModel::describe() const {
  const std::string in = precision_ == Precision::fp32 ? "" : " in " + std::string(to_string(precision_));
  return "GPU kernel model of " + name_ + in + (algorithms_.tensor_ops ? " on tensor cores" : "") +
         ", fitted to published kernel timings";
}

}  // namespace ralp
