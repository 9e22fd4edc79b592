// Hub dataset repo layouts and split slicing as the Python `datasets` library resolves them
// (data/hub_dataset_layout.h): split expressions to [begin, end) row ranges, the dataset card's `configs:`,
// the default file patterns, the loading-script refusal and the messages that list what exists. Every expected
// value below is worked out by hand from the datasets rule named beside it.
#include <QtTest>

#include "test_main.h"

#include <functional>

#include "data/hub_dataset_layout.h"

using tb::data::DataFormat;
using tb::data::dataset_splits;
using tb::data::parse_split;
using tb::data::resolve_dataset_split;
using tb::data::slice_bounds;

namespace {

using Files = std::vector<std::string>;

QStringList qs(const std::vector<std::string>& items) {
  QStringList out;
  for (const auto& s : items) out << QString::fromStdString(s);
  return out;
}

QString message(const std::function<void()>& f) {
  try {
    f();
  } catch (const std::invalid_argument& e) {
    return QString::fromUtf8(e.what());
  }
  return "<no exception>";
}

#define EXPECT_MESSAGE(call, text)                                                   \
  do {                                                                               \
    const QString got = message([&] { (void)(call); });                              \
    QVERIFY2(got.contains(QStringLiteral(text)), qPrintable("message: " + got));    \
  } while (0)

QStringList files_of(const Files& repo, const std::string& readme, const std::string& config, const std::string& split,
                     const std::string& data_dir = {}, const Files& data_files = {}) {
  return qs(resolve_dataset_split("u/d", repo, readme, config, split, data_dir, data_files).files);
}

QStringList splits_of(const Files& repo, const std::string& readme = "", const std::string& config = "",
                      const std::string& data_dir = {}, const Files& data_files = {}) {
  return qs(dataset_splits("u/d", repo, readme, config, data_dir, data_files));
}

// A card with four configs in the forms MetadataConfigs accepts (datasets' utils/metadata.py).
const std::string kCard =
    "---\n"
    "license: mit\n"
    "configs:\n"
    "- config_name: en\n"            // list of {split, path}, default: true
    "  data_files:\n"
    "  - split: train\n"
    "    path: en/train-*.parquet\n"
    "  - split: test\n"
    "    path: en/test.parquet\n"
    "  default: true\n"
    "- config_name: fr\n"            // a string: all of it is "train"
    "  data_files: fr/*.jsonl\n"
    "- config_name: de\n"            // data_dir only: the default patterns under it
    "  data_dir: de\n"
    "- config_name: multi\n"         // a split's path as a list, read in the listed order
    "  data_files:\n"
    "  - split: train\n"
    "    path:\n"
    "    - x/b.csv\n"
    "    - x/a.csv\n"
    "---\n"
    "# A dataset\n";
const Files kCardFiles = {"README.md",  "en/train-1.parquet", "en/train-0.parquet", "en/test.parquet",
                          "fr/b.jsonl", "fr/a.jsonl",         "de/train.csv",       "de/validation.csv",
                          "x/a.csv",    "x/b.csv",            ".gitattributes"};

}  // namespace

