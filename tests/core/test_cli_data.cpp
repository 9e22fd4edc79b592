// The real tunebench-cli (env TB_CLI) on data: `tokenize` (a model folder made from the Qwen fixture and
// Qwen3's template, a SentencePiece file, a config's tokenizer) with ids checked against Hugging Face
// tokenizers, and `data preview` (counts, samples, masked text marked), with their one-line errors.
#include <QtTest>

#include "test_main.h"
#include "test_support.h"
#include "tokenizers_reference.h"

#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

using nlohmann::json;
using Ids = std::vector<int64_t>;

namespace {

using tbtest::read_file;

void write_text(const QString& path, const std::string& text) { tbtest::write_file(path.toStdString(), text); }

void qwen3_folder(const QTemporaryDir& dir) {
  write_text(dir.filePath("tokenizer.json"), read_file(TB_SOURCE_DIR "/tests/data/tokenizers/qwen/tokenizer.json"));
  json config = {{"bos_token", nullptr},
                 {"eos_token", "<|im_end|>"},
                 {"pad_token", "<|endoftext|>"},
                 {"chat_template", read_file(TB_SOURCE_DIR "/tests/data/chat_templates/qwen3.jinja")}};
  write_text(dir.filePath("tokenizer_config.json"), config.dump());
}

QStringList lines_of(const QString& out) { return out.split('\n', Qt::SkipEmptyParts); }

}  // namespace

class TestCliData : public QObject {
  Q_OBJECT

  tbtest::ProcessResult cli(const QStringList& args) {
    return tbtest::run_process(qEnvironmentVariable("TB_CLI"), args, 120000);
  }
  // A user error: exit 1 and exactly one line on stderr.
  void expectOneLineError(const tbtest::ProcessResult& r, const QString& contains) {
    QCOMPARE(r.code, 1);
    QVERIFY2(r.err.endsWith('\n') && r.err.count('\n') == 1, qPrintable(r.err));
    QVERIFY2(r.err.contains(contains), qPrintable(r.err));
  }

 private Q_SLOTS:
  void tokenizeAModelFolder() {
    QTemporaryDir dir;
    qwen3_folder(dir);
    const std::string text = "Grüße, 世界! 12345 <|im_end|> done";
    write_text(dir.filePath("in.jsonl"),
               json({{"text", text}}).dump() + "\n" +
                   json({{"messages", {{{"role", "user"}, {"content", "Hi"}}, {{"role", "assistant"}, {"content", "Hello!"}}}}})
                       .dump() +
                   "\n");
    const auto r = cli({"tokenize", "--tokenizer", dir.path(), "--jsonl", dir.filePath("in.jsonl")});
    QVERIFY2(r.code == 0, qPrintable(r.err));
    const QStringList out = lines_of(r.out);
    QCOMPARE(out.size(), 2);
    QString error;
    const std::string tj = dir.filePath("tokenizer.json").toStdString();
    const json first = json::parse(out[0].toStdString());
    const json reference = tbtest::run_tokenizers_reference(tj, {text}, &error);
    QVERIFY2(error.isEmpty(), qPrintable(error));
    QCOMPARE(first["ids"].get<Ids>(), reference[0]["ids"].get<Ids>());  // add_special_tokens=False
    const json chat = json::parse(out[1].toStdString());
    const std::string rendered = chat["text"];
    QCOMPARE(QString::fromStdString(rendered),
             QString("<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\nHello!<|im_end|>\n"));
    QCOMPARE(chat["ids"].get<Ids>(), tbtest::run_tokenizers_reference(tj, {rendered}, &error)[0]["ids"].get<Ids>());
    const auto mask = chat["mask"].get<std::vector<bool>>();
    QCOMPARE(mask.size(), chat["ids"].size());
    // Trained: the think block, "Hello!" and <|im_end|>; the rest (and the final newline) masked.
    const Ids trained_ids = tbtest::run_tokenizers_reference(tj, {"<think>\n\n</think>\n\nHello!<|im_end|>"}, &error)[0]["ids"];
    QCOMPARE(size_t(std::count(mask.begin(), mask.end(), false)), trained_ids.size());
    QVERIFY(mask.front() && mask.back());

    // With a generation prompt the conversation ends with the assistant's header.
    const auto g = cli({"tokenize", "--tokenizer", dir.path(), "--jsonl", dir.filePath("in.jsonl"), "--add-generation-prompt"});
    QVERIFY2(g.code == 0, qPrintable(g.err));
    QVERIFY(QString::fromStdString(json::parse(lines_of(g.out)[1].toStdString())["text"]).endsWith("<|im_start|>assistant\n"));
  }

