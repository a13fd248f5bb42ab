// A small fluent builder for layer lists, used by the model zoo and by tests.
#pragma once

#include <string>
#include <vector>

#include "ralp/model/layer_graph.hpp"

namespace ralp {

struct ConvOptions {
  bool bias = true;
  int64_t groups = 1;
  int dilation = 1;
};

// Each method appends one layer reading `from` (default: the layer added last) and returns the
// new layer's name, so branches can be written as
//   auto a = b.conv("a", 64, 1, 1, 0, in); auto c = b.conv("c", 64, 3, 1, 1, in);
//   b.concat("cat", {a, c});
class ModelBuilder {
 public:
  ModelBuilder(std::string name, TensorShape input);

  std::string conv(const std::string& name, int64_t out_channels, int kernel, int stride, int pad,
                   const std::string& from = {}, ConvOptions options = {});
  // Rectangular kernel and padding (Inception-v3's 1x7 and 7x1 convolutions).
  std::string conv_rect(const std::string& name, int64_t out_channels, int kernel_h, int kernel_w,
                        int stride, int pad_h, int pad_w, const std::string& from = {},
                        ConvOptions options = {});
  std::string max_pool(const std::string& name, int kernel, int stride, int pad = 0,
                       bool ceil_mode = false, const std::string& from = {});
  std::string avg_pool(const std::string& name, int kernel, int stride, int pad = 0,
                       const std::string& from = {});
  std::string global_avg_pool(const std::string& name, const std::string& from = {});
  std::string relu(const std::string& name, const std::string& from = {});
  std::string lrn(const std::string& name, LrnAttrs attrs, const std::string& from = {});
  std::string batch_norm(const std::string& name, double epsilon = 1e-5,
                         const std::string& from = {});
  std::string dropout(const std::string& name, double rate = 0.5, const std::string& from = {});
  std::string flatten(const std::string& name, const std::string& from = {});
  std::string fc(const std::string& name, int64_t out_features, const std::string& from = {});
  std::string concat(const std::string& name, const std::vector<std::string>& inputs);
  std::string add(const std::string& name, const std::vector<std::string>& inputs);
  std::string sigmoid(const std::string& name, const std::string& from = {});
  std::string silu(const std::string& name, const std::string& from = {});
  std::string hard_sigmoid(const std::string& name, HardSigmoidAttrs attrs = {},
                           const std::string& from = {});
  std::string hard_swish(const std::string& name, const std::string& from = {});
  // first * second; second has first's shape or is C x 1 x 1 (a per-channel scale).
  std::string mul(const std::string& name, const std::string& first, const std::string& second);
  std::string softmax_cross_entropy(const std::string& name = "loss",
                                    const std::string& from = {});

  // The name of the layer added last ("input" before any).
  [[nodiscard]] const std::string& last() const { return last_; }

  // Builds the graph; throws ModelError like LayerGraph's constructor.
  [[nodiscard]] LayerGraph build() const;

 private:
  std::string push(LayerSpec spec, const std::string& from);

  std::string name_;
  TensorShape input_;
  std::vector<LayerSpec> layers_;
  std::string last_;
};

}  // namespace ralp
