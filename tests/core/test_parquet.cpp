// The Parquet reader (recipes/data/parquet_reader.h) against files written by independent writers:
// DuckDB and hyparquet-writer (tests/reference/parquet_js/make_fixtures.mjs) write every compression,
// data pages v1 and v2, dictionary, PLAIN, DELTA_* and BYTE_STREAM_SPLIT values, nulls in several
// patterns and nested chat columns; DuckDB reads each file back into <name>.expected.json, and every
// row group our reader returns is compared with it value by value. Then hostile files: truncated, wrong
// magic, a footer longer than the file, a corrupt compressed page, a dictionary index out of range and
// a page header claiming 2 GB, each a one-line error naming the file (and column and row group).
#include <QtTest>

#include "test_main.h"

#include <QDir>
#include <QTemporaryDir>

#include <cmath>
#include <cstring>
#include <filesystem>

#include <nlohmann/json.hpp>

#include "data/parquet_reader.h"
#include "data/parquet_thrift.h"
#include "data/row_sources.h"
#include "dataset_checks.h"
#include "node_reference.h"
#include "test_support.h"

namespace fs = std::filesystem;
using json = nlohmann::ordered_json;
namespace pq = tb::data::parquet;

namespace {

// The first difference between our value and DuckDB's, as "at: ours vs theirs"; empty when equal.
// Numbers compare across JSON's integer kinds; floats within a relative 1e-6.
std::string first_difference(const json& ours, const json& theirs, const std::string& at) {
  const auto differ = [&] { return at + ": " + ours.dump() + " vs " + theirs.dump(); };
  if (ours.is_number() && theirs.is_number()) {
    if (ours.is_number_float() || theirs.is_number_float()) {
      const double a = ours.get<double>(), b = theirs.get<double>();
      return std::fabs(a - b) <= 1e-6 * std::max(std::fabs(a), std::fabs(b)) ? std::string() : differ();
    }
    const bool a_neg = ours.is_number_integer() && !ours.is_number_unsigned() && ours.get<int64_t>() < 0;
    const bool b_neg = theirs.is_number_integer() && !theirs.is_number_unsigned() && theirs.get<int64_t>() < 0;
    if (a_neg != b_neg) return differ();
    const bool same = a_neg ? ours.get<int64_t>() == theirs.get<int64_t>() : ours.get<uint64_t>() == theirs.get<uint64_t>();
    return same ? std::string() : differ();
  }
  if (ours.type() != theirs.type()) return differ();
  if (ours.is_array()) {
    if (ours.size() != theirs.size()) return differ();
    for (size_t i = 0; i < ours.size(); ++i)
      if (auto d = first_difference(ours[i], theirs[i], at + "[" + std::to_string(i) + "]"); !d.empty()) return d;
    return {};
  }
  if (ours.is_object()) {
    if (ours.size() != theirs.size()) return differ();
    auto b = theirs.begin();
    for (auto a = ours.begin(); a != ours.end(); ++a, ++b) {
      if (a.key() != b.key()) return at + ": key '" + a.key() + "' where DuckDB has '" + b.key() + "'";
      if (auto d = first_difference(a.value(), b.value(), at + "." + a.key()); !d.empty()) return d;
    }
    return {};
  }
  return ours == theirs ? std::string() : differ();
}

uint32_t le32(const std::string& b, size_t at) {
  return uint32_t(uint8_t(b[at])) | uint32_t(uint8_t(b[at + 1])) << 8 | uint32_t(uint8_t(b[at + 2])) << 16 | uint32_t(uint8_t(b[at + 3])) << 24;
}

// Where a column chunk's first data page lies in `bytes`: the header's offset and length, and the body's length.
struct PageSpot {
  size_t header = 0, header_len = 0, body_len = 0;
  size_t body() const { return header + header_len; }
};

PageSpot data_page_of(const std::string& bytes, size_t column) {
  const size_t footer_len = le32(bytes, bytes.size() - 8);
  const auto* base = reinterpret_cast<const uint8_t*>(bytes.data());
  const pq::FileMetaData meta = pq::parse_file_metadata(base + bytes.size() - 8 - footer_len, footer_len);
  PageSpot s;
  s.header = size_t(meta.row_groups.at(0).columns.at(column).meta->data_page_offset);
  const pq::PageHeader h = pq::parse_page_header(base + s.header, bytes.size() - s.header, &s.header_len);
  s.body_len = size_t(h.compressed_page_size);
  return s;
}

}  // namespace

