// Open-addressing hash maps for the tokenizer's hot paths: strings looked up by string_view without
// building a std::string, and pairs of ids packed into 64 bits.
#pragma once

#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace tb::text {

inline uint64_t hash_bytes(std::string_view s) {
  // FNV-1a over 8-byte words, then a finalizer: fast for the short keys tokenizers look up.
  uint64_t h = 0xcbf29ce484222325ULL ^ s.size();
  size_t i = 0;
  for (; i + 8 <= s.size(); i += 8) {
    uint64_t w;
    std::memcpy(&w, s.data() + i, 8);
    h = (h ^ w) * 0x100000001b3ULL;
    h ^= h >> 29;
  }
  uint64_t tail = 0;
  if (i < s.size()) std::memcpy(&tail, s.data() + i, s.size() - i);
  h = (h ^ tail) * 0x100000001b3ULL;
  h ^= h >> 32;
  h *= 0xd6e8feb86659fd93ULL;
  h ^= h >> 32;
  return h;
}

inline uint64_t hash_u64(uint64_t x) {
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdULL;
  x ^= x >> 33;
  x *= 0xc4ceb9fe1a85ec53ULL;
  x ^= x >> 33;
  return x;
}

// string -> uint32_t; the keys live in one arena.
class StringIdMap {
 public:
  void reserve(size_t n) { rehash(capacity_for(n)); }
  size_t size() const { return size_; }

  // Inserts or overwrites.
  void insert(std::string_view key, uint32_t value) {
    if ((size_ + 1) * 4 > slots_.size() * 3) rehash(slots_.empty() ? 64 : slots_.size() * 2);
    const uint64_t h = hash_bytes(key);
    size_t i = h & (slots_.size() - 1);
    while (slots_[i].used) {
      if (slots_[i].hash == h && key_of(slots_[i]) == key) {
        slots_[i].value = value;
        return;
      }
      i = (i + 1) & (slots_.size() - 1);
    }
    Slot& s = slots_[i];
    s.used = true;
    s.hash = h;
    s.offset = static_cast<uint32_t>(arena_.size());
    s.length = static_cast<uint32_t>(key.size());
    s.value = value;
    arena_.append(key.data(), key.size());
    ++size_;
  }

  const uint32_t* find(std::string_view key) const {
    if (slots_.empty()) return nullptr;
    const uint64_t h = hash_bytes(key);
    size_t i = h & (slots_.size() - 1);
    while (slots_[i].used) {
      if (slots_[i].hash == h && key_of(slots_[i]) == key) return &slots_[i].value;
      i = (i + 1) & (slots_.size() - 1);
    }
    return nullptr;
  }

 private:
  struct Slot {
    uint64_t hash = 0;
    uint32_t offset = 0, length = 0, value = 0;
    bool used = false;
  };
  static size_t capacity_for(size_t n) {
    size_t c = 64;
    while (c * 3 < n * 4 + 4) c *= 2;
    return c;
  }
  std::string_view key_of(const Slot& s) const { return std::string_view(arena_.data() + s.offset, s.length); }
  void rehash(size_t capacity) {
    if (capacity <= slots_.size()) return;
    std::vector<Slot> old = std::move(slots_);
    slots_.assign(capacity, Slot{});
    for (const Slot& s : old) {
      if (!s.used) continue;
      size_t i = s.hash & (capacity - 1);
      while (slots_[i].used) i = (i + 1) & (capacity - 1);
      slots_[i] = s;
    }
  }

  std::vector<Slot> slots_;
  std::string arena_;
  size_t size_ = 0;
};

// uint64_t -> (uint32_t, uint32_t), for BPE merges: (left id, right id) -> (rank, new id).
class PairMap {
 public:
  struct Value {
    uint32_t rank, new_id;
  };
  static uint64_t key(uint32_t a, uint32_t b) { return (static_cast<uint64_t>(a) << 32) | b; }
  size_t size() const { return size_; }
  void reserve(size_t n) { rehash(capacity_for(n)); }

  void insert(uint64_t k, Value v) {
    if ((size_ + 1) * 2 > slots_.size()) rehash(slots_.empty() ? 64 : slots_.size() * 2);
    size_t i = hash_u64(k) & (slots_.size() - 1);
    while (slots_[i].used) {
      if (slots_[i].key == k) {
        slots_[i].value = v;
        return;
      }
      i = (i + 1) & (slots_.size() - 1);
    }
    slots_[i] = Slot{k, v, true};
    ++size_;
  }

  const Value* find(uint64_t k) const {
    if (slots_.empty()) return nullptr;
    size_t i = hash_u64(k) & (slots_.size() - 1);
    while (slots_[i].used) {
      if (slots_[i].key == k) return &slots_[i].value;
      i = (i + 1) & (slots_.size() - 1);
    }
    return nullptr;
  }
  // Calls f(a, b, value) for every entry, in no particular order.
  template <class F>
  void for_each(F f) const {
    for (const Slot& s : slots_)
      if (s.used) f(static_cast<uint32_t>(s.key >> 32), static_cast<uint32_t>(s.key & 0xffffffffu), s.value);
  }

 private:
  struct Slot {
    uint64_t key = 0;
    Value value{0, 0};
    bool used = false;
  };
  static size_t capacity_for(size_t n) {
    size_t c = 64;
    while (c < n * 2 + 2) c *= 2;
    return c;
  }
  void rehash(size_t capacity) {
    if (capacity <= slots_.size()) return;
    std::vector<Slot> old = std::move(slots_);
    slots_.assign(capacity, Slot{});
    for (const Slot& s : old) {
      if (!s.used) continue;
      size_t i = hash_u64(s.key) & (capacity - 1);
      while (slots_[i].used) i = (i + 1) & (capacity - 1);
      slots_[i] = s;
    }
  }

  std::vector<Slot> slots_;
  size_t size_ = 0;
};

}  // namespace tb::text
