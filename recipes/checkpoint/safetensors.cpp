#include "checkpoint/safetensors.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <set>
#include <nlohmann/json.hpp>

#include "text/json_text.h"
#include "checkpoint/atomic_file.h"
#include "config/regular_file.h"

static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "safetensors I/O assumes a little-endian host");

namespace tb::checkpoint {

namespace {

struct DtypeInfo {
  const char* name;
  torch::ScalarType type;
};

const std::vector<DtypeInfo>& dtype_table() {
  static const std::vector<DtypeInfo> table = {
      {"F64", torch::kDouble}, {"F32", torch::kFloat}, {"F16", torch::kHalf}, {"BF16", torch::kBFloat16},
      {"I64", torch::kLong},   {"I32", torch::kInt},   {"I16", torch::kShort}, {"I8", torch::kChar},
      {"U8", torch::kByte},    {"BOOL", torch::kBool}};
  return table;
}

const DtypeInfo* find_dtype(const std::string& name) {
  for (const auto& d : dtype_table())
    if (name == d.name) return &d;
  return nullptr;
}

[[noreturn]] void fail(const std::string& path, const std::string& what) { throw SafetensorsError(path + ": " + what); }
[[noreturn]] void fail_tensor(const std::string& path, const std::string& name, const std::string& what) {
  fail(path, "tensor '" + name + "': " + what);
}

std::string errno_text() { return std::strerror(errno); }

}  // namespace

torch::ScalarType safetensors_scalar_type(const std::string& dtype) {
  const auto* d = find_dtype(dtype);
  if (!d) throw SafetensorsError("unsupported safetensors dtype '" + dtype + "'");
  return d->type;
}

std::string safetensors_dtype_name(torch::ScalarType type) {
  for (const auto& d : dtype_table())
    if (d.type == type) return d.name;
  throw SafetensorsError(std::string("tensors of type ") + c10::toString(type) + " cannot be stored in safetensors");
}

struct SafetensorsFile::Mapping {
  void* data = nullptr;
  size_t size = 0;
  ~Mapping() {
    if (data) munmap(data, size);
  }
};

SafetensorsFile::SafetensorsFile(const std::string& path) : path_(path) {
  if (const auto what = config::not_a_regular_file(path)) fail(path, *what);
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) fail(path, "cannot open: " + errno_text());
  struct stat st {};
  if (fstat(fd, &st) != 0) {
    const auto why = errno_text();
    ::close(fd);
    fail(path, "cannot stat: " + why);
  }
  const auto size = static_cast<uint64_t>(st.st_size);
  if (size < 8) {
    ::close(fd);
    fail(path, "file is " + std::to_string(size) + " bytes, too short for the 8-byte header length (truncated?)");
  }
  mapping_ = std::make_shared<Mapping>();
  // Private writable mapping: tensors may be modified in place without ever touching the file.
  void* p = mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0);
  const auto why = errno_text();
  ::close(fd);
  if (p == MAP_FAILED) fail(path, "cannot map: " + why);
  mapping_->data = p;
  mapping_->size = size;
  uint64_t json_len = 0;
  std::memcpy(&json_len, p, 8);
  header_ = parse_safetensors_header(path, static_cast<const char*>(p) + 8, json_len, size);
}

const TensorEntry* SafetensorsFile::find(const std::string& name) const {
  auto it = std::lower_bound(header_.tensors.begin(), header_.tensors.end(), name,
                             [](const TensorEntry& e, const std::string& n) { return e.name < n; });
  return it != header_.tensors.end() && it->name == name ? &*it : nullptr;
}

torch::Tensor SafetensorsFile::make_tensor(const TensorEntry& e) const {
  const auto type = safetensors_scalar_type(e.dtype);
  auto* bytes = static_cast<char*>(mapping_->data) + header_.data_offset + e.begin;
  const auto opts = torch::TensorOptions().dtype(type);
  if (reinterpret_cast<uintptr_t>(bytes) % safetensors_itemsize(e.dtype) != 0)
    return torch::from_blob(bytes, e.shape, opts).clone();  // unaligned: own aligned copy
  auto keep = mapping_;
  return torch::from_blob(bytes, e.shape, [keep](void*) {}, opts);
}

