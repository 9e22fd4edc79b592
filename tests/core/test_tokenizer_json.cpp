// tokenizer.json pipelines (recipes/text) against Hugging Face tokenizers itself, run live through its
// official Node binding (tests/reference/tokenizers): the eight family fixtures of tests/data/tokenizers
// and small pipelines written here for one component each, on hard texts: ids with and without the
// post-processor's special tokens, byte offsets into the original text, and decode with and without
// skip_special_tokens. Our fast path and our general path are both compared. A negative control shows the
// comparison sees a changed normalizer. Then checks by hand of what a plausible bug would break (merge
// order, byte fallback, unknown tokens, added-token flags), the refusals, text that is not UTF-8, and the
// BpeTokenizer API (vocab.json + merges.txt files too).
#include <QtTest>

#include "test_main.h"
#include "test_support.h"
#include "tokenizers_reference.h"

#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>

#include <nlohmann/json.hpp>

#include "data/bpe_tokenizer.h"
#include "text/byte_level.h"
#include "text/tokenizer_json.h"
#include "text/utf8.h"

using nlohmann::json;
using tb::data::BpeTokenizer;
using Ids = std::vector<int64_t>;
using Texts = std::vector<std::string>;

namespace {

const char* kFamilies[] = {"llama3", "qwen", "gemma", "phi3", "phi4", "phi4_mini", "smollm2", "mistral"};

std::string fixture_path(const std::string& family) {
  return std::string(TB_SOURCE_DIR) + "/tests/data/tokenizers/" + family + "/tokenizer.json";
}

std::string read_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Texts every family is compared on: mixed scripts, combining marks (NFC and not), emoji sequences,
// whitespace runs and newlines, numbers of every length, texts that spell special tokens (with spaces
// around them for lstrip/rstrip), leading spaces, the empty string.
Texts hard_texts() {
  Texts t = {
      "",
      " ",
      "   ",
      "\n",
      "\r\n",
      "\t",
      "Hello world",
      " Hello world",
      "  leading spaces",
      "trailing spaces   ",
      "The quick brown fox jumps over the lazy dog.",
      "I'm here, you're there, HE'LL go, we'VE been, they'd",
      "1 12 123 1234 12345 123456 1234567 12345678 3.14159 1,000,000 2024-06-01 007",
      "Größenwahn über Fußgängerübergänge",
      "Déjà vu à l'œuvre, naïve crème brûlée",
      "cafe\u0301 and café, man\u0303ana and mañana",
      "e\u0301\u0323 o\u0323\u0302 a\u0308\u0304 \u1e69 \u0344 q\u0307\u0323",
      "Καλημέρα κόσμε",
      "Привет, мир! Съешь же ещё",
      "مرحبا بالعالم ١٢٣",
      "नमस्ते दुनिया क्षत्रिय",
      "你好，世界！今天天气很好",
      "日本語のテキスト、カタカナ",
      "สวัสดีชาวโลก",
      "안녕하세요 세계 한글 \u1100\u1161\u11a8",
      "Hello 👋🏽 family 👨‍👩‍👧‍👦 flag 🏳️‍🌈 🇩🇪 heart ❤️",
      "😀😂🤔🙃🚀🌙",
      "tabs\there\t\tand\t\t\tmore",
      "lines\n\n\nblank\r\n\r\nCRLF",
      "    indented\n\tcode",
      "a  b   c    d     e",
      "def f(x):\n    return x ** 2  # square\n",
      "std::vector<int> v{1, 2, 3};",
      "{\"k\": [1, 2.5, \"s\"], \"b\": true}",
      "https://example.com/a?b=c&d=e#f someone@example.org",
      "<|im_start|>user\nHello<|im_end|>\n<|im_start|>assistant\n",
      "<|begin_of_text|><|start_header_id|>user<|end_header_id|>\n\nHi<|eot_id|>",
      "<bos><start_of_turn>user\nHi<end_of_turn>\n<start_of_turn>model\n",
      "<s>[INST] Hello [/INST]",
      "<|user|>\nHello<|end|>\n<|assistant|>",
      "text <|end|>   after",
      "before   <|placeholder2|>   after",
      "x<|endoftext|>y",
      "<think>\nreasoning\n</think>\n\nanswer",
      "<tool_call>{\"name\": \"f\"}</tool_call>",
      "a<table>b\t\tc\n\n\nd",
      " <s> </s> <unk>",
      "<<|im_start|>>",
      "Ω Å K ﬁ ① ² ½ ｈｅｌｌｏ",
      "İstanbul ΣΑΣ ß ẞ",
      "\u200b\u200d\ufeff zero width",
      "\u3000ideographic\u3000space",
      "𝐇𝐞𝐥𝐥𝐨 𝔘𝔫𝔦𝔠𝔬𝔡𝔢",
      "rare chars: 龘 齉 鱻 ꙮ 𓀀",
      "mixed日本語and English with 123 numbers",
      "...!!!???",
      "'s 't 're 've 'm 'll 'd",
      "don't can't won't",
      "\u00a0nbsp\u00a0here",
      "end with newline\n",
      "ends with spaces and newline  \n",
  };
  t.push_back(std::string(300, 'x'));
  std::string mixed;
  for (int i = 0; i < 100; ++i) mixed += "ab";
  mixed += " ";
  for (int i = 0; i < 50; ++i) mixed += "αβ";
  t.push_back(mixed);
  return t;
}

// Hugging Face tokenizers on `tokenizer_path`; an error (no node, no module, a failing run) is a failure of
// the test, never a skip.
json run_reference(const std::string& tokenizer_path, const Texts& texts, QString* error) {
  return tbtest::run_tokenizers_reference(tokenizer_path, texts, error);
}

json offsets_json(const std::vector<std::pair<size_t, size_t>>& offsets) {
  json out = json::array();
  for (const auto& [s, e] : offsets) out.push_back({s, e});
  return out;
}

// Our results in the reference's shape.
json ours(const tb::text::TokenizerPipeline& p, const std::string& text, bool general) {
  const auto plain = general ? p.encode_general(text, false) : p.encode(text, false);
  const auto special = general ? p.encode_general(text, true) : p.encode(text, true);
  const Ids plain_ids(plain.ids.begin(), plain.ids.end()), special_ids(special.ids.begin(), special.ids.end());
  return {{"ids", plain.ids},
          {"offsets", offsets_json(plain.offsets)},
          {"ids_special", special.ids},
          {"offsets_special", offsets_json(special.offsets)},
          {"decoded", p.decode(special_ids, true)},
          {"decoded_keep", p.decode(special_ids, false)},
          {"decoded_plain", p.decode(plain_ids, true)}};
}

// The first difference between ours and the reference, or an empty string.
std::string first_difference(const tb::text::TokenizerPipeline& p, const Texts& texts, const json& reference) {
  if (reference.size() != texts.size()) return "the reference gave " + std::to_string(reference.size()) + " results";
  for (const bool general : {false, true}) {
    for (size_t i = 0; i < texts.size(); ++i) {
      const json mine = ours(p, texts[i], general);
      for (const auto& [key, value] : reference[i].items()) {
        if (mine[key] == value) continue;
        return std::string(general ? "general" : "fast") + " path, text " + json(texts[i]).dump() + ", " + key +
               ":\n  tokenizers: " + value.dump().substr(0, 600) + "\n  ours:       " + mine[key].dump().substr(0, 600);
      }
    }
  }
  return {};
}

// ---- small pipelines, one component at a time ------------------------------------------------------------

json bpe(const std::vector<std::string>& tokens, const json& merges = json::array(), json options = json::object()) {
  json vocab = json::object();
  for (const auto& t : tokens)
    if (!vocab.contains(t)) vocab[t] = vocab.size();
  json model = {{"type", "BPE"}, {"dropout", nullptr}, {"vocab", vocab}, {"merges", merges}};
  for (const auto& [k, v] : options.items()) model[k] = v;
  return model;
}

std::vector<std::string> byte_tokens() {
  std::vector<std::string> out;
  char buf[8];
  for (int b = 0; b < 256; ++b) {
    std::snprintf(buf, sizeof buf, "<0x%02X>", b);
    out.push_back(buf);
  }
  return out;
}

std::vector<std::string> byte_alphabet() {
  std::vector<std::string> out;
  for (int b = 0; b < 256; ++b) {
    std::string s;
    tb::text::append_utf8(s, tb::text::byte_to_char(static_cast<unsigned char>(b)));
    out.push_back(s);
  }
  return out;
}

std::vector<std::string> operator+(std::vector<std::string> a, const std::vector<std::string>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

std::vector<std::string> chars_of(const std::string& s) {
  std::vector<std::string> out;
  for (size_t i = 0; i < s.size();) {
    const size_t n = tb::text::utf8_sequence_length(static_cast<unsigned char>(s[i]));
    out.push_back(s.substr(i, n));
    i += n;
  }
  return out;
}

json tokenizer(json model, json normalizer = nullptr, json pre = nullptr, json decoder = nullptr, json post = nullptr,
               json added = json::array()) {
  return {{"version", "1.0"},       {"truncation", nullptr},    {"padding", nullptr},
          {"added_tokens", added},  {"normalizer", normalizer}, {"pre_tokenizer", pre},
          {"post_processor", post}, {"decoder", decoder},       {"model", model}};
}

json added(int64_t id, const std::string& content, bool special, json flags = json::object()) {
  json t = {{"id", id},        {"content", content},     {"single_word", false}, {"lstrip", false},
            {"rstrip", false}, {"normalized", !special}, {"special", special}};
  for (const auto& [k, v] : flags.items()) t[k] = v;
  return t;
}

json split(const json& pattern, const std::string& behavior, bool invert = false) {
  return {{"type", "Split"}, {"pattern", pattern}, {"behavior", behavior}, {"invert", invert}};
}

json byte_level(bool add_prefix_space, bool trim_offsets, bool use_regex) {
  return {{"type", "ByteLevel"},
          {"add_prefix_space", add_prefix_space},
          {"trim_offsets", trim_offsets},
          {"use_regex", use_regex}};
}

struct Synthetic {
  std::string name;
  json file;
  Texts texts;
};

std::vector<Synthetic> synthetic_pipelines() {
  std::vector<Synthetic> out;
  const std::string letters = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789 ";
  const auto ascii = chars_of(letters + "-,.!?'\"()[]{}<>:;/\\|_+=*&^%$#@~`");
  // Split with each behavior: whole pieces found by ignore_merges show where the text was cut.
  const std::vector<std::string> pieces = {"the",    "-",          "final", "countdown",   "the-", "final-",
                                           "-final", "-countdown", "--",    "--countdown", "x-"};
  const Texts split_texts = {"the-final--countdown", "-the-", "--", "x-x", "", "final---"};
  for (const char* behavior : {"Removed", "Isolated", "MergedWithPrevious", "MergedWithNext", "Contiguous"}) {
    out.push_back({std::string("split ") + behavior,
                   tokenizer(bpe(ascii + pieces, json::array(), {{"ignore_merges", true}}), nullptr,
                             split({{"String", "-"}}, behavior)),
                   split_texts});
    out.push_back({std::string("split inverted regex ") + behavior,
                   tokenizer(bpe(ascii + pieces, json::array(), {{"ignore_merges", true}}), nullptr,
                             split({{"Regex", "[a-z]+"}}, behavior, true)),
                   split_texts});
  }
  // Metaspace, each prepend scheme, split or not, with its decoder; added tokens cut the text.
  const auto meta = chars_of("▁") + ascii + std::vector<std::string>{"▁hello", "▁world", "hello", "world", "▁▁"};
  const Texts meta_texts = {"hello world", " hello", "hello  world", "", "  ", "a<s>hello", "<s> hello", "hello<s>"};
  for (const char* scheme : {"always", "first", "never"}) {
    for (const bool split_words : {true, false}) {
      json pre = {{"type", "Metaspace"}, {"replacement", "▁"}, {"prepend_scheme", scheme}, {"split", split_words}};
      json dec = {{"type", "Metaspace"}, {"replacement", "▁"}, {"prepend_scheme", scheme}, {"split", split_words}};
      out.push_back({std::string("metaspace ") + scheme + (split_words ? " split" : ""),
                     tokenizer(bpe(meta, json::array(), {{"ignore_merges", true}}), nullptr, pre, dec, nullptr,
                               json::array({added(200, "<s>", true)})),
                     meta_texts});
    }
  }
  // Word splitters on ASCII and Unicode punctuation, digits and spaces.
  const auto fallback = byte_tokens() + ascii;
  const json fallback_model = bpe(fallback, json::array(), {{"byte_fallback", true}});
  const Texts word_texts = {
      "Hello, world! 123abc 4567", "¿Qué? a—b «x» 1.5e10", "x,y...z  \t\n 12 34", "", "don't stop", "٣٤٥ ⅷ ½ ²"};
  out.push_back({"whitespace", tokenizer(fallback_model, nullptr, {{"type", "Whitespace"}}), word_texts});
  out.push_back({"whitespace split", tokenizer(fallback_model, nullptr, {{"type", "WhitespaceSplit"}}), word_texts});
  out.push_back({"punctuation contiguous",
                 tokenizer(fallback_model, nullptr, {{"type", "Punctuation"}, {"behavior", "Contiguous"}}),
                 word_texts});
  out.push_back({"digits grouped",
                 tokenizer(fallback_model, nullptr, {{"type", "Digits"}, {"individual_digits", false}}), word_texts});
  out.push_back({"char delimiter",
                 tokenizer(fallback_model, nullptr, {{"type", "CharDelimiterSplit"}, {"delimiter", ","}}), word_texts});
  // Normalizers, with byte fallback so that every byte shows up with its offsets.
  const Texts norm_texts = {"  Ｈｅｌｌｏ   ＷＯＲＬＤ  ",
                            "İstanbul ΣΑΣ",
                            "ﬁne ½ ①",
                            "Déjà Vu Ærø cafe\u0301",
                            "",
                            "   ",
                            "\tTabs\t and\u00a0spaces \u3000",
                            "e\u0301\u0323 \u1e69\u0307"};
  const json replace_spaces = {{"type", "Replace"}, {"pattern", {{"Regex", "\\s+"}}}, {"content", " "}};
  const std::vector<std::pair<std::string, json>> normalizers = {
      {"nfc", {{"type", "NFC"}}},
      {"nfd", {{"type", "NFD"}}},
      {"nfkc", {{"type", "NFKC"}}},
      {"nfkd", {{"type", "NFKD"}}},
      {"lowercase", {{"type", "Lowercase"}}},
      {"strip", {{"type", "Strip"}, {"strip_left", true}, {"strip_right", true}}},
      {"strip left", {{"type", "Strip"}, {"strip_left", true}, {"strip_right", false}}},
      {"strip accents", {{"type", "Sequence"}, {"normalizers", {{{"type", "NFD"}}, {{"type", "StripAccents"}}}}}},
      {"replace regex and prepend",
       {{"type", "Sequence"}, {"normalizers", {replace_spaces, {{"type", "Prepend"}, {"prepend", "▁"}}}}}},
      {"nfkc lowercase strip",
       {{"type", "Sequence"},
        {"normalizers",
         {{{"type", "NFKC"}},
          {{"type", "Lowercase"}},
          {{"type", "Strip"}, {"strip_left", true}, {"strip_right", true}}}}}},
      {"bert",
       {{"type", "BertNormalizer"},
        {"clean_text", true},
        {"handle_chinese_chars", true},
        {"strip_accents", nullptr},
        {"lowercase", true}}},
      {"nmt", {{"type", "Nmt"}}},
      {"byte level", {{"type", "ByteLevel"}}},
  };
  for (const auto& [name, n] : normalizers)
    out.push_back({"normalizer " + name,
                   tokenizer(bpe(fallback + byte_alphabet(), json::array(), {{"byte_fallback", true}}), n, nullptr,
                             {{"type", "Sequence"}, {"decoders", {{{"type", "ByteFallback"}}, {{"type", "Fuse"}}}}}),
                   norm_texts});
  // Added tokens: single_word, lstrip, rstrip, normalized (matched by its lowercased form), special or not.
  const json flags = json::array(
      {added(300, "[MASK]", true, {{"single_word", true}, {"lstrip", true}}),
       added(301, "<sep>", true, {{"rstrip", true}}), added(302, "<cls>", true, {{"lstrip", true}, {"rstrip", true}}),
       added(303, "HeLLo", false, {{"normalized", true}}), added(304, "<raw>", false, {{"normalized", false}}),
       added(305, "ab", false, {{"single_word", true}, {"normalized", false}}),
       added(306, "é", false, {{"normalized", true}})});
  const Texts flag_texts = {"x [MASK] y",
                            "x[MASK]y",
                            "  [MASK]  ",
                            "a <sep>   b",
                            "<cls>",
                            "   <cls>   x",
                            "hello HELLO HeLLo",
                            "<raw><RAW>",
                            "ab cab abc ab",
                            "ab",
                            "é ab é É",
                            " [MASK]x [MASK]",
                            "<sep><sep>  <cls>  <cls>"};
  out.push_back({"added token flags",
                 tokenizer(bpe(fallback, json::array(), {{"byte_fallback", true}}), {{"type", "Lowercase"}}, nullptr,
                           {{"type", "Sequence"}, {"decoders", {{{"type", "ByteFallback"}}, {{"type", "Fuse"}}}}},
                           nullptr, flags),
                 flag_texts});
  // Unknown characters: fused or not; byte fallback that lacks bytes falls back to unk.
  const Texts unk_texts = {"axyzb", "xyz", "a x b", "ééa", "", "aaa"};
  for (const bool fuse : {true, false})
    out.push_back(
        {std::string("unk ") + (fuse ? "fused" : "not fused"),
         tokenizer(bpe({"<unk>", "a", "b", " "}, json::array(), {{"unk_token", "<unk>"}, {"fuse_unk", fuse}})),
         unk_texts});
  out.push_back({"byte fallback missing bytes",
                 tokenizer(bpe({"<unk>", "a", "b", " ", "<0x78>", "<0xC3>"}, json::array(),
                               {{"unk_token", "<unk>"}, {"fuse_unk", true}, {"byte_fallback", true}})),
                 unk_texts});
  // Subword prefix and end-of-word suffix, with the decoders made for them.
  out.push_back({"end of word suffix",
                 tokenizer(bpe({"l", "o", "w", "e", "r", "s", "t", "w</w>", "r</w>", "t</w>", "lo", "low</w>", "low",
                                "er</w>", "e"},
                               json::array({"l o", "lo w</w>", "lo w", "e r</w>"}), {{"end_of_word_suffix", "</w>"}}),
                           nullptr, {{"type", "WhitespaceSplit"}}, {{"type", "BPEDecoder"}, {"suffix", "</w>"}}),
                 {"low lower lowest", "low", "", "lowlow"}});
  out.push_back({"continuing subword prefix",
                 tokenizer(bpe({"u", "n", "##n", "##a", "##f", "##e", "a", "f", "e", "##ff", "un", "##af", "##fe"},
                               json::array({"u ##n", "##a ##f", "##f ##e"}), {{"continuing_subword_prefix", "##"}}),
                           {{"type", "BertNormalizer"}, {"clean_text", true}, {"handle_chinese_chars", true}, {"strip_accents", nullptr}, {"lowercase", true}}, {{"type", "BertPreTokenizer"}},
                           {{"type", "WordPiece"}, {"prefix", "##"}, {"cleanup", true}}),
                 {"unafe fun", "UNAFE, un.", "", "a n"}});
  // GPT-2/RoBERTa byte level: prefix space and trimmed offsets.
  const json gpt2_merges =
      json::array({"Ġ h", "Ġh e", "l l", "Ġhe ll", "Ġhell o", "Ġ w", "o r", "Ġw or", "Ġ Ġ", "ĠĠ Ġ"});
  const auto gpt2_vocab =
      byte_alphabet() + std::vector<std::string>{"Ġh", "Ġhe", "ll", "Ġhell", "Ġhello", "Ġw", "or", "Ġwor", "ĠĠ", "ĠĠĠ"};
  for (const bool prefix : {true, false})
    out.push_back({std::string("gpt2 byte level") + (prefix ? " with prefix space" : ""),
                   tokenizer(bpe(gpt2_vocab, gpt2_merges), nullptr, byte_level(prefix, true, true),
                             byte_level(true, true, true), byte_level(prefix, true, true)),
                   {" hello  world ", "hello\n\nworld", "   ", "a  b", "", "hello", "  hello world   !"}});
  // Merges in both formats (and a #version line) make the same model.
  out.push_back({"merges as strings",
                 tokenizer(bpe(byte_alphabet() + std::vector<std::string>{"ab", "abc"},
                               json::array({"#version: 0.2", "a b", "ab c"})),
                           nullptr, byte_level(false, false, true), byte_level(false, false, true)),
                 {"abc abcabc ab", "cab"}});
  // Decoders: a regex Replace, ByteFallback, Fuse, Strip.
  out.push_back({"decoder chain",
                 tokenizer(bpe(byte_tokens() + chars_of("▁abc"), json::array(), {{"byte_fallback", true}}),
                           {{"type", "Replace"}, {"pattern", {{"String", " "}}}, {"content", "▁"}}, nullptr,
                           {{"type", "Sequence"},
                            {"decoders",
                             {{{"type", "Replace"}, {"pattern", {{"Regex", "▁+"}}}, {"content", " "}},
                              {{"type", "ByteFallback"}},
                              {{"type", "Fuse"}},
                              {{"type", "Strip"}, {"content", " "}, {"start", 1}, {"stop", 1}}}}}),
                 // No empty text: tokenizers' Strip decoder panics on the empty string Fuse makes of it.
                 {"  abc  é  ", "a", "\xF0\x9F\x98\x80 b"}});
  return out;
}

std::shared_ptr<tb::text::TokenizerPipeline> load(const json& file, const std::string& name = "test.json") {
  return tb::text::load_tokenizer_json(file.dump(), name);
}

std::shared_ptr<tb::text::TokenizerPipeline> load_fixture(const std::string& family) {
  return tb::text::load_tokenizer_json(read_text(fixture_path(family)), fixture_path(family));
}

Ids ids_of(const tb::text::TokenizerPipeline& p, const std::string& text) {
  const auto e = p.encode(text, false);
  return Ids(e.ids.begin(), e.ids.end());
}

}  // namespace

class TestTokenizerJson : public QObject {
  Q_OBJECT
 private Q_SLOTS:
  void familiesMatchTheReference_data() {
    QTest::addColumn<std::string>("family");
    for (const char* f : kFamilies) QTest::newRow(f) << std::string(f);
  }
  void familiesMatchTheReference() {
    QFETCH(std::string, family);
    const Texts texts = hard_texts();
    QString error;
    const json reference = run_reference(fixture_path(family), texts, &error);
    QVERIFY2(error.isEmpty(), qPrintable(error));
    const auto p = load_fixture(family);
    const std::string diff = first_difference(*p, texts, reference);
    QVERIFY2(diff.empty(), diff.c_str());
    // The byte-level families take the fast path unless something (offset trimming) rules it out.
    const bool fast_expected = family == "llama3" || family == "qwen" || family == "phi4_mini" || family == "smollm2";
    QCOMPARE(p->fast_path(), fast_expected);
  }

