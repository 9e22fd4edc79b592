// tunebench.data.hf_tokenizer on model folders made here from the family fixtures (tests/data/tokenizers)
// and the families' real chat templates (tests/data/chat_templates): the special tokens read as
// transformers reads them, the conversation's ids against Hugging Face tokenizers (Node binding) on the
// rendered text, and loss masks that train exactly each assistant turn's content through its stop token,
// written out here by hand from the conversation.
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
#include "data/hf_tokenizer.h"

using nlohmann::json;
using tb::data::HfTokenizer;
using tb::data::HfTokenizerOptions;
using tb::data::Message;
using Ids = std::vector<int64_t>;

namespace {

std::string source_file(const std::string& relative) { return std::string(TB_SOURCE_DIR) + "/tests/data/" + relative; }

std::string read_text(const std::string& path) { return tbtest::read_file(path); }

void write_text(const QTemporaryDir& dir, const char* name, const std::string& text) {
  tbtest::write_file(dir.filePath(name).toStdString(), text);
}

int64_t added_id(const std::string& family, const std::string& content) {
  const json file = json::parse(read_text(source_file("tokenizers/" + family + "/tokenizer.json")));
  for (const auto& t : file["added_tokens"])
    if (t["content"] == content) return t["id"].get<int64_t>();
  throw std::runtime_error("no added token " + content);
}

// A Qwen3-like folder: tokenizer.json, tokenizer_config.json holding the template as a string (as the Hub
// stores it) and generation_config.json's stop ids.
void qwen3_folder(const QTemporaryDir& dir) {
  write_text(dir, "tokenizer.json", read_text(source_file("tokenizers/qwen/tokenizer.json")));
  json config = {{"bos_token", nullptr},
                 {"eos_token", "<|im_end|>"},
                 {"pad_token", "<|endoftext|>"},
                 {"chat_template", read_text(source_file("chat_templates/qwen3.jinja"))}};
  write_text(dir, "tokenizer_config.json", config.dump(2));
  write_text(dir, "generation_config.json",
             json({{"eos_token_id", {added_id("qwen", "<|im_end|>"), added_id("qwen", "<|endoftext|>")}}}).dump());
}

// A Gemma-3-like folder: the template in chat_template.jinja, <end_of_turn> a stop token only through
// generation_config.json.
void gemma3_folder(const QTemporaryDir& dir) {
  write_text(dir, "tokenizer.json", read_text(source_file("tokenizers/gemma/tokenizer.json")));
  write_text(dir, "chat_template.jinja", read_text(source_file("chat_templates/gemma3.jinja")));
  json config = {{"bos_token", "<bos>"}, {"eos_token", "<eos>"}, {"pad_token", "<pad>"}, {"unk_token", "<unk>"}};
  write_text(dir, "tokenizer_config.json", config.dump(2));
  write_text(dir, "generation_config.json",
             json({{"eos_token_id", {added_id("gemma", "<eos>"), added_id("gemma", "<end_of_turn>")}}}).dump());
}

Ids reference_ids(const std::string& tokenizer_json, const std::string& text) {
  return tbtest::tokenizers_reference_ids(tokenizer_json, text);
}

std::vector<Message> chat() {
  return {Message("system", "You are a careful assistant.", true), Message("user", "What is 12+30?", true),
          Message("assistant", "It is 42."), Message("user", "And in words?", true),
          Message("assistant", "Forty-two.\nThat's all.")};
}

// The text of the trained tokens (each run decoded), each run closed by " | ".
std::string trained_text(const HfTokenizer& tok, const Ids& ids, const std::vector<bool>& mask) {
  std::string out;
  Ids run;
  for (size_t i = 0; i < ids.size(); ++i) {
    if (!mask[i]) run.push_back(ids[i]);
    if (!run.empty() && (i + 1 == ids.size() || mask[i + 1])) {
      out += tok.bpe().decode(run, false) + " | ";
      run.clear();
    }
  }
  return out;
}

}  // namespace

