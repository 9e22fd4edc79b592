#include "text/tokenizer_json.h"

#include <cstdint>
#include <map>
#include <set>
#include <vector>

#include <nlohmann/json.hpp>

#include "text/utf8.h"

namespace tb::text {
namespace {

using nlohmann::json;

class Reader {
 public:
  explicit Reader(std::string source) : source_(std::move(source)) {}

  [[noreturn]] void refuse(const std::string& path, const json& value, const std::string& why) const {
    std::string shown = value.dump();
    if (shown.size() > 120) shown = shown.substr(0, 117) + "...";
    throw TokenizerFileError(source_ + ": " + path + " = " + shown + ": " + why);
  }

  // Field helpers: `path` is the JSON path of `object`.
  const json* field(const json& object, const std::string& key) const {
    const auto it = object.find(key);
    return it == object.end() || it->is_null() ? nullptr : &*it;
  }
  bool boolean(const json& object, const std::string& path, const std::string& key, bool fallback) const {
    const json* v = field(object, key);
    if (!v) return fallback;
    if (!v->is_boolean()) refuse(path + "." + key, *v, "expected true or false");
    return v->get<bool>();
  }
  std::optional<std::string> optional_string(const json& object, const std::string& path,
                                             const std::string& key) const {
    const json* v = field(object, key);
    if (!v) return std::nullopt;
    if (!v->is_string()) refuse(path + "." + key, *v, "expected a string");
    return v->get<std::string>();
  }
  std::string string(const json& object, const std::string& path, const std::string& key) const {
    const auto s = optional_string(object, path, key);
    if (!s) refuse(path + "." + key, object.value(key, json()), "missing");
    return *s;
  }
  char32_t character(const json& object, const std::string& path, const std::string& key) const {
    const std::string s = string(object, path, key);
    if (!is_valid_utf8(s) || count_chars(s) != 1) refuse(path + "." + key, json(s), "expected one character");
    size_t len = 0;
    return decode_utf8(s.data(), &len);
  }
  size_t count(const json& object, const std::string& path, const std::string& key) const {
    const json* v = field(object, key);
    if (!v || !v->is_number_unsigned()) refuse(path + "." + key, v ? *v : json(), "expected a count");
    return v->get<size_t>();
  }
  std::string type_of(const json& object, const std::string& path) const {
    if (!object.is_object()) refuse(path, object, "expected an object");
    const json* t = field(object, "type");
    if (!t || !t->is_string())
      refuse(path + ".type", t ? *t : json(), "missing: components without a type are not supported");
    return t->get<std::string>();
  }
  const json& array(const json& object, const std::string& path, const std::string& key) const {
    const json* v = field(object, key);
    if (!v || !v->is_array()) refuse(path + "." + key, v ? *v : json(), "expected a list");
    return *v;
  }

  Pattern pattern(const json& object, const std::string& path) const {
    const json* p = field(object, "pattern");
    const std::string where = path + ".pattern";
    if (!p || !p->is_object() || p->size() != 1)
      refuse(where, p ? *p : json(), "expected {\"String\": ...} or {\"Regex\": ...}");
    try {
      if (const json* s = field(*p, "String"); s && s->is_string()) return Pattern::literal(s->get<std::string>());
      if (const json* r = field(*p, "Regex"); r && r->is_string()) return Pattern::regex(r->get<std::string>());
    } catch (const std::invalid_argument& e) {
      refuse(where, *p, e.what());
    }
    refuse(where, *p, "expected {\"String\": ...} or {\"Regex\": ...}");
  }

  SplitBehavior behavior(const json& object, const std::string& path, std::optional<SplitBehavior> fallback) const {
    const json* b = field(object, "behavior");
    if (!b && fallback) return *fallback;
    const std::string s = b && b->is_string() ? b->get<std::string>() : std::string();
    if (s == "Removed") return SplitBehavior::Removed;
    if (s == "Isolated") return SplitBehavior::Isolated;
    if (s == "MergedWithPrevious") return SplitBehavior::MergedWithPrevious;
    if (s == "MergedWithNext") return SplitBehavior::MergedWithNext;
    if (s == "Contiguous") return SplitBehavior::Contiguous;
    refuse(path + ".behavior", b ? *b : json(),
           "expected Removed, Isolated, MergedWithPrevious, MergedWithNext or Contiguous");
  }

