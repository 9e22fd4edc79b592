// `source: org/name` in a dataset component, against dataset repos of the loopback Hub (tests/hub/fake_hub.py)
// shaped as real ones: yahma/alpaca-cleaned's (one JSON file, a card without configs), a card with two
// configs (Parquet shards DuckDB wrote, a JSONL default), and a script-only repo whose refs/convert/parquet
// revision holds Parquet. Each dataset is compared sample for sample with the same rows read from a local
// JSON file written here; slices are checked against the row ranges datasets' arithmetic gives (worked out
// in the comments). Offline, what was fetched is read from the cache.
#include <QtTest>

#include "test_main.h"

#include <QDir>
#include <QProcess>
#include <QTemporaryDir>

#include <filesystem>
#include <fstream>
#include <map>

#include <nlohmann/json.hpp>
#include <yaml-cpp/yaml.h>

#include "components/builtin.h"
#include "config/registry.h"
#include "data/dataset.h"
#include "data/row_sources.h"
#include "data/sentencepiece_tokenizer.h"
#include "dataset_checks.h"
#include "fake_hub.h"
#include "node_reference.h"
#include "test_support.h"

namespace fs = std::filesystem;

namespace {

const std::string kCommit = "5555555555555555555555555555555555555555";
const std::string kConverted = "6666666666666666666666666666666666666666";
const std::string kRowsFile = TB_SOURCE_DIR "/resources/datasets/tiny_instruct.json";  // 2100 rows

std::shared_ptr<tb::data::Dataset> build(const std::string& yaml) {
  static const auto tok = [] {
    tb::data::SentencePieceOptions o;
    return tb::data::SentencePieceTokenizer::from_file(TB_SOURCE_DIR "/resources/tokenizer/tokenizer.model", o);
  }();
  return tb::components::builtin().build<tb::data::DatasetFactory>(YAML::Load(yaml))({tok, 0});
}

using tbtest::compare_samples;

}  // namespace

class TestHubDatasets : public QObject {
  Q_OBJECT
  QTemporaryDir dir_;
  std::unique_ptr<tbtest::FakeHub> server_;
  nlohmann::json rows_;  // tiny_instruct.json

  std::string path(const std::string& name) const { return dir_.filePath(QString::fromStdString(name)).toStdString(); }

  // Rows [begin, end) of tiny_instruct.json as a local JSON file: what a slice must read.
  std::string localSlice(size_t begin, size_t end) {
    const std::string file = path("slice_" + std::to_string(begin) + "_" + std::to_string(end) + ".json");
    nlohmann::json part = nlohmann::json::array();
    for (size_t i = begin; i < end; ++i) part.push_back(rows_[i]);
    tbtest::write_file(file, part.dump());
    return file;
  }
  std::shared_ptr<tb::data::Dataset> local(size_t begin, size_t end) {
    return build("_component_: alpaca_dataset\nsource: json\ndata_files: " + localSlice(begin, end));
  }