class TestParquet : public QObject {
  Q_OBJECT

  QTemporaryDir dir_;
  std::vector<std::string> fixtures_;  // names, without .parquet

  std::string path(const std::string& name) const { return dir_.filePath(QString::fromStdString(name)).toStdString(); }

  // The error reading all of `file` (named `name` in messages) gives; empty when it reads.
  static std::string read_error(const std::string& file, const std::string& name) {
    try {
      tb::data::ParquetFile f(file, name);
      for (size_t g = 0; g < f.num_row_groups(); ++g) f.read_row_group(g);
    } catch (const tb::data::ParquetError& e) {
      return e.what();
    }
    return {};
  }

  // A copy of fixture `fixture` with `edit` applied, written as `name`; returns its path.
  template <typename Edit>
  std::string edited(const std::string& fixture, const std::string& name, Edit edit) {
    std::string bytes = tbtest::read_file(path(fixture + ".parquet"));
    edit(bytes);
    tbtest::write_file(path(name), bytes);
    return path(name);
  }

 private Q_SLOTS:
  void initTestCase() {
    QVERIFY(dir_.isValid());
    const QString ref = QString(TB_SOURCE_DIR) + "/tests/reference/parquet_js";
    QString error;
    const QString node = tbtest::node_for_reference(ref, "@duckdb/node-api", &error);
    if (node.isEmpty()) QFAIL(qPrintable(error));
    if (tbtest::node_for_reference(ref, "hyparquet-writer", &error).isEmpty()) QFAIL(qPrintable(error));
    const auto r = tbtest::run_process(node, {ref + "/make_fixtures.mjs", dir_.path()});
    if (r.code != 0) QFAIL(qPrintable("make_fixtures.mjs failed: " + r.err + r.out));
    for (const auto& e : fs::directory_iterator(dir_.path().toStdString()))
      if (e.path().extension() == ".parquet") fixtures_.push_back(e.path().stem().string());
    std::sort(fixtures_.begin(), fixtures_.end());
    QVERIFY2(fixtures_.size() >= 20, qPrintable(QString::number(fixtures_.size()) + " fixtures"));
  }

  // Every row group of every fixture, value by value against DuckDB's reading.
  void matchesDuckDB() {
    size_t files = 0, rows_compared = 0;
    for (const std::string& name : fixtures_) {
      const json expected = json::parse(tbtest::read_file(path(name + ".expected.json")));
      const json& rows = expected.at("rows");
      try {
        tb::data::ParquetFile f(path(name + ".parquet"), name + ".parquet");
        QCOMPARE(f.num_row_groups(), expected.at("row_groups").size());
        QCOMPARE(size_t(f.num_rows()), rows.size());
        size_t next = 0;
        for (size_t g = 0; g < f.num_row_groups(); ++g) {
          const auto got = f.read_row_group(g);
          QCOMPARE(got.size(), expected.at("row_groups")[g].get<size_t>());
          for (const json& row : got) {
            QVERIFY(next < rows.size());
            const std::string d = first_difference(row, rows[next], name + " row " + std::to_string(next));
            QVERIFY2(d.empty(), d.c_str());
            ++next;
          }
        }
        QCOMPARE(next, rows.size());
        rows_compared += next;
        ++files;
      } catch (const tb::data::ParquetError& e) {
        QFAIL(e.what());
      }
    }
    qInfo("%zu files, %zu rows compared with DuckDB", files, rows_compared);
  }

  // Only the asked columns, in schema order whatever the order asked; an unknown name is an error.
  void selectsColumns() {
    tb::data::ParquetFile f(path("chat_zstd_v2.parquet"), "chat.parquet");
    QCOMPARE(f.columns(), (std::vector<std::string>{"id", "messages", "conversation", "tags", "matrix"}));
    const auto rows = f.read_row_group(1, {"messages", "id"});
    QVERIFY(!rows.empty());
    std::vector<std::string> keys;
    for (auto it = rows[0].begin(); it != rows[0].end(); ++it) keys.push_back(it.key());
    QCOMPARE(keys, (std::vector<std::string>{"id", "messages"}));
    try {
      f.read_row_group(0, {"nope"});
      QFAIL("an unknown column was accepted");
    } catch (const tb::data::ParquetError& e) {
      QCOMPARE(std::string(e.what()), std::string("chat.parquet: no column 'nope' (it has: id, messages, conversation, tags, matrix)"));
    }
  }