  // Negative control: the same comparison on a file whose normalizer differs (Qwen's NFC made NFD) finds
  // differences, so agreement above is not an artefact of the harness.
  void comparisonSeesADifferentNormalizer() {
    json file = json::parse(read_text(fixture_path("qwen")));
    QCOMPARE(file["normalizer"]["type"].get<std::string>(), std::string("NFC"));
    file["normalizer"] = {{"type", "NFD"}};
    QTemporaryDir dir;
    const std::string mutated = dir.filePath("tokenizer.json").toStdString();
    std::ofstream(mutated, std::ios::binary) << file.dump();
    const Texts texts = {"café crème", "cafe\u0301", "plain ascii"};
    QString error;
    const json reference = run_reference(mutated, texts, &error);
    QVERIFY2(error.isEmpty(), qPrintable(error));
    const auto original = load_fixture("qwen");
    const std::string diff = first_difference(*original, texts, reference);
    QVERIFY2(!diff.empty(), "NFC and NFD tokenizers compared equal");
    // ... and our own NFD pipeline agrees with the reference's.
    const auto nfd = load(file);
    const std::string same = first_difference(*nfd, texts, reference);
    QVERIFY2(same.empty(), same.c_str());
  }

  void syntheticPipelinesMatchTheReference() {
    QTemporaryDir dir;
    int n = 0;
    for (const auto& s : synthetic_pipelines()) {
      const std::string path = dir.filePath(QString("tokenizer%1.json").arg(n++)).toStdString();
      std::ofstream(path, std::ios::binary) << s.file.dump();
      QString error;
      const json reference = run_reference(path, s.texts, &error);
      QVERIFY2(error.isEmpty(), (s.name + ": " + error.toStdString()).c_str());
      const auto p = load(s.file, s.name);
      const std::string diff = first_difference(*p, s.texts, reference);
      QVERIFY2(diff.empty(), (s.name + ": " + diff).c_str());
    }
  }

