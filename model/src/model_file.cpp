// Reading and writing model files.
#include "ralp/model/model_file.hpp"

#include <limits>

namespace ralp {
namespace {

constexpr int64_t kMaxExtent = 1 << 20;
constexpr int kMaxWindow = 1 << 16;
// Bounds of hard_sigmoid's alpha (a slope > 0) and beta (an offset of either sign).
constexpr double kMinSlope = 1e-12;
constexpr double kMaxSlope = 1e6;

std::vector<std::string> kind_names() {
  std::vector<std::string> out;
  for (const LayerKind kind : all_layer_kinds()) out.emplace_back(to_string(kind));
  return out;
}

// An int, or [h, w]. Returns {fallback, fallback} when absent.
std::pair<int, int> pair_or(ObjectReader& r, std::string_view key, int min,
                            std::optional<int> fallback) {
  const Json* v = r.get(key);
  const std::string expected = "an integer >= " + std::to_string(min) +
                               " or a pair [height, width] of them";
  if (v == nullptr) {
    if (!fallback) r.require(key, expected);
    return {*fallback, *fallback};
  }
  const auto one = [&](const Json& item) -> std::optional<int> {
    if (!item.is_number_integer()) return std::nullopt;
    const int64_t n = item.get<int64_t>();
    if (n < min || n > kMaxWindow) return std::nullopt;
    return static_cast<int>(n);
  };
  if (auto n = one(*v)) return {*n, *n};
  if (v->is_array() && v->size() == 2) {
    const auto h = one((*v)[0]);
    const auto w = one((*v)[1]);
    if (h && w) return {*h, *w};
  }
  r.fail(key, "is " + describe_json(*v) + ", expected " + expected);
}

LayerSpec parse_layer(const Json& value, const std::string& path, const std::string& file,
                      size_t index) {
  ObjectReader r(value, path, file);
  LayerSpec spec;
  spec.kind = *layer_kind_from_string(r.choice("type", kind_names()));
  spec.name = r.optional_string("name").value_or(std::string(to_string(spec.kind)) +
                                                 std::to_string(index));
  if (const Json* inputs = r.get("inputs")) {
    if (!inputs->is_array() || inputs->empty()) {
      r.fail("inputs", "is " + describe_json(*inputs) +
                           ", expected a non-empty array of layer names");
    }
    for (size_t i = 0; i < inputs->size(); ++i) {
      const Json& item = (*inputs)[i];
      if (!item.is_string() || item.get<std::string>().empty()) {
        throw InputError(file, json_path(r.path_of("inputs"), i),
                         "is " + describe_json(item) + ", expected a layer name");
      }
      spec.inputs.push_back(item.get<std::string>());
    }
  }

  switch (spec.kind) {
    case LayerKind::conv2d: {
      Conv2dAttrs a;
      a.out_channels = r.integer("out_channels", 1, kMaxExtent);
      std::tie(a.kernel_h, a.kernel_w) = pair_or(r, "kernel", 1, std::nullopt);
      std::tie(a.stride_h, a.stride_w) = pair_or(r, "stride", 1, 1);
      std::tie(a.pad_h, a.pad_w) = pair_or(r, "padding", 0, 0);
      std::tie(a.dilation_h, a.dilation_w) = pair_or(r, "dilation", 1, 1);
      a.groups = r.optional_integer("groups", 1, kMaxExtent).value_or(1);
      a.bias = r.optional_boolean("bias").value_or(true);
      spec.attrs = a;
      break;
    }
    case LayerKind::max_pool:
    case LayerKind::avg_pool: {
      PoolAttrs a;
      a.global = r.optional_boolean("global").value_or(false);
      if (!a.global) {
        std::tie(a.kernel_h, a.kernel_w) = pair_or(r, "kernel", 1, std::nullopt);
        std::tie(a.stride_h, a.stride_w) =
            r.has("stride") ? pair_or(r, "stride", 1, 1) : std::pair{a.kernel_h, a.kernel_w};
        std::tie(a.pad_h, a.pad_w) = pair_or(r, "padding", 0, 0);
        a.ceil_mode = r.optional_boolean("ceil_mode").value_or(false);
        if (spec.kind == LayerKind::avg_pool) {
          a.count_include_pad = r.optional_boolean("count_include_pad").value_or(true);
        }
      }
      spec.attrs = a;
      break;
    }
    case LayerKind::lrn: {
      LrnAttrs a;
      a.size = static_cast<int>(r.optional_integer("size", 1, kMaxWindow).value_or(a.size));
      a.alpha = r.optional_number("alpha", 0.0, 1e6).value_or(a.alpha);
      a.beta = r.optional_number("beta", 0.0, 1e6).value_or(a.beta);
      a.k = r.optional_number("k", 0.0, 1e6).value_or(a.k);
      spec.attrs = a;
      break;
    }
    case LayerKind::batch_norm:
      spec.attrs = BatchNormAttrs{r.optional_number("epsilon", 1e-12, 1.0).value_or(1e-5)};
      break;
    case LayerKind::dropout:
      spec.attrs = DropoutAttrs{r.optional_number("rate", 0.0, 0.999).value_or(0.5)};
      break;
    case LayerKind::fully_connected: {
      FullyConnectedAttrs a;
      a.out_features = r.integer("out_features", 1, kMaxExtent);
      a.bias = r.optional_boolean("bias").value_or(true);
      spec.attrs = a;
      break;
    }
    case LayerKind::hard_sigmoid: {
      HardSigmoidAttrs a;
      a.alpha = r.optional_number("alpha", kMinSlope, kMaxSlope).value_or(a.alpha);
      a.beta = r.optional_number("beta", -kMaxSlope, kMaxSlope).value_or(a.beta);
      spec.attrs = a;
      break;
    }
    case LayerKind::relu:
    case LayerKind::flatten:
    case LayerKind::concat:
    case LayerKind::add:
    case LayerKind::softmax_cross_entropy:
    case LayerKind::sigmoid:
    case LayerKind::silu:
    case LayerKind::hard_swish:
    case LayerKind::mul:
      spec.attrs = std::monostate{};
      break;
  }
  r.finish();
  return spec;
}

Json pair_json(int h, int w) { return h == w ? Json(h) : Json::array({h, w}); }

}  // namespace

LayerGraph parse_model(const Json& value, const std::string& path, const std::string& file) {
  ObjectReader r(value, path, file);
  const std::string name = r.string("name");
  const Json& input = r.require("input", "[channels, height, width]");
  const auto dim = [&](size_t i) -> std::optional<int64_t> {
    if (!input.is_array() || input.size() != 3 || !input[i].is_number_integer()) {
      return std::nullopt;
    }
    const int64_t n = input[i].get<int64_t>();
    return n >= 1 && n <= kMaxExtent ? std::optional(n) : std::nullopt;
  };
  if (!dim(0) || !dim(1) || !dim(2)) {
    r.fail("input", "is " + describe_json(input) +
                        ", expected [channels, height, width] of integers >= 1");
  }
  const TensorShape shape{*dim(0), *dim(1), *dim(2)};
  const Json& layers = r.require("layers", "an array of layers");
  if (!layers.is_array() || layers.empty()) {
    r.fail("layers", "is " + describe_json(layers) + ", expected a non-empty array of layers");
  }
  const std::string layers_path = r.path_of("layers");
  std::vector<LayerSpec> specs;
  for (size_t i = 0; i < layers.size(); ++i) {
    specs.push_back(parse_layer(layers[i], json_path(layers_path, i), file, i));
  }
  r.finish();
  try {
    return LayerGraph(name, shape, std::move(specs));
  } catch (const ModelError& e) {
    std::string at = json_path(layers_path, e.layer_index());
    if (e.attribute() == "input") at = r.path_of("input");
    else if (!e.attribute().empty()) at = json_path(at, e.attribute());
    throw InputError(file, at, e.what());
  }
}

LayerGraph load_model_file(const std::filesystem::path& file) {
  return parse_model(read_json_file(file), "", file.string());
}

Json model_to_json(const LayerGraph& graph) {
  Json layers = Json::array();
  for (LayerId id = 0; id < graph.size(); ++id) {
    const Layer& layer = graph.layer(id);
    Json j = Json::object();
    j["name"] = layer.name();
    j["type"] = std::string(to_string(layer.kind()));
    const bool previous_only =
        layer.spec.inputs.size() == 1 &&
        layer.spec.inputs.front() ==
            (id == 0 ? std::string(kModelInputName) : graph.layer(id - 1).name());
    if (!previous_only) j["inputs"] = layer.spec.inputs;
    std::visit(
        [&j, &layer](const auto& a) {
          using T = std::decay_t<decltype(a)>;
          if constexpr (std::is_same_v<T, Conv2dAttrs>) {
            j["out_channels"] = a.out_channels;
            j["kernel"] = pair_json(a.kernel_h, a.kernel_w);
            j["stride"] = pair_json(a.stride_h, a.stride_w);
            j["padding"] = pair_json(a.pad_h, a.pad_w);
            if (a.dilation_h != 1 || a.dilation_w != 1) {
              j["dilation"] = pair_json(a.dilation_h, a.dilation_w);
            }
            if (a.groups != 1) j["groups"] = a.groups;
            if (!a.bias) j["bias"] = false;
          } else if constexpr (std::is_same_v<T, PoolAttrs>) {
            if (a.global) {
              j["global"] = true;
              return;
            }
            j["kernel"] = pair_json(a.kernel_h, a.kernel_w);
            j["stride"] = pair_json(a.stride_h, a.stride_w);
            if (a.pad_h != 0 || a.pad_w != 0) j["padding"] = pair_json(a.pad_h, a.pad_w);
            if (a.ceil_mode) j["ceil_mode"] = true;
            if (layer.kind() == LayerKind::avg_pool && !a.count_include_pad) {
              j["count_include_pad"] = false;
            }
          } else if constexpr (std::is_same_v<T, LrnAttrs>) {
            j["size"] = a.size;
            j["alpha"] = a.alpha;
            j["beta"] = a.beta;
            j["k"] = a.k;
          } else if constexpr (std::is_same_v<T, BatchNormAttrs>) {
            j["epsilon"] = a.epsilon;
          } else if constexpr (std::is_same_v<T, DropoutAttrs>) {
            j["rate"] = a.rate;
          } else if constexpr (std::is_same_v<T, FullyConnectedAttrs>) {
            j["out_features"] = a.out_features;
            if (!a.bias) j["bias"] = false;
          } else if constexpr (std::is_same_v<T, HardSigmoidAttrs>) {
            j["alpha"] = a.alpha;
            j["beta"] = a.beta;
          }
        },
        layer.spec.attrs);
    layers.push_back(std::move(j));
  }
  const TensorShape& in = graph.input_shape();
  return {{"name", graph.name()},
          {"input", {in.channels, in.height, in.width}},
          {"layers", std::move(layers)}};
}

}  // namespace ralp
