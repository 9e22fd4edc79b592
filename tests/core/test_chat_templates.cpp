// text/jinja on the chat templates models ship (tests/data/chat_templates): every family's template with
// every conversation of conversations.json, with and without the generation prompt (and Qwen3's
// enable_thinking both ways), rendered by render_chat and by jinja2 as transformers' apply_chat_template
// renders it: identical bytes, or both raise at the same template line with the same message. Then the
// observer: each message's text, as the template prints it, lies in the byte range reported for it.
#include <QtTest>

#include "test_main.h"
#include "test_support.h"

#include <QTemporaryDir>

#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "text/jinja.h"

using tb::text::jinja::ChatRenderInputs;
using tb::text::jinja::Json;
using tb::text::jinja::RenderObserver;
using tb::text::jinja::Template;
using tb::text::jinja::TemplateError;

namespace {

std::string data_dir() { return std::string(TB_SOURCE_DIR) + "/tests/data/chat_templates/"; }

std::string read_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) qFatal("cannot read %s", path.c_str());
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

Json read_json(const std::string& path) { return Json::parse(read_text(path)); }

// One rendering: a family's template, a conversation, the generation prompt on or off, extra kwargs.
struct Variant {
  std::string label, family;
  ChatRenderInputs inputs;
};

std::vector<Variant> all_variants() {
  const Json models = read_json(data_dir() + "models.json");
  const Json conversations = read_json(data_dir() + "conversations.json");
  std::vector<Variant> out;
  for (auto m = models.begin(); m != models.end(); ++m) {
    const Json kwarg_variants = m->contains("kwarg_variants") ? (*m)["kwarg_variants"] : Json::array({Json::object()});
    for (const Json& conversation : conversations) {
      for (const bool generation_prompt : {false, true}) {
        for (const Json& kwargs : kwarg_variants) {
          Variant v;
          v.family = m.key();
          v.label = m.key() + "/" + conversation["name"].get<std::string>() + (generation_prompt ? "/prompt" : "") +
                    (kwargs.empty() ? "" : "/" + kwargs.dump());
          v.inputs.messages = conversation["messages"];
          if (conversation.contains("tools")) v.inputs.tools = conversation["tools"];
          v.inputs.add_generation_prompt = generation_prompt;
          v.inputs.extra = (*m)["special_tokens"];
          v.inputs.extra.update((*m)["kwargs"]);
          v.inputs.extra.update(kwargs);
          out.push_back(std::move(v));
        }
      }
    }
  }
  return out;
}

const Template& template_of(const std::string& family) {
  static std::map<std::string, Template> cache;
  auto it = cache.find(family);
  if (it == cache.end())
    it = cache.emplace(family, Template(read_text(data_dir() + family + ".jinja"), family + ".jinja")).first;
  return it->second;
}

// The ranges of the loop iterations reported for each message (by address), from properly nested events.
// A message's range is the output of the loop iteration on it; an iteration that prints nothing (Qwen3
// walks messages[::-1] first to find the last user query) does not count.
class MessageRanges : public RenderObserver {
 public:
  explicit MessageRanges(const Json& messages) : ranges(messages.size(), {npos, npos}), messages_(messages) {}
  static constexpr size_t npos = std::string::npos;

  void on_loop_begin(size_t) override { open_.push_back({-1, 0}); }
  void on_loop_item(const Json* node, size_t offset) override {
    if (open_.empty()) {
      bad = "an item outside a loop";
      return;
    }
    close_current(offset);
    int index = -1;
    for (size_t i = 0; i < messages_.size(); ++i)
      if (node == &messages_[i]) index = static_cast<int>(i);
    open_.back() = {index, offset};
  }
  void on_loop_end(size_t offset) override {
    if (open_.empty()) {
      bad = "an end without a begin";
      return;
    }
    close_current(offset);
    open_.pop_back();
  }

