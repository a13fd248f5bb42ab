// ModelBuilder: appends layer specs with the previous layer as the default input.
#include "ralp/model/model_builder.hpp"

namespace ralp {

ModelBuilder::ModelBuilder(std::string name, TensorShape input)
    : name_(std::move(name)), input_(input), last_(kModelInputName) {}

std::string ModelBuilder::push(LayerSpec spec, const std::string& from) {
  if (spec.inputs.empty()) spec.inputs.push_back(from.empty() ? last_ : from);
  last_ = spec.name;
  layers_.push_back(std::move(spec));
  return last_;
}

std::string ModelBuilder::conv(const std::string& name, int64_t out_channels, int kernel,
                               int stride, int pad, const std::string& from, ConvOptions options) {
  return conv_rect(name, out_channels, kernel, kernel, stride, pad, pad, from, options);
}

std::string ModelBuilder::conv_rect(const std::string& name, int64_t out_channels, int kernel_h,
                                    int kernel_w, int stride, int pad_h, int pad_w,
                                    const std::string& from, ConvOptions options) {
  Conv2dAttrs a;
  a.out_channels = out_channels;
  a.kernel_h = kernel_h;
  a.kernel_w = kernel_w;
  a.stride_h = a.stride_w = stride;
  a.pad_h = pad_h;
  a.pad_w = pad_w;
  a.dilation_h = a.dilation_w = options.dilation;
  a.groups = options.groups;
  a.bias = options.bias;
  return push({name, LayerKind::conv2d, a, {}}, from);
}

std::string ModelBuilder::max_pool(const std::string& name, int kernel, int stride, int pad,
                                   bool ceil_mode, const std::string& from) {
  PoolAttrs a;
  a.kernel_h = a.kernel_w = kernel;
  a.stride_h = a.stride_w = stride;
  a.pad_h = a.pad_w = pad;
  a.ceil_mode = ceil_mode;
  return push({name, LayerKind::max_pool, a, {}}, from);
}

std::string ModelBuilder::avg_pool(const std::string& name, int kernel, int stride, int pad,
                                   const std::string& from) {
  PoolAttrs a;
  a.kernel_h = a.kernel_w = kernel;
  a.stride_h = a.stride_w = stride;
  a.pad_h = a.pad_w = pad;
  return push({name, LayerKind::avg_pool, a, {}}, from);
}

std::string ModelBuilder::global_avg_pool(const std::string& name, const std::string& from) {
  PoolAttrs a;
  a.global = true;
  return push({name, LayerKind::avg_pool, a, {}}, from);
}

std::string ModelBuilder::relu(const std::string& name, const std::string& from) {
  return push({name, LayerKind::relu, std::monostate{}, {}}, from);
}

std::string ModelBuilder::lrn(const std::string& name, LrnAttrs attrs, const std::string& from) {
  return push({name, LayerKind::lrn, attrs, {}}, from);
}

std::string ModelBuilder::batch_norm(const std::string& name, double epsilon,
                                     const std::string& from) {
  return push({name, LayerKind::batch_norm, BatchNormAttrs{epsilon}, {}}, from);
}

std::string ModelBuilder::dropout(const std::string& name, double rate, const std::string& from) {
  return push({name, LayerKind::dropout, DropoutAttrs{rate}, {}}, from);
}

std::string ModelBuilder::flatten(const std::string& name, const std::string& from) {
  return push({name, LayerKind::flatten, std::monostate{}, {}}, from);
}

std::string ModelBuilder::fc(const std::string& name, int64_t out_features,
                             const std::string& from) {
  return push({name, LayerKind::fully_connected, FullyConnectedAttrs{out_features, true}, {}},
              from);
}

std::string ModelBuilder::concat(const std::string& name, const std::vector<std::string>& inputs) {
  return push({name, LayerKind::concat, std::monostate{}, inputs}, {});
}

std::string ModelBuilder::add(const std::string& name, const std::vector<std::string>& inputs) {
  return push({name, LayerKind::add, std::monostate{}, inputs}, {});
}

std::string ModelBuilder::sigmoid(const std::string& name, const std::string& from) {
  return push({name, LayerKind::sigmoid, std::monostate{}, {}}, from);
}

std::string ModelBuilder::silu(const std::string& name, const std::string& from) {
  return push({name, LayerKind::silu, std::monostate{}, {}}, from);
}

std::string ModelBuilder::hard_sigmoid(const std::string& name, HardSigmoidAttrs attrs,
                                       const std::string& from) {
  return push({name, LayerKind::hard_sigmoid, attrs, {}}, from);
}

std::string ModelBuilder::hard_swish(const std::string& name, const std::string& from) {
  return push({name, LayerKind::hard_swish, std::monostate{}, {}}, from);
}

std::string ModelBuilder::mul(const std::string& name, const std::string& first,
                              const std::string& second) {
  return push({name, LayerKind::mul, std::monostate{}, {first, second}}, {});
}

std::string ModelBuilder::softmax_cross_entropy(const std::string& name, const std::string& from) {
  return push({name, LayerKind::softmax_cross_entropy, std::monostate{}, {}}, from);
}

LayerGraph ModelBuilder::build() const { return LayerGraph(name_, input_, layers_); }

}  // namespace ralp
