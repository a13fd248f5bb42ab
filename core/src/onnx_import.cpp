// ONNX files into layer graphs, through Debian's ONNX protobuf definitions (libonnx-dev).
//
// The nodes are walked in file order (ONNX requires a topological order). Each tensor is either
// an activation (a layer's output, or the model input) or a constant (an initializer, a Constant
// node, or shape arithmetic on either). Shape arithmetic the exporters insert before a classifier
// (Shape, Gather, Unsqueeze, Concat feeding a Reshape) is evaluated on the constants, so a
// Reshape to [batch, features] becomes a flatten layer. Weights are read only for their
// dimensions: external-data files need not be present.
#include "ralp/core/onnx_import.hpp"

#include <onnx/onnx_pb.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <set>

namespace ralp {
namespace {

namespace fs = std::filesystem;

// Small constants (shapes, ratios) have their values read; weights only their dimensions.
constexpr int64_t kMaxConstantValues = 4096;
constexpr std::string_view kSupportedOperators =
    "Conv, Gemm, MatMul, Add, Relu, MaxPool, AveragePool, GlobalAveragePool, GlobalMaxPool, "
    "BatchNormalization, LRN, Dropout, Flatten, Reshape, Concat, Softmax, Pad, Identity, Cast, "
    "Constant, Shape, Gather, Unsqueeze, Squeeze";

struct Value {
  bool is_constant = false;
  // An activation: the layer producing it ("input" for the model input), its per-image shape,
  // its rank including the batch dimension, and zero padding a Pad node added that the consuming
  // convolution or average pool absorbs.
  std::string layer;
  TensorShape shape;
  int rank = 4;
  int pad_h = 0;
  int pad_w = 0;
  // A constant: its dimensions, and its values where it is small and numeric.
  std::vector<int64_t> dims;
  std::optional<std::vector<double>> values;
};

// ONNX stores these attributes as floats: 1e-5 arrives as 9.99999975e-06. Seven significant
// digits give back the number that was written.
double from_float(float f) {
  char text[32];
  std::snprintf(text, sizeof text, "%.7g", static_cast<double>(f));
  return std::strtod(text, nullptr);
}

int64_t element_count(const std::vector<int64_t>& dims) {
  int64_t n = 1;
  for (const int64_t d : dims) n *= d;
  return n;
}

std::string join_ints(const std::vector<int64_t>& values, std::string_view separator = ", ") {
  std::string out;
  for (size_t i = 0; i < values.size(); ++i) {
    out += (i ? std::string(separator) : "") + std::to_string(values[i]);
  }
  return out;
}

template <typename T>
std::vector<double> raw_values(const std::string& raw) {
  std::vector<double> out(raw.size() / sizeof(T));
  for (size_t i = 0; i < out.size(); ++i) {
    T v;
    std::memcpy(&v, raw.data() + i * sizeof(T), sizeof(T));
    out[i] = static_cast<double>(v);
  }
  return out;
}

Value constant_from_tensor(const onnx::TensorProto& t) {
  Value v;
  v.is_constant = true;
  v.dims.assign(t.dims().begin(), t.dims().end());
  if (element_count(v.dims) > kMaxConstantValues ||
      t.data_location() == onnx::TensorProto::EXTERNAL) {
    return v;
  }
  const bool raw = t.has_raw_data();
  switch (t.data_type()) {
    case onnx::TensorProto::FLOAT:
      v.values = raw ? raw_values<float>(t.raw_data())
                     : std::vector<double>(t.float_data().begin(), t.float_data().end());
      for (double& x : *v.values) x = from_float(static_cast<float>(x));
      break;
    case onnx::TensorProto::DOUBLE:
      v.values = raw ? raw_values<double>(t.raw_data())
                     : std::vector<double>(t.double_data().begin(), t.double_data().end());
      break;
    case onnx::TensorProto::INT64:
      v.values = raw ? raw_values<int64_t>(t.raw_data())
                     : std::vector<double>(t.int64_data().begin(), t.int64_data().end());
      break;
    case onnx::TensorProto::INT32:
      v.values = raw ? raw_values<int32_t>(t.raw_data())
                     : std::vector<double>(t.int32_data().begin(), t.int32_data().end());
      break;
    default:
      break;
  }
  if (v.values && static_cast<int64_t>(v.values->size()) != element_count(v.dims)) {
    v.values.reset();
  }
  return v;
}

Value constant_from_numbers(std::vector<double> numbers, bool scalar) {
  Value v;
  v.is_constant = true;
  if (!scalar) v.dims = {static_cast<int64_t>(numbers.size())};
  v.values = std::move(numbers);
  return v;
}

std::string lower(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

// Letters, digits, '_', '.' and '-' are kept; anything else becomes '_'.
std::string sanitise(std::string_view s) {
  std::string out;
  for (const char c : s) {
    const bool keep =
        std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.' || c == '-';
    out += keep ? c : '_';
  }
  return out;
}

// True for "Conv", "Conv_1", ...: the operator part PyTorch appends to a node's scope.
bool is_operator_component(std::string_view component, std::string_view op_type) {
  if (component.substr(0, op_type.size()) != op_type) return false;
  const std::string_view rest = component.substr(op_type.size());
  if (rest.empty()) return true;
  return rest.size() > 1 && rest[0] == '_' &&
         std::all_of(rest.begin() + 1, rest.end(), [](char c) { return std::isdigit(c); });
}

// A node name's module path: "/layer1/layer1.0/conv1/Conv" gives "layer1.0.conv1" (a scope that
// repeats its parent's name as a prefix replaces it) and the operator part "Conv".
struct NameParts {
  std::string scope;
  std::string op_part;
};

NameParts split_node_name(const onnx::NodeProto& node) {
  std::vector<std::string> parts;
  std::string current;
  for (const char c : node.name()) {
    if (c == '/') {
      if (!current.empty()) parts.push_back(current);
      current.clear();
    } else {
      current += c;
    }
  }
  if (!current.empty()) parts.push_back(current);
  NameParts out;
  if (parts.size() > 1 && is_operator_component(parts.back(), node.op_type())) {
    out.op_part = parts.back();
    parts.pop_back();
  } else if (parts.size() == 1 && is_operator_component(parts.back(), node.op_type())) {
    return {"", parts.back()};
  }
  std::vector<std::string> merged;
  for (const auto& part : parts) {
    if (!merged.empty() && part.rfind(merged.back() + ".", 0) == 0) {
      merged.back() = part;
    } else {
      merged.push_back(part);
    }
  }
  for (size_t i = 0; i < merged.size(); ++i) out.scope += (i ? "." : "") + merged[i];
  out.scope = sanitise(out.scope);
  return out;
}

class Importer {
 public:
  Importer(fs::path file, const OnnxImportOptions& options)
      : path_(std::move(file)), file_(path_.string()), options_(options) {}

  LayerGraph run() {
    read();
    const onnx::GraphProto& graph = model_.graph();
    plan_names(graph);
    for (const auto& init : graph.initializer()) values_[init.name()] = constant_from_tensor(init);
    read_input(graph);
    for (const auto& node : graph.node()) import_node(node);
    finish_output(graph);
    std::string name = options_.name.empty() ? sanitise(path_.stem().string()) : options_.name;
    try {
      return LayerGraph(std::move(name), input_shape_, specs_);
    } catch (const ModelError& e) {
      const size_t i = e.layer_index();
      if (i < specs_.size()) {
        fail("layer '" + specs_[i].name + "' (node '" + node_names_[i] + "') " + e.what());
      }
      fail(e.what());
    }
  }

 private:
  [[noreturn]] void fail(const std::string& problem) const { throw InputError(file_, "", problem); }
  [[noreturn]] void fail_node(const onnx::NodeProto& node, const std::string& problem) const {
    fail("node '" + node.name() + "' (" + node.op_type() + ") " + problem);
  }

  void read() {
    std::ifstream in(path_, std::ios::binary);
    if (!in) fail("cannot be read");
    if (!model_.ParseFromIstream(&in)) {
      fail("is not an ONNX model: its protobuf data does not parse (truncated or another format)");
    }
    if (!model_.has_graph() || model_.graph().node_size() == 0) {
      fail("is not an ONNX model: it holds no graph nodes");
    }
  }

  // Layer names from node names; a scope that other nodes' scopes extend (a residual block's
  // Add, "layer1.0") keeps its operator part ("layer1.0.add") so that it does not read as the
  // whole block.
  void plan_names(const onnx::GraphProto& graph) {
    for (const auto& node : graph.node()) {
      const std::string scope = split_node_name(node).scope;
      for (size_t dot = scope.find('.'); dot != std::string::npos; dot = scope.find('.', dot + 1)) {
        scope_prefixes_.insert(scope.substr(0, dot));
      }
    }
  }

  std::string layer_name(const onnx::NodeProto& node) {
    const NameParts parts = split_node_name(node);
    std::string name = parts.scope;
    if (name.empty() || scope_prefixes_.contains(name)) {
      const std::string op =
          sanitise(lower(parts.op_part.empty() ? node.op_type() : parts.op_part));
      name = name.empty() ? op : name + "." + op;
    }
    if (name == kModelInputName) name += "_layer";
    std::string unique = name;
    for (int n = 2; used_names_.contains(unique); ++n) unique = name + "_" + std::to_string(n);
    used_names_.insert(unique);
    return unique;
  }

  void read_input(const onnx::GraphProto& graph) {
    std::set<std::string> initializers;
    for (const auto& init : graph.initializer()) initializers.insert(init.name());
    const onnx::ValueInfoProto* input = nullptr;
    for (const auto& candidate : graph.input()) {
      if (initializers.contains(candidate.name())) continue;
      if (input != nullptr) {
        fail("has more than one input ('" + input->name() + "', '" + candidate.name() +
             "'); ralp models read one image tensor");
      }
      input = &candidate;
    }
    if (input == nullptr) fail("has no input besides its initializers");
    const auto& shape = input->type().tensor_type().shape();
    const int rank = shape.dim_size();
    if (rank != 4 && rank != 2) {
      fail("input '" + input->name() + "' has rank " + std::to_string(rank) +
           ", expected [batch, channels, height, width] or [batch, features]");
    }
    std::vector<std::optional<int64_t>> dims;
    std::string shown;
    for (int i = 0; i < rank; ++i) {
      const auto& d = shape.dim(i);
      const bool known = d.has_dim_value() && d.dim_value() > 0;
      dims.push_back(known ? std::optional(d.dim_value()) : std::nullopt);
      shown += (i ? ", " : "") +
               (known ? std::to_string(d.dim_value())
                      : (d.has_dim_param() && !d.dim_param().empty() ? d.dim_param() : "?"));
    }
    batch_ = dims[0].value_or(1);
    const TensorShape in_file{dims[1].value_or(0), rank == 4 ? dims[2].value_or(0) : 1,
                              rank == 4 ? dims[3].value_or(0) : 1};
    const bool dynamic = !dims[1] || (rank == 4 && (!dims[2] || !dims[3]));
    if (options_.input) {
      const TensorShape& given = *options_.input;
      const bool agrees = (!dims[1] || *dims[1] == given.channels) &&
                          (rank == 2 ? given.height == 1 && given.width == 1
                                     : (!dims[2] || *dims[2] == given.height) &&
                                           (!dims[3] || *dims[3] == given.width));
      if (!agrees) {
        fail("input '" + input->name() + "' is [" + shown + "], which --input " +
             given.to_string() + " contradicts");
      }
      input_shape_ = given;
    } else if (dynamic) {
      fail("input '" + input->name() + "' has a dynamic shape [" + shown +
           "]; give the image shape with --input CxHxW (a scenario: \"input\": [C, H, W])");
    } else {
      input_shape_ = in_file;
    }
    Value v;
    v.layer = std::string(kModelInputName);
    v.shape = input_shape_;
    v.rank = rank;
    values_[input->name()] = v;
  }

  bool has_input(const onnx::NodeProto& node, int i) const {
    return i < node.input_size() && !node.input(i).empty();
  }

  const Value& value(const onnx::NodeProto& node, int i) const {
    if (!has_input(node, i)) fail_node(node, "lacks input " + std::to_string(i));
    const auto it = values_.find(node.input(i));
    if (it == values_.end()) {
      fail_node(node, "reads '" + node.input(i) + "', which no earlier node or initializer makes");
    }
    return it->second;
  }
  const Value& activation(const onnx::NodeProto& node, int i) const {
    const Value& v = value(node, i);
    if (v.is_constant) {
      fail_node(node, "has a constant as input " + std::to_string(i) +
                          ", where ralp expects an activation");
    }
    return v;
  }
  const Value& constant(const onnx::NodeProto& node, int i, std::string_view what) const {
    const Value& v = value(node, i);
    if (!v.is_constant) {
      fail_node(node, "computes its " + std::string(what) +
                          " from the input; ralp needs it as an initializer or constant");
    }
    return v;
  }
  const std::vector<double>& values_of(const onnx::NodeProto& node, const Value& v,
                                       std::string_view what) const {
    if (!v.values) fail_node(node, "has a " + std::string(what) + " whose values ralp cannot read");
    return *v.values;
  }

  const onnx::AttributeProto* attribute(const onnx::NodeProto& node, std::string_view name) const {
    for (const auto& a : node.attribute()) {
      if (a.name() == name) return &a;
    }
    return nullptr;
  }
  int64_t int_attr(const onnx::NodeProto& node, std::string_view name, int64_t fallback) const {
    const auto* a = attribute(node, name);
    return a != nullptr ? a->i() : fallback;
  }
  double float_attr(const onnx::NodeProto& node, std::string_view name, double fallback) const {
    const auto* a = attribute(node, name);
    return a != nullptr ? from_float(a->f()) : fallback;
  }
  std::string string_attr(const onnx::NodeProto& node, std::string_view name,
                          std::string fallback) const {
    const auto* a = attribute(node, name);
    return a != nullptr ? a->s() : fallback;
  }
  std::vector<int64_t> ints_attr(const onnx::NodeProto& node, std::string_view name,
                                 std::vector<int64_t> fallback) const {
    const auto* a = attribute(node, name);
    if (a == nullptr) return fallback;
    return {a->ints().begin(), a->ints().end()};
  }
  // A 2-D window attribute (kernel_shape, strides, dilations) as {h, w}.
  std::pair<int, int> pair_attr(const onnx::NodeProto& node, std::string_view name,
                                std::optional<int> fallback) const {
    const auto* a = attribute(node, name);
    if (a == nullptr) {
      if (!fallback) fail_node(node, "lacks its " + std::string(name) + " attribute");
      return {*fallback, *fallback};
    }
    if (a->ints_size() != 2 || a->ints(0) < 1 || a->ints(1) < 1) {
      fail_node(node, "has " + std::string(name) + " [" +
                          join_ints({a->ints().begin(), a->ints().end()}) +
                          "], expected two positive integers (2-D only)");
    }
    return {static_cast<int>(a->ints(0)), static_cast<int>(a->ints(1))};
  }

  // Symmetric {pad_h, pad_w} from pads or auto_pad, plus what a Pad node before `x` added.
  std::pair<int, int> padding(const onnx::NodeProto& node, const Value& x, std::pair<int, int> k,
                              std::pair<int, int> s, std::pair<int, int> d) const {
    const std::string auto_pad = string_attr(node, "auto_pad", "NOTSET");
    int ph = 0;
    int pw = 0;
    if (auto_pad == "NOTSET") {
      const auto pads = ints_attr(node, "pads", {0, 0, 0, 0});
      if (pads.size() != 4 || pads[0] != pads[2] || pads[1] != pads[3]) {
        fail_node(node, "has pads [" + join_ints(pads) +
                            "]; ralp supports equal padding at both ends of each axis");
      }
      ph = static_cast<int>(pads[0]);
      pw = static_cast<int>(pads[1]);
    } else if (auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") {
      const auto same = [&](int64_t in, int kernel, int stride, int dilation) {
        const int64_t out = (in + stride - 1) / stride;
        const int64_t total =
            std::max<int64_t>((out - 1) * stride + (kernel - 1) * dilation + 1 - in, 0);
        if (total % 2 != 0) {
          fail_node(node, "has auto_pad " + auto_pad +
                              " padding one end more than the other, which ralp does not model");
        }
        return static_cast<int>(total / 2);
      };
      ph = same(x.shape.height, k.first, s.first, d.first);
      pw = same(x.shape.width, k.second, s.second, d.second);
    } else if (auto_pad != "VALID") {
      fail_node(node, "has auto_pad '" + auto_pad + "'");
    }
    return {ph + x.pad_h, pw + x.pad_w};
  }

  // Appends a layer read from `inputs`; `expected_params` (the initializers' element count) must
  // equal the parameters the layer maths infers.
  const Value& add_layer(const onnx::NodeProto& node, LayerSpec spec,
                         const std::vector<const Value*>& inputs, int64_t expected_params,
                         int out_rank) {
    spec.name = layer_name(node);
    std::vector<TensorShape> shapes;
    for (const Value* v : inputs) {
      if (v->pad_h != 0 || v->pad_w != 0) {
        fail_node(node, "reads the output of a Pad node; only Conv and AveragePool absorb one");
      }
      spec.inputs.push_back(v->layer);
      shapes.push_back(v->shape);
    }
    Layer layer;
    try {
      layer = infer_layer(spec, shapes, specs_.size());
    } catch (const ModelError& e) {
      fail_node(node, e.what());
    }
    if (layer.params() != expected_params) {
      fail_node(node, "has initializers of " + std::to_string(expected_params) +
                          " parameters where its shape implies " + std::to_string(layer.params()));
    }
    specs_.push_back(spec);
    node_names_.push_back(node.name());
    Value out;
    out.layer = spec.name;
    out.shape = layer.output;
    out.rank = out_rank;
    return set_output(node, std::move(out));
  }

  const Value& set_output(const onnx::NodeProto& node, Value v) {
    if (node.output_size() == 0 || node.output(0).empty()) fail_node(node, "has no output");
    return values_[node.output(0)] = std::move(v);
  }

  std::vector<int64_t> full_dims(const Value& x) const {
    const int64_t h = x.shape.height + 2 * x.pad_h;
    const int64_t w = x.shape.width + 2 * x.pad_w;
    if (x.rank == 4) return {batch_, x.shape.channels, h, w};
    return {batch_, x.shape.channels};
  }

  void import_node(const onnx::NodeProto& node) {
    const std::string& op = node.op_type();
    if (!node.domain().empty() && node.domain() != "ai.onnx") {
      fail_node(node, "is in operator domain '" + node.domain() + "', which ralp does not import");
    }
    if (op == "Conv") return conv(node);
    if (op == "Gemm") return gemm(node);
    if (op == "MatMul") return matmul(node);
    if (op == "Add") return add(node);
    if (op == "Relu") return simple(node, LayerKind::relu, std::monostate{});
    if (op == "MaxPool" || op == "AveragePool") return pool(node);
    if (op == "GlobalAveragePool" || op == "GlobalMaxPool") {
      PoolAttrs a;
      a.global = true;
      const auto kind = op == "GlobalMaxPool" ? LayerKind::max_pool : LayerKind::avg_pool;
      return simple(node, kind, a);
    }
    if (op == "BatchNormalization") return batch_norm(node);
    if (op == "LRN") {
      LrnAttrs a;
      const auto* size = attribute(node, "size");
      if (size == nullptr || size->i() < 1) fail_node(node, "lacks a positive size attribute");
      a.size = static_cast<int>(size->i());
      a.alpha = float_attr(node, "alpha", a.alpha);
      a.beta = float_attr(node, "beta", a.beta);
      a.k = float_attr(node, "bias", a.k);
      return simple(node, LayerKind::lrn, a);
    }
    if (op == "Dropout") return dropout(node);
    if (op == "Flatten") return flatten(node);
    if (op == "Reshape") return reshape(node);
    if (op == "Concat") return concat(node);
    if (op == "Softmax") return simple(node, LayerKind::softmax_cross_entropy, std::monostate{});
    if (op == "Pad") return pad(node);
    if (op == "Identity" || op == "Cast") {
      set_output(node, value(node, 0));
      return;
    }
    if (op == "Constant") return constant_node(node);
    if (op == "Shape") return shape_node(node);
    if (op == "Gather") return gather(node);
    if (op == "Unsqueeze" || op == "Squeeze") return squeeze(node);
    fail_node(node, "has an operator ralp does not import (supported: " +
                        std::string(kSupportedOperators) + ")");
  }

  // On shape constants the values stay and the rank goes; on an activation only Squeeze of a
  // 1x1 plane, [batch, C, 1, 1] to [batch, C], which is a flatten.
  void squeeze(const onnx::NodeProto& node) {
    const Value& x = value(node, 0);
    if (x.is_constant) {
      Value v = x;
      v.dims = {element_count(v.dims)};
      set_output(node, std::move(v));
      return;
    }
    if (node.op_type() != "Squeeze" || x.rank != 4 || x.shape.height != 1 || x.shape.width != 1) {
      fail_node(node,
                "changes the rank of an activation; ralp imports only a Squeeze of "
                "[batch, C, 1, 1] to [batch, C]");
    }
    add_layer(node, LayerSpec{.kind = LayerKind::flatten}, {&x}, 0, 2);
  }

  void simple(const onnx::NodeProto& node, LayerKind kind, LayerAttrs attrs) {
    const Value& x = activation(node, 0);
    add_layer(node, LayerSpec{.kind = kind, .attrs = std::move(attrs)}, {&x}, 0, x.rank);
  }

  void conv(const onnx::NodeProto& node) {
    Value x = activation(node, 0);
    const Value& w = constant(node, 1, "weights");
    if (w.dims.size() != 4) {
      fail_node(node, "has " + std::to_string(w.dims.size()) +
                          "-dimensional weights; ralp imports 2-D convolutions");
    }
    const std::pair<int, int> kernel{static_cast<int>(w.dims[2]), static_cast<int>(w.dims[3])};
    if (attribute(node, "kernel_shape") != nullptr &&
        pair_attr(node, "kernel_shape", {}) != kernel) {
      fail_node(node,
                "has a kernel_shape that differs from its weights' [" + join_ints(w.dims) + "]");
    }
    Conv2dAttrs a;
    a.out_channels = w.dims[0];
    std::tie(a.kernel_h, a.kernel_w) = kernel;
    const auto stride = pair_attr(node, "strides", 1);
    const auto dilation = pair_attr(node, "dilations", 1);
    std::tie(a.stride_h, a.stride_w) = stride;
    std::tie(a.dilation_h, a.dilation_w) = dilation;
    std::tie(a.pad_h, a.pad_w) = padding(node, x, kernel, stride, dilation);
    a.groups = int_attr(node, "group", 1);
    if (a.groups < 1 || w.dims[1] * a.groups != x.shape.channels) {
      fail_node(node, "has weights [" + join_ints(w.dims) + "] in " + std::to_string(a.groups) +
                          " groups for an input of " + std::to_string(x.shape.channels) +
                          " channels");
    }
    int64_t params = element_count(w.dims);
    a.bias = has_input(node, 2);
    if (a.bias) params += element_count(constant(node, 2, "bias").dims);
    x.pad_h = x.pad_w = 0;
    add_layer(node, LayerSpec{.kind = LayerKind::conv2d, .attrs = a}, {&x}, params, 4);
  }

  void pool(const onnx::NodeProto& node) {
    Value x = activation(node, 0);
    const bool average = node.op_type() == "AveragePool";
    if (x.rank != 4) fail_node(node, "pools a tensor of rank " + std::to_string(x.rank));
    PoolAttrs a;
    const auto kernel = pair_attr(node, "kernel_shape", std::nullopt);
    const auto stride = pair_attr(node, "strides", 1);
    if (pair_attr(node, "dilations", 1) != std::pair{1, 1}) {
      fail_node(node, "has dilations, which ralp does not model for pooling");
    }
    std::tie(a.kernel_h, a.kernel_w) = kernel;
    std::tie(a.stride_h, a.stride_w) = stride;
    const bool padded_before = x.pad_h != 0 || x.pad_w != 0;
    if (padded_before && !average) {
      fail_node(node, "reads the output of a Pad node; only Conv and AveragePool absorb one");
    }
    std::tie(a.pad_h, a.pad_w) = padding(node, x, kernel, stride, {1, 1});
    a.ceil_mode = int_attr(node, "ceil_mode", 0) != 0;
    if (average) {
      // ONNX excludes padding from the average unless told; zeros a Pad node added count.
      const bool own_pads = a.pad_h != x.pad_h || a.pad_w != x.pad_w;
      const bool include = int_attr(node, "count_include_pad", 0) != 0;
      if (padded_before && own_pads && !include) {
        fail_node(node, "averages over a Pad node's zeros and its own excluded padding");
      }
      a.count_include_pad = include || !own_pads;
    }
    // A 1x1 window with stride 1 copies its input (an adaptive pool at its output size): no layer.
    if (a.kernel_h == 1 && a.kernel_w == 1 && a.stride_h == 1 && a.stride_w == 1 && a.pad_h == 0 &&
        a.pad_w == 0) {
      set_output(node, x);
      return;
    }
    x.pad_h = x.pad_w = 0;
    const auto kind = average ? LayerKind::avg_pool : LayerKind::max_pool;
    add_layer(node, LayerSpec{.kind = kind, .attrs = a}, {&x}, 0, 4);
  }

  // x as a flat [batch, features] tensor, for a fully connected layer.
  const Value& flat_input(const onnx::NodeProto& node) const {
    const Value& x = activation(node, 0);
    if (x.rank != 2) {
      fail_node(node, "multiplies a tensor of rank " + std::to_string(x.rank) +
                          "; ralp imports it on a flat [batch, features] input");
    }
    return x;
  }

  void fully_connected(const onnx::NodeProto& node, const Value& x, int64_t in, int64_t out,
                       bool bias, int64_t params) {
    if (in != x.shape.channels) {
      fail_node(node, "has weights for " + std::to_string(in) +
                          " input features, but its input has " + std::to_string(x.shape.channels));
    }
    add_layer(node,
              LayerSpec{.kind = LayerKind::fully_connected,
                        .attrs = FullyConnectedAttrs{.out_features = out, .bias = bias}},
              {&x}, params, 2);
  }

  void gemm(const onnx::NodeProto& node) {
    const Value& x = flat_input(node);
    if (int_attr(node, "transA", 0) != 0) fail_node(node, "has transA set");
    const Value& w = constant(node, 1, "weights");
    if (w.dims.size() != 2) fail_node(node, "has weights of rank " + std::to_string(w.dims.size()));
    const bool trans_b = int_attr(node, "transB", 0) != 0;
    const int64_t in = trans_b ? w.dims[1] : w.dims[0];
    const int64_t out = trans_b ? w.dims[0] : w.dims[1];
    int64_t params = element_count(w.dims);
    const bool bias = has_input(node, 2);
    if (bias) params += element_count(constant(node, 2, "bias").dims);
    fully_connected(node, x, in, out, bias, params);
  }

  void matmul(const onnx::NodeProto& node) {
    const Value& x = flat_input(node);
    const Value& w = constant(node, 1, "weights");
    if (w.dims.size() != 2) fail_node(node, "has weights of rank " + std::to_string(w.dims.size()));
    fully_connected(node, x, w.dims[0], w.dims[1], false, element_count(w.dims));
    bias_free_fc_ = specs_.size() - 1;
  }

  void add(const onnx::NodeProto& node) {
    const Value& a = value(node, 0);
    const Value& b = value(node, 1);
    if (!a.is_constant && !b.is_constant) {
      add_layer(node, LayerSpec{.kind = LayerKind::add}, {&a, &b}, 0, a.rank);
      return;
    }
    // MatMul then Add of a constant: a fully connected layer's bias.
    const Value& x = a.is_constant ? b : a;
    const Value& c = a.is_constant ? a : b;
    if (x.is_constant || !bias_free_fc_ || *bias_free_fc_ != specs_.size() - 1 ||
        x.layer != specs_.back().name) {
      fail_node(node,
                "adds a constant to an activation; ralp imports that only as the bias of "
                "the MatMul before it");
    }
    auto& attrs = std::get<FullyConnectedAttrs>(specs_.back().attrs);
    if (element_count(c.dims) != attrs.out_features) {
      fail_node(node, "adds a bias of " + std::to_string(element_count(c.dims)) + " values to " +
                          std::to_string(attrs.out_features) + " features");
    }
    attrs.bias = true;
    bias_free_fc_.reset();
    set_output(node, x);
  }

  void batch_norm(const onnx::NodeProto& node) {
    const Value& x = activation(node, 0);
    const double epsilon = float_attr(node, "epsilon", 1e-5);
    // The scale and shift train; the running mean and variance do not.
    const int64_t params = element_count(constant(node, 1, "scale").dims) +
                           element_count(constant(node, 2, "bias").dims);
    add_layer(node, LayerSpec{.kind = LayerKind::batch_norm, .attrs = BatchNormAttrs{epsilon}},
              {&x}, params, x.rank);
  }

  void dropout(const onnx::NodeProto& node) {
    const Value& x = activation(node, 0);
    double rate = float_attr(node, "ratio", 0.5);
    if (has_input(node, 1)) {
      const auto& v = values_of(node, constant(node, 1, "ratio"), "ratio");
      if (v.size() != 1) fail_node(node, "has a ratio of " + std::to_string(v.size()) + " values");
      rate = v[0];
    }
    constexpr double kMaxRate = 0.999;
    if (!(rate >= 0.0 && rate <= kMaxRate)) {
      fail_node(node, "has ratio " + std::to_string(rate) + ", expected 0 to 0.999");
    }
    add_layer(node, LayerSpec{.kind = LayerKind::dropout, .attrs = DropoutAttrs{rate}}, {&x}, 0,
              x.rank);
  }

  void flatten(const onnx::NodeProto& node) {
    const Value& x = activation(node, 0);
    int64_t axis = int_attr(node, "axis", 1);
    if (axis < 0) axis += x.rank;
    if (axis != 1) {
      fail_node(node, "flattens from axis " + std::to_string(axis) +
                          "; ralp imports only [batch, features] (axis 1)");
    }
    add_layer(node, LayerSpec{.kind = LayerKind::flatten}, {&x}, 0, 2);
  }

  void reshape(const onnx::NodeProto& node) {
    const Value& x = activation(node, 0);
    const auto& target_values = values_of(node, constant(node, 1, "target shape"), "target shape");
    const std::vector<int64_t> current = full_dims(x);
    const bool allow_zero = int_attr(node, "allowzero", 0) != 0;
    std::vector<int64_t> target;
    int64_t known = 1;
    std::optional<size_t> inferred;
    for (size_t i = 0; i < target_values.size(); ++i) {
      int64_t t = static_cast<int64_t>(target_values[i]);
      if (t == 0 && !allow_zero && i < current.size()) t = current[i];
      if (t == -1 && !inferred) {
        inferred = i;
      } else if (t < 1) {
        fail_node(node, "has a target shape ralp cannot resolve");
      } else {
        known *= t;
      }
      target.push_back(t);
    }
    const int64_t total = element_count(current);
    if (inferred) target[*inferred] = known > 0 ? total / known : 0;
    if (element_count(target) != total) {
      fail_node(node, "reshapes [" + join_ints(current) + "] to [" + join_ints(target) + "]");
    }
    if (target == current && x.pad_h == 0 && x.pad_w == 0) {
      set_output(node, x);
      return;
    }
    if (target.size() == 2 && target[0] == batch_) {
      add_layer(node, LayerSpec{.kind = LayerKind::flatten}, {&x}, 0, 2);
      return;
    }
    fail_node(node, "reshapes [" + join_ints(current) + "] to [" + join_ints(target) +
                        "]; ralp imports only a flattening to [batch, features]");
  }

  void concat(const onnx::NodeProto& node) {
    std::vector<const Value*> inputs;
    bool all_constant = true;
    bool any_constant = false;
    for (int i = 0; i < node.input_size(); ++i) {
      inputs.push_back(&value(node, i));
      all_constant = all_constant && inputs.back()->is_constant;
      any_constant = any_constant || inputs.back()->is_constant;
    }
    if (inputs.empty()) fail_node(node, "has no inputs");
    if (all_constant) {
      std::vector<double> joined;
      for (const Value* v : inputs) {
        const auto& part = values_of(node, *v, "constant input");
        joined.insert(joined.end(), part.begin(), part.end());
      }
      set_output(node, constant_from_numbers(std::move(joined), false));
      return;
    }
    if (any_constant) fail_node(node, "joins constants and activations");
    int64_t axis = int_attr(node, "axis", 1);
    if (axis < 0) axis += inputs.front()->rank;
    if (axis != 1) {
      fail_node(node,
                "joins along axis " + std::to_string(axis) + "; ralp joins channels (axis 1)");
    }
    add_layer(node, LayerSpec{.kind = LayerKind::concat}, inputs, 0, inputs.front()->rank);
  }

  void pad(const onnx::NodeProto& node) {
    Value x = activation(node, 0);
    if (string_attr(node, "mode", "constant") != "constant") {
      fail_node(node, "pads in mode '" + string_attr(node, "mode", "") +
                          "'; ralp imports zero padding only");
    }
    std::vector<int64_t> pads = ints_attr(node, "pads", {});
    if (has_input(node, 1)) {
      const auto& v = values_of(node, constant(node, 1, "pads"), "pads");
      pads.assign(v.begin(), v.end());
    }
    double fill = float_attr(node, "value", 0.0);
    if (has_input(node, 2)) {
      const auto& v = values_of(node, constant(node, 2, "constant value"), "constant value");
      if (!v.empty()) fill = v[0];
    }
    const bool zero_spatial_only =
        x.rank == 4 && pads.size() == 8 && pads[0] == 0 && pads[1] == 0 && pads[4] == 0 &&
        pads[5] == 0 && pads[2] == pads[6] && pads[3] == pads[7] && pads[2] >= 0 && pads[3] >= 0;
    if (!zero_spatial_only || fill != 0.0) {
      fail_node(node, "pads [" + join_ints(pads) +
                          "]; ralp imports equal zero padding of height and width only");
    }
    x.pad_h += static_cast<int>(pads[2]);
    x.pad_w += static_cast<int>(pads[3]);
    set_output(node, std::move(x));
  }

  void constant_node(const onnx::NodeProto& node) {
    if (const auto* a = attribute(node, "value")) {
      set_output(node, constant_from_tensor(a->t()));
    } else if (const auto* f = attribute(node, "value_float")) {
      set_output(node, constant_from_numbers({from_float(f->f())}, true));
    } else if (const auto* fs = attribute(node, "value_floats")) {
      std::vector<double> numbers;
      for (const float x : fs->floats()) numbers.push_back(from_float(x));
      set_output(node, constant_from_numbers(std::move(numbers), false));
    } else if (const auto* i = attribute(node, "value_int")) {
      set_output(node, constant_from_numbers({static_cast<double>(i->i())}, true));
    } else if (const auto* is = attribute(node, "value_ints")) {
      set_output(node, constant_from_numbers({is->ints().begin(), is->ints().end()}, false));
    } else {
      fail_node(node, "holds no value ralp can read");
    }
  }

  void shape_node(const onnx::NodeProto& node) {
    const Value& x = value(node, 0);
    std::vector<int64_t> dims = x.is_constant ? x.dims : full_dims(x);
    const auto rank = static_cast<int64_t>(dims.size());
    const auto clamp = [rank](int64_t i) {
      return std::clamp(i < 0 ? i + rank : i, int64_t{0}, rank);
    };
    const int64_t start = clamp(int_attr(node, "start", 0));
    const int64_t end = clamp(int_attr(node, "end", rank));
    std::vector<double> out;
    for (int64_t i = start; i < end; ++i) out.push_back(static_cast<double>(dims[i]));
    set_output(node, constant_from_numbers(std::move(out), false));
  }

  void gather(const onnx::NodeProto& node) {
    const Value& data = constant(node, 0, "data");
    const Value& indices = constant(node, 1, "indices");
    const auto& d = values_of(node, data, "data");
    const auto& idx = values_of(node, indices, "indices");
    if (int_attr(node, "axis", 0) != 0 || data.dims.size() != 1) {
      fail_node(node, "gathers from a constant of rank " + std::to_string(data.dims.size()) +
                          "; ralp evaluates only 1-D shape arithmetic");
    }
    std::vector<double> out;
    for (const double i : idx) {
      auto k = static_cast<int64_t>(i);
      if (k < 0) k += static_cast<int64_t>(d.size());
      if (k < 0 || k >= static_cast<int64_t>(d.size()))
        fail_node(node, "has an index out of range");
      out.push_back(d[k]);
    }
    Value v = constant_from_numbers(std::move(out), indices.dims.empty());
    if (!indices.dims.empty()) v.dims = indices.dims;
    set_output(node, std::move(v));
  }

  void finish_output(const onnx::GraphProto& graph) {
    std::vector<const Value*> outputs;
    std::string names;
    for (const auto& out : graph.output()) {
      const auto it = values_.find(out.name());
      if (it == values_.end() || it->second.is_constant) continue;
      outputs.push_back(&it->second);
      names += (names.empty() ? "'" : ", '") + out.name() + "'";
    }
    if (outputs.empty()) fail("has no output computed from its input");
    if (outputs.size() > 1) {
      fail("has " + std::to_string(outputs.size()) + " outputs (" + names +
           "); ralp models have one (export without auxiliary heads)");
    }
    const Value& out = *outputs.front();
    if (!specs_.empty() && specs_.back().kind == LayerKind::softmax_cross_entropy &&
        out.layer == specs_.back().name) {
      return;
    }
    // Training appends a loss to the logits.
    onnx::NodeProto loss;
    loss.set_name("loss");
    loss.set_op_type("SoftmaxCrossEntropyLoss");
    loss.add_output("loss");
    add_layer(loss, LayerSpec{.kind = LayerKind::softmax_cross_entropy}, {&out}, 0, out.rank);
  }

  fs::path path_;
  std::string file_;
  const OnnxImportOptions& options_;
  onnx::ModelProto model_;
  std::map<std::string, Value> values_;
  TensorShape input_shape_;
  int64_t batch_ = 1;
  std::vector<LayerSpec> specs_;
  std::vector<std::string> node_names_;  // the node each layer came from
  std::set<std::string> scope_prefixes_;
  std::set<std::string> used_names_;
  std::optional<size_t> bias_free_fc_;  // a MatMul's layer, which an Add may give a bias
};

}  // namespace

bool onnx_import_available() { return true; }

LayerGraph load_onnx_model(const std::filesystem::path& file, const OnnxImportOptions& options) {
  return Importer(file, options).run();
}

}  // namespace ralp
