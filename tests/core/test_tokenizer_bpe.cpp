// Byte-level BPE on a tokenizer.json written by hand in this file, with ids worked out by hand from its
// merges; the Llama 3 and GPT-2 split rules (run by Oniguruma) on hand-split examples; Llama 3 message
// formatting; tiktoken files. (test_tokenizer_json compares whole pipelines with Hugging Face tokenizers.)
#include <QtTest>

#include "test_main.h"

#include "components/builtin.h"

#include <fstream>

#include <yaml-cpp/yaml.h>
#include <nlohmann/json.hpp>

#include "config/registry.h"
#include "data/bpe_tokenizer.h"
#include "text/byte_level.h"
#include "text/pre_tokenizers.h"

using tb::data::BpeOptions;
using tb::data::BpeTokenizer;
using tb::data::Message;
using Ids = std::vector<int64_t>;
using Strings = std::vector<std::string>;

Q_DECLARE_METATYPE(Strings)
Q_DECLARE_METATYPE(Ids)

namespace {

// Byte-level alphabet used below: "Ġ" is the space (byte 0x20 -> U+0120), "Ċ" the newline (0x0A -> U+010A);
// "Ã" and "©" are the bytes C3 and A9 of "é" (printable Latin-1 bytes stand for themselves).
const char* kVocab[] = {
    "h",
    "e",
    "l",
    "o",
    "w",
    "r",
    "d",
    "\xC4\xA0",
    "\xC4\x8A",
    "!",
    "1",
    "2",
    "3",
    "4",
    "'",
    "s",  // 0-15
    "u",
    "a",
    "i",
    "n",
    "t",
    "\xC3\x83",
    "\xC2\xA9",
    "T",  // 16-23
    "he",
    "ll",
    "hell",
    "hello",
    "\xC4\xA0w",
    "or",
    "\xC4\xA0wor",
    "\xC4\xA0worl",
    "\xC4\xA0world",  // 24-32
    "12",
    "lo",
    "us",
    "er",  // 33-36
};
// In rank order. "lo" is in the vocabulary but no merge makes it (only ignore_merges finds it).
const char* kMerges[] = {"h e",          "l l",           "he ll",          "hell o", "\xC4\xA0 w", "o r",
                         "\xC4\xA0w or", "\xC4\xA0wor l", "\xC4\xA0worl d", "1 2",    "u s",        "e r"};

// Added tokens absent from the vocabulary take the ids after it, in the file's order (tokenizers renumbers
// them so; the file states the same ids).
constexpr int64_t kBos = 37, kEos = 38, kStartHeader = 39, kEndHeader = 40, kEot = 41, kEom = 42,
                  kPythonTag = 43, kPad = 44;

const char* kLlama3Regex =
    "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|"
    "\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";

// The pieces a Split(regex, Isolated) pre-tokenizer cuts `text` into.
Strings split_pieces(const tb::text::Regex& regex, const std::string& text) {
  std::vector<tb::text::PatternPiece> pieces;
  tb::text::regex_pieces(regex, text, pieces);
  Strings out;
  for (const auto& p : pieces)
    if (p.end > p.start) out.push_back(text.substr(p.start, p.end - p.start));
  return out;
}

std::string tokenizer_json(bool ignore_merges, bool llama3_split, bool llama3_specials) {
  nlohmann::json vocab = nlohmann::json::object();
  for (size_t i = 0; i < std::size(kVocab); ++i) vocab[kVocab[i]] = i;
  nlohmann::json merges = nlohmann::json::array();
  for (const char* m : kMerges) merges.push_back(m);
  nlohmann::json added = nlohmann::json::array();
  auto add = [&](int64_t id, const char* content) {
    added.push_back({{"id", id},
                     {"content", content},
                     {"special", true},
                     {"lstrip", false},
                     {"rstrip", false},
                     {"normalized", false},
                     {"single_word", false}});
  };
  add(kBos, "<|begin_of_text|>");
  add(kEos, "<|end_of_text|>");
  if (llama3_specials) {
    add(kStartHeader, "<|start_header_id|>");
    add(kEndHeader, "<|end_header_id|>");
    add(kEot, "<|eot_id|>");
    add(kEom, "<|eom_id|>");
    add(kPythonTag, "<|python_tag|>");
    add(kPad, "<|finetune_right_pad_id|>");
  }
  const char* llama3_regex = kLlama3Regex;
  nlohmann::json pre;
  if (llama3_split) {
    pre = {{"type", "Sequence"},
           {"pretokenizers",
            {{{"type", "Split"}, {"pattern", {{"Regex", llama3_regex}}}, {"behavior", "Isolated"}, {"invert", false}},
             {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"trim_offsets", true}, {"use_regex", false}}}}};
  } else {
    pre = {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"trim_offsets", true}, {"use_regex", true}};
  }
  nlohmann::json root = {
      {"version", "1.0"},
      {"truncation", nullptr},
      {"padding", nullptr},
      {"added_tokens", added},
      {"normalizer", nullptr},
      {"pre_tokenizer", pre},
      {"post_processor", nullptr},
      {"decoder", {{"type", "ByteLevel"}, {"add_prefix_space", true}, {"trim_offsets", true}, {"use_regex", true}}},
      {"model",
       {{"type", "BPE"},
        {"dropout", nullptr},
        {"unk_token", nullptr},
        {"continuing_subword_prefix", nullptr},
        {"end_of_word_suffix", nullptr},
        {"fuse_unk", false},
        {"byte_fallback", false},
        {"ignore_merges", ignore_merges},
        {"vocab", vocab},
        {"merges", merges}}},
  };
  return root.dump(2);
}