  // Metaspace's prepend_scheme, with the older add_prefix_space read as tokenizers reads it.
  PrependScheme prepend_scheme(const json& object, const std::string& path) const {
    PrependScheme scheme = PrependScheme::Always;
    if (const json* p = field(object, "prepend_scheme")) {
      const std::string s = p->is_string() ? p->get<std::string>() : std::string();
      if (s == "always")
        scheme = PrependScheme::Always;
      else if (s == "first")
        scheme = PrependScheme::First;
      else if (s == "never")
        scheme = PrependScheme::Never;
      else
        refuse(path + ".prepend_scheme", *p, "expected always, first or never");
    }
    if (const json* a = field(object, "add_prefix_space"); a && a->is_boolean() && !a->get<bool>()) {
      if (scheme != PrependScheme::Never)
        refuse(path + ".add_prefix_space", *a, "false does not match prepend_scheme (tokenizers refuses this too)");
    }
    return scheme;
  }

  std::shared_ptr<const Normalizer> normalizer(const json& j, const std::string& path) const {
    const std::string type = type_of(j, path);
    if (type == "NFC") return std::make_shared<UnicodeNormalizer>(NormalForm::NFC);
    if (type == "NFD") return std::make_shared<UnicodeNormalizer>(NormalForm::NFD);
    if (type == "NFKC") return std::make_shared<UnicodeNormalizer>(NormalForm::NFKC);
    if (type == "NFKD") return std::make_shared<UnicodeNormalizer>(NormalForm::NFKD);
    if (type == "Lowercase") return std::make_shared<LowercaseNormalizer>();
    if (type == "StripAccents") return std::make_shared<StripAccentsNormalizer>();
    if (type == "Nmt") return std::make_shared<NmtNormalizer>();
    if (type == "ByteLevel") return std::make_shared<ByteLevelNormalizer>();
    if (type == "Strip")
      return std::make_shared<StripNormalizer>(boolean(j, path, "strip_left", false),
                                               boolean(j, path, "strip_right", false));
    if (type == "Replace") return std::make_shared<ReplaceNormalizer>(pattern(j, path), string(j, path, "content"));
    if (type == "Prepend") return std::make_shared<PrependNormalizer>(string(j, path, "prepend"));
    if (type == "BertNormalizer") {
      std::optional<bool> strip;
      if (const json* s = field(j, "strip_accents")) {
        if (!s->is_boolean()) refuse(path + ".strip_accents", *s, "expected true, false or null");
        strip = s->get<bool>();
      }
      return std::make_shared<BertNormalizer>(boolean(j, path, "clean_text", true),
                                              boolean(j, path, "handle_chinese_chars", true), strip,
                                              boolean(j, path, "lowercase", true));
    }
    if (type == "Sequence") {
      std::vector<std::shared_ptr<const Normalizer>> steps;
      const json& list = array(j, path, "normalizers");
      for (size_t i = 0; i < list.size(); ++i)
        steps.push_back(normalizer(list[i], path + ".normalizers[" + std::to_string(i) + "]"));
      return std::make_shared<SequenceNormalizer>(std::move(steps));
    }
    refuse(path + ".type", json(type), "this normalizer is not supported");
  }

  std::shared_ptr<const PreTokenizer> pre_tokenizer(const json& j, const std::string& path) const {
    const std::string type = type_of(j, path);
    if (type == "Split") {
      const json* invert = field(j, "invert");
      return std::make_shared<SplitPreTokenizer>(pattern(j, path), behavior(j, path, std::nullopt),
                                                 invert && invert->is_boolean() && invert->get<bool>());
    }
    if (type == "ByteLevel")
      return std::make_shared<ByteLevelPreTokenizer>(boolean(j, path, "add_prefix_space", true),
                                                     boolean(j, path, "use_regex", true));
    if (type == "Metaspace")
      return std::make_shared<MetaspacePreTokenizer>(character(j, path, "replacement"), prepend_scheme(j, path),
                                                     boolean(j, path, "split", true));
    if (type == "Digits") return std::make_shared<DigitsPreTokenizer>(boolean(j, path, "individual_digits", false));
    if (type == "Whitespace") return std::make_shared<WhitespacePreTokenizer>();
    if (type == "WhitespaceSplit") return std::make_shared<WhitespaceSplitPreTokenizer>();
    if (type == "Punctuation")
      return std::make_shared<PunctuationPreTokenizer>(behavior(j, path, SplitBehavior::Isolated));
    if (type == "CharDelimiterSplit")
      return std::make_shared<CharDelimiterPreTokenizer>(character(j, path, "delimiter"));
    if (type == "BertPreTokenizer") return std::make_shared<BertPreTokenizer>();
    if (type == "Sequence") {
      std::vector<std::shared_ptr<const PreTokenizer>> steps;
      const json& list = array(j, path, "pretokenizers");
      for (size_t i = 0; i < list.size(); ++i)
        steps.push_back(pre_tokenizer(list[i], path + ".pretokenizers[" + std::to_string(i) + "]"));
      return std::make_shared<SequencePreTokenizer>(std::move(steps));
    }
    refuse(path + ".type", json(type), "this pre-tokenizer is not supported");
  }

