#include "text/bpe_model.h"

#include <algorithm>
#include <atomic>
#include <memory>
#include <stdexcept>
#include <tuple>

#include "text/byte_level.h"
#include "text/utf8.h"

namespace tb::text {
namespace {

std::atomic<uint64_t> next_cache_id{1};

// Merged words by their text, for one model and one thread. Bounded: once full, nothing more is added
// (as tokenizers' cache does).
class WordCache {
 public:
  static constexpr size_t kMaxEntries = 1 << 15;
  static constexpr size_t kMaxKeyLength = 256;

  WordCache() : slots_(kMaxEntries * 2) {}

  bool find(std::string_view key, uint64_t h, const IdSpan** spans, size_t* count) const {
    size_t i = h & (slots_.size() - 1);
    while (slots_[i].used) {
      const Slot& s = slots_[i];
      if (s.hash == h && std::string_view(keys_.data() + s.key_offset, s.key_length) == key) {
        *spans = values_.data() + s.value_offset;
        *count = s.value_length;
        return true;
      }
      i = (i + 1) & (slots_.size() - 1);
    }
    return false;
  }

  void insert(std::string_view key, uint64_t h, const IdSpan* spans, size_t count) {
    if (size_ >= kMaxEntries || key.size() >= kMaxKeyLength) return;
    size_t i = h & (slots_.size() - 1);
    while (slots_[i].used) i = (i + 1) & (slots_.size() - 1);
    Slot& s = slots_[i];
    s.used = true;
    s.hash = h;
    s.key_offset = static_cast<uint32_t>(keys_.size());
    s.key_length = static_cast<uint32_t>(key.size());
    s.value_offset = static_cast<uint32_t>(values_.size());
    s.value_length = static_cast<uint32_t>(count);
    keys_.append(key.data(), key.size());
    values_.insert(values_.end(), spans, spans + count);
    ++size_;
  }