std::shared_ptr<BpeTokenizer> make(bool ignore_merges = false, bool llama3_split = true, bool llama3_specials = true,
                                   BpeOptions options = {}) {
  return BpeTokenizer::from_hf_json(tokenizer_json(ignore_merges, llama3_split, llama3_specials), "fixture.json",
                                    options);
}

}  // namespace

class TestTokenizerBpe : public QObject {
  Q_OBJECT
 private Q_SLOTS:
  void llama3Split_data() {
    QTest::addColumn<std::string>("text");
    QTest::addColumn<Strings>("pieces");
    QTest::newRow("words") << std::string("Hello world") << Strings{"Hello", " world"};
    QTest::newRow("contraction") << std::string("I'm here") << Strings{"I", "'m", " here"};
    QTest::newRow("contraction ignores case") << std::string("HE'LL") << Strings{"HE", "'LL"};
    QTest::newRow("digits by three") << std::string("abc1234567") << Strings{"abc", "123", "456", "7"};
    QTest::newRow("space before number stands alone") << std::string("x 42") << Strings{"x", " ", "42"};
    QTest::newRow("two spaces") << std::string("  leading") << Strings{" ", " leading"};
    QTest::newRow("newlines then spaces") << std::string("a\n\n  b") << Strings{"a", "\n\n", " ", " b"};
    QTest::newRow("trailing spaces") << std::string("end.  ") << Strings{"end", ".", "  "};
    QTest::newRow("punctuation takes newlines") << std::string("x!!\n\ny") << Strings{"x", "!!\n\n", "y"};
    QTest::newRow("symbol before digits") << std::string("$100") << Strings{"$", "100"};
    QTest::newRow("tab joins the word") << std::string("tab\tx") << Strings{"tab", "\tx"};
    QTest::newRow("space punctuation") << std::string("a ,b") << Strings{"a", " ,", "b"};
    QTest::newRow("accented letters") << std::string("caf\xC3\xA9 na\xC3\xAFve")
                                      << Strings{"caf\xC3\xA9", " na\xC3\xAFve"};
    QTest::newRow("cjk letters") << std::string("\xE6\x97\xA5\xE6\x9C\xAC\xE8\xAA\x9E")
                                 << Strings{"\xE6\x97\xA5\xE6\x9C\xAC\xE8\xAA\x9E"};
    // Text that is not UTF-8 reaches the pattern with U+FFFD in place of the bad byte (a symbol).
    QTest::newRow("replacement character joins the letters") << std::string(
                                                                    "a\xEF\xBF\xBD"
                                                                    "b")
                                                             << Strings{"a",
                                                                        "\xEF\xBF\xBD"
                                                                        "b"};
  }
  void llama3Split() {
    QFETCH(std::string, text);
    QFETCH(Strings, pieces);
    static const tb::text::Regex regex(kLlama3Regex);
    QCOMPARE(split_pieces(regex, text), pieces);
  }

