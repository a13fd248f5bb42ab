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

LayerCost conv_cost(const LayerKey& key, const Conv2dAttrs& a, const GpuShape& gpu,
                    const GpuKernelParams& p, const ConvAlgorithms& available) {
  const ConvShape c = conv_shape(key, a);
  const double groups = static_cast<double>(a.groups);
  LayerCost cost;
  cost.forward = conv_pass_time(c, ConvPass::forward, gpu, p, available).seconds * groups;
  if (key.needs_input_gradient) {
    cost.backward_data = conv_pass_time(c, ConvPass::backward_data, gpu, p, available).seconds * groups;
  }
  cost.backward_weight = conv_pass_time(c, ConvPass::backward_filter, gpu, p, available).seconds * groups;
  if (a.bias) {  // the bias is added, and its gradient summed, by kernels of their own
    const Bytes out(static_cast<double>(key.batch * key.output.elements()) * kFloat);
    cost.forward += streaming_time(out * 2.0, gpu, p);
    cost.backward_weight += streaming_time(out, gpu, p);
  }
  return cost;
}

LayerCost fc_cost(const LayerKey& key, const FullyConnectedAttrs& a, const GpuShape& gpu,
                  const GpuKernelParams& p) {
  const double batch = static_cast<double>(key.batch);
  const double in = static_cast<double>(key.input.elements());
  const double out = static_cast<double>(a.out_features);
  LayerCost cost;
  cost.forward = gemm_time(batch, out, in, gpu, p);
  if (key.needs_input_gradient) cost.backward_data = gemm_time(batch, in, out, gpu, p);
  cost.backward_weight = gemm_time(out, in, batch, gpu, p);
  if (a.bias) {
    const Bytes bytes(batch * out * kFloat);
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
// kernel.
Bytes streaming_bytes(const LayerKey& key, ConvPass pass) {
  const double n = static_cast<double>(key.batch) * kFloat;
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
  return w.bytes + Bytes(extra);
}

}  // namespace

GpuShape gpu_shape(const DeviceProfile& profile) {
  const double efficiency = profile.published ? profile.published->architecture_efficiency : 1.0;
  return {profile.peak_flops * efficiency, profile.memory_bandwidth * efficiency,
          profile.multiprocessors};
}

LayerCost gpu_layer_cost(const LayerKey& key, const GpuShape& gpu, const GpuKernelParams& p,
                         Seconds framework, const ConvAlgorithms& available) {
  LayerCost cost;
  if (const auto* conv = std::get_if<Conv2dAttrs>(&key.attrs); conv && key.kind == LayerKind::conv2d) {
    cost = conv_cost(key, *conv, gpu, p, available);
  } else if (const auto* fc = std::get_if<FullyConnectedAttrs>(&key.attrs);
             fc && key.kind == LayerKind::fully_connected) {
    cost = fc_cost(key, *fc, gpu, p);
  } else {
    const auto time = [&](ConvPass pass) {
      const Bytes bytes = streaming_bytes(key, pass);
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
    : gpu_(gpu_shape(profile)),
      params_(profile.kernel_model.value_or(GpuKernelParams{})),
      framework_(profile.published ? profile.published->framework_layer_overhead : Seconds(0.0)),
      name_(profile.name),
      precision_(precision) {
  if (!profile.kernel_model || profile.multiprocessors <= 0) {
    throw std::invalid_argument("profile " + profile.name + " has no GPU kernel model");
  }
}

LayerCost PublishedGpuModel::estimate(const LayerKey& key) const {
  return gpu_layer_cost(key, gpu_, params_, framework_);
}

std::string PublishedGpuModel::describe() const {
  return "GPU kernel model of " + name_ + ", fitted to published kernel timings";
}

}  // namespace ralp