class TestHubDatasetLayout : public QObject {
  Q_OBJECT
 private Q_SLOTS:
  // datasets' arrow_reader.py: _rel_to_abs_instr with _pct_to_abs_closest (Python round(): half to even) or
  // _pct_to_abs_pct1 (boundary * trunc(rows / 100)); negative bounds add rows and floor at 0; both clamp at rows.
  void sliceBounds_data() {
    QTest::addColumn<QString>("expr");
    QTest::addColumn<qint64>("rows");
    QTest::addColumn<qint64>("begin");
    QTest::addColumn<qint64>("end");
    const auto row = [](const char* expr, qint64 rows, qint64 b, qint64 e) {
      QTest::addRow("%s over %lld", expr, static_cast<long long>(rows)) << QString(expr) << rows << b << e;
    };
    row("train", 10, 0, 10);
    row("train[:]", 4, 0, 4);
    row("train[:50%]", 5, 0, 2);        // 2.5 rounds to even 2
    row("train[50%:]", 5, 2, 5);
    row("train[:50%]", 3, 0, 2);        // 1.5 rounds to even 2
    row("train[:25%]", 10, 0, 2);       // 2.5 -> 2
    row("train[:75%]", 10, 0, 8);       // 7.5 -> 8
    row("train[:95%]", 21, 0, 20);      // 19.95 -> 20
    row("train[95%:]", 21, 20, 21);
    row("train[:33%]", 3, 0, 1);        // 0.99 -> 1
    row("train[-10%:]", 21, 19, 21);    // -2.1 -> -2, 21 - 2 = 19
    row("train[:-10%]", 25, 0, 23);     // -2.5 -> -2 (even), 25 - 2 = 23
    row("train[-50%:]", 5, 3, 5);       // -2.5 -> -2, 5 - 2 = 3
    row("train[:100%]", 7, 0, 7);
    row("train[-100%:]", 7, 0, 7);      // -7 -> 7 - 7 = 0
    row("train[:50%]", 0, 0, 0);
    row("train[10:50%]", 200, 20, 100); // one '%' makes both bounds percents (_str_to_read_instruction)
    row("train[:1000]", 10, 0, 10);     // absolute past the end clamps
    row("train[10:20]", 15, 10, 15);
    row("train[:0]", 10, 0, 0);
    row("train[-3:]", 10, 7, 10);
    row("train[-30:]", 10, 0, 10);      // 10 - 30 floors at 0
    row("train[:-3]", 10, 0, 7);
    row("train[5:2]", 10, 5, 2);        // kept as given: an empty read
    row("train[1_0:]", 20, 10, 20);     // Python int() takes single underscores between digits
    row("train[:20%](pct1_dropremainder)", 250, 0, 40);   // 20 * trunc(2.5) = 40
    row("train[-1%:](pct1_dropremainder)", 150, 149, 150);  // -1 * 1 -> 150 - 1
    row("train[:50%](closest)", 5, 0, 2);
  }
  void sliceBounds() {
    QFETCH(QString, expr);
    QFETCH(qint64, rows);
    QFETCH(qint64, begin);
    QFETCH(qint64, end);
    const auto parsed = parse_split(expr.toStdString());
    QCOMPARE(parsed.parts.size(), size_t{1});
    QCOMPARE(parsed.parts[0].split, std::string("train"));
    const auto bounds = slice_bounds(parsed.parts[0], rows);
    QCOMPARE(static_cast<qint64>(bounds.first), begin);
    QCOMPARE(static_cast<qint64>(bounds.second), end);
  }

  // arrow_reader.py ReadInstruction.from_spec: parts joined by '+' with any whitespace around it.
  void splitExpressionParts() {
    const auto expr = parse_split("test[:50%] + train[10:]");
    QCOMPARE(expr.parts.size(), size_t{2});
    QCOMPARE(expr.parts[0].split, std::string("test"));
    QVERIFY(expr.parts[0].percent && !expr.parts[0].from && expr.parts[0].to == 50);
    QCOMPARE(expr.parts[1].split, std::string("train"));
    QVERIFY(!expr.parts[1].percent && expr.parts[1].from == 10 && !expr.parts[1].to);
    QCOMPARE(slice_bounds(expr.parts[0], 5), std::make_pair(int64_t{0}, int64_t{2}));
    // ReadInstruction.__add__ compares roundings only when both the first part and the new one use percents.
    QCOMPARE(parse_split("train[:10]+test[:10%](pct1_dropremainder)").parts.size(), size_t{2});
    QCOMPARE(parse_split("validation.en").parts[0].split, std::string("validation.en"));  // naming.py _split_re
  }