  void gpt2Split_data() {
    QTest::addColumn<std::string>("text");
    QTest::addColumn<Strings>("pieces");
    QTest::newRow("words") << std::string("Hello world") << Strings{"Hello", " world"};
    QTest::newRow("contractions are case sensitive") << std::string("I'M") << Strings{"I", "'", "M"};
    QTest::newRow("numbers whole") << std::string("abc123456") << Strings{"abc", "123456"};
    QTest::newRow("space number") << std::string("x 42") << Strings{"x", " 42"};
    QTest::newRow("two spaces") << std::string("  x") << Strings{" ", " x"};
  }
  void gpt2Split() {
    QFETCH(std::string, text);
    QFETCH(Strings, pieces);
    QCOMPARE(split_pieces(tb::text::ByteLevelPreTokenizer::gpt2_regex(), text), pieces);
  }

  void idsByHand_data() {
    QTest::addColumn<std::string>("text");
    QTest::addColumn<Ids>("ids");
    // h e l l o: (h,e) rank 0 -> he; (l,l) 1 -> ll; (he,ll) 2 -> hell; (hell,o) 3 -> hello = 27.
    QTest::newRow("hello") << std::string("hello") << Ids{27};
    // " world": (Ġ,w) 4, then (o,r) 5, (Ġw,or) 6, (Ġwor,l) 7, (Ġworl,d) 8 -> Ġworld = 32; "!" = 9.
    QTest::newRow("hello world!") << std::string("hello world!") << Ids{27, 32, 9};
    // The first of two spaces is its own piece: Ġ = 7.
    QTest::newRow("two spaces") << std::string("hello  world") << Ids{27, 7, 32};
    // "world" without its space: (o,r) 5 only -> w or l d.
    QTest::newRow("newlines") << std::string("hello\n\nworld") << Ids{27, 8, 8, 4, 29, 2, 6};
    // Digits split by three: "123" -> (1,2) 9 -> 12 3; "4" alone.
    QTest::newRow("digits") << std::string("1234") << Ids{33, 12, 13};
    // "he" then the contraction "'s" (no merge joins ' and s).
    QTest::newRow("contraction") << std::string("he's") << Ids{24, 14, 15};
    // "é" is C3 A9: two byte tokens.
    QTest::newRow("two-byte letter") << std::string("\xC3\xA9") << Ids{21, 22};
    // "lo" is only reachable with ignore_merges; here it stays l o.
    QTest::newRow("no ignore_merges") << std::string("lo") << Ids{2, 3};
    QTest::newRow("user") << std::string("user") << Ids{35, 36};
    QTest::newRow("special token in text") << std::string("<|begin_of_text|>hello") << Ids{kBos, 27};
    QTest::newRow("empty") << std::string("") << Ids{};
  }
  void idsByHand() {
    QFETCH(std::string, text);
    QFETCH(Ids, ids);
    const auto tok = make();
    QCOMPARE(tok->encode(text, false, false), ids);
    if (text.find("<|") == std::string::npos) QCOMPARE(tok->decode(ids), text);
  }

  void ignoreMergesTakesWholeWords() {
    QCOMPARE(make(true)->encode("lo", false, false), (Ids{34}));
    QCOMPARE(make(true)->encode("hello", false, false), (Ids{27}));
  }

  void specialTokensAndFlags() {
    const auto tok = make();
    QCOMPARE(tok->bos_id(), kBos);
    QCOMPARE(tok->eos_id(), kEos);
    QCOMPARE(tok->pad_id(), kPad);
    QCOMPARE(tok->vocab_size(), kPad + 1);
    QCOMPARE(tok->encode("hello"), (Ids{kBos, 27, kEos}));
    QCOMPARE(tok->encode("hello", false, true), (Ids{27, kEos}));
    QCOMPARE(tok->stop_tokens(), (Ids{kEos, kEot, kEom}));
    QVERIFY(tok->has_llama3_chat_tokens());
    QCOMPARE(tok->id_to_token(32), std::string(" world"));  // raw bytes, not the byte-level spelling
    QCOMPARE(tok->id_to_token(kEot), std::string("<|eot_id|>"));
    QVERIFY_THROWS_EXCEPTION(std::out_of_range, tok->id_to_token(99));
    // Special tokens decode to nothing.
    QCOMPARE(tok->decode({kBos, 27, 32, kEot, kEos}), std::string("hello world"));
    // As plain text (torchtune's Llama 3 tokenizer): "<|eot_id|>" is not the token. '<', '|', '_' and '>'
    // are not in this tiny vocabulary; with no unk token and no byte fallback, tokenizers drops them.
    BpeOptions plain;
    plain.parse_special_tokens = false;
    QCOMPARE(make(false, true, true, plain)->encode("<|eot_id|>", false, false), (Ids{1, 3, 20, 18, 6}));
    // Without a PAD token, padding falls back to EOS.
    QCOMPARE(make(false, true, false)->pad_id(), kEos);
  }