  // The fast path against the general path on random text over an alphabet chosen to hit splits, merges,
  // combining marks, added tokens and invalid bytes.
  void fastPathAgreesWithGeneralPath() {
    const std::vector<std::string> alphabet = {"a",
                                               "b",
                                               " ",
                                               "  ",
                                               "\n",
                                               "\r\n",
                                               "\t",
                                               "1",
                                               "23",
                                               "456",
                                               "é",
                                               "e\u0301",
                                               "\u0323",
                                               "Σ",
                                               "你",
                                               "🙂",
                                               "👨‍👩‍👧",
                                               "'s",
                                               "'LL",
                                               ".",
                                               "!!",
                                               "<|im_end|>",
                                               "<|eot_id|>",
                                               "<think>",
                                               "\xFF",
                                               "\xC3",
                                               "ß",
                                               "İ",
                                               "ｈ"};
    std::mt19937 rng(7);
    for (const char* family : {"llama3", "qwen", "phi4_mini", "smollm2"}) {
      const auto p = load_fixture(family);
      QVERIFY(p->fast_path());
      for (int i = 0; i < 300; ++i) {
        std::string text;
        const int n = static_cast<int>(rng() % 24);
        for (int k = 0; k < n; ++k) text += alphabet[rng() % alphabet.size()];
        for (const bool special : {false, true}) {
          const auto fast = p->encode(text, special);
          const auto general = p->encode_general(text, special);
          QVERIFY2(fast.ids == general.ids && fast.offsets == general.offsets,
                   (std::string(family) + ": " + json(tb::text::lossy_utf8(text)).dump()).c_str());
        }
      }
    }
  }