 private Q_SLOTS:
  void initTestCase() {
    QVERIFY(dir_.isValid());
    rows_ = nlohmann::json::parse(tbtest::read_file(kRowsFile));
    QCOMPARE(rows_.size(), size_t(2100));
    // Parquet shards written by DuckDB: first/train-0000{0,1}-of-00002 (rows 0-999, 1000-1999), first/test
    // (rows 2000-2099), and the script repo's converted copy default/train/0000.parquet (all rows).
    const QString ref = QString(TB_SOURCE_DIR) + "/tests/reference/parquet_js";
    QString error;
    const QString node = tbtest::node_for_reference(ref, "@duckdb/node-api", &error);
    QVERIFY2(!node.isEmpty(), qPrintable(error));
    const std::string out = path("parquet");
    fs::create_directories(out);
    const std::string script =
        "import { DuckDBInstance } from '@duckdb/node-api';\n"
        "const db = await DuckDBInstance.create(':memory:');\n"
        "const con = await db.connect();\n"
        "await con.run('SET threads = 1');\n"
        "await con.run(\"CREATE TABLE t AS SELECT *, row_number() OVER () AS rn FROM read_json('" + kRowsFile + "')\");\n"
        "const copy = (where, file) => con.run(`COPY (SELECT * EXCLUDE (rn) FROM t WHERE ${where} ORDER BY rn) TO '" + out +
        "/${file}' (FORMAT parquet, COMPRESSION zstd, ROW_GROUP_SIZE 300)`);\n"
        "await copy('rn <= 1000', 'train0.parquet');\n"
        "await copy('rn > 1000 AND rn <= 2000', 'train1.parquet');\n"
        "await copy('rn > 2000', 'test.parquet');\n"
        "await copy('true', 'all.parquet');\n"
        // The named builders' repos: SAMSum's and CNN / DailyMail's columns over the first 300 rows.
        "const named = (select, file) => con.run(`COPY (SELECT ${select} FROM t WHERE rn <= 300 ORDER BY rn) TO '" + out +
        "/${file}' (FORMAT parquet)`);\n"
        "await named('instruction AS dialogue, output AS summary', 'samsum.parquet');\n"
        "await named('output AS article, instruction AS highlights', 'cnn.parquet');\n";
    QProcess writer;
    writer.setWorkingDirectory(ref);
    writer.start(node, {"--input-type=module", "-e", QString::fromStdString(script)});
    QVERIFY(writer.waitForFinished(120000));
    QVERIFY2(writer.exitCode() == 0, writer.readAllStandardError().constData());
    std::string jsonl;
    for (const auto& r : rows_) jsonl += r.dump() + "\n";
    tbtest::write_file(path("second.jsonl"), jsonl);

    // The same 300 rows under other columns, as JSON Lines: the grammar and wikitext repos' files.
    const auto renamed = [&](const std::string& name, const std::map<std::string, std::string>& columns, size_t begin) {
      std::string lines;
      for (size_t i = begin; i < begin + 300; ++i) {
        nlohmann::json row;
        for (const auto& [to, from] : columns) row[to] = rows_[i][from];
        lines += row.dump() + "\n";
      }
      tbtest::write_file(path(name), lines);
    };
    renamed("grammar.jsonl", {{"input", "instruction"}, {"output", "output"}}, 0);
    renamed("wiki103.jsonl", {{"page", "output"}}, 0);
    renamed("wiki2.jsonl", {{"page", "output"}}, 300);
    const auto file = [](const std::string& p) { return nlohmann::json{{"file", p}, {"lfs", true}}; };
    const std::string wiki_card =
        "---\nconfigs:\n- config_name: wikitext-103-v1\n  data_files:\n  - split: train\n    path: wikitext-103-v1/train-*\n"
        "- config_name: wikitext-2-v1\n  data_files:\n  - split: train\n    path: wikitext-2-v1/train-*\n---\n";
    const auto repo = [&](const std::string& id, const nlohmann::json& files) {
      return nlohmann::json{{"type", "dataset"}, {"id", id}, {"commits", {{kCommit, {{"files", files}}}}}, {"refs", {{"main", kCommit}}}};
    };
    const auto script_repo = [&](const std::string& id, const nlohmann::json& converted) {
      return nlohmann::json{{"type", "dataset"},
                            {"id", id},
                            {"commits", {{kCommit, {{"files", {{"README.md", {{"text", "# scripted\n"}}},
                                                                {id.substr(id.find('/') + 1) + ".py", {{"text", "import datasets\n"}}}}}}},
                                         {kConverted, {{"files", converted}}}}},
                            {"refs", {{"main", kCommit}, {"refs/convert/parquet", kConverted}}}};
    };
    const std::string card =
        "---\nconfigs:\n- config_name: first\n  data_files:\n  - split: train\n    path: first/train-*.parquet\n"
        "  - split: test\n    path: first/test.parquet\n- config_name: second\n  default: true\n  data_files: second/*.jsonl\n---\n# Two configs\n";
    const nlohmann::json repos = {
        {"repos",
         {{{"type", "dataset"}, {"id", "org/alpaca-cleaned"},
           {"commits", {{kCommit, {{"files", {{"README.md", {{"text", "---\nlicense: cc-by-4.0\n---\n# Alpaca, cleaned\n"}}},
                                              {"alpaca_data_cleaned.json", file(kRowsFile)}}}}}}},
           {"refs", {{"main", kCommit}}}},
          {{"type", "dataset"}, {"id", "org/two-configs"},
           {"commits", {{kCommit, {{"files", {{"README.md", {{"text", card}}},
                                              {"first/train-00000-of-00002.parquet", file(out + "/train0.parquet")},
                                              {"first/train-00001-of-00002.parquet", file(out + "/train1.parquet")},
                                              {"first/test.parquet", file(out + "/test.parquet")},
                                              {"second/data.jsonl", file(path("second.jsonl"))}}}}}}},
           {"refs", {{"main", kCommit}}}},
          {{"type", "dataset"}, {"id", "org/scripted"},
           {"commits", {{kCommit, {{"files", {{"README.md", {{"text", "# A script dataset\n"}}},
                                              {"scripted.py", {{"text", "import datasets\n"}}}}}}},
                        {kConverted, {{"files", {{"default/train/0000.parquet", file(out + "/all.parquet")}}}}}}},
           {"refs", {{"main", kCommit}, {"refs/convert/parquet", kConverted}}}},
          // The default sources of torchtune's named builders, in the shapes those repos have on the Hub.
          script_repo("Samsung/samsum", {{"samsum/train/0000.parquet", file(out + "/samsum.parquet")}}),
          repo("liweili/c4_200m", {{"train.jsonl", file(path("grammar.jsonl"))}}),
          repo("EleutherAI/wikitext_document_level", {{"README.md", {{"text", wiki_card}}},
                                                      {"wikitext-103-v1/train-00000-of-00001.jsonl", file(path("wiki103.jsonl"))},
                                                      {"wikitext-2-v1/train-00000-of-00001.jsonl", file(path("wiki2.jsonl"))}}),
          script_repo("ccdv/cnn_dailymail", {{"1.0.0/train/0000.parquet", file(out + "/samsum.parquet")},
                                             {"3.0.0/train/0000.parquet", file(out + "/cnn.parquet")}})}}};
    try {
      server_ = std::make_unique<tbtest::FakeHub>(repos, dir_.path());
    } catch (const std::exception& e) {
      QFAIL(e.what());
    }
    qputenv("HF_ENDPOINT", server_->endpoint().toUtf8());
    qputenv("HF_HOME", QString::fromStdString(path("hf_home")).toUtf8());
    qputenv("HF_HUB_CACHE", QString::fromStdString(path("cache")).toUtf8());
    qunsetenv("HF_HUB_OFFLINE");
    qunsetenv("HF_TOKEN");
  }