  std::shared_ptr<const Decoder> decoder(const json& j, const std::string& path) const {
    const std::string type = type_of(j, path);
    if (type == "ByteLevel") return std::make_shared<ByteLevelDecoder>();
    if (type == "Metaspace")
      return std::make_shared<MetaspaceDecoder>(character(j, path, "replacement"), prepend_scheme(j, path));
    if (type == "Replace") return std::make_shared<ReplaceDecoder>(pattern(j, path), string(j, path, "content"));
    if (type == "ByteFallback") return std::make_shared<ByteFallbackDecoder>();
    if (type == "Fuse") return std::make_shared<FuseDecoder>();
    if (type == "Strip")
      return std::make_shared<StripDecoder>(character(j, path, "content"), count(j, path, "start"),
                                            count(j, path, "stop"));
    if (type == "WordPiece")
      return std::make_shared<WordPieceDecoder>(optional_string(j, path, "prefix").value_or("##"),
                                                boolean(j, path, "cleanup", true));
    if (type == "BPEDecoder")
      return std::make_shared<BpeSuffixDecoder>(optional_string(j, path, "suffix").value_or("</w>"));
    if (type == "Sequence") {
      std::vector<std::shared_ptr<const Decoder>> steps;
      const json& list = array(j, path, "decoders");
      for (size_t i = 0; i < list.size(); ++i)
        steps.push_back(decoder(list[i], path + ".decoders[" + std::to_string(i) + "]"));
      return std::make_shared<SequenceDecoder>(std::move(steps));
    }
    refuse(path + ".type", json(type), "this decoder is not supported");
  }

  std::shared_ptr<const PostProcessor> post_processor(const json& j, const std::string& path) const {
    const std::string type = type_of(j, path);
    if (type == "ByteLevel")
      return std::make_shared<ByteLevelProcessor>(boolean(j, path, "trim_offsets", true),
                                                  boolean(j, path, "add_prefix_space", true));
    if (type == "TemplateProcessing") {
      std::map<std::string, TemplateProcessor::SpecialToken> specials;
      if (const json* s = field(j, "special_tokens")) {
        if (!s->is_object()) refuse(path + ".special_tokens", *s, "expected an object");
        for (const auto& [name, entry] : s->items()) {
          const std::string where = path + ".special_tokens." + name;
          TemplateProcessor::SpecialToken t;
          for (const auto& id : array(entry, where, "ids")) {
            if (!id.is_number_unsigned()) refuse(where + ".ids", entry["ids"], "expected ids");
            t.ids.push_back(id.get<uint32_t>());
          }
          for (const auto& tok : array(entry, where, "tokens"))
            t.tokens.push_back(tok.is_string() ? tok.get<std::string>() : "");
          if (t.ids.size() != t.tokens.size()) refuse(where, entry, "ids and tokens differ in length");
          specials.emplace(name, std::move(t));
        }
      }
      std::vector<TemplateProcessor::Piece> single;
      const json& pieces = array(j, path, "single");
      for (size_t i = 0; i < pieces.size(); ++i) {
        const std::string where = path + ".single[" + std::to_string(i) + "]";
        const json& p = pieces[i];
        if (const json* seq = p.is_object() ? field(p, "Sequence") : nullptr) {
          if (seq->value("id", std::string()) != "A") refuse(where, p, "a single-sequence template can only use $A");
          single.push_back({true, {}});
        } else if (const json* sp = p.is_object() ? field(p, "SpecialToken") : nullptr) {
          const std::string id = sp->value("id", std::string());
          if (!specials.count(id)) refuse(where, p, "names a special token missing from special_tokens");
          single.push_back({false, id});
        } else {
          refuse(where, p, "expected {\"Sequence\": ...} or {\"SpecialToken\": ...}");
        }
      }
      return std::make_shared<TemplateProcessor>(std::move(single), std::move(specials));
    }
    if (type == "Sequence") {
      std::vector<std::shared_ptr<const PostProcessor>> steps;
      const json& list = array(j, path, "processors");
      for (size_t i = 0; i < list.size(); ++i)
        steps.push_back(post_processor(list[i], path + ".processors[" + std::to_string(i) + "]"));
      return std::make_shared<SequenceProcessor>(std::move(steps));
    }
    refuse(path + ".type", json(type), "this post-processor is not supported");
  }

