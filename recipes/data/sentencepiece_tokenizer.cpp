#include "data/sentencepiece_tokenizer.h"

#include <stdexcept>

#include "config/regular_file.h"
#include "data/sentencepiece_library.h"

namespace tb::data {

namespace {

// SentencePiece's own words for a file that is not a model name its source line and protobuf call
// ("Internal: ./src/sentencepiece_processor.cc(1101) [model_proto->ParseFromArray(...)]"): said plainly.
std::string load_error(const std::string& what, const std::string& path) {
  if (what.find("ParseFromArray") != std::string::npos || what.find("ParseFromString") != std::string::npos)
    return path + ": not a SentencePiece model (tokenizer.model): its bytes do not parse as one";
  return what;
}

// Checked before the model is loaded, so that a bad option cannot leak it.
void check(const SentencePieceOptions& options) {
  if (options.truncation_type != "left" && options.truncation_type != "right")
    throw std::invalid_argument("truncation_type must be 'left' or 'right', got '" + options.truncation_type + "'");
  if (options.max_seq_len && *options.max_seq_len < 1)
    throw std::invalid_argument("max_seq_len must be at least 1, got " + std::to_string(*options.max_seq_len));
}
}  // namespace

std::shared_ptr<SentencePieceTokenizer> SentencePieceTokenizer::from_file(const std::string& path,
                                                                           const SentencePieceOptions& options) {
  check(options);
  // A folder or a FIFO: refused before SentencePiece reads it ("Is a directory", or a wait forever).
  if (const auto what = config::not_a_regular_file(path)) throw std::runtime_error(path + ": " + *what);
  const auto& lib = SentencePieceLibrary::get();
  char* error = nullptr;
  tb_spm_model* model = lib.load_file(path.c_str(), &error);
  if (!model) throw std::runtime_error(load_error(lib.take_error(error), path));
  return std::shared_ptr<SentencePieceTokenizer>(new SentencePieceTokenizer(model, options));
}

std::shared_ptr<SentencePieceTokenizer> SentencePieceTokenizer::from_bytes(const std::string& serialized_model,
                                                                            const SentencePieceOptions& options) {
  check(options);
  const auto& lib = SentencePieceLibrary::get();
  char* error = nullptr;
  tb_spm_model* model = lib.load_bytes(serialized_model.data(), serialized_model.size(), &error);
  if (!model) throw std::runtime_error(load_error(lib.take_error(error), "the tokenizer's model bytes"));
  return std::shared_ptr<SentencePieceTokenizer>(new SentencePieceTokenizer(model, options));
}

SentencePieceTokenizer::SentencePieceTokenizer(tb_spm_model* model, const SentencePieceOptions& options)
    : model_(model), prompt_template_(options.prompt_template) {
  const auto& lib = SentencePieceLibrary::get();
  set_max_seq_len(options.max_seq_len);
  set_truncation_type(options.truncation_type);
  vocab_size_ = lib.vocab_size(model_);
  bos_id_ = lib.bos_id(model_);
  eos_id_ = lib.eos_id(model_);
  unk_id_ = lib.unk_id(model_);
  model_pad_id_ = lib.pad_id(model_);
  // torchtune's Llama2Tokenizer and MistralTokenizer always pad with id 0.
  pad_id_ = 0;
  for (const char* c : {" ", "\n", "\t", "\r", "\v"}) {
    if (!encode_raw(c).empty()) encodes_whitespace_ = true;
  }
  encoded_prefix_ = encode_raw("\n");
}

SentencePieceTokenizer::~SentencePieceTokenizer() {
  if (model_) SentencePieceLibrary::get().free_model(model_);
}

std::vector<int64_t> SentencePieceTokenizer::encode_raw(const std::string& text) const {
  const auto& lib = SentencePieceLibrary::get();
  int32_t* ids = nullptr;
  size_t n = 0;
  char* error = nullptr;
  if (lib.encode(model_, text.data(), text.size(), &ids, &n, &error) != 0)
    throw std::runtime_error(lib.take_error(error));
  std::vector<int64_t> out(ids, ids + n);
  lib.free_buffer(ids);
  return out;
}

std::vector<int64_t> SentencePieceTokenizer::encode(const std::string& text, bool add_bos, bool add_eos) const {
  return encode(text, add_bos, add_eos, false);
}

std::vector<int64_t> SentencePieceTokenizer::encode(const std::string& text, bool add_bos, bool add_eos,
                                                    bool trim_leading_whitespace) const {
  std::vector<int64_t> out;
  if (add_bos && bos_id_ >= 0) out.push_back(bos_id_);
  std::vector<int64_t> body;
  if (trim_leading_whitespace && encodes_whitespace_) {
    body = encode_raw("\n" + text);
    body.erase(body.begin(), body.begin() + std::min(body.size(), encoded_prefix_.size()));
  } else {
    body = encode_raw(text);
  }
  out.insert(out.end(), body.begin(), body.end());
  if (add_eos && eos_id_ >= 0) out.push_back(eos_id_);
  return out;
}

std::string SentencePieceTokenizer::decode(const std::vector<int64_t>& ids) const {
  const auto& lib = SentencePieceLibrary::get();
  std::vector<int32_t> in;
  in.reserve(ids.size());
  for (const auto id : ids) {
    if (id < 0 || id >= vocab_size_)
      throw std::out_of_range("token id " + std::to_string(id) + " is outside the vocabulary of " +
                              std::to_string(vocab_size_));
    in.push_back(static_cast<int32_t>(id));
  }
  char* text = nullptr;
  size_t size = 0;
  char* error = nullptr;
  if (lib.decode(model_, in.data(), in.size(), &text, &size, &error) != 0)
    throw std::runtime_error(lib.take_error(error));
  std::string out(text, size);
  lib.free_buffer(text);
  return out;
}

TokenizedMessages SentencePieceTokenizer::tokenize_messages(const std::vector<Message>& messages,
                                                            bool add_end_tokens) const {
  const auto templated = prompt_template_ ? prompt_template_->apply(messages) : messages;
  return tokenize_messages_no_special_tokens(
      templated, [this](const std::string& text, bool trim) { return encode(text, false, false, trim); },
      bos_id_ >= 0 ? std::optional<int64_t>(bos_id_) : std::nullopt,
      add_end_tokens && eos_id_ >= 0 ? std::optional<int64_t>(eos_id_) : std::nullopt, max_seq_len(),
      truncation_type());
}

std::string SentencePieceTokenizer::id_to_piece(int64_t id) const {
  const auto& lib = SentencePieceLibrary::get();
  char* piece = nullptr;
  size_t size = 0;
  if (id < 0 || id >= vocab_size_ || lib.id_to_piece(model_, static_cast<int32_t>(id), &piece, &size) != 0)
    throw std::out_of_range("token id " + std::to_string(id) + " is outside the vocabulary of " +
                            std::to_string(vocab_size_));
  std::string out(piece, size);
  lib.free_buffer(piece);
  return out;
}

int64_t SentencePieceTokenizer::piece_to_id(const std::string& piece) const {
  return SentencePieceLibrary::get().piece_to_id(model_, piece.data(), piece.size());
}

bool SentencePieceTokenizer::is_control(int64_t id) const {
  return id >= 0 && id < vocab_size_ && SentencePieceLibrary::get().is_control(model_, static_cast<int32_t>(id));
}

std::pair<float, int32_t> SentencePieceTokenizer::piece_score_and_type(int64_t id) const {
  float score = 0;
  int32_t type = 0;
  if (id < 0 || id >= vocab_size_ ||
      SentencePieceLibrary::get().piece_info(model_, static_cast<int32_t>(id), &score, &type) != 0)
    throw std::out_of_range("token id " + std::to_string(id) + " is outside the vocabulary of " +
                            std::to_string(vocab_size_));
  return {score, type};
}

}  // namespace tb::data
