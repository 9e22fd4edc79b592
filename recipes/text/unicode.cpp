#include "text/unicode.h"

#include <algorithm>
#include <mutex>
#include <unordered_map>

#include <utf8proc.h>

#include "text/utf8.h"

namespace tb::text {
namespace {

constexpr char32_t kHangulSBase = 0xAC00, kHangulLBase = 0x1100, kHangulVBase = 0x1161, kHangulTBase = 0x11A7;
constexpr int kHangulLCount = 19, kHangulVCount = 21, kHangulTCount = 28;
constexpr int kHangulNCount = kHangulVCount * kHangulTCount, kHangulSCount = kHangulLCount * kHangulNCount;

const utf8proc_property_t* prop(char32_t cp) { return utf8proc_get_property(static_cast<utf8proc_int32_t>(cp)); }

// The primary composites: (starter, next) -> composite, from utf8proc's canonical decompositions. A
// candidate pair is kept only when utf8proc's own NFC composes it back, which leaves out the composition
// exclusions.
class CompositionTable {
 public:
  CompositionTable() {
    for (char32_t cp = 0; cp < 0x110000; ++cp) {
      if (cp == 0xD800) cp = 0xE000;
      if (cp >= kHangulSBase && cp < kHangulSBase + kHangulSCount) continue;
      const auto* p = prop(cp);
      if (p->decomp_seqindex == UINT16_MAX || p->decomp_type != 0) continue;
      utf8proc_int32_t full[8];
      utf8proc_int32_t last_boundclass = 0;
      const auto n =
          utf8proc_decompose_char(static_cast<utf8proc_int32_t>(cp), full, 8, UTF8PROC_DECOMPOSE, &last_boundclass);
      if (n < 2 || n > 8) continue;
      // The first element: the head of the decomposition recomposed (a single character or nothing).
      utf8proc_int32_t head[8];
      std::copy(full, full + n - 1, head);
      const auto head_n = utf8proc_normalize_utf32(head, n - 1, static_cast<utf8proc_option_t>(UTF8PROC_COMPOSE));
      if (head_n != 1) continue;
      utf8proc_int32_t pair[8];
      std::copy(full, full + n, pair);
      const auto pair_n = utf8proc_normalize_utf32(pair, n, static_cast<utf8proc_option_t>(UTF8PROC_COMPOSE));
      if (pair_n != 1 || static_cast<char32_t>(pair[0]) != cp) continue;
      const auto a = static_cast<char32_t>(head[0]);
      const auto b = static_cast<char32_t>(full[n - 1]);
      pairs_.emplace(key(a, b), cp);
      if (b >= seconds_.size()) seconds_.resize(b + 1, false);
      seconds_[b] = true;
    }
  }

  bool is_second(char32_t b) const {
    if (b >= kHangulVBase && b < kHangulVBase + kHangulVCount) return true;
    if (b > kHangulTBase && b < kHangulTBase + kHangulTCount) return true;
    return b < seconds_.size() && seconds_[b];
  }

  char32_t compose(char32_t a, char32_t b) const {
    // Hangul: L + V -> LV, LV + T -> LVT.
    if (a >= kHangulLBase && a < kHangulLBase + kHangulLCount && b >= kHangulVBase && b < kHangulVBase + kHangulVCount)
      return kHangulSBase + ((a - kHangulLBase) * kHangulVCount + (b - kHangulVBase)) * kHangulTCount;
    if (a >= kHangulSBase && a < kHangulSBase + kHangulSCount && (a - kHangulSBase) % kHangulTCount == 0 &&
        b > kHangulTBase && b < kHangulTBase + kHangulTCount)
      return a + (b - kHangulTBase);
    if (b >= seconds_.size() || !seconds_[b]) return 0;
    const auto it = pairs_.find(key(a, b));
    return it == pairs_.end() ? 0 : it->second;
  }

