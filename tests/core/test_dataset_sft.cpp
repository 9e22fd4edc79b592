// Instruct and chat datasets built through their components: the Alpaca prompt, masking of the prompt
// (labels -100 exactly over the prompt tokens, found by tokenizing the prompt on its own), chat masking of
// non-assistant turns, column maps, packing, and bad rows reported as file:line.
#include <QtTest>

#include "test_main.h"

#include "components/builtin.h"

#include <numeric>

#include <yaml-cpp/yaml.h>

#include "config/registry.h"
#include "data/dataset.h"
#include "data/sentencepiece_tokenizer.h"
#include "data/sft_datasets.h"

using tb::data::DatasetFactory;
using tb::data::kIgnoreIndex;
using tb::data::Sample;
using tb::data::SentencePieceTokenizer;
using Ids = std::vector<int64_t>;

namespace {

std::string fixture(const char* name) { return std::string(TB_SOURCE_DIR "/tests/data/datasets/") + name; }

std::shared_ptr<SentencePieceTokenizer> tokenizer(std::optional<int64_t> max_seq_len = std::nullopt) {
  tb::data::SentencePieceOptions o;
  o.max_seq_len = max_seq_len;
  return SentencePieceTokenizer::from_file(TB_SOURCE_DIR "/resources/tokenizer/tokenizer.model", o);
}

std::shared_ptr<tb::data::Dataset> build(const std::string& yaml, std::shared_ptr<const tb::data::Tokenizer> tok) {
  const auto factory = tb::components::builtin().build<DatasetFactory>(YAML::Load(yaml));
  return factory({tok, 0});
}

Ids cat(std::initializer_list<Ids> parts) {
  Ids out;
  for (const auto& p : parts) out.insert(out.end(), p.begin(), p.end());
  return out;
}

// labels[i] = tokens[i+1] where that token is trained, else -100; the last is -100.
Ids expected_labels(const Ids& tokens, const std::vector<bool>& trained) {
  Ids labels(tokens.size(), kIgnoreIndex);
  for (size_t i = 0; i + 1 < tokens.size(); ++i)
    if (trained[i + 1]) labels[i] = tokens[i + 1];
  return labels;
}

}  // namespace

class TestDatasetSft : public QObject {
  Q_OBJECT
  QTemporaryDir emptyCache_;

 private Q_SLOTS:
  // A Hub dataset named by a config is looked for in an empty cache, offline: this machine's cache and
  // network stay out of these tests.
  void initTestCase() {
    qputenv("HF_HUB_OFFLINE", "1");
    qputenv("HF_HUB_CACHE", emptyCache_.path().toUtf8());
  }

  void alpacaPromptFormat() {
    QCOMPARE(tb::data::alpaca_prompt("Add the two numbers.", "4 + 9"),
             std::string("Below is an instruction that describes a task, paired with an input that provides further "
                         "context. Write a response that appropriately completes the request.\n\n"
                         "### Instruction:\nAdd the two numbers.\n\n### Input:\n4 + 9\n\n### Response:\n"));
    QCOMPARE(tb::data::alpaca_prompt("Name a color.", ""),
             std::string("Below is an instruction that describes a task. Write a response that appropriately "
                         "completes the request.\n\n### Instruction:\nName a color.\n\n### Response:\n"));
  }

  void alpacaMasksExactlyThePrompt() {
    const auto tok = tokenizer();
    const auto ds = build("_component_: torchtune.datasets.alpaca_dataset\nsource: json\ndata_files: " +
                              fixture("alpaca_small.json") + "\ntrain_on_input: false",
                          tok);
    QCOMPARE(ds->size(), size_t{4});
    const std::vector<std::pair<std::string, std::string>> rows{
        {tb::data::alpaca_prompt("What is the capital of France?", ""), "The capital of France is Paris."},
        {tb::data::alpaca_prompt("Reverse the order of the words.", "red cat sun"), "sun cat red"},
        {tb::data::alpaca_prompt("Add the two numbers.", "4 + 9"), "4 + 9 = 13"},
        {tb::data::alpaca_prompt("Name the capital city of Japan.", ""), "The capital of Japan is Tokyo."},
    };
    for (size_t r = 0; r < rows.size(); ++r) {
      const Sample s = ds->get(r);
      const size_t prompt_len = tok->encode(rows[r].first, true, false).size();  // BOS + prompt
      // The prompt ends in "\n", so the response continues it without a dummy-prefix space.
      QCOMPARE(s.tokens, tok->encode(rows[r].first + rows[r].second, true, true));
      QCOMPARE(s.labels.size(), s.tokens.size());
      for (size_t i = 0; i < s.tokens.size(); ++i) {
        const bool predicts_response = i + 1 >= prompt_len && i + 1 < s.tokens.size();
        QCOMPARE(s.labels[i], predicts_response ? s.tokens[i + 1] : kIgnoreIndex);
      }
    }
  }