  void rejectsTruncatedFile() {
    const std::string p = edited("flat_snappy_v1", "cut.parquet", [](std::string& b) { b.resize(b.size() / 2); });
    QCOMPARE(read_error(p, "cut.parquet"), std::string("cut.parquet: truncated: it starts with PAR1 but does not end with it (the footer is missing)"));
    // The footer kept but the data before it cut short: the chunks point past what is left.
    const std::string q = edited("flat_snappy_v1", "hollow.parquet", [](std::string& b) {
      const size_t footer = le32(b, b.size() - 8) + 8;
      b = b.substr(0, 64) + b.substr(b.size() - footer);
    });
    const std::string e = read_error(q, "hollow.parquet");
    QVERIFY2(e.rfind("hollow.parquet: column 'id', row group 0: the chunk at byte ", 0) == 0, e.c_str());
    QVERIFY2(e.find("lies outside the data (64 bytes)") != std::string::npos, e.c_str());
  }

  void rejectsWrongMagic() {
    const std::string p = edited("flat_snappy_v1", "magic.parquet", [](std::string& b) { b[3] = '0'; });
    QCOMPARE(read_error(p, "magic.parquet"), std::string("magic.parquet: not a Parquet file (no PAR1 magic)"));
    tbtest::write_file(path("text.parquet"), "id,text\n1,hello\n2,world\n");
    QCOMPARE(read_error(path("text.parquet"), "text.parquet"), std::string("text.parquet: not a Parquet file (no PAR1 magic)"));
  }

  void rejectsFooterLongerThanFile() {
    size_t size = 0;
    const std::string p = edited("flat_snappy_v1", "footer.parquet", [&](std::string& b) {
      const uint32_t huge = 0x7ffffff0;
      std::memcpy(&b[b.size() - 8], &huge, 4);
      size = b.size();
    });
    QCOMPARE(read_error(p, "footer.parquet"),
             "footer.parquet: truncated: the footer says 2147483632 bytes, " + std::to_string(size - 12) + " are there");
  }

  void rejectsCorruptPage() {
    // The zstd frame's magic flipped: zstd refuses the frame.
    const std::string z = edited("flat_zstd_v1", "zstd.parquet", [](std::string& b) {
      const PageSpot s = data_page_of(b, 13);  // `text`
      for (size_t i = 0; i < 8 && i < s.body_len; ++i) b[s.body() + i] = char(~b[s.body() + i]);
    });
    const std::string ez = read_error(z, "zstd.parquet");
    QVERIFY2(ez.rfind("zstd.parquet: column 'text', row group 0: corrupt ZSTD page", 0) == 0, ez.c_str());
    QVERIFY(ez.find('\n') == std::string::npos);
    // A Snappy page zeroed: its length prefix no longer matches the page header.
    const std::string s = edited("flat_snappy_v1", "snappy.parquet", [](std::string& b) {
      const PageSpot p = data_page_of(b, 13);
      std::memset(&b[p.body()], 0, p.body_len);
    });
    const std::string es = read_error(s, "snappy.parquet");
    QVERIFY2(es.rfind("snappy.parquet: column 'text', row group 0: corrupt SNAPPY page: it holds 0 bytes, its header says ", 0) == 0, es.c_str());
  }

  void rejectsDictionaryIndexOutOfRange() {
    // `answer` is PLAIN_DICTIONARY ("yes", "no") in one uncompressed v1 page: the definition levels
    // (4-byte length, runs), then the index bit width and the index runs, rewritten here as width 8 and
    // one RLE run of 40 times index 17.
    const std::string p = edited("small_dict_uncompressed_v1", "dict.parquet", [](std::string& b) {
      const PageSpot s = data_page_of(b, 1);
      const size_t values = s.body() + 4 + le32(b, s.body());
      QVERIFY(values + 3 <= s.body() + s.body_len);
      b[values] = 8;
      b[values + 1] = char(40 << 1);
      b[values + 2] = 17;
    });
    QCOMPARE(read_error(p, "dict.parquet"), std::string("dict.parquet: column 'answer', row group 0: dictionary index 17 out of range (2 entries)"));
  }

