// Reference layer maths in double precision, written for clarity, not speed.
#include "reference.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>

#include "ralp/kernels/dropout_mask.hpp"
#include "ralp/kernels/network.hpp"

namespace ralp::testing {
namespace {

struct Dims {
  int64_t n, c, h, w;
  [[nodiscard]] int64_t at(int64_t in, int64_t ic, int64_t ih, int64_t iw) const {
    return ((in * c + ic) * h + ih) * w + iw;
  }
  [[nodiscard]] int64_t size() const { return n * c * h * w; }
};

Dims dims_of(const TensorShape& s, int64_t batch) { return {batch, s.channels, s.height, s.width}; }

struct PoolGeometry {
  int64_t kh, kw, sh, sw, ph, pw;
};

PoolGeometry pool_geometry(const Layer& layer) {
  const auto& a = std::get<PoolAttrs>(layer.spec.attrs);
  const TensorShape& in = layer.input_shapes.front();
  if (a.global) return {in.height, in.width, 1, 1, 0, 0};
  return {a.kernel_h, a.kernel_w, a.stride_h, a.stride_w, a.pad_h, a.pad_w};
}

// PyTorch's pooling window of output (oh, ow): the clipped range and the divisor.
struct Window {
  int64_t h0, h1, w0, w1, divisor;
};

Window pool_window(const Layer& layer, const Dims& x, int64_t oh, int64_t ow) {
  const auto& a = std::get<PoolAttrs>(layer.spec.attrs);
  const PoolGeometry g = pool_geometry(layer);
  int64_t h0 = oh * g.sh - g.ph, w0 = ow * g.sw - g.pw;
  int64_t h1 = std::min(h0 + g.kh, x.h + g.ph), w1 = std::min(w0 + g.kw, x.w + g.pw);
  const int64_t padded = (h1 - h0) * (w1 - w0);
  h0 = std::max<int64_t>(h0, 0);
  w0 = std::max<int64_t>(w0, 0);
  h1 = std::min(h1, x.h);
  w1 = std::min(w1, x.w);
  const int64_t inside = (h1 - h0) * (w1 - w0);
  return {h0, h1, w0, w1, a.count_include_pad && !a.global ? padded : inside};
}

// The index of a pooling window's largest value of `values` (the first of equals, in row order).
template <class Values>
int64_t arg_max(const Window& win, const Dims& x, int64_t n, int64_t c, Values values) {
  int64_t best = -1;
  for (int64_t h = win.h0; h < win.h1; ++h) {
    for (int64_t w = win.w0; w < win.w1; ++w) {
      const int64_t i = x.at(n, c, h, w);
      if (best < 0 || values(i) > values(best)) best = i;
    }
  }
  return best;
}

double lrn_scale(const LrnAttrs& a, const Vec& x, const Dims& d, int64_t n, int64_t c, int64_t h,
                 int64_t w) {
  const int64_t half = (a.size - 1) / 2;
  double sum = 0.0;
  for (int64_t j = std::max<int64_t>(0, c - half); j <= std::min(d.c - 1, c + half); ++j) {
    const double v = x[static_cast<size_t>(d.at(n, j, h, w))];
    sum += v * v;
  }
  return a.k + a.alpha / a.size * sum;
}

struct BnStats {
  Vec mean, inv_std;
};

BnStats bn_stats(const Vec& x, const Dims& d, double eps) {
  BnStats s{Vec(d.c, 0.0), Vec(d.c, 0.0)};
  const double count = static_cast<double>(d.n * d.h * d.w);
  for (int64_t c = 0; c < d.c; ++c) {
    double sum = 0.0, sq = 0.0;
    for (int64_t n = 0; n < d.n; ++n) {
      for (int64_t i = 0; i < d.h * d.w; ++i) sum += x[static_cast<size_t>(d.at(n, c, 0, 0) + i)];
    }
    const double mean = sum / count;
    for (int64_t n = 0; n < d.n; ++n) {
      for (int64_t i = 0; i < d.h * d.w; ++i) {
        const double v = x[static_cast<size_t>(d.at(n, c, 0, 0) + i)] - mean;
        sq += v * v;
      }
    }
    s.mean[c] = mean;
    s.inv_std[c] = 1.0 / std::sqrt(sq / count + eps);
  }
  return s;
}

double dropout_factor(const Layer& layer, const kernels::MaskKey& k, int64_t index) {
  const auto rate = static_cast<float>(std::get<DropoutAttrs>(layer.spec.attrs).rate);
  const uint64_t stream = kernels::mask_stream(k.seed, k.step, k.worker, k.layer);
  return kernels::dropout_keeps(stream, static_cast<uint64_t>(index), rate)
             ? 1.0 / (1.0 - static_cast<double>(rate))
             : 0.0;
}

Vec softmax(const Vec& x, int64_t batch, int64_t classes) {
  Vec p(x.size());
  for (int64_t n = 0; n < batch; ++n) {
    double top = -std::numeric_limits<double>::infinity();
    for (int64_t c = 0; c < classes; ++c) top = std::max(top, x[static_cast<size_t>(n * classes + c)]);
    double sum = 0.0;
    for (int64_t c = 0; c < classes; ++c) {
      const auto i = static_cast<size_t>(n * classes + c);
      p[i] = std::exp(x[i] - top);
      sum += p[i];
    }
    for (int64_t c = 0; c < classes; ++c) p[static_cast<size_t>(n * classes + c)] /= sum;
  }
  return p;
}

// Calls f(n, o, oh, ow, ci_global, ih, iw, weight_index) for every multiply-add of a convolution.
template <class F>
void for_each_conv_term(const Layer& layer, int64_t batch, F f) {
  const auto& a = std::get<Conv2dAttrs>(layer.spec.attrs);
  const Dims x = dims_of(layer.input_shapes.front(), batch);
  const Dims y = dims_of(layer.output, batch);
  const int64_t cin_g = x.c / a.groups, cout_g = y.c / a.groups;
  for (int64_t n = 0; n < batch; ++n) {
    for (int64_t o = 0; o < y.c; ++o) {
      const int64_t g = o / cout_g;
      for (int64_t oh = 0; oh < y.h; ++oh) {
        for (int64_t ow = 0; ow < y.w; ++ow) {
          for (int64_t ci = 0; ci < cin_g; ++ci) {
            for (int64_t kh = 0; kh < a.kernel_h; ++kh) {
              const int64_t ih = oh * a.stride_h - a.pad_h + kh * a.dilation_h;
              if (ih < 0 || ih >= x.h) continue;
              for (int64_t kw = 0; kw < a.kernel_w; ++kw) {
                const int64_t iw = ow * a.stride_w - a.pad_w + kw * a.dilation_w;
                if (iw < 0 || iw >= x.w) continue;
                f(n, o, oh, ow, g * cin_g + ci, ih, iw, ((o * cin_g + ci) * a.kernel_h + kh) * a.kernel_w + kw);
              }
            }
          }
        }
      }
    }
  }
}

// The element-wise activations and their derivatives at x. The piecewise ones (hard sigmoid,
// hard swish) choose their piece from `decide` (see decide_on); PyTorch's conventions at the
// kinks: hard sigmoid passes no gradient at a clamp, hard swish's slope is (2x + 3) / 6 on
// [-3, 3] and 1 above.
double sigmoid(double x) { return 1.0 / (1.0 + std::exp(-x)); }

double activation(const Layer& layer, double x, double decide) {
  switch (layer.kind()) {
    case LayerKind::sigmoid:
      return sigmoid(x);
    case LayerKind::silu:
      return x * sigmoid(x);
    case LayerKind::hard_sigmoid: {
      const auto& a = std::get<HardSigmoidAttrs>(layer.spec.attrs);
      const double z = a.alpha * decide + a.beta;
      return z <= 0.0 ? 0.0 : (z >= 1.0 ? 1.0 : a.alpha * x + a.beta);
    }
    case LayerKind::hard_swish:
      return decide <= -3.0 ? 0.0 : (decide >= 3.0 ? x : x * (x + 3.0) / 6.0);
    default:
      break;
  }
  throw std::logic_error("not an element-wise activation");
}

double activation_slope(const Layer& layer, double x, double decide) {
  switch (layer.kind()) {
    case LayerKind::sigmoid:
      return sigmoid(x) * (1.0 - sigmoid(x));
    case LayerKind::silu:
      return sigmoid(x) * (1.0 + x * (1.0 - sigmoid(x)));
    case LayerKind::hard_sigmoid: {
      const auto& a = std::get<HardSigmoidAttrs>(layer.spec.attrs);
      const double z = a.alpha * decide + a.beta;
      return z > 0.0 && z < 1.0 ? a.alpha : 0.0;
    }
    case LayerKind::hard_swish:
      return decide < -3.0 ? 0.0 : (decide > 3.0 ? 1.0 : (2.0 * x + 3.0) / 6.0);
    default:
      break;
  }
  throw std::logic_error("not an element-wise activation");
}

// How many consecutive elements of mul's first input (plain NCHW) share one element of its
// second: 1 with equal shapes, H x W when the second is C x 1 x 1.
int64_t scale_span(const Layer& layer) {
  const TensorShape& first = layer.input_shapes.at(0);
  return layer.input_shapes.at(1) == first ? 1 : first.height * first.width;
}

}  // namespace

Vec ref_forward(const Layer& layer, int64_t batch, const std::vector<const Vec*>& inputs,
                const Vec& weight, const Vec& bias, std::span<const int32_t> labels,
                const kernels::MaskKey& mask, double* loss, const Vec* decide_on) {
  const Vec& x = *inputs.front();
  const Vec& decisions = decide_on != nullptr ? *decide_on : x;
  const auto D = [&](int64_t i) { return decisions[static_cast<size_t>(i)]; };
  const Dims xd = dims_of(layer.input_shapes.front(), batch);
  const Dims yd = dims_of(layer.output, batch);
  Vec y(static_cast<size_t>(yd.size()), 0.0);
  const auto Y = [&](int64_t i) -> double& { return y[static_cast<size_t>(i)]; };
  const auto X = [&](int64_t i) { return x[static_cast<size_t>(i)]; };
  switch (layer.kind()) {
    case LayerKind::conv2d:
      for_each_conv_term(layer, batch, [&](int64_t n, int64_t o, int64_t oh, int64_t ow, int64_t c,
                                           int64_t ih, int64_t iw, int64_t wi) {
        Y(yd.at(n, o, oh, ow)) += X(xd.at(n, c, ih, iw)) * weight[static_cast<size_t>(wi)];
      });
      if (!bias.empty()) {
        for (int64_t i = 0; i < yd.size(); ++i) Y(i) += bias[static_cast<size_t>((i / (yd.h * yd.w)) % yd.c)];
      }
      return y;
    case LayerKind::max_pool:
    case LayerKind::avg_pool:
      for (int64_t n = 0; n < batch; ++n) {
        for (int64_t c = 0; c < yd.c; ++c) {
          for (int64_t oh = 0; oh < yd.h; ++oh) {
            for (int64_t ow = 0; ow < yd.w; ++ow) {
              const Window win = pool_window(layer, xd, oh, ow);
              if (layer.kind() == LayerKind::max_pool) {
                Y(yd.at(n, c, oh, ow)) = X(arg_max(win, xd, n, c, D));
                continue;
              }
              double acc = 0.0;
              for (int64_t h = win.h0; h < win.h1; ++h) {
                for (int64_t w = win.w0; w < win.w1; ++w) acc += X(xd.at(n, c, h, w));
              }
              Y(yd.at(n, c, oh, ow)) = acc / win.divisor;
            }
          }
        }
      }
      return y;
    case LayerKind::relu:
      for (int64_t i = 0; i < yd.size(); ++i) Y(i) = D(i) > 0.0 ? X(i) : 0.0;
      return y;
    case LayerKind::lrn: {
      const auto& a = std::get<LrnAttrs>(layer.spec.attrs);
      for (int64_t n = 0; n < batch; ++n) {
        for (int64_t c = 0; c < xd.c; ++c) {
          for (int64_t h = 0; h < xd.h; ++h) {
            for (int64_t w = 0; w < xd.w; ++w) {
              const int64_t i = xd.at(n, c, h, w);
              Y(i) = X(i) * std::pow(lrn_scale(a, x, xd, n, c, h, w), -a.beta);
            }
          }
        }
      }
      return y;
    }
    case LayerKind::batch_norm: {
      const BnStats s = bn_stats(x, xd, std::get<BatchNormAttrs>(layer.spec.attrs).epsilon);
      for (int64_t i = 0; i < xd.size(); ++i) {
        const auto c = static_cast<size_t>((i / (xd.h * xd.w)) % xd.c);
        Y(i) = weight[c] * (X(i) - s.mean[c]) * s.inv_std[c] + bias[c];
      }
      return y;
    }
    case LayerKind::dropout:
      for (int64_t i = 0; i < xd.size(); ++i) Y(i) = X(i) * dropout_factor(layer, mask, i);
      return y;
    case LayerKind::flatten:
      return x;
    case LayerKind::fully_connected: {
      const int64_t in = xd.c * xd.h * xd.w, out = yd.c;
      for (int64_t n = 0; n < batch; ++n) {
        for (int64_t o = 0; o < out; ++o) {
          double acc = bias.empty() ? 0.0 : bias[static_cast<size_t>(o)];
          for (int64_t k = 0; k < in; ++k) acc += X(n * in + k) * weight[static_cast<size_t>(o * in + k)];
          Y(n * out + o) = acc;
        }
      }
      return y;
    }
    case LayerKind::concat: {
      int64_t offset = 0;
      for (size_t k = 0; k < inputs.size(); ++k) {
        const Dims d = dims_of(layer.input_shapes[k], batch);
        for (int64_t n = 0; n < batch; ++n) {
          for (int64_t i = 0; i < d.c * d.h * d.w; ++i) {
            Y(yd.at(n, offset, 0, 0) + i) = (*inputs[k])[static_cast<size_t>(d.at(n, 0, 0, 0) + i)];
          }
        }
        offset += d.c;
      }
      return y;
    }
    case LayerKind::add:
      for (const Vec* in : inputs) {
        for (int64_t i = 0; i < yd.size(); ++i) Y(i) += (*in)[static_cast<size_t>(i)];
      }
      return y;
    case LayerKind::softmax_cross_entropy: {
      y = softmax(x, batch, xd.c);
      if (loss != nullptr) {
        double sum = 0.0;
        for (int64_t n = 0; n < batch; ++n) sum -= std::log(Y(n * xd.c + labels[static_cast<size_t>(n)]));
        *loss = sum / static_cast<double>(batch);
      }
      return y;
    }
    case LayerKind::sigmoid:
    case LayerKind::silu:
    case LayerKind::hard_sigmoid:
    case LayerKind::hard_swish:
      for (int64_t i = 0; i < yd.size(); ++i) Y(i) = activation(layer, X(i), D(i));
      return y;
    case LayerKind::mul: {
      const Vec& s = *inputs.at(1);
      const int64_t per_scale = scale_span(layer);
      for (int64_t i = 0; i < yd.size(); ++i) Y(i) = X(i) * s[static_cast<size_t>(i / per_scale)];
      return y;
    }
  }
  throw std::logic_error("unhandled layer kind");
}

RefGradients ref_backward(const Layer& layer, int64_t batch, const std::vector<const Vec*>& inputs,
                          const Vec& output, const Vec& weight, const Vec& bias,
                          const Vec& diff_output, std::span<const int32_t> labels,
                          const kernels::MaskKey& mask, const Vec* decide_on) {
  const Vec& x = *inputs.front();
  const Vec& decisions = decide_on != nullptr ? *decide_on : x;
  const auto D = [&](int64_t i) { return decisions[static_cast<size_t>(i)]; };
  const Dims xd = dims_of(layer.input_shapes.front(), batch);
  const Dims yd = dims_of(layer.output, batch);
  RefGradients g;
  g.inputs.assign(inputs.size(), Vec(static_cast<size_t>(xd.size()), 0.0));
  Vec& dx = g.inputs.front();
  const auto DX = [&](int64_t i) -> double& { return dx[static_cast<size_t>(i)]; };
  const auto DY = [&](int64_t i) { return diff_output[static_cast<size_t>(i)]; };
  const auto X = [&](int64_t i) { return x[static_cast<size_t>(i)]; };
  switch (layer.kind()) {
    case LayerKind::conv2d: {
      g.weight.assign(weight.size(), 0.0);
      for_each_conv_term(layer, batch, [&](int64_t n, int64_t o, int64_t oh, int64_t ow, int64_t c,
                                           int64_t ih, int64_t iw, int64_t wi) {
        const double dy = DY(yd.at(n, o, oh, ow));
        DX(xd.at(n, c, ih, iw)) += dy * weight[static_cast<size_t>(wi)];
        g.weight[static_cast<size_t>(wi)] += dy * X(xd.at(n, c, ih, iw));
      });
      if (!bias.empty()) {
        g.bias.assign(bias.size(), 0.0);
        for (int64_t i = 0; i < yd.size(); ++i) g.bias[static_cast<size_t>((i / (yd.h * yd.w)) % yd.c)] += DY(i);
      }
      return g;
    }
    case LayerKind::max_pool:
    case LayerKind::avg_pool:
      for (int64_t n = 0; n < batch; ++n) {
        for (int64_t c = 0; c < yd.c; ++c) {
          for (int64_t oh = 0; oh < yd.h; ++oh) {
            for (int64_t ow = 0; ow < yd.w; ++ow) {
              const Window win = pool_window(layer, xd, oh, ow);
              const double dy = DY(yd.at(n, c, oh, ow));
              if (layer.kind() == LayerKind::avg_pool) {
                for (int64_t h = win.h0; h < win.h1; ++h) {
                  for (int64_t w = win.w0; w < win.w1; ++w) DX(xd.at(n, c, h, w)) += dy / win.divisor;
                }
                continue;
              }
              DX(arg_max(win, xd, n, c, D)) += dy;
            }
          }
        }
      }
      return g;
    case LayerKind::relu:
      for (int64_t i = 0; i < xd.size(); ++i) DX(i) = D(i) > 0.0 ? DY(i) : 0.0;
      return g;
    case LayerKind::lrn: {
      const auto& a = std::get<LrnAttrs>(layer.spec.attrs);
      const int64_t half = (a.size - 1) / 2;
      for (int64_t n = 0; n < batch; ++n) {
        for (int64_t h = 0; h < xd.h; ++h) {
          for (int64_t w = 0; w < xd.w; ++w) {
            for (int64_t c = 0; c < xd.c; ++c) {
              const int64_t i = xd.at(n, c, h, w);
              double acc = DY(i) * std::pow(lrn_scale(a, x, xd, n, c, h, w), -a.beta);
              // Channel c sits in the windows of channels c - half .. c + half.
              for (int64_t j = std::max<int64_t>(0, c - half); j <= std::min(xd.c - 1, c + half); ++j) {
                const int64_t k = xd.at(n, j, h, w);
                const double s = lrn_scale(a, x, xd, n, j, h, w);
                acc -= 2.0 * a.alpha * a.beta / a.size * X(i) * DY(k) * X(k) * std::pow(s, -a.beta - 1.0);
              }
              DX(i) = acc;
            }
          }
        }
      }
      return g;
    }
    case LayerKind::batch_norm: {
      const BnStats s = bn_stats(x, xd, std::get<BatchNormAttrs>(layer.spec.attrs).epsilon);
      g.weight.assign(static_cast<size_t>(xd.c), 0.0);
      g.bias.assign(static_cast<size_t>(xd.c), 0.0);
      const auto channel = [&](int64_t i) { return static_cast<size_t>((i / (xd.h * xd.w)) % xd.c); };
      for (int64_t i = 0; i < xd.size(); ++i) {
        const size_t c = channel(i);
        g.bias[c] += DY(i);
        g.weight[c] += DY(i) * (X(i) - s.mean[c]) * s.inv_std[c];
      }
      const double count = static_cast<double>(xd.n * xd.h * xd.w);
      for (int64_t i = 0; i < xd.size(); ++i) {
        const size_t c = channel(i);
        const double xhat = (X(i) - s.mean[c]) * s.inv_std[c];
        DX(i) = weight[c] * s.inv_std[c] * (DY(i) - g.bias[c] / count - xhat * g.weight[c] / count);
      }
      return g;
    }
    case LayerKind::dropout:
      for (int64_t i = 0; i < xd.size(); ++i) DX(i) = DY(i) * dropout_factor(layer, mask, i);
      return g;
    case LayerKind::flatten:
      dx = diff_output;
      return g;
    case LayerKind::fully_connected: {
      const int64_t in = xd.c * xd.h * xd.w, out = yd.c;
      g.weight.assign(weight.size(), 0.0);
      if (!bias.empty()) g.bias.assign(bias.size(), 0.0);
      for (int64_t n = 0; n < batch; ++n) {
        for (int64_t o = 0; o < out; ++o) {
          const double dy = DY(n * out + o);
          if (!bias.empty()) g.bias[static_cast<size_t>(o)] += dy;
          for (int64_t k = 0; k < in; ++k) {
            DX(n * in + k) += dy * weight[static_cast<size_t>(o * in + k)];
            g.weight[static_cast<size_t>(o * in + k)] += dy * X(n * in + k);
          }
        }
      }
      return g;
    }
    case LayerKind::concat: {
      int64_t offset = 0;
      for (size_t k = 0; k < inputs.size(); ++k) {
        const Dims d = dims_of(layer.input_shapes[k], batch);
        g.inputs[k].assign(static_cast<size_t>(d.size()), 0.0);
        for (int64_t n = 0; n < batch; ++n) {
          for (int64_t i = 0; i < d.c * d.h * d.w; ++i) {
            g.inputs[k][static_cast<size_t>(d.at(n, 0, 0, 0) + i)] = DY(yd.at(n, offset, 0, 0) + i);
          }
        }
        offset += d.c;
      }
      return g;
    }
    case LayerKind::add:
      for (auto& gi : g.inputs) gi = diff_output;
      return g;
    case LayerKind::softmax_cross_entropy: {
      const int64_t classes = xd.c;
      for (int64_t n = 0; n < batch; ++n) {
        for (int64_t c = 0; c < classes; ++c) {
          const int64_t i = n * classes + c;
          DX(i) = (output[static_cast<size_t>(i)] - (c == labels[static_cast<size_t>(n)] ? 1.0 : 0.0)) /
                  static_cast<double>(batch);
        }
      }
      return g;
    }
    case LayerKind::sigmoid:
    case LayerKind::silu:
    case LayerKind::hard_sigmoid:
    case LayerKind::hard_swish:
      for (int64_t i = 0; i < xd.size(); ++i) DX(i) = DY(i) * activation_slope(layer, X(i), D(i));
      return g;
    case LayerKind::mul: {
      // d first = dy * second; d second = dy * first, summed over H x W when broadcast.
      const Vec& s = *inputs.at(1);
      const int64_t per_scale = scale_span(layer);
      Vec& ds = g.inputs.at(1);
      ds.assign(s.size(), 0.0);
      for (int64_t i = 0; i < xd.size(); ++i) {
        const auto k = static_cast<size_t>(i / per_scale);
        DX(i) = DY(i) * s[k];
        ds[k] += DY(i) * X(i);
      }
      return g;
    }
  }
  throw std::logic_error("unhandled layer kind");
}

Vec ref_initial(uint64_t seed, const Layer& layer, bool bias) {
  const int64_t n = bias ? layer.bias_params : layer.weight_params;
  Vec out(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    out[static_cast<size_t>(i)] = kernels::initial_parameter(seed, layer, bias, i);
  }
  return out;
}

}  // namespace ralp::testing
