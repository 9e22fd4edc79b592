#include "text/regex.h"

#include <mutex>
#include <stdexcept>

#include <oniguruma.h>

#include "text/utf8.h"

namespace tb::text {
namespace {

std::mutex& compile_mutex() {
  static std::mutex m;
  return m;
}

void initialize_once() {
  static std::once_flag once;
  std::call_once(once, [] {
    OnigEncoding encodings[] = {ONIG_ENCODING_UTF8};
    onig_initialize(encodings, 1);
  });
}

// One match region per thread, reused by every search.
struct ThreadRegion {
  OnigRegion* region = onig_region_new();
  ~ThreadRegion() { onig_region_free(region, 1); }
};

OnigRegion* thread_region() {
  thread_local ThreadRegion r;
  return r.region;
}

}  // namespace

Regex::Regex(const std::string& pattern) : pattern_(pattern) {
  initialize_once();
  OnigErrorInfo info;
  OnigRegex reg = nullptr;
  const auto* p = reinterpret_cast<const OnigUChar*>(pattern_.data());
  int rc;
  {
    std::lock_guard<std::mutex> lock(compile_mutex());  // onig_new is not reentrant
    rc = onig_new(&reg, p, p + pattern_.size(), ONIG_OPTION_NONE, ONIG_ENCODING_UTF8, ONIG_SYNTAX_DEFAULT, &info);
  }
  if (rc != ONIG_NORMAL) {
    OnigUChar message[ONIG_MAX_ERROR_MESSAGE_LEN];
    onig_error_code_to_str(message, rc, &info);
    throw std::invalid_argument("regular expression does not compile (" +
                                std::string(reinterpret_cast<const char*>(message)) + ")");
  }
  regex_ = reg;
}

Regex::~Regex() {
  if (regex_) onig_free(static_cast<OnigRegex>(regex_));
}

bool Regex::search(std::string_view text, size_t from, size_t* start, size_t* end) const {
  OnigRegion* region = thread_region();
  const auto* s = reinterpret_cast<const OnigUChar*>(text.data());
  const OnigUChar* e = s + text.size();
  const int r = onig_search(static_cast<OnigRegex>(regex_), s, e, s + from, e, region, ONIG_OPTION_NONE);
  if (r < 0) {
    if (r == ONIG_MISMATCH) return false;
    OnigUChar message[ONIG_MAX_ERROR_MESSAGE_LEN];
    onig_error_code_to_str(message, r);
    throw std::runtime_error("regular expression search failed (" +
                             std::string(reinterpret_cast<const char*>(message)) + ")");
  }
  *start = static_cast<size_t>(region->beg[0]);
  *end = static_cast<size_t>(region->end[0]);
  return true;
}

bool Regex::matches_at_start(std::string_view text) const {
  OnigRegion* region = thread_region();
  const auto* s = reinterpret_cast<const OnigUChar*>(text.data());
  return onig_match(static_cast<OnigRegex>(regex_), s, s + text.size(), s, region, ONIG_OPTION_NONE) >= 0;
}

void Regex::find_all(std::string_view text, std::vector<ByteRange>& out) const {
  size_t last_end = 0;
  bool have_last = false;
  size_t last_match_end = 0;
  while (last_end <= text.size()) {
    size_t s = 0, e = 0;
    if (!search(text, last_end, &s, &e)) break;
    if (e == s && have_last && last_match_end == e) {
      last_end += last_end < text.size() ? utf8_sequence_length(static_cast<unsigned char>(text[last_end])) : 1;
      continue;
    }
    last_end = e;
    last_match_end = e;
    have_last = true;
    out.emplace_back(s, e);
  }
}

void regex_pieces(const Regex& regex, std::string_view text, std::vector<PatternPiece>& out) {
  out.clear();
  if (text.empty()) {
    out.push_back({0, 0, false});
    return;
  }
  thread_local std::vector<ByteRange> matches;
  matches.clear();
  regex.find_all(text, matches);
  size_t prev = 0;
  for (const auto& [s, e] : matches) {
    if (prev != s) out.push_back({prev, s, false});
    out.push_back({s, e, true});
    prev = e;
  }
  if (prev != text.size()) out.push_back({prev, text.size(), false});
}

Pattern Pattern::literal(const std::string& text) {
  Pattern p;
  if (text.empty()) {
    p.regex_ = std::make_shared<const Regex>(std::string());  // matches the empty string everywhere
  } else {
    p.literal_ = text;
  }
  return p;
}

Pattern Pattern::regex(const std::string& pattern) {
  Pattern p;
  p.regex_ = std::make_shared<const Regex>(pattern);
  return p;
}

void Pattern::pieces(std::string_view text, std::vector<PatternPiece>& out) const {
  if (regex_) {
    regex_pieces(*regex_, text, out);
    return;
  }
  out.clear();
  if (text.empty()) {
    out.push_back({0, 0, false});
    return;
  }
  size_t prev = 0;
  for (size_t at = text.find(literal_); at != std::string_view::npos; at = text.find(literal_, at)) {
    if (prev != at) out.push_back({prev, at, false});
    out.push_back({at, at + literal_.size(), true});
    at += literal_.size();
    prev = at;
  }
  if (prev != text.size()) out.push_back({prev, text.size(), false});
}

}  // namespace tb::text