  void gpt2PatternTokenizer() {
    const auto tok = make(false, false, false);
    QCOMPARE(tok->encode("hello world!", false, false), (Ids{27, 32, 9}));
    QCOMPARE(tok->encode("12", false, false), (Ids{33}));
    QVERIFY(!tok->has_llama3_chat_tokens());
  }

  void llama3Messages() {
    const auto tok = make();
    const std::vector<Message> messages{Message("user", " hello\n", true), Message("assistant", "world")};
    const auto tm = tok->tokenize_messages(messages);
    // BOS; <|start_header_id|>, "user" ((u,s) rank 10 before (e,r) 11: us er = 35 36), <|end_header_id|>,
    // "\n\n" (Ċ Ċ), the stripped text, <|eot_id|>; the same for the assistant ("assistant" is
    // a s s i s t a n t: no merge applies); then EOS.
    const Ids assistant{17, 15, 15, 18, 15, 20, 17, 19, 20};
    Ids expected{kBos, kStartHeader, 35, 36, kEndHeader, 8, 8, 27, kEot, kStartHeader};
    expected.insert(expected.end(), assistant.begin(), assistant.end());
    for (int64_t id : {kEndHeader, int64_t{8}, int64_t{8}, int64_t{4}, int64_t{29}, int64_t{2}, int64_t{6}, kEot, kEos})
      expected.push_back(id);
    QCOMPARE(tm.tokens, expected);
    // Masked: BOS, the whole user message with its header, and the final EOS.
    std::vector<bool> mask(expected.size(), false);
    for (size_t i = 0; i < 9; ++i) mask[i] = true;
    mask.back() = true;
    QCOMPARE(tm.mask, mask);

    // For generation: no end tokens after the last message.
    const auto prompt = tok->tokenize_messages({Message("user", "hello", true)}, false);
    QCOMPARE(prompt.tokens, (Ids{kBos, kStartHeader, 35, 36, kEndHeader, 8, 8, 27}));
  }

  void llama3MessagesTruncate() {
    BpeOptions o;
    o.max_seq_len = 5;
    const auto tm =
        make(false, true, true, o)->tokenize_messages({Message("user", "hello", true), Message("assistant", "world")});
    QCOMPARE(tm.tokens, (Ids{kBos, kStartHeader, 35, 36, kEos}));
    QCOMPARE(tm.mask, (std::vector<bool>{true, true, true, true, true}));
  }

  void badFilesAreRefused_data() {
    QTest::addColumn<std::string>("json");
    QTest::addColumn<QString>("message");
    QTest::newRow("not json") << std::string("{") << "not valid JSON";
    QTest::newRow("no model") << std::string("{}") << "no 'model'";
    QTest::newRow("wordpiece") << std::string(R"({"model": {"type": "WordPiece", "vocab": {}}})") << "WordPiece";
    QTest::newRow("pattern that does not compile")
        << std::string("{\"pre_tokenizer\": {\"type\": \"Split\", \"pattern\": {\"Regex\": \"(a\"}, "
                       "\"behavior\": \"Isolated\"}, \"model\": {\"type\": \"BPE\", \"vocab\": {}, \"merges\": []}}")
        << "pre_tokenizer.pattern";
    QTest::newRow("dropout") << std::string(R"({"model": {"type": "BPE", "dropout": 0.1, "vocab": {}, "merges": []}})")
                             << "model.dropout";
  }
  void badFilesAreRefused() {
    QFETCH(std::string, json);
    QFETCH(QString, message);
    try {
      BpeTokenizer::from_hf_json(json, "bad.json");
      QFAIL("accepted a bad tokenizer.json");
    } catch (const std::runtime_error& e) {
      QVERIFY2(QString(e.what()).startsWith("bad.json: ") && QString(e.what()).contains(message), e.what());
    }
  }

