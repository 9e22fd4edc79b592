// SentencePieceTokenizer against python3-sentencepiece (an independent implementation reading the same
// bundled tokenizer.model), hand-checked byte-fallback ids, torchtune's message tokenization, and
// LibTorch + the tokenizer in one process (the protobuf clash the dlopen'ed shim exists for).
#include <QtTest>

#include "test_main.h"
#include "test_support.h"

#include <dlfcn.h>

#include <numeric>

#include <torch/torch.h>
#include <nlohmann/json.hpp>

#include "data/sentencepiece_tokenizer.h"

using tb::data::Message;
using tb::data::PromptTemplate;
using tb::data::SentencePieceOptions;
using tb::data::SentencePieceTokenizer;
using Ids = std::vector<int64_t>;

namespace {

QString model_path() { return QStringLiteral(TB_SOURCE_DIR "/resources/tokenizer/tokenizer.model"); }

// Runs python code with the JSON `input` on stdin and returns its JSON stdout.
nlohmann::json run_python(const QString& python, const QString& code, const nlohmann::json& input) {
  QProcess p;
  p.start(python, {"-c", code});
  p.write(QByteArray::fromStdString(input.dump()));
  p.closeWriteChannel();
  if (!p.waitForFinished(120000) || p.exitCode() != 0) {
    qWarning("python failed: %s", p.readAllStandardError().constData());
    return nullptr;
  }
  return nlohmann::json::parse(p.readAllStandardOutput().toStdString());
}

Ids cat(std::initializer_list<Ids> parts) {
  Ids out;
  for (const auto& p : parts) out.insert(out.end(), p.begin(), p.end());
  return out;
}

}  // namespace

class TestTokenizerSentencePiece : public QObject {
  Q_OBJECT
 private:
  std::shared_ptr<SentencePieceTokenizer> tok_;
  nlohmann::json reference_;  // python3-sentencepiece's answers, computed once
  const std::vector<std::string> texts_{
      "Hello world",
      "Once upon a time, there was a kind duck named Emma.",
      "  two leading spaces, trailing  ",
      "line one\nline two\n\n  indented",
      "digits 1234567 and 3.14",
      "caf\xC3\xA9 na\xC3\xAFve \xE2\x9C\x93 \xF0\x9F\x99\x82 \xE6\x97\xA5\xE6\x9C\xAC",
      "What is the capital of France?",
      "",
  };

