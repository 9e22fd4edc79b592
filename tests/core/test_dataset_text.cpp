// Text completion from both sources, truncation, the synthetic dataset's determinism, and packing on
// samples whose packs are worked out by hand.
#include <QtTest>

#include "test_main.h"

#include "components/builtin.h"

#include <fstream>
#include <numeric>
#include <set>

#include <yaml-cpp/yaml.h>

#include "config/registry.h"
#include "data/dataset.h"
#include "data/sentencepiece_tokenizer.h"
#include "data/text_datasets.h"

using tb::data::DatasetFactory;
using tb::data::InMemoryDataset;
using tb::data::kIgnoreIndex;
using tb::data::Sample;
using Ids = std::vector<int64_t>;

namespace {

std::string fixture(const char* name) { return std::string(TB_SOURCE_DIR "/tests/data/datasets/") + name; }

std::shared_ptr<tb::data::SentencePieceTokenizer> tokenizer(std::optional<int64_t> max_seq_len = std::nullopt) {
  tb::data::SentencePieceOptions o;
  o.max_seq_len = max_seq_len;
  return tb::data::SentencePieceTokenizer::from_file(TB_SOURCE_DIR "/resources/tokenizer/tokenizer.model", o);
}

std::shared_ptr<tb::data::Dataset> build(const std::string& yaml, std::shared_ptr<const tb::data::Tokenizer> tok,
                                         int64_t vocab = 0) {
  return tb::components::builtin().build<DatasetFactory>(YAML::Load(yaml))({tok, vocab});
}

Ids shifted(const Ids& tokens) {
  Ids labels(tokens.size(), kIgnoreIndex);
  for (size_t i = 0; i + 1 < tokens.size(); ++i) labels[i] = tokens[i + 1];
  return labels;
}

// A sample whose tokens are first, first+1, ... (length n), trained everywhere.
Sample counting(int64_t first, int64_t n) {
  Sample s;
  for (int64_t i = 0; i < n; ++i) s.tokens.push_back(first + i);
  s.labels = shifted(s.tokens);
  return s;
}

}  // namespace

class TestDatasetText : public QObject {
  Q_OBJECT
 private Q_SLOTS:
  void plainTextIsOneDocumentALine() {
    const auto tok = tokenizer();
    const auto ds = build("_component_: torchtune.datasets.text_completion_dataset\nsource: text\ndata_files: " +
                              fixture("docs.txt"),
                          tok);
    // The blank line is skipped: three documents.
    QCOMPARE(ds->size(), size_t{3});
    const std::vector<std::string> docs{"Once upon a time, there was a kind duck named Emma.", "Emma went to the lake.",
                                        "The end."};
    for (size_t i = 0; i < docs.size(); ++i) {
      const Ids tokens = tok->encode(docs[i], true, true);
      QCOMPARE(ds->get(i).tokens, tokens);
      QCOMPARE(ds->get(i).labels, shifted(tokens));
    }
  }

  void jsonRowsUseTheColumn() {
    const auto tok = tokenizer();
    const auto ds = build("_component_: text_completion_dataset\nsource: json\ncolumn: body\nadd_eos: false\n"
                          "data_files: " + fixture("docs.jsonl"),
                          tok);
    QCOMPARE(ds->size(), size_t{2});
    QCOMPARE(ds->get(1).tokens, tok->encode("Emma went to the lake.", true, false));
    try {
      build("_component_: text_completion_dataset\nsource: json\ncolumn: title\ndata_files: " + fixture("docs.jsonl"), tok);
      QFAIL("a missing column was accepted");
    } catch (const std::exception& e) {
      QVERIFY2(std::string(e.what()).rfind(fixture("docs.jsonl") + ":1: missing column 'title'", 0) == 0, e.what());
    }
  }

