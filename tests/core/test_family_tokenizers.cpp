// torchtune's Qwen2/2.5/3, Phi-4 and Phi-3 mini tokenizer components on the files their configs name.
// The ids of a formatted conversation are checked against Hugging Face tokenizers (its Node binding)
// encoding the same conversation written out as the family's documented turn format: ChatML for Qwen,
// <|im_start|>role<|im_sep|> for Phi-4. The vocab.json + merges.txt are written from the family fixtures
// of tests/data/tokenizers, whose added tokens are passed as special_tokens_path.
#include <QtTest>

#include "test_main.h"
#include "test_support.h"
#include "tokenizers_reference.h"

#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>
#include <yaml-cpp/yaml.h>

#include "components/builtin.h"
#include "config/registry.h"
#include "data/family_tokenizers.h"
#include "data/sentencepiece_tokenizer.h"

using nlohmann::json;
using tb::data::Message;
using Ids = std::vector<int64_t>;
using TokenizerPtr = std::shared_ptr<tb::data::Tokenizer>;

namespace {

std::string fixture_path(const std::string& family) {
  return std::string(TB_SOURCE_DIR) + "/tests/data/tokenizers/" + family + "/tokenizer.json";
}

json read_json(const std::string& path) { return json::parse(tbtest::read_file(path)); }

// vocab.json and merges.txt holding a tokenizer.json's vocabulary and merges, and that tokenizer.json
// (with `extra` added tokens) beside them; returns the tokenizer.json's path.
std::string write_vocab_merges(const QTemporaryDir& dir, const std::string& family, const std::vector<std::string>& extra = {}) {
  json file = read_json(fixture_path(family));
  int64_t next = 0;
  for (const auto& t : file["added_tokens"]) next = std::max(next, t["id"].get<int64_t>() + 1);
  for (const auto& content : extra)
    file["added_tokens"].push_back({{"id", next++}, {"content", content}, {"single_word", false}, {"lstrip", false},
                                    {"rstrip", false}, {"normalized", false}, {"special", true}});
  std::ofstream(dir.filePath("vocab.json").toStdString(), std::ios::binary) << file["model"]["vocab"].dump();
  std::ofstream merges(dir.filePath("merges.txt").toStdString(), std::ios::binary);
  merges << "#version: 0.2\n";
  for (const auto& m : file["model"]["merges"])
    merges << (m.is_string() ? m.get<std::string>() : m[0].get<std::string>() + " " + m[1].get<std::string>()) << "\n";
  const std::string path = dir.filePath("tokenizer.json").toStdString();
  std::ofstream(path, std::ios::binary) << file.dump();
  return path;
}

TokenizerPtr build(const std::string& yaml) {
  return tb::components::builtin().build<TokenizerPtr>(YAML::Load(yaml));
}

Ids reference_ids(const std::string& tokenizer_json, const std::string& text) {
  return tbtest::tokenizers_reference_ids(tokenizer_json, text);
}

std::vector<Message> chat() {
  return {Message("system", "You are a careful assistant.", true), Message("user", "What is 12+30? Answer briefly.", true),
          Message("assistant", "It is 42."), Message("user", "And in words, naïvely?", true),
          Message("assistant", "Forty-two.\nThat's all.")};
}

int64_t count_unmasked(const std::vector<bool>& mask) { return std::count(mask.begin(), mask.end(), false); }

}  // namespace

