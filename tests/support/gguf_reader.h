// A GGUF reader of the tests' own, written from the format's specification (ggml's docs/gguf.md), to
// check what checkpoint/gguf_file.cpp writes: header, typed metadata, tensor table, alignment, data.
// Throws std::runtime_error on anything out of place (bad magic, truncation, misaligned offsets).
#pragma once

#include <cstdint>
#include <cstring>
#include <map>
#include <stdexcept>
#include <string>
#include <variant>
#include <vector>

namespace tbtest {

struct GgufValue {
  uint32_t type = 0;  // gguf_type
  std::variant<uint64_t, int64_t, double, bool, std::string> scalar;
  uint32_t array_type = 0;
  std::vector<GgufValue> array;
  uint64_t u() const { return std::get<uint64_t>(scalar); }
  int64_t i() const { return std::get<int64_t>(scalar); }
  double f() const { return std::get<double>(scalar); }
  bool b() const { return std::get<bool>(scalar); }
  const std::string& s() const { return std::get<std::string>(scalar); }
};

struct GgufTensorInfo {
  std::string name;
  std::vector<uint64_t> ne;
  uint32_t type = 0;
  uint64_t offset = 0;  // from the start of the data section
};

struct GgufFile {
  uint32_t version = 0;
  std::vector<std::string> key_order;
  std::map<std::string, GgufValue> kv;
  std::vector<GgufTensorInfo> tensors;
  uint64_t data_start = 0;
  std::string bytes;  // the whole file

  const GgufTensorInfo& tensor(const std::string& name) const {
    for (const auto& t : tensors)
      if (t.name == name) return t;
    throw std::runtime_error("no tensor " + name);
  }
  const char* data(const GgufTensorInfo& t) const { return bytes.data() + data_start + t.offset; }
};

class GgufParser {
 public:
  explicit GgufParser(const std::string& bytes) : b_(bytes) {}

  GgufFile parse() {
    GgufFile f;
    f.bytes = b_;
    if (take(4) != "GGUF") throw std::runtime_error("bad magic");
    f.version = get<uint32_t>();
    const auto n_tensors = get<uint64_t>(), n_kv = get<uint64_t>();
    for (uint64_t i = 0; i < n_kv; ++i) {
      const std::string key = str();
      if (f.kv.count(key)) throw std::runtime_error("duplicate key " + key);
      f.key_order.push_back(key);
      f.kv[key] = value(get<uint32_t>());
    }
    uint64_t alignment = 32;
    if (f.kv.count("general.alignment")) alignment = f.kv["general.alignment"].u();
    for (uint64_t i = 0; i < n_tensors; ++i) {
      GgufTensorInfo t;
      t.name = str();
      const auto dims = get<uint32_t>();
      for (uint32_t d = 0; d < dims; ++d) t.ne.push_back(get<uint64_t>());
      t.type = get<uint32_t>();
      t.offset = get<uint64_t>();
      if (t.offset % alignment != 0) throw std::runtime_error("tensor " + t.name + " misaligned");
      f.tensors.push_back(t);
    }
    f.data_start = (pos_ + alignment - 1) / alignment * alignment;
    if (f.data_start > b_.size()) throw std::runtime_error("truncated before the data");
    return f;
  }

 private:
  std::string take(size_t n) {
    if (pos_ + n > b_.size()) throw std::runtime_error("truncated at byte " + std::to_string(pos_));
    std::string s = b_.substr(pos_, n);
    pos_ += n;
    return s;
  }
  template <class T>
  T get() {
    const std::string raw = take(sizeof(T));
    T v;
    std::memcpy(&v, raw.data(), sizeof(T));
    return v;
  }
  std::string str() { return take(get<uint64_t>()); }
  GgufValue value(uint32_t type) {
    GgufValue v;
    v.type = type;
    switch (type) {
      case 0: v.scalar = static_cast<uint64_t>(get<uint8_t>()); break;
      case 1: v.scalar = static_cast<int64_t>(get<int8_t>()); break;
      case 2: v.scalar = static_cast<uint64_t>(get<uint16_t>()); break;
      case 3: v.scalar = static_cast<int64_t>(get<int16_t>()); break;
      case 4: v.scalar = static_cast<uint64_t>(get<uint32_t>()); break;
      case 5: v.scalar = static_cast<int64_t>(get<int32_t>()); break;
      case 6: v.scalar = static_cast<double>(get<float>()); break;
      case 7: {
        const auto b = get<uint8_t>();
        if (b > 1) throw std::runtime_error("bool not 0/1");
        v.scalar = b == 1;
        break;
      }
      case 8: v.scalar = str(); break;
      case 9: {
        v.array_type = get<uint32_t>();
        const auto n = get<uint64_t>();
        for (uint64_t i = 0; i < n; ++i) v.array.push_back(value(v.array_type));
        break;
      }
      case 10: v.scalar = get<uint64_t>(); break;
      case 11: v.scalar = get<int64_t>(); break;
      case 12: v.scalar = get<double>(); break;
      default: throw std::runtime_error("unknown value type " + std::to_string(type));
    }
    return v;
  }
  const std::string& b_;
  size_t pos_ = 0;
};

inline GgufFile parse_gguf(const std::string& bytes) { return GgufParser(bytes).parse(); }

}  // namespace tbtest