  void truncatesToMaxSeqLenMinusOne() {
    // torchtune's text completion keeps max_seq_len - 1 tokens and does not force EOS.
    const auto tok = tokenizer(8);
    const auto ds = build("_component_: text_completion_dataset\nsource: text\ndata_files: " + fixture("docs.txt"), tok);
    const Ids full = tokenizer()->encode("Once upon a time, there was a kind duck named Emma.", true, true);
    QVERIFY(full.size() > 8);
    const Ids cut(full.begin(), full.begin() + 7);
    QCOMPARE(ds->get(0).tokens, cut);
    QCOMPARE(ds->get(0).labels, shifted(cut));
  }

  // A one-line document of 1 MB with max_seq_len 64: only its first 64 x 64 bytes are tokenized (a 100 MB
  // line took 9.7 GB and four minutes for 63 tokens kept), and the sample is the one the whole text gives.
  void longDocumentsAreTokenizedOnlyAsFarAsUsed() {
    const auto tok = tokenizer(64);
    std::string text;
    while (text.size() < (1 << 20)) text += "Once upon a time, Émma the duck went to the lake. ";
    QTemporaryDir dir;
    const std::string file = dir.filePath("long.txt").toStdString();
    { std::ofstream(file) << text << "\n"; }
    const auto ds = build("_component_: text_completion_dataset\nsource: text\ndata_files: " + file, tok);
    const Ids whole = tokenizer()->encode(text, true, true);
    QCOMPARE(ds->get(0).tokens, Ids(whole.begin(), whole.begin() + 63));
    const std::string used = tb::data::usable_prefix(text, *tok);
    QVERIFY(used.size() <= 64 * tb::data::kMaxBytesPerToken && used.size() > 60 * tb::data::kMaxBytesPerToken);
    QVERIFY(text.compare(0, used.size(), used) == 0);
    QCOMPARE(tb::data::usable_prefix(text, *tokenizer()).size(), text.size());  // no max_seq_len: all of it
    // Cut at a character: "É" is two bytes; a cut inside it backs off to before it.
    const auto tiny = tokenizer(1);
    const std::string accents = std::string(63, 'a') + "ÉÉ";
    QCOMPARE(tb::data::usable_prefix(accents, *tiny), std::string(63, 'a'));
  }

  void truncateHelper() {
    const Ids t{5, 6, 7, 8, 9};
    QCOMPARE(tb::data::truncate<int64_t>(t, 3), (Ids{5, 6, 7}));
    QCOMPARE(tb::data::truncate<int64_t>(t, 3, 2), (Ids{5, 6, 2}));
    QCOMPARE(tb::data::truncate<int64_t>(t, 3, 2, "left"), (Ids{7, 8, 2}));
    QCOMPARE(tb::data::truncate<int64_t>(t, 9, 2), (Ids{5, 6, 7, 8, 2}));
    QCOMPARE(tb::data::truncate<int64_t>(Ids{5, 2}, 9, 2), (Ids{5, 2}));
  }

  void syntheticIsSeededAndInRange() {
    const std::string yaml = "_component_: tunebench.datasets.synthetic\nseq_len: 64\nnum_samples: 50\nseed: 7";
    const auto a = build(yaml, nullptr, 300);
    const auto b = build(yaml, nullptr, 300);
    const auto other_seed = build("_component_: synthetic\nseq_len: 64\nnum_samples: 50\nseed: 8", nullptr, 300);
    QCOMPARE(a->size(), size_t{50});
    std::set<int64_t> seen;
    double sum = 0;
    for (size_t i = 50; i-- > 0;) {  // backwards: a sample does not depend on the order of access
      const Sample s = a->get(i);
      QCOMPARE(s.tokens.size(), size_t{64});
      QCOMPARE(s.tokens, b->get(i).tokens);
      QVERIFY(s.tokens != other_seed->get(i).tokens);
      QCOMPARE(s.labels, shifted(s.tokens));
      for (const auto t : s.tokens) {
        QVERIFY(t >= 0 && t < 300);
        seen.insert(t);
        sum += double(t);
      }
    }
    QVERIFY(a->get(0).tokens != a->get(1).tokens);
    // 3200 uniform draws below 300: all values appear and the mean is near 149.5 (sd of the mean ~1.5).
    QCOMPARE(seen.size(), size_t{300});
    QVERIFY(std::abs(sum / 3200 - 149.5) < 8);
  }

