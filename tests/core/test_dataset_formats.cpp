// Data as people keep it: the same rows in JSON Lines, CSV and TSV (quoted commas, newlines and quotes,
// CRLF) give the same samples; a conversation column in a CSV cell; alpaca_cleaned_dataset on a local
// file; bad rows named by file and line or, with skip_bad_rows, skipped and counted; samples whose every
// label is masked dropped and counted; truncation counted.
#include <QtTest>

#include "test_main.h"

#include <yaml-cpp/yaml.h>

#include "components/builtin.h"
#include "config/registry.h"
#include "data/csv_rows.h"
#include "data/dataset.h"
#include "data/sentencepiece_tokenizer.h"
#include "dataset_checks.h"
#include "test_support.h"

using tb::data::DatasetFactory;
using tb::data::kIgnoreIndex;

namespace {

std::string fixture(const char* name) { return std::string(TB_SOURCE_DIR "/tests/data/datasets/") + name; }

std::shared_ptr<tb::data::SentencePieceTokenizer> tokenizer(std::optional<int64_t> max_seq_len = std::nullopt) {
  tb::data::SentencePieceOptions o;
  o.max_seq_len = max_seq_len;
  return tb::data::SentencePieceTokenizer::from_file(TB_SOURCE_DIR "/resources/tokenizer/tokenizer.model", o);
}

std::shared_ptr<tb::data::Dataset> build(const std::string& yaml,
                                         std::shared_ptr<const tb::data::Tokenizer> tok = tokenizer()) {
  return tb::components::builtin().build<DatasetFactory>(YAML::Load(yaml))({tok, 0});
}

std::string alpaca(const std::string& source, const std::string& file, const std::string& extra = "") {
  return "_component_: alpaca_dataset\nsource: " + source + "\ndata_files: " + fixture(file.c_str()) + "\n" + extra;
}

using tbtest::compare_samples;

}  // namespace

class TestDatasetFormats : public QObject {
  Q_OBJECT
 private Q_SLOTS:
  void csvFieldsAsRfc4180() {
    const auto rows = tb::data::parse_delimited_rows("a,b,c\r\n\"x, \"\"y\"\"\",,\"two\nlines\"\r\n\r\n1,2,3", "t.csv", ',');
    QCOMPARE(rows.size(), size_t{2});
    QCOMPARE(rows[0].value["a"].get<std::string>(), std::string("x, \"y\""));
    QVERIFY(rows[0].value["b"].is_null());  // empty field: null, as Hugging Face datasets reads it
    QCOMPARE(rows[0].value["c"].get<std::string>(), std::string("two\nlines"));
    QCOMPARE(rows[0].line, 2);
    QCOMPARE(rows[1].line, 5);  // the blank line 4 is skipped; lines count inside quoted fields
    QCOMPARE(rows[1].value["c"].get<std::string>(), std::string("3"));
  }

  void csvAndTsvGiveTheSamplesOfJsonl() {
    const auto jsonl = build(alpaca("json", "alpaca_quoted.jsonl"));
    QCOMPARE(jsonl->size(), size_t{3});
    compare_samples(*build(alpaca("csv", "alpaca_quoted.csv")), *jsonl);
    compare_samples(*build(alpaca("csv", "alpaca_quoted.tsv")), *jsonl);  // tab from the extension
    // An explicit delimiter wins over the extension: the TSV read with commas has the wrong columns.
    QVERIFY_THROWS_EXCEPTION(std::exception, build(alpaca("csv", "alpaca_quoted.tsv", "delimiter: ','")));
  }

  void chatConversationInACsvCell() {
    const std::string chat =
        "_component_: chat_dataset\nconversation_column: messages\nconversation_style: openai\n";
    compare_samples(*build(chat + "source: csv\ndata_files: " + fixture("chat_small.csv")),
                    *build(chat + "source: json\ndata_files: " + fixture("chat_small.jsonl")));
  }

  void alpacaCleanedReadsALocalCopy() {
    const std::string files = "source: json\ndata_files: " + fixture("alpaca_small.json") + "\n";
    compare_samples(*build("_component_: torchtune.datasets.alpaca_cleaned_dataset\n" + files),
                    *build("_component_: alpaca_dataset\n" + files));
    // Its default source, a Hub dataset, offline and not in the cache: the download to run.
    const QByteArray offline = qgetenv("HF_HUB_OFFLINE"), cache = qgetenv("HF_HUB_CACHE");
    QTemporaryDir empty;
    qputenv("HF_HUB_OFFLINE", "1");
    qputenv("HF_HUB_CACHE", empty.path().toUtf8());
    try {
      build("_component_: alpaca_cleaned_dataset");
      QFAIL("a Hub source not in the cache was read offline");
    } catch (const std::exception& e) {
      QVERIFY2(std::string(e.what()).find("dataset yahma/alpaca-cleaned is not in the cache") != std::string::npos &&
                   std::string(e.what()).find("run `tunebench-cli download yahma/alpaca-cleaned --repo-type dataset`") != std::string::npos,
               e.what());
    }
    if (offline.isNull()) qunsetenv("HF_HUB_OFFLINE");
    else qputenv("HF_HUB_OFFLINE", offline);
    if (cache.isNull()) qunsetenv("HF_HUB_CACHE");
    else qputenv("HF_HUB_CACHE", cache);
  }

