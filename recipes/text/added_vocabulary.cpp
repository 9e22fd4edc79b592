#include "text/added_vocabulary.h"

#include <algorithm>

#include "text/bpe_model.h"
#include "text/unicode.h"
#include "text/utf8.h"

namespace tb::text {
namespace {

bool same_flags(const AddedToken& a, const AddedToken& b) {
  return a.content == b.content && a.special == b.special && a.lstrip == b.lstrip && a.rstrip == b.rstrip &&
         a.normalized == b.normalized && a.single_word == b.single_word;
}

char32_t last_char(std::string_view s) {
  size_t i = s.size() - 1;
  while (i > 0 && (static_cast<unsigned char>(s[i]) & 0xC0) == 0x80) --i;
  size_t len = 0;
  return decode_utf8(s.data() + i, &len);
}

// Start of the whitespace that ends `s` (its size when none).
size_t trailing_space_start(std::string_view s) {
  size_t i = s.size();
  while (i > 0) {
    size_t j = i - 1;
    while (j > 0 && (static_cast<unsigned char>(s[j]) & 0xC0) == 0x80) --j;
    size_t len = 0;
    if (!is_white_space(decode_utf8(s.data() + j, &len))) break;
    i = j;
  }
  return i;
}

// End of the whitespace that starts `s`.
size_t leading_space_end(std::string_view s) {
  size_t i = 0;
  while (i < s.size()) {
    size_t len = 0;
    if (!is_white_space(decode_utf8(s.data() + i, &len))) break;
    i += len;
  }
  return i;
}

}  // namespace

void AddedVocabulary::Trie::insert(std::string_view pattern, uint32_t id) {
  if (pattern.empty()) return;
  first_bytes_[static_cast<unsigned char>(pattern[0])] = true;
  uint32_t node = 0;
  for (const char ch : pattern) {
    const auto b = static_cast<unsigned char>(ch);
    uint32_t next = 0;
    for (const auto& [c, n] : nodes_[node].children)
      if (c == b) next = n;
    if (next == 0) {
      next = static_cast<uint32_t>(nodes_.size());
      nodes_[node].children.emplace_back(b, next);
      nodes_.emplace_back();
    }
    node = next;
  }
  nodes_[node].id = id;
}

size_t AddedVocabulary::Trie::longest_at(std::string_view text, size_t at, uint32_t* id) const {
  size_t best = 0;
  uint32_t node = 0;
  for (size_t i = at; i < text.size(); ++i) {
    const auto b = static_cast<unsigned char>(text[i]);
    uint32_t next = 0;
    for (const auto& [c, n] : nodes_[node].children)
      if (c == b) {
        next = n;
        break;
      }
    if (next == 0) break;
    node = next;
    if (nodes_[node].id >= 0) {
      best = i + 1 - at;
      *id = static_cast<uint32_t>(nodes_[node].id);
    }
  }
  return best;
}

void AddedVocabulary::store(const AddedToken& token, uint32_t id, const Normalizer* normalizer) {
  if (token.normalized && normalizer) {
    NormalizedString n(token.content);
    normalizer->normalize(n);
    if (n.get() != token.content) normalized_content_[id] = n.get();
  }
  by_content_[token.content] = id;
  if (token.special) special_contents_.insert(token.content);
  AddedToken stored = token;
  stored.id = id;
  by_id_[id] = stored;
}

void AddedVocabulary::add_tokens(const std::vector<AddedToken>& tokens, const BpeModel& model,
                                 const Normalizer* normalizer) {
  const auto model_size = static_cast<uint32_t>(model.vocab_size());
  uint32_t next_id = model_size;
  if (!by_id_.empty()) {
    uint32_t max = 0;
    for (const auto& [id, t] : by_id_) max = std::max(max, id);
    next_id = (max >= model_size || model_size == 0) ? max + 1 : model_size;
  }
  for (const AddedToken& token : tokens) {
    if (token.content.empty()) continue;
    const auto known = by_content_.find(token.content);
    if (known != by_content_.end() && same_flags(by_id_.at(known->second), token)) continue;
    uint32_t id;
    if (known != by_content_.end()) {
      id = known->second;
    } else if (const auto in_model = model.token_to_id(token.content)) {
      id = *in_model;
    } else {
      id = next_id++;
    }
    store(token, id, normalizer);
  }
  refresh(normalizer);
}

void AddedVocabulary::set_tokens(const std::vector<AddedToken>& tokens, const Normalizer* normalizer) {
  by_content_.clear();
  by_id_.clear();
  special_contents_.clear();
  normalized_content_.clear();
  for (const AddedToken& token : tokens) {
    if (token.content.empty() || token.id < 0) continue;
    store(token, static_cast<uint32_t>(token.id), normalizer);
  }
  refresh(normalizer);
}

void AddedVocabulary::refresh(const Normalizer*) {
  raw_trie_.clear();
  normalized_trie_.clear();
  // Fixed order (by id) so that the outcome never depends on hashing.
  std::vector<uint32_t> ids;
  for (const auto& [id, t] : by_id_) ids.push_back(id);
  std::sort(ids.begin(), ids.end());
  for (const uint32_t id : ids) {
    const AddedToken& t = by_id_.at(id);
    if (t.normalized) {
      const auto n = normalized_content_.find(id);
      normalized_trie_.insert(n != normalized_content_.end() ? n->second : t.content, id);
    } else {
      raw_trie_.insert(t.content, id);
    }
  }
}

std::vector<AddedToken> AddedVocabulary::tokens() const {
  std::vector<AddedToken> out;
  for (const auto& [id, t] : by_id_) out.push_back(t);
  std::sort(out.begin(), out.end(), [](const AddedToken& a, const AddedToken& b) { return a.id < b.id; });
  return out;
}

std::optional<uint32_t> AddedVocabulary::token_to_id(const std::string& content) const {
  const auto it = by_content_.find(content);
  return it == by_content_.end() ? std::nullopt : std::optional<uint32_t>(it->second);
}

const std::string* AddedVocabulary::decoded_content(uint32_t id) const {
  const auto t = by_id_.find(id);
  if (t == by_id_.end()) return nullptr;
  const auto n = normalized_content_.find(id);
  return n != normalized_content_.end() ? &n->second : &t->second.content;
}

const AddedToken* AddedVocabulary::token_of(uint32_t id) const {
  const auto t = by_id_.find(id);
  return t == by_id_.end() ? nullptr : &t->second;
}

void AddedVocabulary::find_matches(std::string_view text, const Trie& trie, std::vector<Piece>& out) const {
  out.clear();
  if (text.empty()) {
    out.push_back({-1, 0, 0});
    return;
  }
  if (trie.empty()) {
    out.push_back({-1, 0, text.size()});
    return;
  }
  size_t start_offset = 0;
  size_t pos = 0;
  while (pos < text.size()) {
    // The next leftmost-longest match at or after `pos`.
    uint32_t id = 0;
    size_t length = 0, at = pos;
    for (; at < text.size(); ++at) {
      if (!trie.may_start(static_cast<unsigned char>(text[at]))) continue;
      length = trie.longest_at(text, at, &id);
      if (length > 0) break;
    }
    if (length == 0) break;
    pos = at + length;  // the search goes on after the match, whatever is done with it below
    size_t start = at, stop = at + length;
    const AddedToken& token = by_id_.at(id);
    if (encode_special_tokens_ && special_contents_.count(token.content)) continue;
    if (token.single_word) {
      const bool start_space = start == 0 || !is_word_char(last_char(text.substr(0, start)));
      size_t len = 0;
      const bool stop_space = stop == text.size() || !is_word_char(decode_utf8(text.data() + stop, &len));
      if (!start_space || !stop_space) continue;
    }
    if (token.lstrip) start = std::max(trailing_space_start(text.substr(0, start)), start_offset);
    if (token.rstrip) stop += leading_space_end(text.substr(stop));
    if (start_offset < start) out.push_back({-1, start_offset, start});
    out.push_back({static_cast<int64_t>(id), start, stop});
    start_offset = stop;
  }
  if (start_offset != text.size()) out.push_back({-1, start_offset, text.size()});
}

void AddedVocabulary::split_with_trie(NormalizedString&& n, const Trie& trie, bool unnormalized,
                                      std::vector<Split>& out) const {
  thread_local std::vector<Piece> pieces;
  find_matches(n.get(), trie, pieces);
  // Nothing found in text not normalized yet: slicing the whole would give the same string back. (A
  // normalized one is sliced all the same: its slice's original can start later, which Metaspace's
  // prepend_scheme "first" looks at.)
  if (unnormalized && pieces.size() == 1 && pieces[0].id < 0 && pieces[0].start == 0 && pieces[0].end == n.size()) {
    out.push_back({std::move(n), std::nullopt});
    return;
  }
  for (const Piece& p : pieces) {
    auto slice = n.slice(p.start, p.end);
    if (!slice) continue;
    if (p.id >= 0) {
      std::string value = slice->get();
      const size_t len = value.size();
      std::vector<Token> tokens{{static_cast<uint32_t>(p.id), std::move(value), {0, len}}};
      out.push_back({std::move(*slice), std::move(tokens)});
    } else {
      out.push_back({std::move(*slice), std::nullopt});
    }
  }
}

PreTokenizedString AddedVocabulary::extract_and_normalize(const Normalizer* normalizer, const std::string& text) const {
  PreTokenizedString pre{NormalizedString(text)};
  pre.split([&](size_t, NormalizedString&& n, std::vector<Split>& out) {
    split_with_trie(std::move(n), raw_trie_, true, out);
  });
  pre.split([&](size_t, NormalizedString&& n, std::vector<Split>& out) {
    if (normalizer) normalizer->normalize(n);
    split_with_trie(std::move(n), normalized_trie_, false, out);
  });
  return pre;
}

}  // namespace tb::text