  void syntheticTakesTheVocabulary() {
    const auto tok = tokenizer();
    const auto from_tokenizer = build("_component_: synthetic\nseq_len: 16\nnum_samples: 4", tok);
    QVERIFY(from_tokenizer->description().find("below 2048") != std::string::npos);
    const auto from_model = build("_component_: synthetic\nseq_len: 16\nnum_samples: 4", tok, 512);
    QVERIFY(from_model->description().find("below 512") != std::string::npos);
    QVERIFY_THROWS_EXCEPTION(std::runtime_error, build("_component_: synthetic", nullptr, 0));
  }

  void packingWithoutSplitting() {
    // Lengths 3, 4, 2, 5 into packs of 6: [3] (4 does not fit) -> [4, 2] -> [5] + 1 padding.
    InMemoryDataset ds({counting(10, 3), counting(20, 4), counting(30, 2), counting(40, 5)}, "hand");
    const auto packed = tb::data::pack_dataset(ds, 6, 0, false);
    QCOMPARE(packed->size(), size_t{3});
    const Sample p0 = packed->get(0), p1 = packed->get(1), p2 = packed->get(2);
    QCOMPARE(p0.tokens, (Ids{10, 11, 12, 0, 0, 0}));
    QCOMPARE(p0.labels, (Ids{11, 12, kIgnoreIndex, kIgnoreIndex, kIgnoreIndex, kIgnoreIndex}));
    QCOMPARE(p0.input_pos, (Ids{0, 1, 2, 3, 4, 5}));
    QCOMPARE(p0.seq_lens, (Ids{3, 3}));
    QCOMPARE(p1.tokens, (Ids{20, 21, 22, 23, 30, 31}));
    // No position predicts the next sample's first token: each sample's last label is -100.
    QCOMPARE(p1.labels, (Ids{21, 22, 23, kIgnoreIndex, 31, kIgnoreIndex}));
    QCOMPARE(p1.input_pos, (Ids{0, 1, 2, 3, 0, 1}));
    QCOMPARE(p1.seq_lens, (Ids{4, 2}));
    QCOMPARE(p2.tokens, (Ids{40, 41, 42, 43, 44, 0}));
    QCOMPARE(p2.input_pos, (Ids{0, 1, 2, 3, 4, 5}));
    QCOMPARE(p2.seq_lens, (Ids{5, 1}));
    // A sample longer than a pack needs splitting.
    InMemoryDataset long_one({counting(1, 7)}, "long");
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, tb::data::pack_dataset(long_one, 6, 0, false));
  }

  void packingWithSplitting() {
    // Lengths 3, 4, 5 into packs of 4, split at boundaries: 3+1 | 3+1 | 4 | (empty rest).
    InMemoryDataset ds({counting(10, 3), counting(20, 4), counting(30, 5)}, "hand");
    const auto packed = tb::data::pack_dataset(ds, 4, 9, true);
    QCOMPARE(packed->size(), size_t{3});
    QCOMPARE(packed->get(0).tokens, (Ids{10, 11, 12, 20}));
    QCOMPARE(packed->get(0).labels, (Ids{11, 12, kIgnoreIndex, 21}));
    QCOMPARE(packed->get(0).seq_lens, (Ids{3, 1}));
    QCOMPARE(packed->get(1).tokens, (Ids{21, 22, 23, 30}));
    QCOMPARE(packed->get(1).input_pos, (Ids{1, 2, 3, 0}));
    QCOMPARE(packed->get(1).seq_lens, (Ids{3, 1}));
    QCOMPARE(packed->get(2).tokens, (Ids{31, 32, 33, 34}));
    QCOMPARE(packed->get(2).labels, (Ids{32, 33, 34, kIgnoreIndex}));
    QCOMPARE(packed->get(2).seq_lens, (Ids{4}));
    // max_packs stops early.
    QCOMPARE(tb::data::pack_dataset(ds, 4, 9, true, 1)->size(), size_t{1});
  }
};

TB_TEST(TestDatasetText)
#include "test_dataset_text.moc"