  void componentsReadFiles() {
    QTemporaryDir dir;
    QVERIFY(dir.isValid());
    const std::string path = dir.filePath("tokenizer.json").toStdString();
    { std::ofstream(path) << tokenizer_json(false, true, true); }
    const auto& registry = tb::components::builtin();
    using Ptr = std::shared_ptr<tb::data::Tokenizer>;
    const Ptr llama3 = registry.build<Ptr>(
        YAML::Load("_component_: torchtune.models.llama3.llama3_tokenizer\npath: " + path + "\nmax_seq_len: 7"));
    QCOMPARE(llama3->encode("hello world!"), (Ids{kBos, 27, 32, 9, kEos}));
    QCOMPARE(llama3->max_seq_len(), std::optional<int64_t>(7));
    const Ptr hf =
        registry.build<Ptr>(YAML::Load("_component_: hf_tokenizer\npath: " + path + "\neos_token: <|eot_id|>"));
    QCOMPARE(hf->eos_id(), kEot);
    QCOMPARE(hf->encode("<|python_tag|>", false, false), (Ids{kPythonTag}));
    // tokenizer_config.json beside the file names the tokens, as in a Hugging Face model folder.
    {
      std::ofstream(dir.filePath("tokenizer_config.json").toStdString())
          << R"({"bos_token": {"content": "<|start_header_id|>"}, "eos_token": "<|eom_id|>"})";
    }
    const Ptr configured = registry.build<Ptr>(YAML::Load("_component_: hf_tokenizer\npath: " + path));
    QCOMPARE(configured->bos_id(), kStartHeader);
    QCOMPARE(configured->eos_id(), kEom);
    // llama3_tokenizer needs the header tokens.
    const std::string plain = dir.filePath("plain.json").toStdString();
    { std::ofstream(plain) << tokenizer_json(false, true, false); }
    QVERIFY_THROWS_EXCEPTION(std::runtime_error,
                             registry.build<Ptr>(YAML::Load("_component_: llama3_tokenizer\npath: " + plain)));
  }

  void tiktokenFile() {
    // tiktoken: base64 token and rank a line; a pair's rank is the rank of its concatenation.
    // Ranks: a=0 b=1 c=2 ab=3 bc=4 abc=5 (YQ== a, Yg== b, Yw== c, YWI= ab, YmM= bc, YWJj abc).
    const std::string file = "YQ== 0\nYg== 1\nYw== 2\nYWI= 3\nYmM= 4\nYWJj 5\n";
    BpeOptions o;
    o.parse_special_tokens = false;
    const auto tok = BpeTokenizer::from_tiktoken(file, "tiny.model", o);
    // "abc" is a whole token (tiktoken looks it up first).
    QCOMPARE(tok->encode("abc", false, false), (Ids{5}));
    // "abca" -> "abca" is not a token; merge (a,b)=3 first (lower than (b,c)=4), then (ab,c)=5 -> abc a.
    QCOMPARE(tok->encode("abca", false, false), (Ids{5, 0}));
    // "bca": (b,c)=4 < (c,a) none -> bc a.
    QCOMPARE(tok->encode("bca", false, false), (Ids{4, 0}));
    // torchtune's canonical Llama 3 special tokens come with a tiktoken file.
    QCOMPARE(tok->bos_id(), int64_t{128000});
    QCOMPARE(tok->eos_id(), int64_t{128001});
    QCOMPARE(tok->pad_id(), int64_t{128004});
    QCOMPARE(tok->vocab_size(), int64_t{128257});
    QVERIFY_THROWS_EXCEPTION(std::runtime_error, BpeTokenizer::from_tiktoken("YQ== x\n", "bad.model"));

    // A token longer than three bytes: its base64 runs past what an int holds shifted (fuzzing found the
    // decoder overflowing it, undefined behaviour the sanitizer build stops on). "YWJjYWJjYWJjYWJj" is abcabcabcabc.
    const auto longer = BpeTokenizer::from_tiktoken(file + "YWJjYWJjYWJjYWJj 6\n", "long.model", o);
    QCOMPARE(longer->encode("abcabcabcabc", false, false), (Ids{6}));
    QCOMPARE(longer->id_to_bytes(6), std::string("abcabcabcabc"));
  }
};

TB_TEST(TestTokenizerBpe)
#include "test_tokenizer_bpe.moc"