  // ---- checks by hand --------------------------------------------------------------------------------

  void mergeOrder() {
    const auto alphabet = byte_alphabet();
    auto model = [&](json merges, std::vector<std::string> extra) {
      return load(tokenizer(bpe(alphabet + extra, merges), nullptr, byte_level(false, false, false)));
    };
    const auto id = [&](const tb::text::TokenizerPipeline& p, const char* t) { return int64_t(*p.token_to_id(t)); };
    // Lowest rank first, wherever it is: (b, c) rank 0 goes before (a, b) rank 1.
    const auto p1 = model(json::array({"b c", "a b", "a bc"}), {"bc", "ab", "abc"});
    QCOMPARE(ids_of(*p1, "abc"), (Ids{id(*p1, "abc")}));
    // The queued (a, b) went stale when b joined c: it must not fire on (a, bc).
    const auto p2 = model(json::array({"b c", "a b"}), {"bc", "ab"});
    QCOMPARE(ids_of(*p2, "abc"), (Ids{id(*p2, "a"), id(*p2, "bc")}));
    // Equal ranks: leftmost first, then what the merge made.
    const auto p3 = model(json::array({"a a", "aa a"}), {"aa", "aaa"});
    QCOMPARE(ids_of(*p3, "aaaa"), (Ids{id(*p3, "aa"), id(*p3, "aa")}));
    QCOMPARE(ids_of(*p3, "aaaaa"), (Ids{id(*p3, "aa"), id(*p3, "aaa")}));
    QCOMPARE(ids_of(*p3, "aaa"), (Ids{id(*p3, "aaa")}));
  }