class TestHfTokenizer : public QObject {
  Q_OBJECT
 private Q_SLOTS:
  void specialTokensAsTransformersReadsThem() {
    QTemporaryDir dir;
    qwen3_folder(dir);
    auto tok = HfTokenizer::from_path(dir.path().toStdString());
    QCOMPARE(tok->bos_id(), int64_t(-1));  // bos_token: null
    QCOMPARE(tok->eos_id(), added_id("qwen", "<|im_end|>"));
    QCOMPARE(tok->pad_id(), added_id("qwen", "<|endoftext|>"));
    QCOMPARE(tok->stop_tokens(), (Ids{added_id("qwen", "<|im_end|>"), added_id("qwen", "<|endoftext|>")}));
    QVERIFY(tok->chat_template() != nullptr);
    // special_tokens_map.json overrides tokenizer_config.json ({"content": ...} objects too).
    write_text(dir, "special_tokens_map.json", json({{"eos_token", {{"content", "<|endoftext|>"}}}}).dump());
    tok = HfTokenizer::from_path(dir.filePath("tokenizer.json").toStdString());
    QCOMPARE(tok->eos_id(), added_id("qwen", "<|endoftext|>"));
    // A token the folder names that the vocabulary lacks is an error naming it.
    write_text(dir, "special_tokens_map.json", json({{"eos_token", "<|nope|>"}}).dump());
    try {
      HfTokenizer::from_path(dir.path().toStdString());
      QFAIL("accepted an EOS token outside the vocabulary");
    } catch (const std::runtime_error& e) {
      QVERIFY2(QString(e.what()).contains("<|nope|>"), e.what());
    }
  }

  // Qwen3: headers, the system turn and the user turns are masked; each assistant turn trains from its
  // content through <|im_end|>; the last one also trains the empty think block the template writes.
  void qwen3MaskFollowsTheTemplate() {
    QTemporaryDir dir;
    qwen3_folder(dir);
    const auto tok = HfTokenizer::from_path(dir.path().toStdString());
    const auto enc = tok->encode_conversation(chat(), false);
    QVERIFY2(enc.text.rfind("<|im_start|>system\nYou are a careful assistant.<|im_end|>\n", 0) == 0, enc.text.c_str());
    QCOMPARE(enc.tokens, reference_ids(dir.filePath("tokenizer.json").toStdString(), enc.text));
    QCOMPARE(trained_text(*tok, enc.tokens, enc.mask),
             std::string("It is 42.<|im_end|> | <think>\n\n</think>\n\nForty-two.\nThat's all.<|im_end|> | "));
    // tokenize_messages is the same encoding.
    const auto tm = tok->tokenize_messages(chat());
    QCOMPARE(tm.tokens, enc.tokens);
    QCOMPARE(tm.mask, enc.mask);
    // Training on the prompt too: the user turns train as written, headers included.
    auto with_input = chat();
    with_input[1].masked = false;
    const auto all = tok->encode_conversation(with_input, false);
    QVERIFY(trained_text(*tok, all.tokens, all.mask).rfind("<|im_start|>user\nWhat is 12+30?<|im_end|>\n | ", 0) == 0);
  }

  // A generation prompt: a trailing empty assistant message becomes the template's add_generation_prompt;
  // enable_thinking=false (chat_template_kwargs) makes Qwen3's prompt hold an empty think block.
  void generationPromptAndKwargs() {
    QTemporaryDir dir;
    qwen3_folder(dir);
    auto prompt = chat();
    prompt.back() = Message("assistant", "");
    const auto tok = HfTokenizer::from_path(dir.path().toStdString());
    const auto tm = tok->tokenize_messages(prompt, false);
    const std::string text = tok->bpe().decode(tm.tokens, false);
    QVERIFY2(text.size() > 22 && text.substr(text.size() - 22) == "<|im_start|>assistant\n", text.c_str());
    const auto component = tb::components::builtin().build<std::shared_ptr<tb::data::Tokenizer>>(
        YAML::Load("_component_: tunebench.data.hf_tokenizer\npath: " + dir.path().toStdString() +
                   "\nchat_template_kwargs: {enable_thinking: false}"));
    const auto no_think = component->tokenize_messages(prompt, false);
    const std::string text2 = tok->bpe().decode(no_think.tokens, false);
    const std::string tail = "<|im_start|>assistant\n<think>\n\n</think>\n\n";
    QVERIFY2(text2.size() > tail.size() && text2.substr(text2.size() - tail.size()) == tail, text2.c_str());
  }

