// Tensors whose memory a backend owns (host memory on the CPU, device memory on a GPU), with their
// logical dimensions, element type and memory layout spelled out.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace ralp::kernels {

// f32 and s32 take 4 bytes a value; bf16 and f16 (the 16-bit activations of mixed precision) 2.
enum class DataType { f32, s32, bf16, f16 };
[[nodiscard]] int64_t element_bytes(DataType type);
[[nodiscard]] const char* to_string(DataType type);

// How a tensor's logical dimensions are laid out in memory.
//   plain          row-major over the logical dimensions in order: NCHW activations, OIHW conv
//                  weights ([groups x] out x in/groups x kh x kw), [out, in] FC weights, vectors
//   channels_last  4-D activations stored NHWC (oneDNN's fastest plain layout for convolutions)
// Logical dimensions are always given in NCHW order, whatever the layout.
enum class Layout { plain, channels_last };

struct TensorDesc {
  std::vector<int64_t> dims;  // logical, outermost first; activations are {N, C, H, W}
  DataType type = DataType::f32;
  Layout layout = Layout::plain;

  [[nodiscard]] int64_t elements() const;
  [[nodiscard]] int64_t bytes() const;
  [[nodiscard]] std::string to_string() const;  // "f32[8,64,224,224] channels_last"
  friend bool operator==(const TensorDesc&, const TensorDesc&) = default;
};

// Memory a backend allocated; freed by the backend that made it.
class TensorStorage {
 public:
  virtual ~TensorStorage() = default;
  [[nodiscard]] virtual void* data() = 0;
};

// A move-only handle to backend-owned memory. data() is a device pointer on a GPU backend: read
// and write a tensor's contents through Backend::copy_from_host / copy_to_host.
class Tensor {
 public:
  Tensor() = default;
  Tensor(TensorDesc desc, std::unique_ptr<TensorStorage> storage);

  [[nodiscard]] const TensorDesc& desc() const { return desc_; }
  [[nodiscard]] bool empty() const { return storage_ == nullptr; }
  [[nodiscard]] int64_t elements() const { return desc_.elements(); }
  [[nodiscard]] void* raw() const { return storage_ ? storage_->data() : nullptr; }
  [[nodiscard]] float* f32() const { return static_cast<float*>(raw()); }
  [[nodiscard]] int32_t* s32() const { return static_cast<int32_t*>(raw()); }
  [[nodiscard]] uint16_t* bf16() const { return static_cast<uint16_t*>(raw()); }

 private:
  TensorDesc desc_;
  std::unique_ptr<TensorStorage> storage_;
};

// The description of a batch of activations of per-image shape {c, h, w}.
TensorDesc activation_desc(int64_t batch, int64_t c, int64_t h, int64_t w, Layout layout,
                           DataType type = DataType::f32);

// Host-side conversions between a layout and the plain (NCHW) order; `src` and `dst` hold
// desc.elements() values each. Used for host copies, never on a hot path.
void to_plain_order(const TensorDesc& desc, const float* src, float* dst);
void from_plain_order(const TensorDesc& desc, const float* src, float* dst);
// The same between BF16 tensor memory and floats: exact from BF16, rounded to nearest even into it.
void to_plain_order(const TensorDesc& desc, const uint16_t* src, float* dst);
void from_plain_order(const TensorDesc& desc, const float* src, uint16_t* dst);

}  // namespace ralp::kernels