  void byteFallbackAndUnknown() {
    // Gemma's vocabulary lacks 龘: three byte tokens, decoded back to the character.
    const auto gemma = load_fixture("gemma");
    const auto ids = ids_of(*gemma, "龘");
    QCOMPARE(ids, (Ids{int64_t(*gemma->token_to_id("<0xE9>")), int64_t(*gemma->token_to_id("<0xBE>")),
                       int64_t(*gemma->token_to_id("<0x98>"))}));
    QCOMPARE(gemma->decode(ids, true), std::string("龘"));
    // Byte tokens that are not UTF-8 decode to one U+FFFD each.
    QCOMPARE(gemma->decode({ids[0], ids[1]}, true), std::string("\xEF\xBF\xBD\xEF\xBF\xBD"));
    // Unknown characters: one <unk> for a run when fused, one each when not.
    const auto fused =
        load(tokenizer(bpe({"<unk>", "a"}, json::array(), {{"unk_token", "<unk>"}, {"fuse_unk", true}})));
    const auto apart =
        load(tokenizer(bpe({"<unk>", "a"}, json::array(), {{"unk_token", "<unk>"}, {"fuse_unk", false}})));
    QCOMPARE(ids_of(*fused, "axyza"), (Ids{1, 0, 1}));
    QCOMPARE(ids_of(*apart, "axyza"), (Ids{1, 0, 0, 0, 1}));
    QCOMPARE(fused->encode("axyza", false).offsets, (std::vector<tb::text::ByteRange>{{0, 1}, {1, 4}, {4, 5}}));
    // No unk token: unknown characters are dropped.
    const auto none = load(tokenizer(bpe({"a"})));
    QCOMPARE(ids_of(*none, "xax"), (Ids{0}));
  }

