// The parts of ONNX import that do not need the ONNX library: shape text and scenario objects.
#include <charconv>

#include "ralp/onnx/onnx_import.hpp"

namespace ralp {
namespace {

constexpr int64_t kMaxExtent = 1 << 20;

std::filesystem::path resolve(const std::filesystem::path& base, const std::string& relative) {
  const std::filesystem::path p(relative);
  return p.is_absolute() ? p : base / p;
}

}  // namespace

std::optional<TensorShape> parse_shape_text(std::string_view text) {
  std::vector<int64_t> dims;
  size_t start = 0;
  while (start <= text.size()) {
    size_t end = text.find_first_of("x,", start);
    if (end == std::string_view::npos) end = text.size();
    const std::string_view part = text.substr(start, end - start);
    int64_t n = 0;
    const auto [ptr, ec] = std::from_chars(part.data(), part.data() + part.size(), n);
    if (part.empty() || ec != std::errc() || ptr != part.data() + part.size() || n < 1 ||
        n > kMaxExtent) {
      return std::nullopt;
    }
    dims.push_back(n);
    start = end + 1;
  }
  if (dims.size() == 1) return TensorShape{dims[0], 1, 1};
  if (dims.size() == 3) return TensorShape{dims[0], dims[1], dims[2]};
  return std::nullopt;
}

LayerGraph read_onnx_model_object(const Json& value, const std::string& path,
                                  const std::string& file, const std::filesystem::path& base,
                                  std::string& ref) {
  ObjectReader r(value, path, file);
  ref = r.string("onnx");
  OnnxImportOptions options;
  if (const Json* input = r.get("input")) {
    const auto dim = [&](size_t i) -> int64_t {
      const Json& d = (*input)[i];
      return d.is_number_integer() ? d.get<int64_t>() : 0;
    };
    const bool ok = input->is_array() && input->size() == 3 && dim(0) >= 1 && dim(1) >= 1 &&
                    dim(2) >= 1 && dim(0) <= kMaxExtent && dim(1) <= kMaxExtent &&
                    dim(2) <= kMaxExtent;
    if (!ok) {
      r.fail("input", "is " + describe_json(*input) +
                          ", expected [channels, height, width] of integers >= 1");
    }
    options.input = TensorShape{dim(0), dim(1), dim(2)};
  }
  if (const auto name = r.optional_string("name")) options.name = *name;
  r.finish();
  return load_onnx_model(resolve(base, ref), options);
}

}  // namespace ralp