  void alpacaTrainsOnInputByDefault() {
    const auto tok = tokenizer();
    const auto ds = build("_component_: alpaca_dataset\nsource: json\ndata_files: " + fixture("alpaca_small.json"), tok);
    const Sample s = ds->get(1);
    QCOMPARE(s.labels, expected_labels(s.tokens, std::vector<bool>(s.tokens.size(), true)));
  }

  void instructDatasetColumnMapAndSystemPrompt() {
    const auto tok = tokenizer();
    const auto ds = build(
        "_component_: torchtune.datasets.instruct_dataset\nsource: json\ndata_files: [" + fixture("qa_small.jsonl") +
            "]\ncolumn_map: {input: question, output: answer}\nnew_system_prompt: \"Be brief.\\n\"",
        tok);
    QCOMPARE(ds->size(), size_t{2});
    const Sample s = ds->get(0);
    // Messages after the first of a turn are encoded without their dummy-prefix space.
    const Ids system = tok->encode("Be brief.\n", false, false);
    const Ids user = tok->encode("What is the capital of Italy?", false, false, true);
    const Ids answer = tok->encode("Rome.", false, false, true);
    const Ids tokens = cat({{1}, system, user, answer, {2}});
    QCOMPARE(s.tokens, tokens);
    std::vector<bool> trained(tokens.size(), false);
    for (size_t i = 1 + system.size() + user.size(); i < tokens.size(); ++i) trained[i] = true;
    QCOMPARE(s.labels, expected_labels(tokens, trained));
  }

  void chatTrainsOnlyAssistantTurns() {
    const auto tok = tokenizer();
    const auto ds = build("_component_: torchtune.datasets.chat_dataset\nsource: json\ndata_files: " +
                              fixture("chat_small.jsonl") + "\nconversation_column: messages\nconversation_style: openai",
                          tok);
    QCOMPARE(ds->size(), size_t{2});
    // Turn 1: BOS system user assistant EOS; turn 2 starts again with BOS, its user message keeps its space.
    const Ids sys = tok->encode("You answer briefly.", false, false);
    const Ids u1 = tok->encode("Capital of Spain?", false, false, true);
    const Ids a1 = tok->encode("Madrid.", false, false, true);
    const Ids u2 = tok->encode("And of Peru?", false, false);
    const Ids a2 = tok->encode("Lima.", false, false, true);
    const Ids tokens = cat({{1}, sys, u1, a1, {2}, {1}, u2, a2, {2}});
    std::vector<bool> trained;
    auto mark = [&](size_t n, bool t) { trained.insert(trained.end(), n, t); };
    mark(1 + sys.size() + u1.size(), false);
    mark(a1.size() + 1, true);  // the assistant text and its EOS
    mark(1 + u2.size(), false);
    mark(a2.size() + 1, true);
    const Sample s = ds->get(0);
    QCOMPARE(s.tokens, tokens);
    QCOMPARE(s.labels, expected_labels(tokens, trained));
    // Content given as a list of text parts.
    QCOMPARE(ds->get(1).tokens, cat({{1}, tok->encode("Say hello.", false, false), tok->encode("Hello!", false, false, true), {2}}));
  }

  void chatTrainOnInputStillMasksSystem() {
    const auto tok = tokenizer();
    const auto ds = build("_component_: chat_dataset\nsource: json\ndata_files: " + fixture("chat_small.jsonl") +
                              "\nconversation_column: messages\nconversation_style: openai\ntrain_on_input: true",
                          tok);
    const Sample s = ds->get(0);
    const size_t system_end = 1 + tok->encode("You answer briefly.", false, false).size();
    std::vector<bool> trained(s.tokens.size(), true);
    for (size_t i = 0; i < system_end; ++i) trained[i] = false;
    QCOMPARE(s.labels, expected_labels(s.tokens, trained));
  }

