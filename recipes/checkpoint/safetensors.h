// safetensors: the Hugging Face tensor file format.
//   [u64 little-endian N][N bytes of JSON header, space-padded][data area]
//   header: {"__metadata__": {str: str}, "<name>": {"dtype": "F32", "shape": [..], "data_offsets": [b, e]}, ...}
//   offsets are relative to the data area; data is raw little-endian, row-major.
// Reading maps the file (mmap, MAP_PRIVATE) and validates the whole header before any tensor is
// touched. Tensors from SafetensorsFile are zero-copy views of the mapping: each holds a reference
// to it, so the mapping lives as long as the last tensor (writes to them are private copy-on-write
// pages, never the file). A tensor whose bytes are not aligned to its element size is cloned instead.
// As the reference implementation reads: the tensors cover the data area exactly (no gap, no overlap,
// nothing after the last one) and no name appears twice.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include <torch/types.h>

#include "checkpoint/lazy_state.h"
#include "checkpoint/safetensors_header.h"

namespace tb::checkpoint {

// The LibTorch equivalents of safetensors dtype names.
torch::ScalarType safetensors_scalar_type(const std::string& dtype);  // throws on unknown
std::string safetensors_dtype_name(torch::ScalarType type);            // throws on unsupported

class SafetensorsFile {
 public:
  explicit SafetensorsFile(const std::string& path);  // maps and validates; throws SafetensorsError
  const std::string& path() const { return path_; }
  const std::vector<TensorEntry>& entries() const { return header_.tensors; }
  const std::map<std::string, std::string>& metadata() const { return header_.metadata; }
  const TensorEntry* find(const std::string& name) const;
  // Zero-copy view of the mapping (see above); throws SafetensorsError for an unknown name.
  torch::Tensor tensor(const std::string& name) const;
  std::map<std::string, torch::Tensor> tensors() const;

 private:
  struct Mapping;
  torch::Tensor make_tensor(const TensorEntry& e) const;
  std::string path_;
  std::shared_ptr<Mapping> mapping_;
  SafetensorsHeader header_;
};

// All tensors of a file (views of its mapping).
std::map<std::string, torch::Tensor> load_safetensors(const std::string& path);

// Writes tensors (any device, any strides) as the reference writer does: data ordered by dtype size
// (largest first) then name, header JSON padded with spaces to a multiple of 8 bytes. Atomic: a temp
// file in the same folder renamed over `path`. Throws SafetensorsError naming the file or tensor.
void save_safetensors(const std::string& path, const std::map<std::string, torch::Tensor>& tensors,
                      const std::map<std::string, std::string>& metadata = {});
// The same for tensors made as the writer reaches them (one alive at a time); a tensor made with
// another shape or dtype than its entry announced is an error naming it.
void save_safetensors(const std::string& path, const LazyStateDict& tensors,
                      const std::map<std::string, std::string>& metadata = {});

}  // namespace tb::checkpoint