class TestFamilyTokenizers : public QObject {
  Q_OBJECT
 private Q_SLOTS:
  void qwenTurnsAreChatML_data() {
    QTest::addColumn<QString>("component");
    QTest::newRow("qwen2") << "torchtune.models.qwen2.qwen2_tokenizer";
    QTest::newRow("qwen2.5") << "torchtune.models.qwen2_5.qwen2_5_tokenizer";
    QTest::newRow("qwen3") << "torchtune.models.qwen3.qwen3_tokenizer";
  }
  void qwenTurnsAreChatML() {
    QFETCH(QString, component);
    QTemporaryDir dir;
    const std::string tj = write_vocab_merges(dir, "qwen");
    const auto tok = build("_component_: " + component.toStdString() + "\npath: " + dir.filePath("vocab.json").toStdString() +
                           "\nmerges_file: " + dir.filePath("merges.txt").toStdString() + "\nspecial_tokens_path: " + tj);
    const auto tm = tok->tokenize_messages(chat());
    // The last assistant turn is closed by EOS (<|im_end|>) instead of its footer.
    const std::string text =
        "<|im_start|>system\nYou are a careful assistant.<|im_end|>\n<|im_start|>user\nWhat is 12+30? Answer "
        "briefly.<|im_end|>\n<|im_start|>assistant\nIt is 42.<|im_end|>\n<|im_start|>user\nAnd in words, "
        "naïvely?<|im_end|>\n<|im_start|>assistant\nForty-two.\nThat's all.<|im_end|>";
    QCOMPARE(tm.tokens, reference_ids(tj, text));
    const Ids trained = reference_ids(tj, "<|im_start|>assistant\nIt is 42.<|im_end|>\n<|im_start|>assistant\nForty-two.\nThat's all.<|im_end|>");
    QCOMPARE(count_unmasked(tm.mask), int64_t(trained.size()));
    QVERIFY(!tm.mask.back());
    QCOMPARE(tok->eos_id(), read_json(tj)["added_tokens"][2]["id"].get<int64_t>());  // <|im_end|>
    QCOMPARE(tok->pad_id(), read_json(tj)["added_tokens"][0]["id"].get<int64_t>());  // <|endoftext|>
    QCOMPARE(tok->bos_id(), int64_t(-1));
    QCOMPARE(tok->encode("It is 42.", true, true), reference_ids(tj, "It is 42.<|im_end|>"));
    // A generation prompt: the trailing assistant turn stays open, no EOS.
    auto prompt = chat();
    prompt.back() = Message("assistant", "");
    const auto gen = tok->tokenize_messages(prompt, false);
    QCOMPARE(gen.tokens, reference_ids(tj, text.substr(0, text.rfind("Forty-two."))));
  }

  // Qwen2.5 and Qwen3 put tool results in one user turn between <tool_response> tags, and a tool call
  // (an ipython assistant message) between <tool_call> tags, as their chat templates write them.
  void qwenToolTurns() {
    QTemporaryDir dir;
    const std::string tj = write_vocab_merges(dir, "qwen");
    const auto tok = build("_component_: qwen3_tokenizer\npath: " + dir.filePath("vocab.json").toStdString() +
                           "\nmerges_file: " + dir.filePath("merges.txt").toStdString() + "\nspecial_tokens_path: " + tj);
    // (Content that ends in a letter or digit: torchtune encodes the content and the "\n" after it apart,
    // so "}" + "\n" would not merge as in the whole text.)
    Message call("assistant", "add 1 and 2");
    call.ipython = true;
    const std::vector<Message> messages = {Message("user", "Add.", true), call, Message("ipython", "1", true),
                                           Message("ipython", "2", true), Message("assistant", "Done.")};
    const std::string text =
        "<|im_start|>user\nAdd.<|im_end|>\n<|im_start|>assistant\n<tool_call>\nadd 1 and 2\n</tool_call><|im_end|>\n<|im_start|>user\n<tool_response>\n1\n</tool_response>\n<tool_response>\n2"
        "\n</tool_response><|im_end|>\n<|im_start|>assistant\nDone.<|im_end|>";
    QCOMPARE(tok->tokenize_messages(messages).tokens, reference_ids(tj, text));
  }

  void qwenTruncatesAndRefusesChatML() {
    QTemporaryDir dir;
    const std::string tj = write_vocab_merges(dir, "qwen");
    const std::string files = "\npath: " + dir.filePath("vocab.json").toStdString() + "\nmerges_file: " +
                              dir.filePath("merges.txt").toStdString() + "\nspecial_tokens_path: " + tj;
    const auto tok = build("_component_: qwen2_5_tokenizer\nmax_seq_len: 12" + files);
    const auto tm = tok->tokenize_messages(chat());
    QCOMPARE(tm.tokens.size(), size_t(12));
    QCOMPARE(tm.tokens.back(), tok->eos_id());
    QVERIFY(tm.mask.back());  // torchtune forces the last mask entry to true with the EOS
    QVERIFY(tm.truncated);
    try {
      build("_component_: qwen2_5_tokenizer\nprompt_template: torchtune.data.ChatMLTemplate" + files);
      QFAIL("accepted ChatMLTemplate on a Qwen tokenizer");
    } catch (const std::exception& e) {
      QVERIFY2(QString(e.what()).contains("ChatMLTemplate"), e.what());
    }
  }