  void shareGptStyle() {
    const auto tok = tokenizer();
    const auto ds = build("_component_: chat_dataset\nsource: json\ndata_files: " + fixture("chat_sharegpt.jsonl") +
                              "\nconversation_column: conversations\nconversation_style: sharegpt",
                          tok);
    const Ids u = tok->encode("Capital of Spain?", false, false);
    const Ids a = tok->encode("Madrid.", false, false, true);
    QCOMPARE(ds->get(0).tokens, cat({{1}, u, a, {2}}));
    QCOMPARE(ds->get(0).labels[u.size()], a[0]);  // the last prompt position predicts the answer
    QCOMPARE(ds->get(0).labels[u.size() - 1], kIgnoreIndex);
  }

  void packedAlpacaKeepsEverySample() {
    const auto tok = tokenizer(160);
    const std::string yaml = "_component_: alpaca_dataset\nsource: json\ndata_files: " + fixture("alpaca_small.json");
    const auto plain = build(yaml, tok);
    const auto packed = build(yaml + "\npacked: true", tok);
    QVERIFY(packed->size() < plain->size());
    Ids all_tokens, all_labels, packed_tokens, packed_labels;
    for (size_t i = 0; i < plain->size(); ++i) {
      const auto s = plain->get(i);
      all_tokens.insert(all_tokens.end(), s.tokens.begin(), s.tokens.end());
      all_labels.insert(all_labels.end(), s.labels.begin(), s.labels.end());
    }
    for (size_t i = 0; i < packed->size(); ++i) {
      const auto s = packed->get(i);
      QCOMPARE(s.tokens.size(), size_t{160});
      QCOMPARE(std::accumulate(s.seq_lens.begin(), s.seq_lens.end(), int64_t{0}), int64_t{160});
      // Every sample ends with EOS, so the trailing pad ids (0, label -100) are the padding.
      size_t real = s.tokens.size();
      while (real > 0 && s.tokens[real - 1] == 0 && s.labels[real - 1] == kIgnoreIndex) --real;
      QCOMPARE(s.input_pos[0], int64_t{0});
      packed_tokens.insert(packed_tokens.end(), s.tokens.begin(), s.tokens.begin() + real);
      packed_labels.insert(packed_labels.end(), s.labels.begin(), s.labels.begin() + real);
    }
    QCOMPARE(packed_tokens, all_tokens);
    QCOMPARE(packed_labels, all_labels);
  }

  void badRowsNameFileAndLine_data() {
    QTest::addColumn<std::string>("yaml");
    QTest::addColumn<std::string>("message");
    const std::string alpaca = "_component_: alpaca_dataset\nsource: json\ndata_files: ";
    const std::string chat = "_component_: chat_dataset\nsource: json\nconversation_column: messages\n"
                             "conversation_style: openai\ndata_files: ";
    QTest::newRow("invalid json line") << alpaca + fixture("alpaca_bad_json.jsonl")
                                       << fixture("alpaca_bad_json.jsonl") + ":3: invalid JSON";
    QTest::newRow("missing column") << alpaca + fixture("alpaca_missing_output.json")
                                    << fixture("alpaca_missing_output.json") + ":5: missing column 'output'";
    QTest::newRow("unknown role") << chat + fixture("chat_bad_role.jsonl")
                                  << fixture("chat_bad_role.jsonl") + ":2: message 1: unknown role 'robot'";
    QTest::newRow("two users") << chat + fixture("chat_two_users.jsonl")
                               << fixture("chat_two_users.jsonl") + ":1: two user messages in a row";
    QTest::newRow("no file") << alpaca + "no/such/file.json" << std::string("no/such/file.json: cannot open data file");
    // A Hub dataset (alpaca_dataset's default source), offline and not in the cache (init: HF_HUB_OFFLINE, an
    // empty HF_HUB_CACHE): the download to run.
    QTest::newRow("hub source") << std::string("_component_: alpaca_dataset")
                                << std::string("dataset tatsu-lab/alpaca is not in the cache");
  }
  void badRowsNameFileAndLine() {
    QFETCH(std::string, yaml);
    QFETCH(std::string, message);
    try {
      build(yaml, tokenizer());
      QFAIL("a bad dataset was accepted");
    } catch (const std::exception& e) {
      QVERIFY2(std::string(e.what()).rfind(message, 0) == 0, e.what());
    }
  }
};

TB_TEST(TestDatasetSft)
#include "test_dataset_sft.moc"