  // --file: one text a line, an empty line too; a config's tokenizer is the same as its file.
  void tokenizeTextLines() {
    QTemporaryDir dir;
    write_text(dir.filePath("in.txt"), "Once upon a time\n\nthe end\n");
    const auto r = cli({"tokenize", "--tokenizer", TB_SOURCE_DIR "/resources/tokenizer/tokenizer.model", "--file",
                        dir.filePath("in.txt")});
    QVERIFY2(r.code == 0, qPrintable(r.err));
    const QStringList out = lines_of(r.out);
    QCOMPARE(out.size(), 3);
    QCOMPARE(out[1], QString("{\"ids\":[]}"));
    QVERIFY(json::parse(out[0].toStdString())["ids"].size() >= 3);
    const auto c = cli({"tokenize", "--config", "tiny/full_single_device", "--file", dir.filePath("in.txt")});
    QVERIFY2(c.code == 0, qPrintable(c.err));
    QCOMPARE(c.out, r.out);
  }

  void tokenizeErrors() {
    QTemporaryDir dir;
    qwen3_folder(dir);
    write_text(dir.filePath("bad.jsonl"), "{\"text\": \"fine\"}\n{\"messages\": [\n");
    const auto bad = cli({"tokenize", "--tokenizer", dir.path(), "--jsonl", dir.filePath("bad.jsonl")});
    expectOneLineError(bad, dir.filePath("bad.jsonl") + ":2:");
    QCOMPARE(lines_of(bad.out).size(), 1);  // the good line before it was written
    expectOneLineError(cli({"tokenize", "--jsonl", dir.filePath("bad.jsonl")}), "--tokenizer or --config");
    expectOneLineError(cli({"tokenize", "--tokenizer", dir.filePath("nothing")}), "--jsonl or --file");
    expectOneLineError(cli({"tokenize", "--tokenizer", dir.filePath("nothing"), "--file", dir.filePath("bad.jsonl")}),
                       "nothing: no such file or folder");
  }

  void dataPreview() {
    const auto r = cli({"data", "preview", "--config", "tiny/lora_single_device", "-n", "2", "--json"});
    QVERIFY2(r.code == 0, qPrintable(r.err));
    const json p = json::parse(tbtest::last_line(r.out).toStdString());
    const int64_t samples = p["counts"]["samples"];
    QVERIFY(samples > 10);
    QCOMPARE(p["samples"].size(), size_t(2));
    const double masked = p["counts"]["masked_share"];
    QVERIFY2(masked > 0 && masked < 1, qPrintable(QString::number(masked)));  // train_on_input: false
    for (const auto& s : p["samples"]) {
      const auto trained = s["trained_mask"].get<std::vector<bool>>();
      QCOMPARE(trained.size(), s["ids"].size());
      QVERIFY(!trained.front());  // the first token is never predicted
      QVERIFY(std::count(trained.begin(), trained.end(), true) > 0);
      std::string text;
      for (const auto& piece : s["pieces"]) text += piece.get<std::string>();
      QVERIFY2(text.find("### Response:") != std::string::npos, text.c_str());
    }
    // The text form marks the masked text: the Alpaca prompt is inside the brackets, the answer outside.
    const auto t = cli({"data", "preview", "--config", "tiny/lora_single_device", "-n", "1"});
    QVERIFY2(t.code == 0, qPrintable(t.err));
    const int start = t.out.indexOf("--- sample 1");
    const int open = t.out.indexOf(QString::fromUtf8("\u27e6"), start), close = t.out.indexOf(QString::fromUtf8("\u27e7"), start);
    const int response = t.out.indexOf("### Response:", start);
    QVERIFY2(start > 0 && open > start && open < response && response < close && close + 1 < t.out.size(), qPrintable(t.out));
    QVERIFY2(t.out.contains(QString("samples %1,").arg(samples)), qPrintable(t.out));
  }

  void dataPreviewBadRow() {
    QTemporaryDir dir;
    write_text(dir.filePath("bad.jsonl"), "{\"instruction\": \"a\", \"output\": \"b\"}\n{\"instruction\": \"c\", \"output\": 3}\n");
    const QString file = "dataset.data_files=" + dir.filePath("bad.jsonl");
    expectOneLineError(cli({"data", "preview", "--config", "tiny/lora_single_device", file}), dir.filePath("bad.jsonl") + ":2:");
    const auto skipped = cli({"data", "preview", "--config", "tiny/lora_single_device", file, "dataset.skip_bad_rows=true", "--json"});
    QVERIFY2(skipped.code == 0, qPrintable(skipped.err));
    const json p = json::parse(tbtest::last_line(skipped.out).toStdString());
    QCOMPARE(p["counts"]["bad_rows"].get<int>(), 1);
    QCOMPARE(p["counts"]["samples"].get<int>(), 1);
    QVERIFY(p["counts"]["first_bad_row"].get<std::string>().find("bad.jsonl:2:") != std::string::npos);
  }
};

TB_TEST(TestCliData)
#include "test_cli_data.moc"