  void addedTokenFlags() {
    const auto letters = byte_tokens() + chars_of("abcx ");
    const json model = bpe(letters, json::array(), {{"byte_fallback", true}});
    const auto p = load(
        tokenizer(model, nullptr, nullptr, nullptr, nullptr,
                  json::array({added(500, "<l>", true, {{"lstrip", true}}), added(501, "<r>", true, {{"rstrip", true}}),
                               added(502, "ab", false, {{"single_word", true}, {"normalized", false}})})));
    // New added tokens take the ids after the model's vocabulary, whatever the file says (tokenizers).
    const int64_t l_id = *p->token_to_id("<l>"), r_id = *p->token_to_id("<r>"), ab_id = *p->token_to_id("ab");
    QCOMPARE(l_id, int64_t(p->model().vocab_size()));
    QCOMPARE(ab_id, l_id + 2);
    const int64_t x = *p->token_to_id("x"), space = *p->token_to_id(" ");
    // lstrip: the spaces before the token are part of it (offsets show it), not tokens of their own.
    const auto l = p->encode("x  <l>x", false);
    QCOMPARE(Ids(l.ids.begin(), l.ids.end()), (Ids{x, l_id, x}));
    QCOMPARE(l.offsets[1], (tb::text::ByteRange{1, 6}));
    // rstrip: the spaces after it.
    const auto r = p->encode("x<r>  x", false);
    QCOMPARE(Ids(r.ids.begin(), r.ids.end()), (Ids{x, r_id, x}));
    QCOMPARE(r.offsets[1], (tb::text::ByteRange{1, 6}));
    // single_word: only where no word character touches it.
    QCOMPARE(ids_of(*p, "ab"), (Ids{ab_id}));
    QCOMPARE(ids_of(*p, "x ab"), (Ids{x, space, ab_id}));
    QCOMPARE(ids_of(*p, "xab").size(), size_t{3});
    QCOMPARE(ids_of(*p, "abx").size(), size_t{3});
    // Special tokens as text (encode_special_tokens): no longer cut out; non-special ones still are.
    auto plain =
        load(tokenizer(model, nullptr, nullptr, nullptr, nullptr,
                       json::array({added(500, "<l>", true), added(502, "ab", false, {{"normalized", false}})})));
    plain->set_encode_special_tokens(true);
    QCOMPARE(ids_of(*plain, "<l>ab").size(), size_t{4});
    QCOMPARE(ids_of(*plain, "<l>ab").back(), int64_t(*plain->token_to_id("ab")));
  }

