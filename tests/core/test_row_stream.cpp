// Datasets read their rows as a stream: every format row for row as the whole-file readers read it, the
// first pass's progress (rows, bytes, the end), split slices taken from the stream, samples kept flat, a
// preview that shows the first rows before it counts the rest, and a large file whose rows are never held
// (the peak memory of the real CLI, measured by the kernel, against the file's size).
#include <QtTest>

#include "test_main.h"
#include "test_support.h"

#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>

#include <nlohmann/json.hpp>
#include <yaml-cpp/yaml.h>

#include "components/builtin.h"
#include "config/config.h"
#include "config/registry.h"
#include "data/csv_rows.h"
#include "data/dataset.h"
#include "data/row_sources.h"
#include "data/row_stream.h"
#include "data/sentencepiece_tokenizer.h"
#include "inference/data_preview.h"

namespace {

std::vector<tb::data::Row> all_rows(tb::data::RowReader& reader) {
  std::vector<tb::data::Row> rows;
  for (tb::data::Row row; reader.next(row);) rows.push_back(std::move(row));
  return rows;
}

std::shared_ptr<tb::data::Tokenizer> tokenizer() {
  return tb::data::SentencePieceTokenizer::from_file(TB_SOURCE_DIR "/resources/tokenizer/tokenizer.model", {});
}

// A text file of `n` documents "document i".
std::string documents(const QTemporaryDir& dir, int n) {
  const std::string path = dir.filePath("docs.txt").toStdString();
  std::ofstream out(path);
  for (int i = 0; i < n; ++i) out << "document " << i << "\n";
  return path;
}

// The peak resident memory (KiB) of a child process running `argv`, as the kernel counted it.
long peak_rss_kib(const std::vector<std::string>& argv, int* status) {
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  const pid_t pid = fork();
  if (pid == 0) {
    freopen("/dev/null", "w", stdout);
    execv(args[0], args.data());
    _exit(127);
  }
  struct rusage usage {};
  wait4(pid, status, 0, &usage);
  return usage.ru_maxrss;
}

}  // namespace

class TestRowStream : public QObject {
  Q_OBJECT
 private Q_SLOTS:
  void jsonLinesStreamInOrderWithProgress() {
    QTemporaryDir dir;
    const std::string path = dir.filePath("rows.jsonl").toStdString();
    const int n = 150000;
    {
      std::ofstream out(path);
      for (int i = 0; i < n; ++i) out << "{\"text\": \"row " << i << "\"}\n" << (i == 7 ? "\n{not json\n" : "");
    }
    std::vector<tb::data::ReadProgress> reports;
    const tb::data::ReadProgressScope scope([&](const tb::data::ReadProgress& p) { reports.push_back(p); }, 0.0);
    const auto stream = tb::data::open_rows("json", {path});
    const auto rows = all_rows(*stream);
    QCOMPARE(int(rows.size()), n + 1);  // the bad line is a row, with its error, at its line
    QCOMPARE(rows[8].line, 10);
    QVERIFY(!rows[8].error.empty());
    QCOMPARE(rows[9].value["text"].get<std::string>(), std::string("row 8"));
    QCOMPARE(rows.back().value["text"].get<std::string>(), "row " + std::to_string(n - 1));
    QCOMPARE(rows.back().line, n + 2);
    // A report after each 64k rows (the interval is 0 here), then one at the end.
    QCOMPARE(int(reports.size()), 3);
    QCOMPARE(reports[0].rows, uint64_t(65536));
    QCOMPARE(reports[1].rows, uint64_t(131072));
    QVERIFY(reports[0].bytes_read < reports[1].bytes_read && reports[1].bytes_read < reports[1].bytes_total);
    QVERIFY(reports[2].done);
    QCOMPARE(reports[2].rows, uint64_t(n + 1));
    QCOMPARE(reports[2].bytes_read, reports[2].bytes_total);
    QCOMPARE(reports[2].files, path);
    QVERIFY2(tb::data::read_progress_text(reports[1]).find("131,072 rows (") == 0,
             tb::data::read_progress_text(reports[1]).c_str());
  }

