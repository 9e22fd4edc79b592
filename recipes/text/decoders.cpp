#include "text/decoders.h"

#include "text/byte_level.h"
#include "text/utf8.h"

namespace tb::text {
namespace {

void replace_all(std::string& s, std::string_view from, std::string_view to) {
  if (from.empty()) return;
  for (size_t at = s.find(from); at != std::string::npos; at = s.find(from, at + to.size()))
    s.replace(at, from.size(), to);
}

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

}  // namespace

std::string Decoder::decode(std::vector<std::string> tokens) const {
  decode_chain(tokens);
  std::string out;
  for (const auto& t : tokens) out += t;
  return out;
}

void ByteLevelDecoder::decode_chain(std::vector<std::string>& tokens) const {
  std::string bytes, raw;
  for (const auto& t : tokens) {
    if (byte_level_to_bytes(t, &raw)) {
      bytes += raw;
    } else {
      bytes += t;
    }
  }
  tokens.assign(1, lossy_utf8(bytes));
}

void MetaspaceDecoder::decode_chain(std::vector<std::string>& tokens) const {
  for (size_t i = 0; i < tokens.size(); ++i) {
    const std::string& t = tokens[i];
    std::string out;
    out.reserve(t.size());
    for (size_t k = 0; k < t.size();) {
      size_t len = 0;
      const char32_t c = decode_utf8(t.data() + k, &len);
      if (c == replacement_) {
        // The first token loses its replacement characters altogether (prepended spaces).
        if (!(i == 0 && scheme_ != PrependScheme::Never)) out.push_back(' ');
      } else {
        out.append(t, k, len);
      }
      k += len;
    }
    tokens[i] = std::move(out);
  }
}

void ReplaceDecoder::decode_chain(std::vector<std::string>& tokens) const {
  std::vector<PatternPiece> pieces;
  for (auto& t : tokens) {
    pattern_.pieces(t, pieces);
    std::string out;
    for (const auto& p : pieces) {
      if (p.is_match) {
        out += content_;
      } else {
        out.append(t, p.start, p.end - p.start);
      }
    }
    t = std::move(out);
  }
}

void ByteFallbackDecoder::decode_chain(std::vector<std::string>& tokens) const {
  std::vector<std::string> out;
  out.reserve(tokens.size());
  std::string pending;
  auto flush = [&]() {
    if (pending.empty()) return;
    if (is_valid_utf8(pending)) {
      out.push_back(pending);
    } else {
      for (size_t i = 0; i < pending.size(); ++i) out.push_back("\xEF\xBF\xBD");
    }
    pending.clear();
  };
  for (auto& t : tokens) {
    int byte = -1;
    if (t.size() == 6 && t.compare(0, 3, "<0x") == 0 && t[5] == '>') {
      const int hi = hex_value(t[3]), lo = hex_value(t[4]);
      if (hi >= 0 && lo >= 0) byte = hi * 16 + lo;
    }
    if (byte >= 0) {
      pending.push_back(static_cast<char>(byte));
    } else {
      flush();
      out.push_back(std::move(t));
    }
  }
  flush();
  tokens = std::move(out);
}

void FuseDecoder::decode_chain(std::vector<std::string>& tokens) const {
  std::string joined;
  for (const auto& t : tokens) joined += t;
  tokens.assign(1, std::move(joined));
}

void StripDecoder::decode_chain(std::vector<std::string>& tokens) const {
  for (auto& t : tokens) {
    const std::u32string chars = to_code_points(t);
    size_t start_cut = 0;
    for (size_t i = 0; i < start_ && i < chars.size(); ++i) {
      if (chars[i] != content_) break;
      start_cut = i + 1;
    }
    size_t stop_cut = chars.size();
    for (size_t i = 0; i < stop_ && i < chars.size(); ++i) {
      const size_t index = chars.size() - i - 1;
      if (chars[index] != content_) break;
      stop_cut = index;
    }
    t = stop_cut > start_cut ? to_utf8(chars.substr(start_cut, stop_cut - start_cut)) : std::string();
  }
}

void WordPieceDecoder::decode_chain(std::vector<std::string>& tokens) const {
  for (size_t i = 0; i < tokens.size(); ++i) {
    std::string& t = tokens[i];
    if (i != 0) {
      if (t.compare(0, prefix_.size(), prefix_) == 0) {
        t.erase(0, prefix_.size());
      } else {
        t.insert(0, " ");
      }
    }
    if (cleanup_) {
      static const std::pair<const char*, const char*> rules[] = {
          {" .", "."},   {" ?", "?"},           {" !", "!"},   {" ,", ","},     {" ' ", "'"},    {" n't", "n't"},
          {" 'm", "'m"}, {" do not", " don't"}, {" 's", "'s"}, {" 've", "'ve"}, {" 're", "'re"},
      };
      for (const auto& [from, to] : rules) replace_all(t, from, to);
    }
  }
}

void BpeSuffixDecoder::decode_chain(std::vector<std::string>& tokens) const {
  for (size_t i = 0; i < tokens.size(); ++i) replace_all(tokens[i], suffix_, i + 1 == tokens.size() ? "" : " ");
}

}  // namespace tb::text