  // `field:` (load_dataset("json", field="data")): records under a key of a top-level object read as the
  // same records in a plain array; a key that holds no list, or a file that is no object, says so.
  void jsonRecordsUnderAField() {
    QTemporaryDir dir;
    const std::string records = tbtest::read_file(fixture("alpaca_small.json"));
    const std::string wrapped = dir.filePath("wrapped.json").toStdString();
    tbtest::write_file(wrapped, "{\"version\": \"1.0\", \"data\": " + records + "}");
    compare_samples(*build("_component_: alpaca_dataset\nsource: json\nfield: data\ndata_files: " + wrapped),
                    *build(alpaca("json", "alpaca_small.json")));
    for (const auto& [field, message] : {std::pair<std::string, std::string>{"version", "no list of records under the key 'version'"},
                                         {"missing", "no list of records under the key 'missing'"}}) {
      try {
        build("_component_: alpaca_dataset\nsource: json\nfield: " + field + "\ndata_files: " + wrapped);
        QFAIL("a field without records was read");
      } catch (const std::exception& e) {
        QVERIFY2(std::string(e.what()).find(wrapped + ":1: field: " + message) != std::string::npos, e.what());
      }
    }
    try {
      build("_component_: alpaca_dataset\nsource: json\nfield: data\ndata_files: " + fixture("alpaca_small.json"));
      QFAIL("an array was read as an object");
    } catch (const std::exception& e) {
      QVERIFY2(std::string(e.what()).find("needs a JSON object at the top") != std::string::npos, e.what());
    }
  }

  void badCsvRowNamesItsLine() {
    try {
      build(alpaca("csv", "alpaca_bad_fields.csv"));
      QFAIL("a row with two fields was accepted");
    } catch (const std::exception& e) {
      QCOMPARE(std::string(e.what()), fixture("alpaca_bad_fields.csv") + ":4: expected 3 fields (the header's), found 2");
    }
  }

  void skipBadRowsCountsThem() {
    const auto csv = build(alpaca("csv", "alpaca_bad_fields.csv", "skip_bad_rows: true"));
    QCOMPARE(csv->size(), size_t{2});
    const auto stats = csv->stats();
    QCOMPARE(stats.rows, size_t{3});
    QCOMPARE(stats.bad_rows, size_t{1});
    QCOMPARE(stats.first_bad_row, fixture("alpaca_bad_fields.csv") + ":4: expected 3 fields (the header's), found 2");
    QCOMPARE(stats.warnings().size(), size_t{1});
    QVERIFY(stats.warnings()[0].find("skipped 1 bad row") == 0);

    // A JSON Lines file whose third line is not JSON: the first row survives.
    const auto jsonl = build(alpaca("json", "alpaca_bad_json.jsonl", "skip_bad_rows: true"));
    QCOMPARE(jsonl->size(), size_t{1});
    QVERIFY(jsonl->stats().first_bad_row.rfind(fixture("alpaca_bad_json.jsonl") + ":3: invalid JSON", 0) == 0);
    // Rows that parse but fail later (a missing column) are bad rows too.
    const auto missing = build(alpaca("json", "alpaca_missing_output.json", "skip_bad_rows: true"));
    QCOMPARE(missing->stats().bad_rows, size_t{1});
    QCOMPARE(missing->size(), missing->stats().rows - 1);
  }

  void fullyMaskedSamplesAreDroppedAndReported() {
    // 12 tokens hold only the Alpaca preamble, which train_on_input: false masks: nothing to learn.
    const auto ds = build(alpaca("json", "alpaca_small.json", "train_on_input: false"), tokenizer(12));
    const auto stats = ds->stats();
    QCOMPARE(stats.rows, size_t{4});
    QCOMPARE(stats.fully_masked, size_t{4});
    QCOMPARE(ds->size(), size_t{0});
    QCOMPARE(stats.first_fully_masked, fixture("alpaca_small.json") + ":2");
    QVERIFY(stats.warnings()[0].find("dropped 4 sample(s) whose every label is masked") == 0);

    // Trained on the prompt, the same cut keeps every sample, each counted as truncated.
    const auto trained = build(alpaca("json", "alpaca_small.json", "train_on_input: true"), tokenizer(12));
    QCOMPARE(trained->size(), size_t{4});
    QCOMPARE(trained->stats().truncated, size_t{4});
    QCOMPARE(trained->stats().fully_masked, size_t{0});
    size_t tokens = 0, labelled = 0;
    for (size_t i = 0; i < trained->size(); ++i) {
      const auto s = trained->get(i);
      tokens += s.tokens.size();
      for (auto l : s.labels) labelled += l != kIgnoreIndex;
    }
    QCOMPARE(trained->stats().tokens, tokens);
    QCOMPARE(trained->stats().trained_tokens, labelled);
  }

  void textSourceAndCounts() {
    const auto ds = build("_component_: text_completion_dataset\nsource: text\ndata_files: " + fixture("docs.txt"));
    QVERIFY(ds->size() > 0);
    QCOMPARE(ds->stats().samples, ds->size());
    QCOMPARE(ds->stats().rows, ds->size());
  }
};

TB_TEST(TestDatasetFormats)
#include "test_dataset_formats.moc"