  void csvRecordsStreamAsTheWholeFileReads() {
    // Quoted newlines and delimiters, "" for a quote, CRLF, blank lines, a byte order mark, an unclosed
    // quote at the end: each row where it starts.
    const std::string text = "\xEF\xBB\xBFq,a\r\n\"one\ntwo\",\"x, \"\"y\"\"\"\r\n\r\nplain,\n\nlast,\"open\nend";
    QTemporaryDir dir;
    const std::string path = dir.filePath("t.csv").toStdString();
    tbtest::write_file(path, text);
    const auto rows = tb::data::read_delimited_rows(path, "t.csv", ',');
    QCOMPARE(int(rows.size()), 3);
    QCOMPARE(rows[0].line, 2);
    QCOMPARE(rows[0].value["q"].get<std::string>(), std::string("one\ntwo"));
    QCOMPARE(rows[0].value["a"].get<std::string>(), std::string("x, \"y\""));
    QCOMPARE(rows[1].line, 5);
    QVERIFY(rows[1].value["a"].is_null());
    QCOMPARE(rows[2].line, 7);
    QVERIFY(rows[2].error.find("not closed") != std::string::npos);
    // The stream of two files: the second's rows follow the first's, each named by its own file.
    const auto stream = tb::data::open_rows("csv", {path, path});
    const auto both = all_rows(*stream);
    QCOMPARE(int(both.size()), 6);
    QCOMPARE(both[3].value, rows[0].value);
    QCOMPARE(both[3].file, path);
  }

  void slicesAreTakenFromTheStream() {
    // datasets' arithmetic (arrow_reader.py): train[95%:] of 1000 rows is rows 950..999; train[-3:] the last
    // three; train[10:13] rows 10..12; train[:1%]+train[-1:] row 0..9 then 999.
    QTemporaryDir dir;
    const std::string path = documents(dir, 1000);
    const auto tok = tokenizer();
    const auto texts = [&](const std::string& split) {
      const auto ds = tb::components::builtin().build<tb::data::DatasetFactory>(YAML::Load(
          "{_component_: text_completion_dataset, source: text, data_files: '" + path + "', split: '" + split + "'}"))({tok, 0});
      std::vector<std::string> out;
      for (size_t i = 0; i < ds->size(); ++i) out.push_back(tok->decode(ds->get(i).tokens));
      return out;
    };
    const auto tail = texts("train[95%:]");
    QCOMPARE(int(tail.size()), 50);
    QCOMPARE(tail.front(), std::string("document 950"));
    QCOMPARE(texts("train[-3:]"), (std::vector<std::string>{"document 997", "document 998", "document 999"}));
    QCOMPARE(texts("train[10:13]"), (std::vector<std::string>{"document 10", "document 11", "document 12"}));
    const auto joined = texts("train[:1%]+train[-1:]");
    QCOMPARE(int(joined.size()), 11);
    QCOMPARE(joined[9], std::string("document 9"));
    QCOMPARE(joined[10], std::string("document 999"));
  }

  void samplesAreKeptFlat() {
    tb::data::SampleStore store;
    tb::data::Sample a{{1, 2, 3}, {2, 3, -100}, {}, {}};
    tb::data::Sample packed{{5, 6, 0, 0}, {6, -100, -100, -100}, {0, 1, 2, 3}, {2, 2}};
    tb::data::Sample empty;
    for (const auto* s : {&a, &packed, &empty}) store.add(*s);
    QCOMPARE(int(store.size()), 3);
    for (size_t i = 0; i < 3; ++i) {
      const auto& want = i == 0 ? a : i == 1 ? packed : empty;
      const auto got = store.get(i);
      QCOMPARE(got.tokens, want.tokens);
      QCOMPARE(got.labels, want.labels);
      QCOMPARE(got.input_pos, want.input_pos);
      QCOMPARE(got.seq_lens, want.seq_lens);
    }
    QVERIFY_EXCEPTION_THROWN(store.get(3), std::out_of_range);
    tb::data::Sample wide{{int64_t(1) << 40}, {-100}, {}, {}};
    QVERIFY_EXCEPTION_THROWN(store.add(wide), std::out_of_range);
  }

