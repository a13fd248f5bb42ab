// Host views of tensors for messages.
#include "strategy_context.hpp"

namespace ralp::cluster {

HostView::HostView(kernels::Backend& backend, kernels::Tensor& tensor)
    : backend_(&backend),
      tensor_(&tensor),
      direct_(backend.kind() == kernels::BackendKind::cpu &&
              tensor.desc().layout == kernels::Layout::plain &&
              tensor.desc().type == kernels::DataType::f32) {
  if (!direct_) copy_.resize(static_cast<size_t>(tensor.elements()));
}

Piece HostView::piece() {
  return {data(), static_cast<size_t>(tensor_->elements()) * sizeof(float)};
}

void HostView::download() {
  if (!direct_) backend_->copy_to_host(*tensor_, copy_);
}

void HostView::upload() {
  if (!direct_) backend_->copy_from_host(*tensor_, copy_);
}

}  // namespace ralp::cluster