  void phi4Turns() {
    QTemporaryDir dir;
    const std::string tj = write_vocab_merges(dir, "phi4", {"<|dummy_85|>"});
    const auto tok = build("_component_: torchtune.models.phi4.phi4_tokenizer\nvocab_path: " +
                           dir.filePath("vocab.json").toStdString() + "\nmerges_path: " +
                           dir.filePath("merges.txt").toStdString() + "\nspecial_tokens_path: " + tj);
    const std::string text =
        "<|im_start|>system<|im_sep|>You are a careful assistant.<|im_end|><|im_start|>user<|im_sep|>What is 12+30? "
        "Answer briefly.<|im_end|><|im_start|>assistant<|im_sep|>It is 42.<|im_end|><|im_start|>user<|im_sep|>And in "
        "words, naïvely?<|im_end|><|im_start|>assistant<|im_sep|>Forty-two.\nThat's all.<|im_end|>";
    const auto tm = tok->tokenize_messages(chat());
    QCOMPARE(tm.tokens, reference_ids(tj, text));
    // Without end tokens (a prompt) assistant turns stay open.
    const auto open = tok->tokenize_messages({Message("user", "Hi", true), Message("assistant", "")}, false);
    QCOMPARE(open.tokens, reference_ids(tj, "<|im_start|>user<|im_sep|>Hi<|im_end|><|im_start|>assistant<|im_sep|>"));
    QCOMPARE(tok->bos_id(), tb::data::read_added_tokens(tj).at("<|endoftext|>"));
    QCOMPARE(tok->pad_id(), tb::data::read_added_tokens(tj).at("<|dummy_85|>"));
    // 1234567 splits in threes as the model's own cl100k pattern does (torchtune's GPT-2 pattern would not).
    QCOMPARE(tok->encode("n=1234567", false, false), reference_ids(tj, "n=1234567"));
  }

  // Phi-3 mini on a SentencePiece model: BOS, role token, newline, text, <|end|>, newline; the assistant
  // ends the turn with <|endoftext|> and the next message starts a new one with BOS.
  void phi3MiniTurns() {
    const std::string model = TB_SOURCE_DIR "/resources/tokenizer/tokenizer.model";
    const auto tok = build("_component_: phi3_mini_tokenizer\npath: " + model);
    const auto spm = tb::data::SentencePieceTokenizer::from_file(model);
    const Ids nl = spm->encode("\n", false, false);
    auto text = [&](const std::string& s) { return spm->encode(s, false, false, true); };
    Ids expected;
    auto add = [&](const Ids& ids) { expected.insert(expected.end(), ids.begin(), ids.end()); };
    add({spm->bos_id(), 32010});
    add(nl);
    add(text("Hello there"));
    add({32007});
    add(nl);
    add({32001});
    add(nl);
    add(text("Hi."));
    add({32007});
    add(nl);
    add({32000, spm->bos_id(), 32010});
    add(nl);
    add(text("Bye"));
    add({32007});
    add(nl);
    const auto tm = tok->tokenize_messages(
        {Message("user", "Hello there  ", true), Message("assistant", "Hi."), Message("user", "Bye", true)});
    QCOMPARE(tm.tokens, expected);
    QCOMPARE(tok->eos_id(), int64_t(32000));
    QCOMPARE(tok->decode({32010, spm->encode("Hi.", false, false)[0]}), spm->decode({spm->encode("Hi.", false, false)[0]}));
  }

  // torchtune's ChatMLTemplate as text tags, for tokenizers that do not write turns themselves; a trailing
  // empty assistant message keeps only its opening tag.
  void chatMLPromptTemplate() {
    const auto t = tb::data::PromptTemplate::from_name("torchtune.data.ChatMLTemplate");
    const auto out = t.apply({Message("system", "S"), Message("user", "U"), Message("assistant", "")});
    QCOMPARE(out[0].text(), std::string("<|im_start|>system\nS<|im_end|>\n"));
    QCOMPARE(out[1].text(), std::string("<|im_start|>user\nU<|im_end|>\n"));
    QCOMPARE(out[2].text(), std::string("<|im_start|>assistant\n"));
    const auto closed = t.apply({Message("assistant", "A"), Message("user", "U")});
    QCOMPARE(closed[0].text(), std::string("<|im_start|>assistant\nA<|im_end|>\n"));
    QCOMPARE(tb::data::PromptTemplate::from_name("QuestionAnswerTemplate").apply({Message("user", "Why?")})[0].text(),
             std::string("Question: Why?\n\nAnswer: "));
  }

  void specialTokensFileErrors() {
    QTemporaryDir dir;
    const std::string bad = dir.filePath("bad.json").toStdString();
    std::ofstream(bad) << "{\"model\": {}}";
    try {
      tb::data::read_added_tokens(bad);
      QFAIL("accepted a tokenizer.json without added_tokens");
    } catch (const std::runtime_error& e) {
      QVERIFY2(QString(e.what()).startsWith(QString::fromStdString(bad)) && QString(e.what()).contains("added_tokens"), e.what());
    }
  }
};

TB_TEST(TestFamilyTokenizers)
#include "test_family_tokenizers.moc"
