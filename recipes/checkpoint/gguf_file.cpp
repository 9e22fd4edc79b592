#include "checkpoint/gguf_file.h"

#include <algorithm>
#include <cstring>
#include <set>
#include <stdexcept>

#include "checkpoint/atomic_file.h"
#include "config/interrupt.h"

namespace tb::checkpoint {

namespace {

// GGUF is little-endian; so is every machine we build for (x86-64, aarch64).
template <class T>
void put(std::string& out, T value) {
  char raw[sizeof(T)];
  std::memcpy(raw, &value, sizeof(T));
  out.append(raw, sizeof(T));
}

void put_string(std::string& out, const std::string& s) {
  put<uint64_t>(out, s.size());
  out += s;
}

uint64_t padded(uint64_t n) { return (n + kGgufAlignment - 1) / kGgufAlignment * kGgufAlignment; }

}  // namespace

void GgufMetadata::begin(const std::string& key, GgufType type) {
  if (has(key)) throw std::invalid_argument("GGUF metadata: key '" + key + "' set twice");
  keys_.push_back(key);
  put_string(bytes_, key);
  put<uint32_t>(bytes_, static_cast<uint32_t>(type));
}

void GgufMetadata::set_string(const std::string& key, const std::string& value) {
  begin(key, GgufType::string);
  put_string(bytes_, value);
}
void GgufMetadata::set_u32(const std::string& key, uint32_t value) {
  begin(key, GgufType::u32);
  put(bytes_, value);
}
void GgufMetadata::set_i32(const std::string& key, int32_t value) {
  begin(key, GgufType::i32);
  put(bytes_, value);
}
void GgufMetadata::set_f32(const std::string& key, float value) {
  begin(key, GgufType::f32);
  put(bytes_, value);
}
void GgufMetadata::set_bool(const std::string& key, bool value) {
  begin(key, GgufType::boolean);
  put<uint8_t>(bytes_, value ? 1 : 0);
}
void GgufMetadata::set_strings(const std::string& key, const std::vector<std::string>& values) {
  begin(key, GgufType::array);
  put<uint32_t>(bytes_, static_cast<uint32_t>(GgufType::string));
  put<uint64_t>(bytes_, values.size());
  for (const auto& v : values) put_string(bytes_, v);
}
void GgufMetadata::set_f32s(const std::string& key, const std::vector<float>& values) {
  begin(key, GgufType::array);
  put<uint32_t>(bytes_, static_cast<uint32_t>(GgufType::f32));
  put<uint64_t>(bytes_, values.size());
  for (float v : values) put(bytes_, v);
}
void GgufMetadata::set_i32s(const std::string& key, const std::vector<int32_t>& values) {
  begin(key, GgufType::array);
  put<uint32_t>(bytes_, static_cast<uint32_t>(GgufType::i32));
  put<uint64_t>(bytes_, values.size());
  for (int32_t v : values) put(bytes_, v);
}

bool GgufMetadata::has(const std::string& key) const {
  return std::find(keys_.begin(), keys_.end(), key) != keys_.end();
}

uint64_t gguf_tensor_bytes(const GgufTensor& tensor) {
  if (tensor.ne.empty()) throw std::invalid_argument("GGUF tensor " + tensor.name + ": no dimensions");
  uint64_t rows = 1;
  for (size_t i = 1; i < tensor.ne.size(); ++i) rows *= tensor.ne[i];
  return rows * static_cast<uint64_t>(quant::ggml_row_bytes(tensor.type, static_cast<int64_t>(tensor.ne[0])));
}

uint64_t write_gguf(const std::string& path, const GgufMetadata& metadata, const std::vector<GgufTensor>& tensors,
                    const GgufProgress& progress) {
  std::string head = "GGUF";
  put<uint32_t>(head, kGgufVersion);
  put<uint64_t>(head, tensors.size());
  put<uint64_t>(head, metadata.count());
  head += metadata.encoded();
  std::set<std::string> names;
  uint64_t offset = 0;
  for (const auto& t : tensors) {
    if (t.name.size() >= 64) throw std::runtime_error("GGUF tensor name over 63 bytes: " + t.name);
    if (!names.insert(t.name).second) throw std::runtime_error("GGUF tensor named twice: " + t.name);
    put_string(head, t.name);
    put<uint32_t>(head, static_cast<uint32_t>(t.ne.size()));
    for (uint64_t n : t.ne) put<uint64_t>(head, n);
    put<uint32_t>(head, static_cast<uint32_t>(t.type));
    put<uint64_t>(head, offset);
    offset = padded(offset + gguf_tensor_bytes(t));
  }
  head.resize(padded(head.size()), '\0');

  AtomicFile file(path);
  file.write(head.data(), head.size());
  uint64_t written = 0;
  static const char zeros[kGgufAlignment] = {};
  for (size_t i = 0; i < tensors.size(); ++i) {
    config::check_interrupt();  // the file is not committed: nothing is left behind
    const auto& t = tensors[i];
    const std::vector<uint8_t> data = t.data();
    const uint64_t expected = gguf_tensor_bytes(t);
    if (data.size() != expected)
      throw std::runtime_error("GGUF tensor " + t.name + ": " + std::to_string(data.size()) + " bytes made, " +
                               std::to_string(expected) + " expected");
    file.write(data.data(), data.size());
    file.write(zeros, padded(data.size()) - data.size());
    written += padded(data.size());
    if (progress) progress(i + 1, tensors.size(), written);
  }
  file.commit();
  return head.size() + written;
}

}  // namespace tb::checkpoint