 private:
  struct Slot {
    uint64_t hash = 0;
    uint32_t key_offset = 0, key_length = 0, value_offset = 0, value_length = 0;
    bool used = false;
  };
  std::vector<Slot> slots_;
  std::string keys_;
  std::vector<IdSpan> values_;
  size_t size_ = 0;
};

// This thread's caches of the few models it used last (a destroyed model's cache ages out).
WordCache& thread_cache(uint64_t id) {
  struct Entry {
    uint64_t id = 0;
    std::unique_ptr<WordCache> cache;
  };
  thread_local std::vector<Entry> entries;
  for (size_t i = 0; i < entries.size(); ++i) {
    if (entries[i].id != id) continue;
    if (i != 0)
      std::rotate(entries.begin(), entries.begin() + static_cast<std::ptrdiff_t>(i),
                  entries.begin() + static_cast<std::ptrdiff_t>(i) + 1);
    return *entries.front().cache;
  }
  constexpr size_t kModels = 4;
  if (entries.size() == kModels) entries.pop_back();
  entries.insert(entries.begin(), Entry{id, std::make_unique<WordCache>()});
  return *entries.front().cache;
}

struct QueuedMerge {
  uint32_t rank, pos, new_id;
};
// std heap functions keep the largest first: "larger" here is the higher rank, then the later position.
struct LaterMerge {
  bool operator()(const QueuedMerge& a, const QueuedMerge& b) const {
    return a.rank != b.rank ? a.rank > b.rank : a.pos > b.pos;
  }
};

std::string byte_token(unsigned char b) {
  static const char* hex = "0123456789ABCDEF";
  return std::string("<0x") + hex[b >> 4] + hex[b & 15] + ">";
}

}  // namespace

BpeModel::BpeModel(const std::vector<std::pair<std::string, uint32_t>>& vocab,
                   const std::vector<std::pair<std::string, std::string>>& merges, BpeOptions options)
    : options_(std::move(options)) {
  if (options_.continuing_subword_prefix && options_.continuing_subword_prefix->empty())
    options_.continuing_subword_prefix.reset();
  if (options_.end_of_word_suffix && options_.end_of_word_suffix->empty()) options_.end_of_word_suffix.reset();
  add_vocab(vocab);
  const size_t prefix_len = options_.continuing_subword_prefix ? options_.continuing_subword_prefix->size() : 0;
  merges_.reserve(merges.size());
  std::string joined;
  for (size_t i = 0; i < merges.size(); ++i) {
    const auto& [a, b] = merges[i];
    const uint32_t* a_id = vocab_.find(a);
    const uint32_t* b_id = vocab_.find(b);
    const auto where = "merges[" + std::to_string(i) + "]: ";
    if (!a_id) throw std::invalid_argument(where + "'" + a + "' is not in the vocabulary");
    if (!b_id) throw std::invalid_argument(where + "'" + b + "' is not in the vocabulary");
    joined.assign(a);
    joined.append(b, std::min(prefix_len, b.size()), std::string::npos);
    const uint32_t* new_id = vocab_.find(joined);
    if (!new_id) throw std::invalid_argument(where + "'" + joined + "' (the merged token) is not in the vocabulary");
    merges_.insert(PairMap::key(*a_id, *b_id), {static_cast<uint32_t>(i), *new_id});
  }
}

std::vector<std::pair<std::string, std::string>> BpeModel::merges() const {
  std::vector<std::tuple<uint32_t, uint32_t, uint32_t>> ranked;  // rank, left id, right id
  ranked.reserve(merges_.size());
  merges_.for_each([&](uint32_t a, uint32_t b, PairMap::Value v) { ranked.emplace_back(v.rank, a, b); });
  std::sort(ranked.begin(), ranked.end());
  std::vector<std::pair<std::string, std::string>> out;
  out.reserve(ranked.size());
  for (const auto& [rank, a, b] : ranked) out.emplace_back(id_to_token_[a], id_to_token_[b]);
  return out;
}

BpeModel BpeModel::from_ranks(const std::vector<std::pair<std::string, uint32_t>>& vocab) {
  BpeModel m;
  m.options_.ignore_merges = true;
  m.from_ranks_ = true;
  m.add_vocab(vocab);
  // Every split of a token into two tokens merges at the token's rank. Byte-level strings: split on
  // character boundaries.
  for (const auto& [token, id] : vocab) {
    for (size_t k = 0; k < token.size();) {
      k += utf8_sequence_length(static_cast<unsigned char>(token[k]));
      if (k >= token.size()) break;
      const uint32_t* a = m.vocab_.find(std::string_view(token).substr(0, k));
      const uint32_t* b = m.vocab_.find(std::string_view(token).substr(k));
      if (a && b) m.merges_.insert(PairMap::key(*a, *b), {id, id});
    }
  }
  return m;
}

BpeModel::~BpeModel() = default;

BpeModel::BpeModel(BpeModel&& o) noexcept
    : options_(std::move(o.options_)),
      vocab_(std::move(o.vocab_)),
      id_to_token_(std::move(o.id_to_token_)),
      has_token_(std::move(o.has_token_)),
      merges_(std::move(o.merges_)),
      unk_id_(o.unk_id_),
      byte_level_(o.byte_level_),
      raw_vocab_(std::move(o.raw_vocab_)),
      cache_id_(next_cache_id.fetch_add(2)) {
  std::copy(std::begin(o.byte_symbol_), std::end(o.byte_symbol_), std::begin(byte_symbol_));
}

void BpeModel::add_vocab(const std::vector<std::pair<std::string, uint32_t>>& vocab) {
  cache_id_ = next_cache_id.fetch_add(2);
  vocab_.reserve(vocab.size());
  // Ids index a table: one far past the entries (2,000,000,000 in a three-token file) would allocate
  // gigabytes. Vocabularies number their tokens 0..N-1, with small gaps at most.
  const uint64_t id_limit = 2 * uint64_t(vocab.size() + id_to_token_.size()) + 65536;
  for (const auto& [token, id] : vocab)
    if (id >= id_limit)
      throw std::out_of_range("the vocabulary gives '" + token + "' the id " + std::to_string(id) + ", far past its " +
                                  std::to_string(vocab.size()) + " entries (ids run 0..N-1)");
  for (const auto& [token, id] : vocab) {
    vocab_.insert(token, id);
    if (id >= id_to_token_.size()) {
      id_to_token_.resize(static_cast<size_t>(id) + 1);
      has_token_.resize(static_cast<size_t>(id) + 1, false);
    }
    id_to_token_[id] = token;
    has_token_[id] = true;
  }
  if (options_.unk_token)
    if (const uint32_t* u = vocab_.find(*options_.unk_token)) unk_id_ = *u;
}

std::optional<uint32_t> BpeModel::token_to_id(std::string_view token) const {
  const uint32_t* id = vocab_.find(token);
  return id ? std::optional<uint32_t>(*id) : std::nullopt;
}

const std::string* BpeModel::id_to_token(uint32_t id) const {
  return id < id_to_token_.size() && has_token_[id] ? &id_to_token_[id] : nullptr;
}

void BpeModel::symbols_of_word(std::string_view w, std::vector<Symbol>& symbols) const {
  symbols.clear();
  bool have_unk = false;
  uint32_t unk_id = 0, unk_len = 0;
  auto add = [&symbols](uint32_t c, uint32_t len) {
    const auto n = static_cast<int32_t>(symbols.size());
    if (!symbols.empty()) symbols.back().next = n;
    symbols.push_back({c, symbols.empty() ? -1 : n - 1, -1, len});
  };
  std::string s;
  for (size_t i = 0; i < w.size();) {
    const size_t len = std::min(utf8_sequence_length(static_cast<unsigned char>(w[i])), w.size() - i);
    const bool first = i == 0, last = i + len >= w.size();
    std::string_view piece = w.substr(i, len);
    if ((!first && options_.continuing_subword_prefix) || (last && options_.end_of_word_suffix)) {
      s.clear();
      if (!first && options_.continuing_subword_prefix) s = *options_.continuing_subword_prefix;
      s.append(piece);
      if (last && options_.end_of_word_suffix) s += *options_.end_of_word_suffix;
      piece = s;
    }
    i += len;
    if (const uint32_t* id = vocab_.find(piece)) {
      if (have_unk) {
        add(unk_id, unk_len);
        have_unk = false;
      }
      add(*id, static_cast<uint32_t>(len));
      continue;
    }
    if (options_.byte_fallback) {
      bool all = true;
      for (const char c : piece) all = all && vocab_.find(byte_token(static_cast<unsigned char>(c)));
      if (all) {
        for (const char c : piece) add(*vocab_.find(byte_token(static_cast<unsigned char>(c))), 1);
        continue;
      }
    }
    if (options_.unk_token) {
      if (!unk_id_) throw std::runtime_error("the unk token '" + *options_.unk_token + "' is not in the vocabulary");
      if (have_unk && options_.fuse_unk) {
        unk_len += static_cast<uint32_t>(len);
      } else {
        if (have_unk) add(unk_id, unk_len);
        have_unk = true;
        unk_id = *unk_id_;
        unk_len = static_cast<uint32_t>(len);
      }
    }
  }
  if (have_unk) add(unk_id, unk_len);
}

void BpeModel::merge_symbols(std::vector<Symbol>& symbols) const {
  thread_local std::vector<QueuedMerge> queue;
  queue.clear();
  for (size_t i = 0; i + 1 < symbols.size(); ++i)
    if (const auto* m = merges_.find(PairMap::key(symbols[i].c, symbols[i + 1].c)))
      queue.push_back({m->rank, static_cast<uint32_t>(i), m->new_id});
  std::make_heap(queue.begin(), queue.end(), LaterMerge());
  const auto size = static_cast<int32_t>(symbols.size());
  while (!queue.empty()) {
    std::pop_heap(queue.begin(), queue.end(), LaterMerge());
    const QueuedMerge top = queue.back();
    queue.pop_back();
    Symbol& left = symbols[top.pos];
    if (left.len == 0 || left.next == -1) continue;
    const int32_t next_pos = left.next;
    const Symbol right = symbols[next_pos];
    const auto* current_pair = merges_.find(PairMap::key(left.c, right.c));
    if (!current_pair || current_pair->new_id != top.new_id) continue;  // queued before the pair changed
    left.c = top.new_id;
    left.len += right.len;
    left.next = right.next;
    symbols[next_pos].len = 0;
    if (right.next > -1 && right.next < size) symbols[right.next].prev = static_cast<int32_t>(top.pos);
    const Symbol current = symbols[top.pos];
    if (current.prev >= 0) {
      if (const auto* m = merges_.find(PairMap::key(symbols[current.prev].c, current.c))) {
        queue.push_back({m->rank, static_cast<uint32_t>(current.prev), m->new_id});
        std::push_heap(queue.begin(), queue.end(), LaterMerge());
      }
    }
    if (current.next >= 0 && current.next < size) {
      if (const auto* m = merges_.find(PairMap::key(current.c, symbols[current.next].c))) {
        queue.push_back({m->rank, top.pos, m->new_id});
        std::push_heap(queue.begin(), queue.end(), LaterMerge());
      }
    }
  }
  symbols.erase(std::remove_if(symbols.begin(), symbols.end(), [](const Symbol& s) { return s.len == 0; }),
                symbols.end());
}

void BpeModel::tokenize(std::string_view word, std::vector<Token>& out) const {
  if (word.empty()) return;
  if (options_.ignore_merges) {
    if (const uint32_t* id = vocab_.find(word)) {
      out.push_back({*id, std::string(word), {0, word.size()}});
      return;
    }
  }
  WordCache& cache = thread_cache(cache_id_);
  const uint64_t h = hash_bytes(word);
  const IdSpan* spans = nullptr;
  size_t count = 0;
  thread_local std::vector<IdSpan> merged;
  if (!cache.find(word, h, &spans, &count)) {
    thread_local std::vector<Symbol> symbols;
    symbols_of_word(word, symbols);
    merge_symbols(symbols);
    merged.clear();
    for (const Symbol& s : symbols) merged.push_back({s.c, s.len});
    cache.insert(word, h, merged.data(), merged.size());
    spans = merged.data();
    count = merged.size();
  }
  size_t pos = 0;
  for (size_t i = 0; i < count; ++i) {
    const std::string* value = id_to_token(spans[i].id);
    out.push_back({spans[i].id, value ? *value : std::string(), {pos, pos + spans[i].length}});
    pos += spans[i].length;
  }
}

bool BpeModel::enable_byte_level() {
  byte_level_ = false;
  if (options_.continuing_subword_prefix || options_.end_of_word_suffix) return false;
  std::string ch;
  for (int b = 0; b < 256; ++b) {
    ch.clear();
    append_utf8(ch, byte_to_char(static_cast<unsigned char>(b)));
    const uint32_t* id = vocab_.find(ch);
    if (!id) return false;
    byte_symbol_[b] = *id;
  }
  raw_vocab_ = StringIdMap();
  raw_vocab_.reserve(vocab_.size());
  std::string raw;
  for (size_t id = 0; id < id_to_token_.size(); ++id)
    if (has_token_[id] && byte_level_to_bytes(id_to_token_[id], &raw)) {
      // The vocabulary's own id for this spelling (two spellings never share bytes in a sane file).
      const uint32_t* own = vocab_.find(id_to_token_[id]);
      raw_vocab_.insert(raw, own ? *own : static_cast<uint32_t>(id));
    }
  byte_level_ = true;
  return true;
}

void BpeModel::merge_bytes(std::string_view bytes, std::vector<IdSpan>& out) const {
  thread_local std::vector<Symbol> symbols;
  symbols.clear();
  const auto n = static_cast<int32_t>(bytes.size());
  for (int32_t i = 0; i < n; ++i)
    symbols.push_back(
        {static_cast<uint32_t>(byte_symbol_[static_cast<unsigned char>(bytes[i])]), i - 1, i + 1 < n ? i + 1 : -1, 1});
  merge_symbols(symbols);
  for (const Symbol& s : symbols) out.push_back({s.c, s.len});
}

void BpeModel::tokenize_bytes(std::string_view bytes, std::vector<IdSpan>& out) const {
  if (bytes.empty()) return;
  if (options_.ignore_merges) {
    if (const uint32_t* id = raw_vocab_.find(bytes)) {
      out.push_back({*id, static_cast<uint32_t>(bytes.size())});
      return;
    }
  }
  if (bytes.size() == 1) {
    out.push_back({static_cast<uint32_t>(byte_symbol_[static_cast<unsigned char>(bytes[0])]), 1});
    return;
  }
  WordCache& cache = thread_cache(cache_id_ + 1);
  const uint64_t h = hash_bytes(bytes);
  const IdSpan* spans = nullptr;
  size_t count = 0;
  if (cache.find(bytes, h, &spans, &count)) {
    out.insert(out.end(), spans, spans + count);
    return;
  }
  const size_t before = out.size();
  merge_bytes(bytes, out);
  cache.insert(bytes, h, out.data() + before, out.size() - before);
}

}  // namespace tb::text
