// The pre-tokenizers of tokenizer.json, as Hugging Face tokenizers runs them on a PreTokenizedString:
// Split, ByteLevel, Metaspace, Digits, Whitespace, WhitespaceSplit, Punctuation, CharDelimiterSplit,
// BertPreTokenizer and Sequence.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "text/pre_tokenized_string.h"
#include "text/regex.h"

namespace tb::text {

class PreTokenizer {
 public:
  enum class Kind {
    Split,
    ByteLevel,
    Metaspace,
    Digits,
    Whitespace,
    WhitespaceSplit,
    Punctuation,
    CharDelimiter,
    Bert,
    Sequence
  };
  virtual ~PreTokenizer() = default;
  virtual Kind kind() const = 0;
  virtual void pre_tokenize(PreTokenizedString& s) const = 0;
};

class SplitPreTokenizer : public PreTokenizer {
 public:
  SplitPreTokenizer(Pattern pattern, SplitBehavior behavior, bool invert)
      : pattern_(std::move(pattern)), behavior_(behavior), invert_(invert) {}
  Kind kind() const override { return Kind::Split; }
  void pre_tokenize(PreTokenizedString& s) const override;
  const Pattern& pattern() const { return pattern_; }
  SplitBehavior behavior() const { return behavior_; }
  bool invert() const { return invert_; }

 private:
  Pattern pattern_;
  SplitBehavior behavior_;
  bool invert_;
};

// GPT-2's regex (when use_regex), then every byte as its byte-level character.
class ByteLevelPreTokenizer : public PreTokenizer {
 public:
  ByteLevelPreTokenizer(bool add_prefix_space, bool use_regex);
  Kind kind() const override { return Kind::ByteLevel; }
  void pre_tokenize(PreTokenizedString& s) const override;
  bool add_prefix_space() const { return add_prefix_space_; }
  bool use_regex() const { return use_regex_; }
  static const Regex& gpt2_regex();

 private:
  bool add_prefix_space_, use_regex_;
};

enum class PrependScheme { Always, First, Never };

class MetaspacePreTokenizer : public PreTokenizer {
 public:
  MetaspacePreTokenizer(char32_t replacement, PrependScheme scheme, bool split);
  Kind kind() const override { return Kind::Metaspace; }
  void pre_tokenize(PreTokenizedString& s) const override;

 private:
  char32_t replacement_;
  std::string replacement_utf8_;
  PrependScheme scheme_;
  bool split_;
};

class DigitsPreTokenizer : public PreTokenizer {
 public:
  explicit DigitsPreTokenizer(bool individual_digits) : individual_(individual_digits) {}
  Kind kind() const override { return Kind::Digits; }
  bool individual() const { return individual_; }
  void pre_tokenize(PreTokenizedString& s) const override;

 private:
  bool individual_;
};

class WhitespacePreTokenizer : public PreTokenizer {
 public:
  Kind kind() const override { return Kind::Whitespace; }
  void pre_tokenize(PreTokenizedString& s) const override;
};

class WhitespaceSplitPreTokenizer : public PreTokenizer {
 public:
  Kind kind() const override { return Kind::WhitespaceSplit; }
  void pre_tokenize(PreTokenizedString& s) const override;
};

class PunctuationPreTokenizer : public PreTokenizer {
 public:
  explicit PunctuationPreTokenizer(SplitBehavior behavior) : behavior_(behavior) {}
  Kind kind() const override { return Kind::Punctuation; }
  void pre_tokenize(PreTokenizedString& s) const override;

 private:
  SplitBehavior behavior_;
};

class CharDelimiterPreTokenizer : public PreTokenizer {
 public:
  explicit CharDelimiterPreTokenizer(char32_t delimiter) : delimiter_(delimiter) {}
  Kind kind() const override { return Kind::CharDelimiter; }
  void pre_tokenize(PreTokenizedString& s) const override;

 private:
  char32_t delimiter_;
};

class BertPreTokenizer : public PreTokenizer {
 public:
  Kind kind() const override { return Kind::Bert; }
  void pre_tokenize(PreTokenizedString& s) const override;
};

class SequencePreTokenizer : public PreTokenizer {
 public:
  explicit SequencePreTokenizer(std::vector<std::shared_ptr<const PreTokenizer>> steps) : steps_(std::move(steps)) {}
  Kind kind() const override { return Kind::Sequence; }
  const std::vector<std::shared_ptr<const PreTokenizer>>& steps() const { return steps_; }
  void pre_tokenize(PreTokenizedString& s) const override {
    for (const auto& step : steps_) step->pre_tokenize(s);
  }

 private:
  std::vector<std::shared_ptr<const PreTokenizer>> steps_;
};

}  // namespace tb::text