 private Q_SLOTS:
  void initTestCase() {
    tok_ = SentencePieceTokenizer::from_file(model_path().toStdString());
    const QString py = tbtest::reference_python();
    QVERIFY2(!py.isEmpty(), "python3 with the sentencepiece module (python3-sentencepiece) is needed");
    // torchtune's rules written out in Python: encode without BOS/EOS, the "\n"-prefix trim, and the
    // Llama 2 chat template's parts encoded one by one.
    const QString code = R"PY(
import json, sys
import sentencepiece as spm
inp = json.load(sys.stdin)
sp = spm.SentencePieceProcessor(model_file=inp["model"])
enc = lambda s: sp.encode(s)
prefix = enc("\n")
trim = lambda s: enc("\n" + s)[len(prefix):]
out = {"ids": [enc(t) for t in inp["texts"]],
       "decoded": [sp.decode(enc(t)) for t in inp["texts"]],
       "trimmed": [trim(t) for t in inp["texts"]],
       "vocab": sp.vocab_size(), "bos": sp.bos_id(), "eos": sp.eos_id(), "pad": sp.pad_id(), "unk": sp.unk_id()}
# Llama2ChatTemplate: user parts "[INST] ", text, " [/INST] " each right-stripped of spaces; the assistant
# follows a part ending in a space, so it keeps its dummy prefix.
out["chat"] = [sp.bos_id()] + enc("[INST]") + enc("hi there") + enc(" [/INST]") + enc("Hello!") + [sp.eos_id()]
print(json.dumps(out))
)PY";
    reference_ = run_python(py, code, {{"model", model_path().toStdString()}, {"texts", texts_}});
    QVERIFY(!reference_.is_null());
  }

  void specialIdsMatchTheModel() {
    QCOMPARE(tok_->vocab_size(), reference_["vocab"].get<int64_t>());
    QCOMPARE(tok_->vocab_size(), int64_t{2048});
    QCOMPARE(tok_->bos_id(), int64_t{1});
    QCOMPARE(tok_->eos_id(), int64_t{2});
    QCOMPARE(tok_->unk_id(), int64_t{0});
    QCOMPARE(tok_->model_pad_id(), int64_t{-1});  // Llama 2 style: no pad piece ...
    QCOMPARE(tok_->pad_id(), int64_t{0});         // ... so padding uses 0, as torchtune does
    QCOMPARE(reference_["pad"].get<int64_t>(), int64_t{-1});
  }

  void idsMatchPythonSentencePiece_data() {
    QTest::addColumn<int>("index");
    for (size_t i = 0; i < texts_.size(); ++i) QTest::newRow(("text " + std::to_string(i)).c_str()) << int(i);
  }
  void idsMatchPythonSentencePiece() {
    QFETCH(int, index);
    const auto& text = texts_[index];
    QCOMPARE(tok_->encode(text, false, false), reference_["ids"][index].get<Ids>());
    QCOMPARE(tok_->encode(text, false, false, true), reference_["trimmed"][index].get<Ids>());
    QCOMPARE(tok_->decode(tok_->encode(text, true, true)), reference_["decoded"][index].get<std::string>());
  }

  void bosAndEosFollowTheFlags() {
    const Ids body = tok_->encode("Hello world", false, false);
    QCOMPARE(tok_->encode("Hello world", true, false), cat({{1}, body}));
    QCOMPARE(tok_->encode("Hello world", false, true), cat({body, {2}}));
    QCOMPARE(tok_->encode("Hello world"), cat({{1}, body, {2}}));
    QCOMPARE(tok_->encode("", true, true), (Ids{1, 2}));
  }

  void byteFallbackIdsByHand() {
    // Byte pieces follow the three specials: <0xNN> has id 3 + NN. U+2713 is E2 9C 93 in UTF-8 and is
    // not a piece, so it becomes the dummy-prefix space and three bytes; "\n" likewise is <0x0A>.
    const int64_t space = tok_->piece_to_id("\xE2\x96\x81");  // U+2581, SentencePiece's space
    QVERIFY(space > 258);
    QCOMPARE(tok_->encode("\xE2\x9C\x93", false, false), (Ids{space, 3 + 0xE2, 3 + 0x9C, 3 + 0x93}));
    QCOMPARE(tok_->encode("\n", false, false), (Ids{space, 13}));
    QCOMPARE(tok_->id_to_piece(3 + 0xE2), std::string("<0xE2>"));
    QCOMPARE(tok_->id_to_piece(1), std::string("<s>"));
    QCOMPARE(tok_->id_to_token(2), std::string("</s>"));
    QVERIFY(tok_->is_control(1) && tok_->is_control(2) && !tok_->is_control(space));
    QCOMPARE(tok_->piece_to_id("no-such-piece"), int64_t{0});
    QVERIFY_THROWS_EXCEPTION(std::out_of_range, tok_->id_to_piece(2048));
    QVERIFY_THROWS_EXCEPTION(std::out_of_range, tok_->decode({5000}));
  }

  void messagesConcatenateLikeOneText() {
    // torchtune's claim for its Llama 2 tokenizer without a template: the messages tokenized one by
    // one give the ids of the joined text, the continuation losing its dummy-prefix space.
    const std::vector<Message> messages{Message("system", "system message\n", true),
                                        Message("user", "user prompt\n", true),
                                        Message("assistant", "assistant response\n")};
    const auto tm = tok_->tokenize_messages(messages);
    const Ids whole = tok_->encode("system message\nuser prompt\nassistant response\n", true, true);
    QCOMPARE(tm.tokens, whole);
    // Masked: BOS and the two prompt messages; trained: the response and EOS.
    const auto prompt_len = tok_->encode("system message\nuser prompt\n", true, false).size();
    QCOMPARE(tm.mask.size(), whole.size());
    for (size_t i = 0; i < tm.mask.size(); ++i) QCOMPARE(bool(tm.mask[i]), i < prompt_len);
  }

  void llama2ChatTemplateMatchesTorchtune() {
    SentencePieceOptions o;
    o.prompt_template = PromptTemplate::llama2_chat();
    const auto chat = SentencePieceTokenizer::from_file(model_path().toStdString(), o);
    const auto tm = chat->tokenize_messages({Message("user", "hi there", true), Message("assistant", "Hello!")});
    QCOMPARE(tm.tokens, reference_["chat"].get<Ids>());
  }

  void truncationEndsWithEos() {
    SentencePieceOptions o;
    o.max_seq_len = 6;
    const auto short_tok = SentencePieceTokenizer::from_file(model_path().toStdString(), o);
    const std::vector<Message> messages{Message("user", "Once upon a time, there was a kind duck", true),
                                        Message("assistant", "named Emma.")};
    const auto full = tok_->tokenize_messages(messages);
    const auto cut = short_tok->tokenize_messages(messages);
    QVERIFY(full.tokens.size() > 6);
    QCOMPARE(cut.tokens.size(), size_t{6});
    QCOMPARE(Ids(cut.tokens.begin(), cut.tokens.end() - 1), Ids(full.tokens.begin(), full.tokens.begin() + 5));
    QCOMPARE(cut.tokens.back(), int64_t{2});
    // The last mask entry takes the last processed message's value (torchtune): the user's, here,
    // because truncation stopped the loop there.
    QCOMPARE(bool(cut.mask.back()), true);
  }

  void loadsFromBytesAndReportsBadFiles() {
    QFile f(model_path());
    QVERIFY(f.open(QIODevice::ReadOnly));
    const auto from_bytes = SentencePieceTokenizer::from_bytes(f.readAll().toStdString());
    QCOMPARE(from_bytes->encode("Hello world"), tok_->encode("Hello world"));
    try {
      SentencePieceTokenizer::from_file("no/such/tokenizer.model");
      QFAIL("a missing file must be refused");
    } catch (const std::runtime_error& e) {
      QVERIFY2(QString(e.what()).contains("no/such/tokenizer.model"), e.what());
    }
    QVERIFY_THROWS_EXCEPTION(std::runtime_error, SentencePieceTokenizer::from_bytes("not a model"));
    // A file that is not a model, and a folder: said plainly, not as SentencePiece's protobuf call or
    // "basic_filebuf::underflow ... Is a directory".
    QTemporaryDir dir;
    const QString junk = dir.filePath("tokenizer.model");
    QFile out(junk);
    QVERIFY(out.open(QIODevice::WriteOnly));
    out.write(QByteArray(1000, '\x7f'));
    out.close();
    const auto message = [](const std::string& path) {
      try {
        SentencePieceTokenizer::from_file(path);
      } catch (const std::runtime_error& e) {
        return QString(e.what());
      }
      return QString("(loaded)");
    };
    const QString bad = message(junk.toStdString());
    QVERIFY2(bad == junk + ": not a SentencePiece model (tokenizer.model): its bytes do not parse as one", qPrintable(bad));
    const QString folder = message(dir.path().toStdString());
    QVERIFY2(folder.startsWith(dir.path() + ": is a folder"), qPrintable(folder));
  }

  void torchAndTokenizerInOneProcess() {
    // LibTorch runs (and has loaded its libprotobuf) before and after SentencePiece is used.
    torch::manual_seed(0);
    const auto a = torch::randn({32, 32});
    const auto before = a.mm(a.t()).trace().item<double>();
    const auto tok = SentencePieceTokenizer::from_file(model_path().toStdString());
    const Ids ids = tok->encode("Hello world, again and again.");
    QCOMPARE(ids, tok_->encode("Hello world, again and again."));
    const auto t = torch::tensor(ids);
    QCOMPARE(t.sum().item<int64_t>(), std::accumulate(ids.begin(), ids.end(), int64_t{0}));
    QCOMPARE(a.mm(a.t()).trace().item<double>(), before);
    // The shim and libsentencepiece stay out of the global symbol scope (RTLD_LOCAL).
    QVERIFY(dlsym(RTLD_DEFAULT, "tb_spm_encode") == nullptr);
    QVERIFY(dlsym(RTLD_DEFAULT, "_ZN13sentencepiece22SentencePieceProcessorC1Ev") == nullptr);
  }
};

TB_TEST(TestTokenizerSentencePiece)
#include "test_tokenizer_sentencepiece.moc"