  BpeModel model(const json& j) const {
    const std::string path = "model";
    if (!j.is_object()) refuse(path, j, "expected an object");
    if (const json* t = field(j, "type")) {
      if (!t->is_string() || t->get<std::string>() != "BPE") refuse("model.type", *t, "only BPE models are supported");
    }
    if (const json* d = field(j, "dropout")) refuse("model.dropout", *d, "BPE dropout must be null");
    BpeOptions o;
    o.unk_token = optional_string(j, path, "unk_token");
    o.continuing_subword_prefix = optional_string(j, path, "continuing_subword_prefix");
    o.end_of_word_suffix = optional_string(j, path, "end_of_word_suffix");
    o.fuse_unk = boolean(j, path, "fuse_unk", false);
    o.byte_fallback = boolean(j, path, "byte_fallback", false);
    o.ignore_merges = boolean(j, path, "ignore_merges", false);
    const json* vocab = field(j, "vocab");
    if (!vocab || !vocab->is_object())
      refuse("model.vocab", vocab ? *vocab : json(), "expected an object of token: id");
    std::vector<std::pair<std::string, uint32_t>> entries;
    entries.reserve(vocab->size());
    for (const auto& [token, id] : vocab->items()) {
      if (!id.is_number_unsigned() || id.get<uint64_t>() > UINT32_MAX)
        refuse("model.vocab." + token, id, "expected a non-negative id");
      entries.emplace_back(token, id.get<uint32_t>());
    }
    std::vector<std::pair<std::string, std::string>> merges;
    const json& list = array(j, path, "merges");
    merges.reserve(list.size());
    for (size_t i = 0; i < list.size(); ++i) {
      const json& m = list[i];
      const std::string where = "model.merges[" + std::to_string(i) + "]";
      if (m.is_string()) {
        const std::string s = m.get<std::string>();
        if (s.rfind("#version", 0) == 0) continue;
        const auto space = s.find(' ');
        if (space == std::string::npos || s.find(' ', space + 1) != std::string::npos)
          refuse(where, m, "expected two tokens separated by one space");
        merges.emplace_back(s.substr(0, space), s.substr(space + 1));
      } else if (m.is_array() && m.size() == 2 && m[0].is_string() && m[1].is_string()) {
        merges.emplace_back(m[0].get<std::string>(), m[1].get<std::string>());
      } else {
        refuse(where, m, "expected \"a b\" or [a, b]");
      }
    }
    try {
      return BpeModel(entries, merges, o);
    } catch (const std::out_of_range& e) {  // an id far past the entries
      throw TokenizerFileError(source_ + ": model.vocab: " + e.what());
    } catch (const std::invalid_argument& e) {
      const std::string what = e.what();  // "merges[i]: ..."
      const auto colon = what.find(':');
      const std::string index = what.substr(0, colon);
      const size_t i = std::stoul(index.substr(index.find('[') + 1));
      refuse("model." + index, i < list.size() ? list[i] : json(), what.substr(colon + 2));
    }
  }

