// A SentencePiece `tokenizer.model` (Llama 2, Mistral) as torchtune's Llama2Tokenizer /
// MistralTokenizer: BOS/EOS by flag, pad id 0 (Llama 2's model has none), whitespace trimming of
// continuation text so that tokenize_messages(prompt, response) gives the ids of encode(prompt+response).
//
// libsentencepiece is reached through the dlopen'ed shim (data/sentencepiece_library.h).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "data/tokenizer.h"

struct tb_spm_model;

namespace tb::data {

struct SentencePieceOptions {
  std::optional<int64_t> max_seq_len;
  std::optional<PromptTemplate> prompt_template;  // none: messages are tokenized as they are
  std::string truncation_type = "right";
};

class SentencePieceTokenizer : public Tokenizer {
 public:
  // Throws std::runtime_error with the path and the reason when the file cannot be loaded.
  static std::shared_ptr<SentencePieceTokenizer> from_file(const std::string& path,
                                                           const SentencePieceOptions& options = {});
  static std::shared_ptr<SentencePieceTokenizer> from_bytes(const std::string& serialized_model,
                                                            const SentencePieceOptions& options = {});
  ~SentencePieceTokenizer() override;
  SentencePieceTokenizer(const SentencePieceTokenizer&) = delete;
  SentencePieceTokenizer& operator=(const SentencePieceTokenizer&) = delete;

  std::vector<int64_t> encode(const std::string& text, bool add_bos = true, bool add_eos = true) const override;
  // torchtune's trim_leading_whitespace: encodes "\n" + text and drops the ids of "\n", so the text
  // gets no dummy-prefix space (only when the vocabulary encodes whitespace, as torchtune checks).
  std::vector<int64_t> encode(const std::string& text, bool add_bos, bool add_eos,
                              bool trim_leading_whitespace) const;
  std::string decode(const std::vector<int64_t>& ids) const override;

  int64_t bos_id() const override { return bos_id_; }
  int64_t eos_id() const override { return eos_id_; }
  int64_t pad_id() const override { return pad_id_; }
  int64_t vocab_size() const override { return vocab_size_; }
  int64_t unk_id() const { return unk_id_; }
  // The model's own pad id (-1 for Llama 2 style models; pad_id() is then 0, as in torchtune).
  int64_t model_pad_id() const { return model_pad_id_; }

  TokenizedMessages tokenize_messages(const std::vector<Message>& messages,
                                      bool add_end_tokens = true) const override;

  std::string id_to_token(int64_t id) const override { return id_to_piece(id); }
  std::string id_to_piece(int64_t id) const;  // throws std::out_of_range outside the vocabulary
  int64_t piece_to_id(const std::string& piece) const;  // unk_id() when absent
  bool is_control(int64_t id) const;
  // The piece's score and ModelProto type (1 normal, 2 unknown, 3 control, 5 unused, 6 byte), as a GGUF
  // vocabulary records them. Throws std::out_of_range outside the vocabulary.
  std::pair<float, int32_t> piece_score_and_type(int64_t id) const;

 private:
  explicit SentencePieceTokenizer(tb_spm_model* model, const SentencePieceOptions& options);
  std::vector<int64_t> encode_raw(const std::string& text) const;  // no BOS/EOS

  tb_spm_model* model_ = nullptr;
  std::optional<PromptTemplate> prompt_template_;
  int64_t bos_id_ = -1, eos_id_ = -1, pad_id_ = 0, model_pad_id_ = -1, unk_id_ = 0, vocab_size_ = 0;
  bool encodes_whitespace_ = false;
  std::vector<int64_t> encoded_prefix_;  // ids of "\n", the prefix used to trim leading whitespace
};

}  // namespace tb::data