  // _SUB_SPEC_RE, _RelativeInstruction.__post_init__, ReadInstruction.__add__ and _pct_to_abs_pct1 refusals.
  void malformedSplitExpressions() {
    EXPECT_MESSAGE(parse_split("train[:x]"), "split expression 'train[:x]': unrecognized part 'train[:x]'");
    EXPECT_MESSAGE(parse_split("train[:101%]"), "percent bounds must lie in [-100, 100]");
    EXPECT_MESSAGE(parse_split("train[-101%:]"), "percent bounds must lie in [-100, 100]");
    EXPECT_MESSAGE(parse_split("train[:10](closest)"), "rounding applies only to percent slices");
    EXPECT_MESSAGE(parse_split("train(closest)"), "rounding applies only to percent slices");
    EXPECT_MESSAGE(parse_split("train[:10%](floor)"), "rounding must be closest or pct1_dropremainder, not 'floor'");
    EXPECT_MESSAGE(parse_split("train[:10%]()"), "rounding must be closest or pct1_dropremainder, not ''");
    EXPECT_MESSAGE(parse_split("train[:10%]+test[:10%](pct1_dropremainder)"), "parts use different roundings");
    EXPECT_MESSAGE(parse_split(""), "split expression '': unrecognized part ''");
    EXPECT_MESSAGE(parse_split("train+"), "split expression 'train+': unrecognized part ''");
    EXPECT_MESSAGE(parse_split(" train"), "unrecognized part ' train'");
    EXPECT_MESSAGE(parse_split("train-x"), "unrecognized part 'train-x'");
    EXPECT_MESSAGE(parse_split("train[1__0:]"), "'1__0' is not an integer");
    EXPECT_MESSAGE(parse_split("train[_:]"), "'_' is not an integer");
    const auto pct1 = parse_split("train[:10%](pct1_dropremainder)").parts[0];
    EXPECT_MESSAGE(slice_bounds(pct1, 99), "has 99 rows; pct1_dropremainder rounding needs at least 100");
  }

  // utils/metadata.py MetadataConfigs.from_dataset_card_data + get_default_config_name; data_files.py
  // sanitize_patterns; load.py create_builder_configs_from_metadata_configs (data_dir -> get_data_patterns).
  void cardConfigs() {
    QCOMPARE(qs(tb::data::dataset_config_names(kCard)), QStringList({"en", "fr", "de", "multi"}));
    // "" = the config marked default: true; a glob's files sorted as fsspec's glob returns them.
    QCOMPARE(splits_of(kCardFiles, kCard), QStringList({"train", "test"}));
    QCOMPARE(files_of(kCardFiles, kCard, "", "train"), QStringList({"en/train-0.parquet", "en/train-1.parquet"}));
    const auto en_test = resolve_dataset_split("u/d", kCardFiles, kCard, "en", "test");
    QCOMPARE(qs(en_test.files), QStringList({"en/test.parquet"}));
    QVERIFY(en_test.format == DataFormat::Parquet);
    // A string data_files is the "train" split.
    QCOMPARE(splits_of(kCardFiles, kCard, "fr"), QStringList({"train"}));
    const auto fr = resolve_dataset_split("u/d", kCardFiles, kCard, "fr", "train");
    QCOMPARE(qs(fr.files), QStringList({"fr/a.jsonl", "fr/b.jsonl"}));
    QVERIFY(fr.format == DataFormat::Json);
    // data_dir: the default patterns (split keyword in the file name) under de/.
    QCOMPARE(splits_of(kCardFiles, kCard, "de"), QStringList({"train", "validation"}));
    const auto de = resolve_dataset_split("u/d", kCardFiles, kCard, "de", "validation");
    QCOMPARE(qs(de.files), QStringList({"de/validation.csv"}));
    QVERIFY(de.format == DataFormat::Csv);
    // DataFilesList.from_patterns: each path in turn, in the card's order.
    QCOMPARE(files_of(kCardFiles, kCard, "multi", "train"), QStringList({"x/b.csv", "x/a.csv"}));
    // load_dataset's data_dir replaces the config's files with the default patterns under it; data_files
    // (all "train", sanitize_patterns of a list) replace them too.
    QCOMPARE(splits_of(kCardFiles, kCard, "", "de"), QStringList({"train", "validation"}));
    QCOMPARE(files_of(kCardFiles, kCard, "en", "train", "", {"x/a.csv"}), QStringList({"x/a.csv"}));
    QCOMPARE(files_of(kCardFiles, kCard, "", "train", "fr", {"*.jsonl"}), QStringList({"fr/a.jsonl", "fr/b.jsonl"}));
    // A one-part split expression names its split.
    QCOMPARE(files_of(kCardFiles, kCard, "en", "test[:10%]"), QStringList({"en/test.parquet"}));
  }