 private:
  static uint64_t key(char32_t a, char32_t b) { return (static_cast<uint64_t>(a) << 21) | b; }
  std::unordered_map<uint64_t, char32_t> pairs_;
  std::vector<bool> seconds_;
};

const CompositionTable& composition_table() {
  static const CompositionTable table;
  return table;
}

struct Decomposed {
  int ccc;
  char32_t c;
  int change;
};

// Canonical or compatibility decomposition with canonical ordering: the characters of each character's
// full decomposition (the first replaces it: change 0, the others are inserted: +1), then each run of
// non-starters stably sorted by combining class (the changes travel with their characters).
void decompose(bool compatible, std::string_view text, std::vector<Decomposed>& out) {
  out.clear();
  const auto options = static_cast<utf8proc_option_t>(UTF8PROC_DECOMPOSE | (compatible ? UTF8PROC_COMPAT : 0));
  utf8proc_int32_t buffer[32];
  size_t run_start = 0;  // first non-starter of the current run
  auto close_run = [&]() {
    if (out.size() - run_start > 1)
      std::stable_sort(out.begin() + static_cast<std::ptrdiff_t>(run_start), out.end(),
                       [](const Decomposed& x, const Decomposed& y) { return x.ccc < y.ccc; });
  };
  for (size_t i = 0; i < text.size();) {
    size_t len = 0;
    const char32_t cp = decode_utf8(text.data() + i, &len);
    i += len;
    utf8proc_int32_t last_boundclass = 0;
    auto n = utf8proc_decompose_char(static_cast<utf8proc_int32_t>(cp), buffer, 32, options, &last_boundclass);
    if (n <= 0 || n > 32) {
      buffer[0] = static_cast<utf8proc_int32_t>(cp);
      n = 1;
    }
    for (utf8proc_ssize_t k = 0; k < n; ++k) {
      const auto d = static_cast<char32_t>(buffer[k]);
      const int ccc = prop(d)->combining_class;
      if (ccc == 0) {
        close_run();
        run_start = out.size() + 1;
      }
      out.push_back({ccc, d, k == 0 ? 0 : 1});
    }
  }
  close_run();
}

// Canonical recomposition of a decomposed sequence, step for step as the unicode-normalization-alignments
// crate that tokenizers uses (so the changes come out as its do): a composed character carries the sum of
// its parts' changes minus one per character it absorbed.
void recompose(const std::vector<Decomposed>& in, std::vector<CharChange>& out) {
  const auto& table = composition_table();
  bool have_composee = false;
  CharChange composee{0, 0};
  int last_ccc = -1;  // -1: none
  std::vector<CharChange> buffer;
  for (const auto& d : in) {
    const CharChange ch{d.c, d.change};
    const int cc = d.ccc;
    if (!have_composee) {
      if (cc != 0) {
        out.push_back(ch);
        continue;
      }
      composee = ch;
      have_composee = true;
      continue;
    }
    if (last_ccc < 0) {
      if (const char32_t r = table.compose(composee.c, ch.c)) {
        composee = {r, composee.change + ch.change - 1};
        continue;
      }
      if (cc == 0) {
        out.push_back(composee);
        composee = ch;
        continue;
      }
      buffer.push_back(ch);
      last_ccc = cc;
      continue;
    }
    if (last_ccc >= cc) {
      if (cc == 0) {  // blocked by a starter: the composee, then what waited behind it
        out.push_back(composee);
        out.insert(out.end(), buffer.begin(), buffer.end());
        buffer.clear();
        composee = ch;
        last_ccc = -1;
        continue;
      }
      buffer.push_back(ch);
      last_ccc = cc;
      continue;
    }
    if (const char32_t r = table.compose(composee.c, ch.c)) {
      composee = {r, composee.change + ch.change - 1};
      continue;
    }
    buffer.push_back(ch);
    last_ccc = cc;
  }
  if (have_composee) out.push_back(composee);
  out.insert(out.end(), buffer.begin(), buffer.end());
}

// Code points below this limit have a quick-check bit; others always take the full normalization.
constexpr char32_t kQuickLimit = 0x30000;

std::vector<bool> build_nfc_quick() {
  std::vector<bool> quick(kQuickLimit, false);
  const auto& table = composition_table();
  std::vector<Decomposed> d;
  std::vector<CharChange> r;
  std::string one;
  for (char32_t cp = 0; cp < kQuickLimit; ++cp) {
    if (cp < 0x300) {  // starters that no decomposition, composition or exclusion touches
      quick[cp] = true;
      continue;
    }
    if ((cp >= 0xD800 && cp < 0xE000) || combining_class(cp) != 0) continue;
    one.clear();
    append_utf8(one, cp);
    decompose(false, one, d);
    if (d.empty() || d[0].ccc != 0 || table.is_second(d[0].c)) continue;
    r.clear();
    recompose(d, r);
    quick[cp] = r.size() == 1 && r[0].c == cp && r[0].change == 0;
  }
  return quick;
}

}  // namespace

const std::vector<bool>& nfc_quick_table() {
  static const std::vector<bool> quick = build_nfc_quick();
  return quick;
}

bool nfc_quick(char32_t cp) {
  if (cp < 0x300) return true;
  const auto& quick = nfc_quick_table();
  return cp < kQuickLimit && quick[cp];
}

bool nfc_quick_check(std::string_view text) {
  const auto& quick = nfc_quick_table();
  for (size_t i = 0; i < text.size();) {
    const auto b = static_cast<unsigned char>(text[i]);
    if (b < 0x80) {
      ++i;
      continue;
    }
    size_t len = 0;
    const char32_t cp = decode_utf8(text.data() + i, &len);
    if (cp >= kQuickLimit || !quick[cp]) return false;
    i += len;
  }
  return true;
}

int general_category(char32_t cp) { return prop(cp)->category; }

bool is_white_space(char32_t cp) {
  return (cp >= 0x09 && cp <= 0x0D) || cp == 0x20 || cp == 0x85 || cp == 0xA0 || cp == 0x1680 ||
         (cp >= 0x2000 && cp <= 0x200A) || cp == 0x2028 || cp == 0x2029 || cp == 0x202F || cp == 0x205F || cp == 0x3000;
}

bool is_numeric(char32_t cp) {
  if (cp < 0x80) return cp >= '0' && cp <= '9';
  const int c = general_category(cp);
  return c == UTF8PROC_CATEGORY_ND || c == UTF8PROC_CATEGORY_NL || c == UTF8PROC_CATEGORY_NO;
}

bool is_letter(char32_t cp) {
  const int c = general_category(cp);
  return c >= UTF8PROC_CATEGORY_LU && c <= UTF8PROC_CATEGORY_LO;
}

bool is_mark(char32_t cp) {
  const int c = general_category(cp);
  return c == UTF8PROC_CATEGORY_MN || c == UTF8PROC_CATEGORY_MC || c == UTF8PROC_CATEGORY_ME;
}

bool is_mark_nonspacing(char32_t cp) { return general_category(cp) == UTF8PROC_CATEGORY_MN; }

bool is_punctuation(char32_t cp) {
  if (cp < 0x80)
    return (cp >= 0x21 && cp <= 0x2F) || (cp >= 0x3A && cp <= 0x40) || (cp >= 0x5B && cp <= 0x60) ||
           (cp >= 0x7B && cp <= 0x7E);
  const int c = general_category(cp);
  return c >= UTF8PROC_CATEGORY_PC && c <= UTF8PROC_CATEGORY_PO;
}

bool is_other(char32_t cp) {
  const int c = general_category(cp);
  return c == UTF8PROC_CATEGORY_CN || (c >= UTF8PROC_CATEGORY_CC && c <= UTF8PROC_CATEGORY_CO);
}

bool is_word_char(char32_t cp) {
  if (cp < 0x80) return (cp >= '0' && cp <= '9') || (cp >= 'a' && cp <= 'z') || (cp >= 'A' && cp <= 'Z') || cp == '_';
  const int c = general_category(cp);
  if ((c >= UTF8PROC_CATEGORY_LU && c <= UTF8PROC_CATEGORY_ND) || c == UTF8PROC_CATEGORY_NL ||
      c == UTF8PROC_CATEGORY_PC)
    return true;
  // Join_Control, and the symbols that are Other_Alphabetic (circled and squared Latin letters).
  return cp == 0x200C || cp == 0x200D || (cp >= 0x24B6 && cp <= 0x24E9) || (cp >= 0x1F130 && cp <= 0x1F149) ||
         (cp >= 0x1F150 && cp <= 0x1F169) || (cp >= 0x1F170 && cp <= 0x1F189);
}

int combining_class(char32_t cp) { return prop(cp)->combining_class; }

void normalize_changes(NormalForm form, std::string_view text, std::vector<CharChange>& out) {
  out.clear();
  thread_local std::vector<Decomposed> decomposed;
  decompose(form == NormalForm::NFKD || form == NormalForm::NFKC, text, decomposed);
  if (form == NormalForm::NFD || form == NormalForm::NFKD) {
    out.reserve(decomposed.size());
    for (const auto& d : decomposed) out.push_back({d.c, d.change});
    return;
  }
  recompose(decomposed, out);
}

void lowercase_changes(std::string_view text, std::vector<CharChange>& out) {
  out.clear();
  out.reserve(text.size());
  for (size_t i = 0; i < text.size();) {
    size_t len = 0;
    const char32_t cp = decode_utf8(text.data() + i, &len);
    i += len;
    if (cp == 0x130) {  // the one full lowercase mapping of two characters: i + combining dot above
      out.push_back({U'i', 0});
      out.push_back({0x307, 1});
      continue;
    }
    out.push_back({cp < 0x80 ? (cp >= 'A' && cp <= 'Z' ? cp + 32 : cp)
                             : static_cast<char32_t>(utf8proc_tolower(static_cast<utf8proc_int32_t>(cp))),
                   0});
  }
}

}  // namespace tb::text
