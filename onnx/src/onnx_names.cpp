// Layer names from ONNX node names.
#include "onnx_names.hpp"

#include <algorithm>
#include <cctype>
#include <vector>

#include "ralp/model/layer.hpp"

namespace ralp::onnx_import {
namespace {

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

}  // namespace

std::string lower(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

std::string sanitise(std::string_view s) {
  std::string out;
  for (const char c : s) {
    const bool keep =
        std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.' || c == '-';
    out += keep ? c : '_';
  }
  return out;
}

LayerNames::LayerNames(const onnx::GraphProto& graph) {
  for (const auto& node : graph.node()) {
    const std::string scope = split_node_name(node).scope;
    for (size_t dot = scope.find('.'); dot != std::string::npos; dot = scope.find('.', dot + 1)) {
      scope_prefixes_.insert(scope.substr(0, dot));
    }
  }
}

std::string LayerNames::layer_name(const onnx::NodeProto& node) {
  const NameParts parts = split_node_name(node);
  std::string name = parts.scope;
  if (name.empty() || scope_prefixes_.contains(name)) {
    const std::string op = sanitise(lower(parts.op_part.empty() ? node.op_type() : parts.op_part));
    name = name.empty() ? op : name + "." + op;
  }
  if (name == kModelInputName) name += "_layer";
  std::string unique = name;
  for (int n = 2; used_names_.contains(unique); ++n) unique = name + "_" + std::to_string(n);
  used_names_.insert(unique);
  return unique;
}

}  // namespace ralp::onnx_import