  std::vector<std::pair<size_t, size_t>> ranges;
  std::string bad;

 private:
  void close_current(size_t offset) {
    const auto [index, begin] = open_.back();
    open_.back().first = -1;
    if (index < 0 || offset == begin) return;
    if (ranges[static_cast<size_t>(index)].first != npos) bad = "a message printed by two iterations";
    ranges[static_cast<size_t>(index)] = {begin, offset};
  }
  const Json& messages_;
  std::vector<std::pair<int, size_t>> open_;  // per open loop: the current item's message and where it began
};

std::string strip(const std::string& s) {
  const size_t b = s.find_first_not_of(" \t\n\r");
  if (b == std::string::npos) return "";
  return s.substr(b, s.find_last_not_of(" \t\n\r") - b + 1);
}

// A message's text as templates print it: stripped (Gemma and Llama trim), after a </think> (Qwen3 moves
// the reasoning out), or JSON-quoted (Llama prints tool results with tojson).
std::vector<std::string> printed_forms(const std::string& content) {
  std::vector<std::string> forms = {strip(content)};
  const size_t think = content.rfind("</think>");
  if (think != std::string::npos) forms.push_back(strip(content.substr(think + 8)));
  const std::string quoted = Json(strip(content)).dump();
  forms.push_back(quoted.substr(1, quoted.size() - 2));
  return forms;
}

bool printed_within(const std::string& out, std::pair<size_t, size_t> range, const std::string& content) {
  if (range.first == std::string::npos || range.second == std::string::npos) return false;
  const std::string slice = out.substr(range.first, range.second - range.first);
  for (const auto& form : printed_forms(content))
    if (!form.empty() && slice.find(form) != std::string::npos) return true;
  return false;
}

}  // namespace

class TestChatTemplates : public QObject {
  Q_OBJECT
 private Q_SLOTS:
  void everyTemplateParses() {
    const Json models = read_json(data_dir() + "models.json");
    QCOMPARE(models.size(), size_t(11));
    for (auto m = models.begin(); m != models.end(); ++m) QVERIFY(!template_of(m.key()).has_generation_blocks());
  }

  void rendersLikeJinja2() {
    if (tbtest::reference_python().isEmpty()) QSKIP("no python3 with jinja2 for the reference");
    const std::vector<Variant> variants = all_variants();
    Json cases = Json::array();
    for (const auto& v : variants) {
      cases.push_back({{"template_file", data_dir() + v.family + ".jinja"},
                       {"chat",
                        {{"messages", v.inputs.messages},
                         {"tools", v.inputs.tools},
                         {"documents", v.inputs.documents},
                         {"add_generation_prompt", v.inputs.add_generation_prompt},
                         {"extra", v.inputs.extra}}}});
    }
    QTemporaryDir dir;
    const std::string in = dir.filePath("cases.json").toStdString(), out = dir.filePath("results.json").toStdString();
    std::ofstream(in) << cases.dump();
    const auto r = tbtest::run_reference("jinja_reference.py", {QString::fromStdString(in), QString::fromStdString(out)});
    QVERIFY2(r.code == 0, qPrintable(r.err));
    const Json expected = read_json(out);
    QCOMPARE(expected.size(), variants.size());

    int rendered = 0, raised = 0;
    for (size_t i = 0; i < variants.size(); ++i) {
      const Variant& v = variants[i];
      const Json& ref = expected[i];
      const QByteArray label = v.label.c_str();
      try {
        const std::string ours = render_chat(template_of(v.family), v.inputs);
        QVERIFY2(ref.contains("output"), label + " renders here, jinja2 raises: " + QByteArray(ref.dump().c_str()));
        if (ours != ref["output"].get<std::string>()) {
          QCOMPARE(QString::fromStdString(ours), QString::fromStdString(ref["output"].get<std::string>()));
        }
        ++rendered;
      } catch (const TemplateError& e) {
        QVERIFY2(ref.contains("error"), label + " raises here, jinja2 renders: " + e.what());
        QCOMPARE(QString::fromStdString(e.message()), QString::fromStdString(ref["error"].get<std::string>()));
        QCOMPARE(e.line(), ref["line"].get<int>());
        QCOMPARE(e.name(), v.family + ".jinja");
        ++raised;
      }
    }
    // Gemma 2 refuses system messages, Gemma and Mistral want alternating roles, Llama one tool call at once.
    QCOMPARE(rendered + raised, static_cast<int>(variants.size()));
    QVERIFY(rendered >= 220);
    QVERIFY(raised >= 20);
  }