  void aPreviewShowsTheFirstRowsBeforeCounting() {
    QTemporaryDir dir;
    const std::string path = documents(dir, 2500);
    tb::config::Config cfg;
    cfg.root = YAML::Load("{tokenizer: {_component_: torchtune.models.llama2.llama2_tokenizer, path: '" TB_SOURCE_DIR
                          "/resources/tokenizer/tokenizer.model'}, dataset: {_component_: text_completion_dataset, "
                          "source: text, data_files: '" + path + "'}}");
    std::vector<tb::inference::DataPreview> first;
    const auto all = tb::inference::preview_dataset(cfg, 2, [&](const tb::inference::DataPreview& p) { first.push_back(p); });
    QCOMPARE(int(first.size()), 1);
    QCOMPARE(first[0].stats.rows, size_t(tb::inference::kPreviewRows));
    QVERIFY(first[0].stats.row_limit_reached);
    QCOMPARE(first[0].total_samples, size_t(tb::inference::kPreviewRows));
    QCOMPARE(int(first[0].samples.size()), 2);
    QVERIFY(tb::inference::preview_counts_text(first[0]).find("the first 1000 rows: ") == 0);
    QCOMPARE(all.stats.rows, size_t(2500));
    QVERIFY(!all.stats.row_limit_reached);
    QCOMPARE(all.total_samples, size_t(2500));
    QCOMPARE(all.samples[1].tokens.size(), first[0].samples[1].tokens.size());
    // A dataset within the first rows is read once: no first-rows preview.
    first.clear();
    cfg.root["dataset"]["data_files"] = documents(dir, 10);
    QCOMPARE(tb::inference::preview_dataset(cfg, 2, [&](const tb::inference::DataPreview& p) { first.push_back(p); })
                 .stats.rows,
             size_t(10));
    QVERIFY(first.empty());
  }

  void aLargeFileIsStreamedNotHeld() {
    // 40,000 rows of 4 KiB (160 MiB) whose dataset keeps a few tokens each: the CLI's peak memory grows by
    // far less than the file. Holding the parsed rows, as the reader did before, costs more than the file.
    QTemporaryDir dir;
    const auto write = [&](const QString& name, int n) {
      const std::string path = dir.filePath(name).toStdString();
      std::ofstream out(path);
      const std::string meta(4000, 'm');
      for (int i = 0; i < n; ++i) out << "{\"text\": \"row " << i << "\", \"meta\": \"" << meta << "\"}\n";
      return path;
    };
    const std::string small = write("small.jsonl", 100), large = write("large.jsonl", 40000);
    const auto peak = [&](const std::string& file) {
      int status = 0;
      const long kib = peak_rss_kib({qEnvironmentVariable("TB_CLI").toStdString(), "data", "preview", "--json", "--config",
                                     "tiny/eval_stories", "dataset.source=json", "dataset.data_files=" + file},
                                    &status);
      if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) return -1L;
      return kib;
    };
    const long base = peak(small), big = peak(large);
    QVERIFY2(base > 0 && big > 0, "data preview failed");
    const long file_kib = long(QFileInfo(QString::fromStdString(large)).size() / 1024);
    QVERIFY2(big - base < file_kib / 4, qPrintable(QString("peak %1 KiB, with 100 rows %2 KiB, the file %3 KiB")
                                                       .arg(big)
                                                       .arg(base)
                                                       .arg(file_kib)));
  }
};

TB_TEST(TestRowStream)
#include "test_row_stream.moc"