  // A page header claiming 2 GB in a file of a few hundred bytes: an error at once, nothing allocated.
  void rejectsHugePageClaim() {
    const std::string p = edited("small_dict_uncompressed_v1", "huge.parquet", [](std::string& b) {
      const PageSpot s = data_page_of(b, 1);
      // type DATA_PAGE, uncompressed and compressed size 2^31 - 1, then STOP (compact protocol).
      const unsigned char header[] = {0x15, 0x00, 0x15, 0xfe, 0xff, 0xff, 0xff, 0x0f, 0x15, 0xfe, 0xff, 0xff, 0xff, 0x0f, 0x00};
      QVERIFY(s.header_len + s.body_len >= sizeof header);
      std::memcpy(&b[s.header], header, sizeof header);
    });
    const std::string e = read_error(p, "huge.parquet");
    QVERIFY2(e.rfind("huge.parquet: column 'answer', row group 0: a page header claims 2147483647 bytes, the column chunk has ", 0) == 0, e.c_str());
    QVERIFY(e.find('\n') == std::string::npos);  // refused by the size check, before any buffer of that size
  }

  // `source: parquet` in a dataset component: the tiny instruction set written by DuckDB as two Parquet
  // shards (row groups of 7), named by a glob, trains step for step as its JSON original does: the same
  // rows in the same order, so the same losses.
  void aParquetDatasetTrainsAsItsJson() {
    const QString ref = QString(TB_SOURCE_DIR) + "/tests/reference/parquet_js";
    QString error;
    const QString node = tbtest::node_for_reference(ref, "@duckdb/node-api", &error);
    QVERIFY2(!node.isEmpty(), qPrintable(error));
    const std::string source = std::string(TB_SOURCE_DIR) + "/resources/datasets/tiny_instruct.json";
    const std::string shards = path("shards");
    fs::create_directories(shards);
    const std::string script =
        "import { DuckDBInstance } from '@duckdb/node-api';\n"
        "const db = await DuckDBInstance.create(':memory:');\n"
        "const con = await db.connect();\n"
        "await con.run('SET threads = 1');\n"
        "await con.run(\"CREATE TABLE t AS SELECT *, row_number() OVER () AS rn FROM read_json('" + source + "')\");\n"
        "const n = Number((await (await con.run('SELECT count(*) FROM t')).getRows())[0][0]);\n"
        "await con.run(`COPY (SELECT * EXCLUDE (rn) FROM t WHERE rn <= ${Math.floor(n / 2)} ORDER BY rn) TO '" + shards +
        "/train-00000-of-00002.parquet' (FORMAT parquet, ROW_GROUP_SIZE 7)`);\n"
        "await con.run(`COPY (SELECT * EXCLUDE (rn) FROM t WHERE rn > ${Math.floor(n / 2)} ORDER BY rn) TO '" + shards +
        "/train-00001-of-00002.parquet' (FORMAT parquet, ROW_GROUP_SIZE 7)`);\n";
    QProcess writer;
    writer.setWorkingDirectory(ref);
    writer.start(node, {"--input-type=module", "-e", QString::fromStdString(script)});
    QVERIFY(writer.waitForFinished(120000));
    QVERIFY2(writer.exitCode() == 0, writer.readAllStandardError().constData());

    const auto rows = tb::data::load_rows("parquet", {shards + "/train-*.parquet"});
    const auto original = tb::data::load_rows("json", {source});
    QCOMPARE(rows.size(), original.size());
    for (size_t i = 0; i < rows.size(); ++i) QCOMPARE(rows[i].value.dump(), original[i].value.dump());
    QCOMPARE(rows.back().file, shards + "/train-00001-of-00002.parquet");
    QCOMPARE(rows.back().line, int(original.size() - original.size() / 2));  // its row in that shard

    const auto losses = [&](const QStringList& dataset, const std::string& out) {
      QProcess p;
      p.setWorkingDirectory(TB_SOURCE_DIR);
      p.start(qEnvironmentVariable("TB_CLI"), QStringList{"run", "lora_finetune_single_device", "--config", "tiny/lora_single_device",
                                                           "output_dir=" + QString::fromStdString(out), "epochs=1",
                                                           "max_steps_per_epoch=3", "num_threads=1"} + dataset);
      p.waitForFinished(300000);
      return tbtest::step_losses(tbtest::read_file(out + "/logs/metrics.jsonl"));
    };
    const auto from_json = losses({}, path("run_json"));
    const auto from_parquet = losses({"dataset.source=parquet", "dataset.data_files=" + QString::fromStdString(shards) + "/train-*.parquet"},
                                     path("run_parquet"));
    QCOMPARE(from_json.size(), size_t(3));
    QCOMPARE(from_parquet, from_json);
  }
};

TB_TEST(TestParquet)
#include "test_parquet.moc"
