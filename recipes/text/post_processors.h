// The post-processors of tokenizer.json, run on every encoding (Hugging Face tokenizers runs them with
// add_special_tokens false too): ByteLevel trims the offsets of tokens that start or end with spaces (when
// trim_offsets), TemplateProcessing adds its special tokens (only with add_special_tokens), Sequence runs
// them in order. Encodings here are of one sequence (no pairs).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "text/regex.h"

namespace tb::text {

struct Encoding {
  std::vector<uint32_t> ids;
  std::vector<std::string> tokens;  // the token strings (an added token: the text it matched)
  std::vector<ByteRange> offsets;   // bytes of the text encoded
};

class PostProcessor {
 public:
  virtual ~PostProcessor() = default;
  virtual void process(Encoding& e, bool add_special_tokens) const = 0;
  // Whether process() may move offsets (the pipeline's fast path needs the token strings then).
  virtual bool changes_offsets() const = 0;
};

class ByteLevelProcessor : public PostProcessor {
 public:
  ByteLevelProcessor(bool trim_offsets, bool add_prefix_space)
      : trim_offsets_(trim_offsets), add_prefix_space_(add_prefix_space) {}
  void process(Encoding& e, bool add_special_tokens) const override;
  bool changes_offsets() const override { return trim_offsets_; }

 private:
  bool trim_offsets_, add_prefix_space_;
};

class TemplateProcessor : public PostProcessor {
 public:
  struct SpecialToken {
    std::vector<uint32_t> ids;
    std::vector<std::string> tokens;
  };
  struct Piece {
    bool is_sequence;  // $A (the text); otherwise the special token `special`
    std::string special;
  };
  // Throws std::invalid_argument when a piece names no special token.
  TemplateProcessor(std::vector<Piece> single, std::map<std::string, SpecialToken> special_tokens);
  void process(Encoding& e, bool add_special_tokens) const override;
  bool changes_offsets() const override { return false; }

 private:
  std::vector<Piece> single_;
  std::map<std::string, SpecialToken> special_tokens_;
};

class SequenceProcessor : public PostProcessor {
 public:
  explicit SequenceProcessor(std::vector<std::shared_ptr<const PostProcessor>> steps) : steps_(std::move(steps)) {}
  void process(Encoding& e, bool add_special_tokens) const override {
    for (const auto& step : steps_) step->process(e, add_special_tokens);
  }
  bool changes_offsets() const override {
    for (const auto& step : steps_)
      if (step->changes_offsets()) return true;
    return false;
  }

 private:
  std::vector<std::shared_ptr<const PostProcessor>> steps_;
};

}  // namespace tb::text
