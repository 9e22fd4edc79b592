// The normalizers of tokenizer.json, each as Hugging Face tokenizers applies it to a NormalizedString
// (alignments included): NFC/NFD/NFKC/NFKD, Lowercase, Replace, Prepend, Strip, StripAccents, Nmt,
// ByteLevel, BertNormalizer and Sequence.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "text/normalized_string.h"
#include "text/regex.h"

namespace tb::text {

class Normalizer {
 public:
  enum class Kind { Unicode, Lowercase, Replace, Prepend, Strip, StripAccents, Nmt, ByteLevel, Bert, Sequence };
  virtual ~Normalizer() = default;
  virtual Kind kind() const = 0;
  virtual void normalize(NormalizedString& s) const = 0;
};

class UnicodeNormalizer : public Normalizer {
 public:
  explicit UnicodeNormalizer(NormalForm form) : form_(form) {}
  Kind kind() const override { return Kind::Unicode; }
  NormalForm form() const { return form_; }
  void normalize(NormalizedString& s) const override { s.normalize(form_); }

 private:
  NormalForm form_;
};

class LowercaseNormalizer : public Normalizer {
 public:
  Kind kind() const override { return Kind::Lowercase; }
  void normalize(NormalizedString& s) const override { s.lowercase(); }
};

class ReplaceNormalizer : public Normalizer {
 public:
  ReplaceNormalizer(Pattern pattern, std::string content)
      : pattern_(std::move(pattern)), content_(std::move(content)) {}
  Kind kind() const override { return Kind::Replace; }
  void normalize(NormalizedString& s) const override { s.replace(pattern_, content_); }

 private:
  Pattern pattern_;
  std::string content_;
};

class PrependNormalizer : public Normalizer {
 public:
  explicit PrependNormalizer(std::string prepend) : prepend_(std::move(prepend)) {}
  Kind kind() const override { return Kind::Prepend; }
  void normalize(NormalizedString& s) const override {
    if (!s.empty()) s.prepend(prepend_);
  }

 private:
  std::string prepend_;
};

class StripNormalizer : public Normalizer {
 public:
  StripNormalizer(bool left, bool right) : left_(left), right_(right) {}
  Kind kind() const override { return Kind::Strip; }
  void normalize(NormalizedString& s) const override;

 private:
  bool left_, right_;
};

class StripAccentsNormalizer : public Normalizer {
 public:
  Kind kind() const override { return Kind::StripAccents; }
  void normalize(NormalizedString& s) const override;
};

class NmtNormalizer : public Normalizer {
 public:
  Kind kind() const override { return Kind::Nmt; }
  void normalize(NormalizedString& s) const override;
};

class ByteLevelNormalizer : public Normalizer {
 public:
  Kind kind() const override { return Kind::ByteLevel; }
  void normalize(NormalizedString& s) const override;
};

class BertNormalizer : public Normalizer {
 public:
  BertNormalizer(bool clean_text, bool handle_chinese_chars, std::optional<bool> strip_accents, bool lowercase)
      : clean_text_(clean_text),
        handle_chinese_chars_(handle_chinese_chars),
        strip_accents_(strip_accents.value_or(lowercase)),
        lowercase_(lowercase) {}
  Kind kind() const override { return Kind::Bert; }
  void normalize(NormalizedString& s) const override;

 private:
  bool clean_text_, handle_chinese_chars_, strip_accents_, lowercase_;
};

class SequenceNormalizer : public Normalizer {
 public:
  explicit SequenceNormalizer(std::vector<std::shared_ptr<const Normalizer>> steps) : steps_(std::move(steps)) {}
  Kind kind() const override { return Kind::Sequence; }
  const std::vector<std::shared_ptr<const Normalizer>>& steps() const { return steps_; }
  void normalize(NormalizedString& s) const override {
    for (const auto& step : steps_) step->normalize(s);
  }

 private:
  std::vector<std::shared_ptr<const Normalizer>> steps_;
};

}  // namespace tb::text