  // MetadataConfigs.get_default_config_name: the only config, else the one named "default", else default: true;
  // builder.py _create_builder_config asks for a name when there is none.
  void cardDefaultConfig() {
    const Files files = {"README.md", "a/train.csv", "b/train.csv"};
    const std::string two = "---\nconfigs:\n- config_name: a\n  data_dir: a\n- config_name: b\n  data_dir: b\n---\n";
    EXPECT_MESSAGE(splits_of(files, two), "u/d needs a config name (configs: a, b)");
    QCOMPARE(files_of(files, two, "b", "train"), QStringList({"b/train.csv"}));
    const std::string named = "---\nconfigs:\n- config_name: a\n  data_dir: a\n- config_name: default\n  data_dir: b\n---\n";
    QCOMPARE(files_of(files, named, "", "train"), QStringList({"b/train.csv"}));
    const std::string one = "---\nconfigs:\n- config_name: only\n  data_files: a/*.csv\n---\n";
    QCOMPARE(files_of(files, one, "", "train"), QStringList({"a/train.csv"}));
    // The card's front matter with CRLF line ends (huggingface_hub's repo card block accepts \r and \n).
    const std::string crlf = "---\r\nconfigs:\r\n- config_name: only\r\n  data_files: b/*.csv\r\n---\r\ntext\r\n";
    QCOMPARE(files_of(files, crlf, "", "train"), QStringList({"b/train.csv"}));
    const std::string both = "---\nconfigs:\n- config_name: a\n  data_dir: a\n  default: true\n- config_name: default\n"
                             "  data_dir: b\n---\n";
    EXPECT_MESSAGE(splits_of(files, both), "several default configs: 'a' and 'default'");
    // A path without wildcards must exist (DataFilesPatternsList.resolve re-raises for it).
    const std::string missing = "---\nconfigs:\n- config_name: m\n  data_files: a/nope.csv\n---\n";
    EXPECT_MESSAGE(splits_of(files, missing), "data file 'a/nope.csv' not found in u/d");
  }

  // data_files.py _get_data_files_patterns: SPLIT_PATTERN_SHARDED first; its splits ordered train,
  // validation, test, then the others sorted; each split's shards sorted.
  void defaultPatternsShards() {
    const Files files = {"README.md",
                         "data/train-00002-of-00003.parquet",
                         "data/zz-00000-of-00001.parquet",
                         "data/train-00000-of-00003.parquet",
                         "data/test-00000-of-00001.parquet",
                         "data/aa-00000-of-00001.parquet",
                         "data/train-00001-of-00003.parquet"};
    QCOMPARE(splits_of(files), QStringList({"train", "test", "aa", "zz"}));
    const auto train = resolve_dataset_split("u/d", files, "", "", "train");
    QCOMPARE(qs(train.files), QStringList({"data/train-00000-of-00003.parquet", "data/train-00001-of-00003.parquet",
                                           "data/train-00002-of-00003.parquet"}));
    QVERIFY(train.format == DataFormat::Parquet);
  }

  // DEFAULT_PATTERNS_SPLIT_IN_FILENAME ("**/{keyword}[-._ 0-9]*", "**/*[-._ 0-9]{keyword}[-._ 0-9]*"); README.md
  // (FILES_TO_IGNORE), dotfiles and a script with an unlisted extension are not data.
  void defaultPatternsFileNames() {
    const Files files = {"README.md", ".gitattributes", "convert.py", "test.jsonl", "train.jsonl"};
    QCOMPARE(splits_of(files), QStringList({"train", "test"}));
    const auto train = resolve_dataset_split("u/d", files, "", "", "train");
    QCOMPARE(qs(train.files), QStringList({"train.jsonl"}));
    QVERIFY(train.format == DataFormat::Json);
    // Keywords inside names: my_train.csv matches only the second pattern.
    QCOMPARE(splits_of({"my_train.csv", "my_test.csv"}), QStringList({"train", "test"}));
    QCOMPARE(files_of({"my_train.csv", "my_test.csv"}, "", "", "test"), QStringList({"my_test.csv"}));
    // DataFilesList.from_patterns concatenates per pattern: "train[..]*" hits, then "*[..]train[..]*", then
    // "training[..]*", then "*[..]training[..]*" — not one sorted list.
    QCOMPARE(files_of({"b-training.csv", "a_train.csv", "train.csv"}, "", "", "train"),
             QStringList({"train.csv", "a_train.csv", "b-training.csv"}));
    // load.py infer_module_for_data_files_list: a tie prefers .jsonl over .csv; get_module then drops the rest.
    QCOMPARE(files_of({"train.csv", "train.jsonl"}, "", "", "train"), QStringList({"train.jsonl"}));
  }

