#include "checkpoint/safetensors_header.h"

#include <algorithm>
#include <set>
#include <nlohmann/json.hpp>

namespace tb::checkpoint {

namespace {

[[noreturn]] void fail(const std::string& path, const std::string& what) { throw SafetensorsError(path + ": " + what); }
[[noreturn]] void fail_tensor(const std::string& path, const std::string& name, const std::string& what) {
  fail(path, "tensor '" + name + "': " + what);
}

}  // namespace

size_t safetensors_itemsize(const std::string& dtype) {
  static const std::map<std::string, size_t> sizes = {{"F64", 8}, {"F32", 4}, {"F16", 2}, {"BF16", 2}, {"I64", 8},
                                                      {"I32", 4}, {"I16", 2}, {"I8", 1},  {"U8", 1},   {"BOOL", 1}};
  const auto it = sizes.find(dtype);
  return it == sizes.end() ? 0 : it->second;
}

SafetensorsHeader parse_safetensors_header(const std::string& path, const char* json_text, uint64_t json_len,
                                           uint64_t file_size) {
  if (json_len > kMaxSafetensorsHeaderBytes)
    fail(path, "header length " + std::to_string(json_len) + " exceeds the limit of " +
                   std::to_string(kMaxSafetensorsHeaderBytes) + " bytes");
  if (file_size < 8 || json_len > file_size - 8)
    fail(path, "header length " + std::to_string(json_len) + " runs past the end of the " +
                   std::to_string(file_size) + "-byte file (truncated?)");
  // JSON would keep the last of two entries with one name; the reference implementation refuses them.
  std::set<std::string> names;
  std::string duplicate;
  const nlohmann::json::parser_callback_t no_duplicates = [&](int depth, nlohmann::json::parse_event_t event,
                                                              nlohmann::json& parsed) {
    if (depth == 1 && event == nlohmann::json::parse_event_t::key && !names.insert(parsed.get<std::string>()).second &&
        duplicate.empty())
      duplicate = parsed.get<std::string>();
    return true;
  };
  nlohmann::json root;
  try {
    root = nlohmann::json::parse(json_text, json_text + json_len, no_duplicates);
  } catch (const nlohmann::json::exception& e) {  // a syntax error, or a number out of range (1e999)
    fail(path, std::string("header is not valid JSON: ") + e.what());
  }
  if (!duplicate.empty()) fail_tensor(path, duplicate, "named twice in the header");
  if (!root.is_object()) fail(path, "header is not a JSON object");

  SafetensorsHeader h;
  h.data_offset = 8 + json_len;
  h.data_size = file_size - h.data_offset;
  for (auto it = root.begin(); it != root.end(); ++it) {
    const std::string& name = it.key();
    const auto& v = it.value();
    if (name == "__metadata__") {
      if (!v.is_object()) fail(path, "__metadata__ is not an object of strings");
      for (auto m = v.begin(); m != v.end(); ++m) {
        if (!m.value().is_string()) fail(path, "__metadata__ value of '" + m.key() + "' is not a string");
        h.metadata[m.key()] = m.value().get<std::string>();
      }
      continue;
    }
    if (!v.is_object()) fail_tensor(path, name, "entry is not an object");
    TensorEntry e;
    e.name = name;
    const auto dtype = v.find("dtype");
    if (dtype == v.end() || !dtype->is_string()) fail_tensor(path, name, "missing string 'dtype'");
    e.dtype = dtype->get<std::string>();
    const size_t itemsize = safetensors_itemsize(e.dtype);
    if (itemsize == 0) fail_tensor(path, name, "unsupported dtype '" + e.dtype + "'");
    const auto shape = v.find("shape");
    if (shape == v.end() || !shape->is_array()) fail_tensor(path, name, "missing array 'shape'");
    uint64_t numel = 1;
    for (const auto& d : *shape) {
      if (!d.is_number_unsigned() || d.get<uint64_t>() > static_cast<uint64_t>(INT64_MAX))
        fail_tensor(path, name, "shape " + shape->dump() + " has an entry that is not a non-negative integer");
      e.shape.push_back(static_cast<int64_t>(d.get<uint64_t>()));
      if (__builtin_mul_overflow(numel, d.get<uint64_t>(), &numel))
        fail_tensor(path, name, "shape " + shape->dump() + " overflows");
    }
    const auto offsets = v.find("data_offsets");
    if (offsets == v.end() || !offsets->is_array() || offsets->size() != 2 || !(*offsets)[0].is_number_unsigned() ||
        !(*offsets)[1].is_number_unsigned())
      fail_tensor(path, name, "'data_offsets' must be two non-negative integers");
    e.begin = (*offsets)[0].get<uint64_t>();
    e.end = (*offsets)[1].get<uint64_t>();
    const std::string range = "data_offsets [" + std::to_string(e.begin) + ", " + std::to_string(e.end) + "]";
    if (e.begin > e.end) fail_tensor(path, name, range + " run backwards");
    if (e.end > h.data_size)
      fail_tensor(path, name, range + " exceed the data area of " + std::to_string(h.data_size) +
                                  " bytes (offset out of range or file truncated)");
    uint64_t bytes = 0;
    if (__builtin_mul_overflow(numel, static_cast<uint64_t>(itemsize), &bytes) || bytes != e.end - e.begin)
      fail_tensor(path, name, range + " hold " + std::to_string(e.end - e.begin) + " bytes but dtype " + e.dtype +
                                  " and shape " + shape->dump() + " need " + std::to_string(numel * itemsize));
    h.tensors.push_back(std::move(e));
  }
  // As the reference implementation reads a file: the tensors, in offset order, cover the data area
  // exactly, without gaps or overlaps. A header length one byte off (every tensor shifted) or bytes
  // after the last tensor are refused here rather than read as other numbers.
  std::vector<const TensorEntry*> by_offset;
  for (const auto& e : h.tensors) by_offset.push_back(&e);
  std::sort(by_offset.begin(), by_offset.end(), [](const TensorEntry* a, const TensorEntry* b) {
    return a->begin != b->begin ? a->begin < b->begin : a->end < b->end;
  });
  uint64_t covered = 0;
  const TensorEntry* previous = nullptr;
  for (const TensorEntry* e : by_offset) {
    if (e->begin < covered)
      fail_tensor(path, e->name, "bytes overlap those of tensor '" + (previous ? previous->name : std::string()) + "'");
    if (e->begin > covered)
      fail_tensor(path, e->name, "starts at byte " + std::to_string(e->begin) + " of the data area, leaving a gap after " +
                                     (previous ? "tensor '" + previous->name + "'" : std::string("the header")) +
                                     " (which ends at " + std::to_string(covered) + ")");
    covered = e->end;
    previous = e;
  }
  if (covered != h.data_size)
    fail(path, "the data area has " + std::to_string(h.data_size - covered) +
                   " bytes after the last tensor (a wrong header length, or trailing bytes)");
  // nlohmann's object is ordered by key, so h.tensors is already sorted by name.
  return h;
}

}  // namespace tb::checkpoint