  void cleanupTestCase() { server_.reset(); }

  // torchtune's alpaca_cleaned_dataset names yahma/alpaca-cleaned: a repo of that shape (one JSON file, a
  // card without configs: datasets' default patterns make it the train split) reads as its file does.
  void aRepoOfAlpacaCleanedShape() {
    compare_samples(*build("_component_: alpaca_cleaned_dataset\nsource: org/alpaca-cleaned"), *local(0, 2100));
    QVERIFY(fs::exists(path("cache") + "/datasets--org--alpaca-cleaned/snapshots/" + kCommit + "/alpaca_data_cleaned.json"));
  }

  // The card's configs: `name: first` reads its two shards in order; train[:50%] of its 2000 rows is rows
  // [0, 1000) (50 * 2000 / 100, exact), train[95%:] is [1900, 2000); `split: test` its own file; no name:
  // the default config (default: true), the JSONL. Only the files a config and split read are fetched.
  void cardConfigsSplitsAndSlices() {
    const std::string base = "_component_: alpaca_dataset\nsource: org/two-configs\n";
    compare_samples(*build(base + "name: first\nsplit: train[:50%]"), *local(0, 1000));
    const fs::path snapshot = path("cache") + "/datasets--org--two-configs/snapshots/" + kCommit;
    QVERIFY(fs::exists(snapshot / "first/train-00000-of-00002.parquet"));
    QVERIFY(!fs::exists(snapshot / "first/test.parquet"));  // not asked for yet
    QVERIFY(!fs::exists(snapshot / "second/data.jsonl"));
    compare_samples(*build(base + "name: first\nsplit: train[95%:]"), *local(1900, 2000));
    compare_samples(*build(base + "name: first\nsplit: test"), *local(2000, 2100));
    compare_samples(*build(base + "name: first\nsplit: test[:10]+train[-5:]"), [&] {
      nlohmann::json part = nlohmann::json::array();
      for (size_t i = 2000; i < 2010; ++i) part.push_back(rows_[i]);
      for (size_t i = 1995; i < 2000; ++i) part.push_back(rows_[i]);
      tbtest::write_file(path("joined.json"), part.dump());
      return build("_component_: alpaca_dataset\nsource: json\ndata_files: " + path("joined.json"));
    }().operator*());
    compare_samples(*build(base), *local(0, 2100));  // the default config
    try {
      build(base + "name: first\nsplit: validation");
      QFAIL("a split the repo does not have was read");
    } catch (const std::exception& e) {
      QVERIFY2(std::string(e.what()).find("validation") != std::string::npos && std::string(e.what()).find("train") != std::string::npos &&
                   std::string(e.what()).find("test") != std::string::npos,
               e.what());
    }
  }

  // A repo of only a loading script: its refs/convert/parquet revision (the Hub's Parquet copy) is read.
  void aScriptRepoReadsItsParquetConversion() {
    compare_samples(*build("_component_: alpaca_dataset\nsource: org/scripted\nsplit: train[:100]"), *local(0, 100));
    QVERIFY(fs::exists(path("cache") + "/datasets--org--scripted/snapshots/" + kConverted + "/default/train/0000.parquet"));
  }

