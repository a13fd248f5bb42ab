// ONNX import in a build without the ONNX library: every import says what to install.
#include "ralp/onnx/onnx_import.hpp"

namespace ralp {

bool onnx_import_available() { return false; }

LayerGraph load_onnx_model(const std::filesystem::path& file, const OnnxImportOptions&) {
  throw InputError(file.string(), "",
                   "cannot be imported: this ralp was built without ONNX support (install the "
                   "Debian packages libonnx-dev and libprotobuf-dev, then rebuild)");
}

}  // namespace ralp