  // What loss masks stand on: each assistant message's text lies in the bytes reported for that message;
  // user and tool messages too, unless the template prints them before its loop (Llama puts the first user
  // message next to the tool definitions). Message ranges never overlap and come in conversation order.
  void observerAttributesMessages() {
    int checked_assistant = 0, checked_other = 0;
    for (const Variant& v : all_variants()) {
      const QByteArray label = v.label.c_str();
      MessageRanges ranges(v.inputs.messages);
      std::string out;
      try {
        out = render_chat(template_of(v.family), v.inputs, &ranges);
      } catch (const TemplateError&) {
        continue;  // the template refuses this conversation (rendersLikeJinja2 checks jinja2 does too)
      }
      QVERIFY2(ranges.bad.empty(), label + ": " + ranges.bad.c_str());
      size_t first_start = std::string::npos, last_end = 0;
      for (const auto& [begin, end] : ranges.ranges) {
        if (begin == std::string::npos) continue;
        QVERIFY2(end != std::string::npos && end <= out.size(), label);
        QVERIFY2(begin >= last_end, label + ": message ranges overlap or come out of order");
        last_end = end;
        first_start = std::min(first_start, begin);
      }
      QVERIFY2(first_start != std::string::npos, label + ": no message reported");
      for (size_t i = 0; i < v.inputs.messages.size(); ++i) {
        const Json& m = v.inputs.messages[i];
        const std::string role = m["role"];
        const std::string content = m.contains("content") && m["content"].is_string() ? m["content"].get<std::string>() : "";
        if (role == "system") continue;  // templates move the system prompt before their loop, or drop it
        const bool own = printed_within(out, ranges.ranges[i], content);
        if (strip(content).empty()) {
          // nothing printed to look for (an assistant turn that only calls tools)
        } else if (role != "assistant" && read_text(data_dir() + v.family + ".jinja").find(role) == std::string::npos) {
          // the template never names this role and drops it (Phi-3.5 prints no tool messages)
        } else if (!printed_within(out, {0, out.size()}, content)) {
          // the template drops this content (Mistral prints only the calls of an assistant that calls tools)
        } else if (role == "assistant") {
          QVERIFY2(own, label + ": assistant message " + QByteArray::number(int(i)) + " is not in its own range");
          ++checked_assistant;
        } else {
          const bool hoisted = printed_within(out, {0, first_start}, content);
          QVERIFY2(own || hoisted, label + ": message " + QByteArray::number(int(i)) + " is not in its own range");
          ++checked_other;
        }
        // A tool call's arguments, where the template prints them, print inside their message.
        for (const Json& call : m.value("tool_calls", Json::array())) {
          Json args = call["function"]["arguments"];
          if (args.is_string()) args = Json::parse(args.get<std::string>());
          const std::string needle = "\"" + args.begin().key() + "\": " + args.begin()->dump();
          const size_t at = out.find(needle, first_start);
          if (at == std::string::npos) continue;
          QVERIFY2(at >= ranges.ranges[i].first && at < ranges.ranges[i].second, label + ": tool call outside its message");
        }
      }
    }
    QVERIFY(checked_assistant >= 150);
    QVERIFY(checked_other >= 150);
  }
};

TB_TEST(TestChatTemplates)
#include "test_chat_templates.moc"
