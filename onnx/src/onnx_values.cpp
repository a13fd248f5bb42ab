// Constants of an ONNX file read into values: initializers, Constant nodes, shape arithmetic.
#include "onnx_values.hpp"

#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace ralp::onnx_import {
namespace {

// Small constants (shapes, ratios) have their values read; weights only their dimensions.
constexpr int64_t kMaxConstantValues = 4096;

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

}  // namespace

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

std::string join_ints(const std::vector<int64_t>& values, std::string_view separator) {
  std::string out;
  for (size_t i = 0; i < values.size(); ++i) {
    out += (i ? std::string(separator) : "") + std::to_string(values[i]);
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

}  // namespace ralp::onnx_import
