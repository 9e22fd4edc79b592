// GGUF v3, the file llama.cpp, Ollama and LM Studio load: a header, typed key/value metadata, a table of
// tensors (name, dims in ggml's order, ggml type, offset) and the tensors' data, each at a multiple of
// 32 bytes. Written through AtomicFile, so a failed or interrupted export leaves no .gguf behind; each
// tensor's bytes are made only when the writer reaches it (one tensor in memory at a time).
// Written by hand: GGUF's own writer (gguf-py) is Python and no Debian package carries one for C++.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "quant/ggml_blocks.h"

namespace tb::checkpoint {

constexpr uint32_t kGgufVersion = 3;
constexpr uint64_t kGgufAlignment = 32;  // GGUF's default; the key general.alignment is then left out

// The value types of GGUF metadata (gguf_type); the numbers are part of the format.
enum class GgufType : uint32_t {
  u8 = 0, i8 = 1, u16 = 2, i16 = 3, u32 = 4, i32 = 5, f32 = 6, boolean = 7, string = 8, array = 9,
  u64 = 10, i64 = 11, f64 = 12,
};

// Key/value pairs in the order they are set, already encoded. A key set twice throws
// std::invalid_argument (llama.cpp refuses such files).
class GgufMetadata {
 public:
  void set_string(const std::string& key, const std::string& value);
  void set_u32(const std::string& key, uint32_t value);
  void set_i32(const std::string& key, int32_t value);
  void set_f32(const std::string& key, float value);
  void set_bool(const std::string& key, bool value);
  void set_strings(const std::string& key, const std::vector<std::string>& values);
  void set_f32s(const std::string& key, const std::vector<float>& values);
  void set_i32s(const std::string& key, const std::vector<int32_t>& values);

  bool has(const std::string& key) const;
  uint64_t count() const { return keys_.size(); }
  const std::string& encoded() const { return bytes_; }

 private:
  void begin(const std::string& key, GgufType type);
  std::vector<std::string> keys_;
  std::string bytes_;
};

struct GgufTensor {
  std::string name;
  std::vector<uint64_t> ne;  // ggml order: ne[0] is the row (PyTorch's last dimension)
  quant::GgmlType type = quant::GgmlType::F32;
  std::function<std::vector<uint8_t>()> data;  // exactly gguf_tensor_bytes() bytes
};

uint64_t gguf_tensor_bytes(const GgufTensor& tensor);  // rows * ggml_row_bytes(type, ne[0])

// Called after each tensor: (tensors written, tensors in all, bytes of tensor data written so far).
using GgufProgress = std::function<void(size_t done, size_t total, uint64_t bytes)>;

// Writes the file; returns its size in bytes. Throws std::runtime_error naming the path (I/O) or the
// tensor (a name over 64 bytes, a duplicate name, data of the wrong size).
uint64_t write_gguf(const std::string& path, const GgufMetadata& metadata, const std::vector<GgufTensor>& tensors,
                    const GgufProgress& progress = {});

}  // namespace tb::checkpoint