  void refusalsNameTheField_data() {
    QTest::addColumn<std::string>("file");
    QTest::addColumn<QString>("expected");
    const json model = bpe({"a", "b", "ab"}, json::array({"a b"}));
    auto with = [&](const char* key, json value) {
      json t = tokenizer(model);
      t[key] = value;
      return t.dump();
    };
    QTest::newRow("unigram") << with("model", {{"type", "Unigram"}, {"vocab", json::array()}})
                             << "t.json: model.type = \"Unigram\": only BPE models are supported";
    QTest::newRow("wordpiece") << with("model", {{"type", "WordPiece"}, {"vocab", json::object()}})
                               << "t.json: model.type = \"WordPiece\"";
    json dropout = model;
    dropout["dropout"] = 0.1;
    QTest::newRow("dropout") << with("model", dropout) << "t.json: model.dropout = 0.1: BPE dropout must be null";
    json bad_merge = model;
    bad_merge["merges"] = json::array({"a b", "b c"});
    QTest::newRow("merge out of vocabulary") << with("model", bad_merge) << "t.json: model.merges[1] = \"b c\": 'c'";
    QTest::newRow("precompiled")
        << with("normalizer",
                {{"type", "Sequence"},
                 {"normalizers", {{{"type", "NFC"}}, {{"type", "Precompiled"}, {"precompiled_charsmap", "AA"}}}}})
        << "t.json: normalizer.normalizers[1].type = \"Precompiled\"";
    QTest::newRow("unicode scripts") << with("pre_tokenizer",
                                             {{"type", "Sequence"}, {"pretokenizers", {{{"type", "UnicodeScripts"}}}}})
                                     << "t.json: pre_tokenizer.pretokenizers[0].type = \"UnicodeScripts\"";
    QTest::newRow("ctc decoder") << with("decoder", {{"type", "CTC"}}) << "t.json: decoder.type = \"CTC\"";
    QTest::newRow("roberta processing") << with("post_processor", {{"type", "RobertaProcessing"}})
                                        << "t.json: post_processor.type = \"RobertaProcessing\"";
    QTest::newRow("truncation") << with("truncation", {{"max_length", 512}})
                                << "t.json: truncation = {\"max_length\":512}";
    QTest::newRow("padding") << with("padding", {{"strategy", "BatchLongest"}}) << "t.json: padding = ";
    QTest::newRow("metaspace add_prefix_space false")
        << with("pre_tokenizer", {{"type", "Metaspace"}, {"replacement", "▁"}, {"add_prefix_space", false}})
        << "t.json: pre_tokenizer.add_prefix_space = false";
    QTest::newRow("bad regex") << with("pre_tokenizer", split({{"Regex", "(unclosed"}}, "Isolated"))
                               << "t.json: pre_tokenizer.pattern = {\"Regex\":\"(unclosed\"}: regular expression";
    QTest::newRow("behavior") << with("pre_tokenizer", split({{"String", " "}}, "Sideways"))
                              << "t.json: pre_tokenizer.behavior = \"Sideways\"";
    QTest::newRow("template $B") << with("post_processor", {{"type", "TemplateProcessing"},
                                                            {"single", {{{"Sequence", {{"id", "B"}, {"type_id", 0}}}}}},
                                                            {"special_tokens", json::object()}})
                                 << "t.json: post_processor.single[0]";
    QTest::newRow("no type") << with("normalizer", {{"lowercase", true}}) << "t.json: normalizer.type = null";
    // An id that would size the id table at gigabytes (bad_alloc with no file named before).
    json huge_id = model;
    huge_id["vocab"]["far"] = 2000000000;
    QTest::newRow("id far past the vocabulary")
        << with("model", huge_id)
        << "t.json: model.vocab: the vocabulary gives 'far' the id 2000000000, far past its 4 entries";
  }
  void refusalsNameTheField() {
    QFETCH(std::string, file);
    QFETCH(QString, expected);
    try {
      tb::text::load_tokenizer_json(file, "t.json");
      QFAIL("accepted");
    } catch (const tb::text::TokenizerFileError& e) {
      QVERIFY2(QString::fromUtf8(e.what()).startsWith(expected), e.what());
    }
  }

  // Bytes that are not UTF-8 are read as from_utf8_lossy reads them (U+FFFD for each bad sequence), as a
  // tokenizers binding given bytes would; offsets point into the bytes given.
  void textThatIsNotUtf8() {
    const auto p = load_fixture("qwen");
    const std::string bad =
        "ab\xFF"
        "cd\xE2\x82"
        "e";
    const std::string lossy = tb::text::lossy_utf8(bad);
    QCOMPARE(lossy, std::string("ab\xEF\xBF\xBD"
                                "cd\xEF\xBF\xBD"
                                "e"));
    QCOMPARE(p->encode(bad, false).ids, p->encode(lossy, false).ids);
    const auto offsets = p->encode(bad, false).offsets;
    QVERIFY(!offsets.empty());
    QCOMPARE(offsets.back().second, bad.size());
    for (const auto& [s, e] : offsets) QVERIFY(s <= e && e <= bad.size());
    QCOMPARE(p->encode_general(bad, false).offsets, offsets);
    // A lone byte's U+FFFD covers exactly that byte.
    const auto alone = p->encode("\xFF", false);
    QCOMPARE(alone.offsets.front().first, size_t{0});
    QCOMPARE(alone.offsets.back().second, size_t{1});
  }