torch::Tensor SafetensorsFile::tensor(const std::string& name) const {
  const auto* e = find(name);
  if (!e) fail(path_, "no tensor named '" + name + "'");
  return make_tensor(*e);
}

std::map<std::string, torch::Tensor> SafetensorsFile::tensors() const {
  std::map<std::string, torch::Tensor> out;
  for (const auto& e : header_.tensors) out.emplace(e.name, make_tensor(e));
  return out;
}

std::map<std::string, torch::Tensor> load_safetensors(const std::string& path) { return SafetensorsFile(path).tensors(); }

namespace {

// A temp file next to the target, renamed over it on commit(); removed if never committed.

}  // namespace

void save_safetensors(const std::string& path, const LazyStateDict& tensors,
                      const std::map<std::string, std::string>& metadata) {
  struct Item {
    const std::string* name;
    const LazyTensor* tensor;
    std::string dtype;
    size_t itemsize;
    uint64_t bytes;
  };
  std::vector<Item> items;
  items.reserve(tensors.size());
  for (const auto& [name, t] : tensors) {
    if (name == "__metadata__") fail(path, "a tensor may not be named __metadata__");
    if (!t.make) fail_tensor(path, name, "undefined tensor");
    std::string dtype;
    try {
      dtype = safetensors_dtype_name(t.dtype);
    } catch (const SafetensorsError& e) {
      fail_tensor(path, name, e.what());
    }
    const size_t itemsize = safetensors_itemsize(dtype);
    uint64_t numel = 1;
    for (const int64_t d : t.shape) numel *= static_cast<uint64_t>(d);
    items.push_back({&name, &t, dtype, itemsize, numel * itemsize});
  }
  // Largest element size first keeps every tensor aligned to its element size; then by name.
  std::stable_sort(items.begin(), items.end(), [](const Item& a, const Item& b) { return a.itemsize > b.itemsize; });

  nlohmann::ordered_json header = nlohmann::ordered_json::object();
  if (!metadata.empty()) header["__metadata__"] = metadata;
  uint64_t offset = 0;
  for (const auto& it : items) {
    header[*it.name] = {{"dtype", it.dtype}, {"shape", it.tensor->shape}, {"data_offsets", {offset, offset + it.bytes}}};
    offset += it.bytes;
  }
  std::string text = text::json_text(header);
  text.append((8 - text.size() % 8) % 8, ' ');
  const uint64_t len = text.size();

  // The file's errors (a full disk, a size limit) as this format's errors, naming the file.
  try {
    AtomicFile out(path);
    out.write(&len, 8);
    out.write(text.data(), text.size());
    for (const auto& it : items) {
      // Made here and dropped after writing: one tensor of a lazy state is alive at a time.
      const torch::Tensor made = it.tensor->make();
      if (!made.defined()) fail_tensor(path, *it.name, "undefined tensor");
      if (made.sizes().vec() != it.tensor->shape || made.scalar_type() != it.tensor->dtype)
        fail_tensor(path, *it.name, "made with another shape or dtype than announced");
      const torch::Tensor data = made.detach().to(torch::kCPU).contiguous();
      if (it.bytes > 0) out.write(data.data_ptr(), static_cast<size_t>(it.bytes));
    }
    out.commit();
  } catch (const SafetensorsError&) {
    throw;
  } catch (const std::runtime_error& e) {
    throw SafetensorsError(e.what());
  }
}

void save_safetensors(const std::string& path, const std::map<std::string, torch::Tensor>& tensors,
                      const std::map<std::string, std::string>& metadata) {
  for (const auto& [name, t] : tensors)
    if (!t.defined()) fail_tensor(path, name, "undefined tensor");
  save_safetensors(path, lazy(tensors), metadata);
}

}  // namespace tb::checkpoint