  // Gemma 3: the system prompt folded into the first user turn is masked with it; <end_of_turn> (a stop
  // token from generation_config.json) ends each trained span, the newline after it is not trained.
  void gemma3MaskFollowsTheTemplate() {
    QTemporaryDir dir;
    gemma3_folder(dir);
    const auto tok = HfTokenizer::from_path(dir.path().toStdString());
    const auto enc = tok->encode_conversation(chat(), false);
    QVERIFY2(enc.text.rfind("<bos><start_of_turn>user\nYou are a careful assistant.\n\nWhat is 12+30?", 0) == 0,
             enc.text.c_str());
    QCOMPARE(enc.tokens, reference_ids(dir.filePath("tokenizer.json").toStdString(), enc.text));
    QCOMPARE(QString::fromStdString(trained_text(*tok, enc.tokens, enc.mask)),
             QString("It is 42.<end_of_turn> | Forty-two.\nThat's all.<end_of_turn> | "));
    // Without generation_config.json only <eos> stops: the rest of the assistant's text trains too.
    QFile::remove(dir.filePath("generation_config.json"));
    const auto eos_only = HfTokenizer::from_path(dir.path().toStdString());
    const auto enc2 = eos_only->encode_conversation(chat(), false);
    QCOMPARE(trained_text(*eos_only, enc2.tokens, enc2.mask),
             std::string("It is 42.<end_of_turn>\n | Forty-two.\nThat's all.<end_of_turn>\n | "));
  }

  // Truncation cuts the rendered tokens (no EOS forced); a conversation cut before any assistant text
  // has every label masked.
  void truncation() {
    QTemporaryDir dir;
    qwen3_folder(dir);
    HfTokenizerOptions o;
    o.max_seq_len = 8;
    const auto tok = HfTokenizer::from_path(dir.path().toStdString(), o);
    const auto tm = tok->tokenize_messages(chat());
    QCOMPARE(tm.tokens.size(), size_t(8));
    QVERIFY(tm.truncated);
    QVERIFY(std::all_of(tm.mask.begin(), tm.mask.end(), [](bool m) { return m; }));
  }

  // chat_template: none uses torchtune's formatting; a .jinja file replaces the folder's template.
  void templateChoice() {
    QTemporaryDir dir;
    qwen3_folder(dir);
    HfTokenizerOptions none;
    none.chat_template = "none";
    QVERIFY(HfTokenizer::from_path(dir.path().toStdString(), none)->chat_template() == nullptr);
    HfTokenizerOptions file;
    file.chat_template = source_file("chat_templates/qwen2.5.jinja");
    const auto tok = HfTokenizer::from_path(dir.path().toStdString(), file);
    const auto enc = tok->encode_conversation({Message("user", "Hi", true), Message("assistant", "Hello.")}, false);
    QVERIFY2(enc.text.find("You are Qwen") != std::string::npos, enc.text.c_str());  // Qwen2.5's default system prompt
    QCOMPARE(trained_text(*tok, enc.tokens, enc.mask), std::string("Hello.<|im_end|> | "));
    // A template error names the template's origin and line.
    write_text(dir, "broken.jinja", "{% for m in messages %}\n{{ m.content }\n{% endfor %}");
    file.chat_template = dir.filePath("broken.jinja").toStdString();
    try {
      HfTokenizer::from_path(dir.path().toStdString(), file);
      QFAIL("accepted a broken template");
    } catch (const std::runtime_error& e) {
      QVERIFY2(QString(e.what()).contains("broken.jinja:2:"), e.what());
    }
  }
};

TB_TEST(TestHfTokenizer)
#include "test_hf_tokenizer.moc"
