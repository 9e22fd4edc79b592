// The safetensors header, parsed and validated without LibTorch (so the fuzz target and any torch-free
// tool can read it): [u64 little-endian N][N bytes of JSON][data area], as checkpoint/safetensors.h
// describes. Validated as the reference implementation validates: a known dtype, a shape, data_offsets
// inside the data area whose size matches numel * itemsize, the tensors covering the data area exactly
// (no gap, no overlap, nothing after the last one) and no name twice.
#pragma once

#include <cstdint>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

namespace tb::checkpoint {

// Every problem with a file: the message names the file and, where one is at fault, the tensor.
class SafetensorsError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

constexpr uint64_t kMaxSafetensorsHeaderBytes = 100'000'000;  // the reference implementation's bound

struct TensorEntry {
  std::string name;
  std::string dtype;           // F64 F32 F16 BF16 I64 I32 I16 I8 U8 BOOL
  std::vector<int64_t> shape;
  uint64_t begin = 0, end = 0;  // byte range in the data area
};

struct SafetensorsHeader {
  std::vector<TensorEntry> tensors;  // sorted by name
  std::map<std::string, std::string> metadata;
  uint64_t data_offset = 0;  // 8 + header length: where the data area starts in the file
  uint64_t data_size = 0;
};

// Validates a header given its JSON text and the file size: length bound, JSON well-formed, every
// entry with a known dtype, a shape and data_offsets inside the data area whose size matches
// numel * itemsize, and no two tensors overlapping. `path` is used in messages only.
SafetensorsHeader parse_safetensors_header(const std::string& path, const char* json, uint64_t json_len,
                                           uint64_t file_size);

// Element size in bytes of a safetensors dtype name (F64 F32 F16 BF16 I64 I32 I16 I8 U8 BOOL); 0 when unknown.
size_t safetensors_itemsize(const std::string& dtype);

}  // namespace tb::checkpoint