  // ---- the data layer's BpeTokenizer ---------------------------------------------------------------------

  void bpeTokenizerApi() {
    const auto tok = BpeTokenizer::from_file(fixture_path("qwen"));
    const auto& p = tok->pipeline();
    const std::string text = "<|im_start|>user\nHi <think>x</think><|im_end|>";
    const auto e = tok->encode_with_offsets(text);
    const auto pe = p.encode(text, false);
    QCOMPARE(e.ids, Ids(pe.ids.begin(), pe.ids.end()));
    QCOMPARE(e.offsets, pe.offsets);
    const int64_t im_start = *tok->token_to_id("<|im_start|>"), think = *tok->token_to_id("<think>");
    QCOMPARE(e.ids.front(), im_start);
    QVERIFY(tok->is_special(im_start));
    QVERIFY(!tok->is_special(think));
    QVERIFY(!tok->is_special(0));
    // decode: special tokens skipped or kept; non-special added tokens always kept.
    QCOMPARE(tok->decode(e.ids, true), std::string("user\nHi <think>x</think>"));
    QCOMPARE(tok->decode(e.ids, false), text);
    QCOMPARE(tok->decode(e.ids), tok->decode(e.ids, true));
    // added_tokens() with every flag, by id.
    const auto added = tok->added_tokens();
    QCOMPARE(added.size(), size_t{19});
    QVERIFY(std::is_sorted(added.begin(), added.end(), [](const auto& a, const auto& b) { return a.id < b.id; }));
    const auto think_token =
        std::find_if(added.begin(), added.end(), [](const auto& t) { return t.content == "<think>"; });
    QVERIFY(think_token != added.end() && !think_token->special && !think_token->normalized && !think_token->lstrip);
    // encode(text, add_bos, add_eos): add_special_tokens=False plus our flags (Qwen: no BOS, EOS <|endoftext|>).
    QCOMPARE(tok->bos_id(), int64_t{-1});
    QCOMPARE(tok->eos_id(), int64_t(*tok->token_to_id("<|endoftext|>")));
    Ids with_eos = e.ids;
    with_eos.push_back(tok->eos_id());
    QCOMPARE(tok->encode(text, true, true), with_eos);
    // Byte-level vocabularies: token_to_id / id_to_token speak raw bytes.
    const int64_t space_id = *tok->token_to_id(" ");
    QCOMPARE(tok->id_to_token(space_id), std::string(" "));
    // The post-processor's special tokens (Llama 3's <|begin_of_text|> template).
    const auto llama = BpeTokenizer::from_file(fixture_path("llama3"));
    const auto with_bos = llama->encode_with_offsets("Hi", true);
    QCOMPARE(with_bos.ids.front(), int64_t(*llama->token_to_id("<|begin_of_text|>")));
    QCOMPARE(with_bos.offsets.front(), (std::pair<size_t, size_t>{0, 0}));
    QCOMPARE(llama->encode("Hi", true, false).front(), llama->bos_id());
  }

  // torchtune's vocab.json + merges.txt with Qwen2's regex, NFC and special tokens: the same ids as the
  // tokenizer.json that holds the same vocabulary and merges.
  void vocabAndMergesFiles() {
    const json file = json::parse(read_text(fixture_path("qwen")));
    QTemporaryDir dir;
    const std::string vocab_path = dir.filePath("vocab.json").toStdString();
    const std::string merges_path = dir.filePath("merges.txt").toStdString();
    std::ofstream(vocab_path, std::ios::binary) << file["model"]["vocab"].dump();
    {
      std::ofstream merges(merges_path, std::ios::binary);
      merges << "#version: 0.2\n";
      for (const auto& m : file["model"]["merges"])
        merges << m[0].get<std::string>() << " " << m[1].get<std::string>() << "\n";
    }
    tb::data::VocabMergesOptions o;
    o.split_regex = file["pre_tokenizer"]["pretokenizers"][0]["pattern"]["Regex"].get<std::string>();
    o.nfc = true;
    for (const auto& t : file["added_tokens"])
      o.special_tokens[t["content"].get<std::string>()] = t["id"].get<int64_t>();
    const auto from_files = BpeTokenizer::from_vocab_merges(vocab_path, merges_path, o);
    const auto from_json = BpeTokenizer::from_file(fixture_path("qwen"));
    for (const auto& text : hard_texts()) {
      QCOMPARE(from_files->encode(text, false, false), from_json->encode(text, false, false));
      const auto ids = from_json->encode(text, false, false);
      QCOMPARE(from_files->decode(ids, false), from_json->decode(ids, false));
    }
    QCOMPARE(from_files->eos_id(), from_json->eos_id());
    QCOMPARE(from_files->vocab_size(), from_json->vocab_size());
    // A merges line that is not two tokens names the file and line.
    std::ofstream(merges_path, std::ios::binary) << "#version: 0.2\nĠ t\nbad\n";
    try {
      BpeTokenizer::from_vocab_merges(vocab_path, merges_path, o);
      QFAIL("accepted a bad merges.txt");
    } catch (const std::runtime_error& e) {
      QVERIFY2(QString(e.what()).startsWith(QString::fromStdString(merges_path + ":3:")), e.what());
    }
  }
};

TB_TEST(TestTokenizerJson)
#include "test_tokenizer_json.moc"
