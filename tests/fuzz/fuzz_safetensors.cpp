// libFuzzer target: a whole .safetensors file's bytes, its header parsed and validated as a load does
// before any tensor is touched (checkpoint/safetensors_header.h). Refusals are SafetensorsError naming
// the file; crashes, hangs and memory out of proportion to the input are findings. Past validation,
// every tensor's byte range must lie inside the input: checked here, since a load maps those bytes.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>

#include "checkpoint/safetensors_header.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 8) return 0;
  uint64_t json_len = 0;  // may run past the input: the parser must refuse that before reading
  std::memcpy(&json_len, data, 8);
  try {
    const auto header = tb::checkpoint::parse_safetensors_header(
        "fuzz.safetensors", reinterpret_cast<const char*>(data + 8), json_len, size);
    for (const auto& t : header.tensors)
      if (header.data_offset + t.end > size || t.begin > t.end) std::abort();  // accepted a range outside the file
  } catch (const tb::checkpoint::SafetensorsError&) {
  }
  return 0;
}