  std::vector<AddedToken> added_tokens(const json& root) const {
    std::vector<AddedToken> out;
    std::map<int64_t, size_t> seen;  // id -> the entry that has it
    const json* list = field(root, "added_tokens");
    if (!list) return out;
    if (!list->is_array()) refuse("added_tokens", *list, "expected a list");
    for (size_t i = 0; i < list->size(); ++i) {
      const json& t = (*list)[i];
      const std::string path = "added_tokens[" + std::to_string(i) + "]";
      if (!t.is_object()) refuse(path, t, "expected an object");
      AddedToken a;
      a.content = string(t, path, "content");
      // Hugging Face reads ids as u32 and refuses any other: a wrong one is said, never dropped.
      if (const json* id = field(t, "id")) {
        if (!id->is_number_integer() || id->get<int64_t>() < 0 || id->get<int64_t>() > int64_t(UINT32_MAX) ||
            (id->is_number_unsigned() && id->get<uint64_t>() > UINT32_MAX))
          refuse(path + ".id", *id, "expected an id from 0 to 4294967295");
        a.id = id->get<int64_t>();
        if (const auto [at, fresh] = seen.emplace(a.id, i); !fresh)
          refuse(path + ".id", *id, "added_tokens[" + std::to_string(at->second) + "] has this id too");
      }
      a.special = boolean(t, path, "special", false);
      a.lstrip = boolean(t, path, "lstrip", false);
      a.rstrip = boolean(t, path, "rstrip", false);
      a.normalized = boolean(t, path, "normalized", !a.special);
      a.single_word = boolean(t, path, "single_word", false);
      out.push_back(std::move(a));
    }
    return out;
  }

  std::shared_ptr<TokenizerPipeline> load(const std::string& text) const {
    json root;
    // A key twice in one object (two "model"s) is an error, as Hugging Face's reader says; nlohmann's parser
    // would keep the last silently.
    std::vector<std::set<std::string>> keys;
    std::string duplicate;
    // Real files nest 6 levels (a Sequence of normalizers in the root); 10,000 nested Sequences held a path
    // string per level and took 1.6 GB to refuse nothing.
    constexpr int kMaxDepth = 32;
    struct TooDeep {};
    const auto check = [&](int depth, json::parse_event_t event, json& parsed) {
      if (depth > kMaxDepth) throw TooDeep{};
      if (event == json::parse_event_t::object_start) keys.resize(size_t(depth) + 1), keys[size_t(depth)].clear();
      if (event == json::parse_event_t::key && depth >= 1 && size_t(depth) <= keys.size() &&
          !keys[size_t(depth) - 1].insert(parsed.get<std::string>()).second && duplicate.empty())
        duplicate = parsed.get<std::string>();
      return true;
    };
    try {
      root = json::parse(text, check);
    } catch (const json::exception& e) {  // a syntax error, or a number too large for a double (out_of_range)
      throw TokenizerFileError(source_ + ": not valid JSON (" + e.what() + ")");
    } catch (const TooDeep&) {
      throw TokenizerFileError(source_ + ": nested deeper than " + std::to_string(kMaxDepth) +
                               " levels (objects and arrays in one another; a real tokenizer.json nests about 6)");
    }
    if (!duplicate.empty()) throw TokenizerFileError(source_ + ": the key \"" + duplicate + "\" appears twice in one object");
    if (!root.is_object() || !root.contains("model") || !root["model"].is_object())
      throw TokenizerFileError(source_ + ": no 'model' object: not a Hugging Face tokenizer.json");
    if (const json* v = field(root, "version"); v && (!v->is_string() || v->get<std::string>() != "1.0"))
      refuse("version", *v, "only version 1.0 files are known");
    if (const json* t = field(root, "truncation")) refuse("truncation", *t, "truncation must be null");
    if (const json* p = field(root, "padding")) refuse("padding", *p, "padding must be null");
    std::shared_ptr<const Normalizer> n;
    if (const json* j = field(root, "normalizer")) n = normalizer(*j, "normalizer");
    std::shared_ptr<const PreTokenizer> pre;
    if (const json* j = field(root, "pre_tokenizer")) pre = pre_tokenizer(*j, "pre_tokenizer");
    std::shared_ptr<const PostProcessor> post;
    if (const json* j = field(root, "post_processor")) post = post_processor(*j, "post_processor");
    std::shared_ptr<const Decoder> dec;
    if (const json* j = field(root, "decoder")) dec = decoder(*j, "decoder");
    const auto tokens = added_tokens(root);
    auto pipeline = std::make_shared<TokenizerPipeline>(n, pre, model(root["model"]), post, dec);
    pipeline->added_vocabulary().add_tokens(tokens, pipeline->model(), n.get());
    pipeline->prepare();
    return pipeline;
  }

 private:
  std::string source_;
};

}  // namespace

std::shared_ptr<TokenizerPipeline> load_tokenizer_json(const std::string& json_text, const std::string& source) {
  return Reader(source).load(json_text);
}

}  // namespace tb::text