  // A torchtune-style run naming the Hub dataset trains as on its local file, step for step; its log says
  // what it waited for before the run began.
  void aRunFetchesItsDatasetFirst() {
    const auto run = [&](const QStringList& dataset, const std::string& out, const QString& cache) {
      QProcess p;
      QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
      env.insert("HF_HUB_CACHE", cache);
      p.setProcessEnvironment(env);
      p.setWorkingDirectory(TB_SOURCE_DIR);
      p.start(qEnvironmentVariable("TB_CLI"), QStringList{"run", "lora_finetune_single_device", "--config", "tiny/lora_single_device",
                                                           "output_dir=" + QString::fromStdString(out), "epochs=1",
                                                           "max_steps_per_epoch=2", "num_threads=1"} + dataset);
      p.waitForFinished(300000);
      return std::make_pair(p.exitCode(), tbtest::read_file(out + "/logs/metrics.jsonl"));
    };
    const auto losses = tbtest::step_losses;
    const auto [local_code, local_log] = run({}, path("run_local"), QString::fromStdString(path("cache_run")));
    QCOMPARE(local_code, 0);
    const auto [hub_code, hub_log] = run({"dataset.source=org/alpaca-cleaned", "dataset.data_files=null"}, path("run_hub"),
                                         QString::fromStdString(path("cache_run")));
    QVERIFY2(hub_code == 0, hub_log.c_str());
    QCOMPARE(losses(hub_log), losses(local_log));
    QCOMPARE(losses(hub_log).size(), size_t(2));
    QVERIFY2(hub_log.find("waiting for org/alpaca-cleaned (dataset) from the Hub") != std::string::npos, hub_log.c_str());
  }

  // torchtune's named builders with their default `source` (and config: wikitext's subset, CNN / DailyMail's
  // 3.0.0) and columns read what the same rows under those columns read from a local file.
  void namedBuildersReadTheirDefaultSources() {
    const auto local_named = [&](const std::string& name, const std::string& component, const std::string& args,
                                 const std::map<std::string, std::string>& columns, size_t begin) {
      nlohmann::json part = nlohmann::json::array();
      for (size_t i = begin; i < begin + 300; ++i) {
        nlohmann::json row;
        for (const auto& [to, from] : columns) row[to] = rows_[i][from];
        part.push_back(row);
      }
      tbtest::write_file(path(name), part.dump());
      return build("_component_: " + component + "\nsource: json\ndata_files: " + path(name) + "\n" + args);
    };
    try {
    compare_samples(*build("_component_: samsum_dataset"),
                    *local_named("samsum.json", "instruct_dataset", "column_map: {input: dialogue, output: summary}",
                                 {{"dialogue", "instruction"}, {"summary", "output"}}, 0));
    compare_samples(*build("_component_: grammar_dataset"),
                    *local_named("grammar.json", "instruct_dataset", "", {{"input", "instruction"}, {"output", "output"}}, 0));
    const auto wiki = [&](size_t begin) {
      return local_named("wiki" + std::to_string(begin) + ".json", "text_completion_dataset", "column: page", {{"page", "output"}}, begin);
    };
    compare_samples(*build("_component_: wikitext_dataset"), *wiki(0));
    compare_samples(*build("_component_: wikitext_dataset\nsubset: wikitext-2-v1"), *wiki(300));
    compare_samples(*build("_component_: cnn_dailymail_articles_dataset"),
                    *local_named("cnn.json", "text_completion_dataset", "column: article", {{"article", "output"}}, 0));
      // A Parquet file reads only the columns a dataset uses (those it lacks left out; none of them: all).
      tb::data::Row row;
      QVERIFY(tb::data::open_rows("parquet", {path("parquet") + "/samsum.parquet"}, std::nullopt, {}, {"summary", "absent"})->next(row));
      QCOMPARE(row.value.size(), size_t(1));
      QCOMPARE(row.value["summary"].get<std::string>(), rows_[0]["output"].get<std::string>());
      QVERIFY(tb::data::open_rows("parquet", {path("parquet") + "/samsum.parquet"}, std::nullopt, {}, {"absent"})->next(row));
      QCOMPARE(row.value.size(), size_t(2));
    } catch (const std::exception& e) {
      QFAIL(e.what());
    }
  }

  // Offline, what was fetched reads from the cache; what was not names the download to run.
  void offlineReadsTheCache() {
    qputenv("HF_HUB_OFFLINE", "1");
    compare_samples(*build("_component_: alpaca_dataset\nsource: org/two-configs\nname: first\nsplit: train[:50%]"), *local(0, 1000));
    try {
      build("_component_: alpaca_dataset\nsource: org/never-fetched");
      QFAIL("a dataset never fetched was read offline");
    } catch (const std::exception& e) {
      QVERIFY2(std::string(e.what()).find("run `tunebench-cli download org/never-fetched --repo-type dataset`") != std::string::npos, e.what());
    }
    qunsetenv("HF_HUB_OFFLINE");
  }
};

TB_TEST(TestHubDatasets)
#include "test_hub_datasets.moc"
