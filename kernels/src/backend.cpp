// Tensors and runner descriptions: the parts every backend shares, the CUDA module included.
#include "ralp/kernels/backend.hpp"
#include "tensor_checks.hpp"
#include "ralp/kernels/bf16.hpp"

#include <algorithm>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <system_error>

namespace ralp::kernels {

void check_same_size(const Tensor& a, const Tensor& b, const char* what) {
  if (a.elements() != b.elements()) {
    throw std::invalid_argument(std::string(what) + ": tensors of " + a.desc().to_string() +
                                " and " + b.desc().to_string());
  }
}

void check_span(const Tensor& t, size_t size) {
  if (static_cast<int64_t>(size) != t.elements()) {
    throw std::invalid_argument("host copy of " + std::to_string(size) + " values into " +
                                t.desc().to_string());
  }
}

namespace {

// Cache sizes believed, and the size assumed otherwise.
constexpr int64_t kMinCacheBytes = int64_t{64} << 10;
constexpr int64_t kMaxCacheBytes = int64_t{1} << 30;
constexpr int64_t kFallbackCacheBytes = int64_t{32} << 20;

std::string read_word(const std::filesystem::path& file) {
  std::ifstream in(file);
  std::string word;
  in >> word;
  return word;
}

// "32768K", "1M", "512": bytes, or -1 when it is none of those.
int64_t parse_cache_size(const std::string& text) {
  size_t used = 0;
  int64_t value = 0;
  try {
    value = std::stoll(text, &used);
  } catch (const std::exception&) {
    return -1;
  }
  const std::string unit = text.substr(used);
  if (unit.empty()) return value;
  if (unit == "K") return value << 10;
  if (unit == "M") return value << 20;
  if (unit == "G") return value << 30;
  return -1;
}

}  // namespace

int64_t cpu_last_level_cache_bytes(const std::filesystem::path& folder) {
  int best_level = 0;
  int64_t best_bytes = -1;
  std::error_code ec;
  for (std::filesystem::directory_iterator it(folder, ec), end; !ec && it != end; it.increment(ec)) {
    if (it->path().filename().string().rfind("index", 0) != 0) continue;
    const std::string type = read_word(it->path() / "type");
    if (type != "Data" && type != "Unified") continue;
    const int level = std::atoi(read_word(it->path() / "level").c_str());
    const int64_t bytes = parse_cache_size(read_word(it->path() / "size"));
    if (level > best_level && bytes > 0) {
      best_level = level;
      best_bytes = bytes;
    }
  }
  if (best_bytes < kMinCacheBytes || best_bytes > kMaxCacheBytes) return kFallbackCacheBytes;
  return best_bytes;
}

std::string_view to_string(BackendKind kind) { return kind == BackendKind::cpu ? "cpu" : "cuda"; }

int64_t TensorDesc::elements() const {
  int64_t n = 1;
  for (const int64_t d : dims) n *= d;
  return n;
}

int64_t element_bytes(DataType type) {
  return type == DataType::bf16 || type == DataType::f16 ? 2 : 4;
}

const char* to_string(DataType type) {
  switch (type) {
    case DataType::f32:
      return "f32";
    case DataType::s32:
      return "s32";
    case DataType::bf16:
      return "bf16";
    case DataType::f16:
      return "f16";
  }
  return "?";
}

int64_t TensorDesc::bytes() const { return elements() * element_bytes(type); }

std::string TensorDesc::to_string() const {
  std::ostringstream out;
  out << kernels::to_string(type) << '[';
  for (size_t i = 0; i < dims.size(); ++i) out << (i > 0 ? "," : "") << dims[i];
  out << ']' << (layout == Layout::channels_last ? " channels_last" : "");
  return out.str();
}

Tensor::Tensor(TensorDesc desc, std::unique_ptr<TensorStorage> storage)
    : desc_(std::move(desc)), storage_(std::move(storage)) {}

TensorDesc activation_desc(int64_t batch, int64_t c, int64_t h, int64_t w, Layout layout,
                           DataType type) {
  return {{batch, c, h, w}, type, layout};
}

namespace {

// Applies `copy(plain_index, layout_index)` to every element of a channels_last 4-D tensor.
template <class Copy>
void for_each_nhwc(const TensorDesc& desc, Copy copy) {
  const int64_t n = desc.dims[0], c = desc.dims[1], h = desc.dims[2], w = desc.dims[3];
  for (int64_t in = 0; in < n; ++in) {
    for (int64_t ic = 0; ic < c; ++ic) {
      for (int64_t ih = 0; ih < h; ++ih) {
        for (int64_t iw = 0; iw < w; ++iw) {
          copy(((in * c + ic) * h + ih) * w + iw, ((in * h + ih) * w + iw) * c + ic);
        }
      }
    }
  }
}

bool needs_permutation(const TensorDesc& desc) {
  return desc.layout == Layout::channels_last && desc.dims.size() == 4 &&
         desc.dims[2] * desc.dims[3] > 1 && desc.dims[1] > 1;
}

}  // namespace

void to_plain_order(const TensorDesc& desc, const uint16_t* src, float* dst) {
  if (!needs_permutation(desc)) {
    std::transform(src, src + desc.elements(), dst, from_bf16);
    return;
  }
  for_each_nhwc(desc, [&](int64_t plain, int64_t laid) { dst[plain] = from_bf16(src[laid]); });
}

void from_plain_order(const TensorDesc& desc, const float* src, uint16_t* dst) {
  if (!needs_permutation(desc)) {
    std::transform(src, src + desc.elements(), dst, to_bf16);
    return;
  }
  for_each_nhwc(desc, [&](int64_t plain, int64_t laid) { dst[laid] = to_bf16(src[plain]); });
}

void to_plain_order(const TensorDesc& desc, const float* src, float* dst) {
  if (!needs_permutation(desc)) {
    std::copy(src, src + desc.elements(), dst);
    return;
  }
  for_each_nhwc(desc, [&](int64_t plain, int64_t laid) { dst[plain] = src[laid]; });
}

void from_plain_order(const TensorDesc& desc, const float* src, float* dst) {
  if (!needs_permutation(desc)) {
    std::copy(src, src + desc.elements(), dst);
    return;
  }
  for_each_nhwc(desc, [&](int64_t plain, int64_t laid) { dst[laid] = src[plain]; });
}

LayerRunner::LayerRunner(const Layer& layer, int64_t batch, Layout layout,
                         DataType activation_type)
    : layer_(layer), batch_(batch), layout_(layout), activation_type_(activation_type) {
  if (batch < 1) throw std::invalid_argument("batch must be >= 1");
}

TensorDesc LayerRunner::input_desc(size_t i) const {
  const TensorShape& s = layer_.input_shapes.at(i);
  return activation_desc(batch_, s.channels, s.height, s.width, layout_, activation_type_);
}

TensorDesc LayerRunner::output_desc() const {
  const TensorShape& s = layer_.output;
  const DataType type =
      layer_.kind() == LayerKind::softmax_cross_entropy ? DataType::f32 : activation_type_;
  return activation_desc(batch_, s.channels, s.height, s.width, layout_, type);
}

DataType activation_type(Precision precision) {
  switch (precision) {
    case Precision::bf16:
      return DataType::bf16;
    case Precision::fp16:
      return DataType::f16;
    case Precision::fp32:
    case Precision::tf32:
      break;
  }
  return DataType::f32;
}

TensorDesc LayerRunner::weight_desc() const {
  const TensorShape& in = layer_.input_shapes.front();
  switch (layer_.kind()) {
    case LayerKind::conv2d: {
      const auto& a = std::get<Conv2dAttrs>(layer_.spec.attrs);
      return {{a.out_channels, in.channels / a.groups, a.kernel_h, a.kernel_w}};
    }
    case LayerKind::fully_connected:
      return {{std::get<FullyConnectedAttrs>(layer_.spec.attrs).out_features, in.elements()}};
    case LayerKind::batch_norm:
      return {{in.channels}};
    default:
      throw std::logic_error("layer '" + layer_.name() + "' has no weights");
  }
}

TensorDesc LayerRunner::bias_desc() const {
  if (!has_bias()) throw std::logic_error("layer '" + layer_.name() + "' has no bias");
  return {{layer_.bias_params}};
}

Tensor Backend::upload(const TensorDesc& desc, std::span<const float> values) {
  Tensor t = allocate(desc);
  copy_from_host(t, values);
  return t;
}

std::vector<float> Backend::download(const Tensor& src) {
  std::vector<float> out(static_cast<size_t>(src.elements()));
  copy_to_host(src, out);
  return out;
}

}  // namespace ralp::kernels