  // DEFAULT_PATTERNS_SPLIT_IN_DIR_NAME ("**/{keyword}/**", ...), checked before the file-name patterns.
  void defaultPatternsFolders() {
    const Files files = {"README.md", "train/b.csv", "train/a.csv", "test/c.csv", "data/validation/part/d.csv"};
    QCOMPARE(splits_of(files), QStringList({"train", "validation", "test"}));
    const auto train = resolve_dataset_split("u/d", files, "", "", "train");
    QCOMPARE(qs(train.files), QStringList({"train/a.csv", "train/b.csv"}));
    QVERIFY(train.format == DataFormat::Csv);
    QCOMPARE(files_of(files, "", "", "validation"), QStringList({"data/validation/part/d.csv"}));
  }

  // SPLIT_KEYWORDS synonyms: training -> train; validation, valid, dev, val -> validation; test, testing, eval,
  // evaluation -> test.
  void defaultPatternsSynonyms() {
    const Files files = {"dev.txt", "eval.txt", "training.txt"};
    QCOMPARE(splits_of(files), QStringList({"train", "validation", "test"}));
    const auto dev = resolve_dataset_split("u/d", files, "", "", "validation");
    QCOMPARE(qs(dev.files), QStringList({"dev.txt"}));
    QVERIFY(dev.format == DataFormat::Text);
    QCOMPARE(files_of(files, "", "", "test"), QStringList({"eval.txt"}));
    QCOMPARE(files_of({"valid.jsonl", "testing.jsonl", "train.jsonl"}, "", "", "validation"),
             QStringList({"valid.jsonl"}));
    QCOMPARE(files_of({"valid.jsonl", "testing.jsonl", "train.jsonl"}, "", "", "test"), QStringList({"testing.jsonl"}));
  }

  // DEFAULT_PATTERNS_ALL ({"train": ["**"]}) when no keyword appears; resolve_pattern drops unlisted
  // extensions, hidden parts and "__" special folders.
  void everythingIsTrain() {
    const Files files = {"README.md", "LICENSE", "notes.md", "data.csv", "more/rows.csv", ".hidden/x.csv",
                         "__pycache__/y.csv"};
    QCOMPARE(splits_of(files), QStringList({"train"}));
    QCOMPARE(files_of(files, "", "", "train"), QStringList({"data.csv", "more/rows.csv"}));
    QCOMPARE(files_of(files, "", "default", "train"), QStringList({"data.csv", "more/rows.csv"}));
  }

  // load.py dataset_module_factory refuses a "<name>.py" script; with no data files beside it the caller's
  // way out is the Parquet export.
  void scriptOnlyRepo() {
    EXPECT_MESSAGE(resolve_dataset_split("someone/mydata", {"README.md", "mydata.py"}, "", "", "train"),
                   "someone/mydata holds only a loading script; its refs/convert/parquet revision holds Parquet");
    EXPECT_MESSAGE(resolve_dataset_split("someone/mydata", {"README.md", "loader.py"}, "", "", "train"),
                   "someone/mydata holds only a loading script; its refs/convert/parquet revision holds Parquet");
  }

  // _rel_to_abs_instr's unknown split and _create_builder_config's unknown config, as one-line messages that
  // list what exists.
  void unknownSplitOrConfig() {
    EXPECT_MESSAGE(resolve_dataset_split("yahma/alpaca-cleaned", {"README.md", "alpaca_data_cleaned.json"}, "", "",
                                         "validation"),
                   "split 'validation' not found in yahma/alpaca-cleaned (splits: train)");
    EXPECT_MESSAGE(files_of(kCardFiles, kCard, "en", "validation"), "split 'validation' not found in u/d (splits: train, test)");
    EXPECT_MESSAGE(files_of(kCardFiles, kCard, "es", "train"), "config 'es' not found in u/d (configs: en, fr, de, multi)");
    EXPECT_MESSAGE(files_of({"train.csv"}, "", "foo", "train"), "config 'foo' not found in u/d (configs: default)");
    EXPECT_MESSAGE(splits_of({"README.md", ".gitattributes"}), "u/d holds no supported data files");
  }
};

TB_TEST(TestHubDatasetLayout)
#include "test_hub_dataset_layout.moc"
