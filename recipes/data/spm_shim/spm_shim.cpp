// libtb_sentencepiece: the C API of tb_spm_api.h over sentencepiece::SentencePieceProcessor.
// Built with -fvisibility=hidden; only the functions marked TB_SPM_EXPORT leave this library.
#include "tb_spm_api.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <memory>
#include <string>
#include <vector>

#include <sentencepiece_processor.h>

#define TB_SPM_EXPORT __attribute__((visibility("default")))

struct tb_spm_model {
  sentencepiece::SentencePieceProcessor processor;
};

namespace {

// A malloc'ed copy of `bytes` with a trailing NUL (handy for messages, harmless for pieces).
char* copy_out(const std::string& bytes) {
  char* out = static_cast<char*>(std::malloc(bytes.size() + 1));
  if (!out) return nullptr;
  std::memcpy(out, bytes.data(), bytes.size());
  out[bytes.size()] = '\0';
  return out;
}

void set_error(char** error, const std::string& message) {
  if (error) *error = copy_out(message);
}

tb_spm_model* load_with(char** error, const std::string& what,
                        sentencepiece::util::Status (*load)(tb_spm_model&, const void*),
                        const void* arg) {
  try {
    auto model = std::make_unique<tb_spm_model>();
    const auto status = load(*model, arg);
    if (!status.ok()) {
      set_error(error, what + ": " + status.ToString());
      return nullptr;
    }
    return model.release();
  } catch (const std::exception& e) {
    set_error(error, what + ": " + e.what());
  } catch (...) {
    set_error(error, what + ": unknown error");
  }
  return nullptr;
}

struct Bytes {
  const char* data;
  size_t size;
};

}  // namespace

extern "C" {

TB_SPM_EXPORT int tb_spm_abi_version(void) { return TB_SPM_ABI_VERSION; }

TB_SPM_EXPORT tb_spm_model* tb_spm_load_file(const char* path, char** error) {
  if (!path) {
    set_error(error, "no path given");
    return nullptr;
  }
  return load_with(
      error, std::string("cannot load SentencePiece model '") + path + "'",
      [](tb_spm_model& m, const void* p) { return m.processor.Load(static_cast<const char*>(p)); }, path);
}

TB_SPM_EXPORT tb_spm_model* tb_spm_load_bytes(const char* data, size_t size, char** error) {
  const Bytes bytes{data, size};
  return load_with(
      error, "cannot load SentencePiece model from memory",
      [](tb_spm_model& m, const void* p) {
        const auto* b = static_cast<const Bytes*>(p);
        return m.processor.LoadFromSerializedProto(absl::string_view(b->data, b->size));
      },
      &bytes);
}

TB_SPM_EXPORT void tb_spm_free(tb_spm_model* model) { delete model; }

TB_SPM_EXPORT int tb_spm_encode(const tb_spm_model* model, const char* text, size_t text_size,
                                int32_t** ids, size_t* num_ids, char** error) {
  if (!model || !ids || !num_ids || (!text && text_size > 0)) {
    set_error(error, "tb_spm_encode: null argument");
    return 1;
  }
  try {
    std::vector<int> out;
    const auto status = model->processor.Encode(absl::string_view(text ? text : "", text_size), &out);
    if (!status.ok()) {
      set_error(error, "SentencePiece encode failed: " + status.ToString());
      return 1;
    }
    *ids = static_cast<int32_t*>(std::malloc(std::max<size_t>(out.size(), 1) * sizeof(int32_t)));
    if (!*ids) {
      set_error(error, "out of memory");
      return 1;
    }
    for (size_t i = 0; i < out.size(); ++i) (*ids)[i] = out[i];
    *num_ids = out.size();
    return 0;
  } catch (const std::exception& e) {
    set_error(error, std::string("SentencePiece encode failed: ") + e.what());
  } catch (...) {
    set_error(error, "SentencePiece encode failed");
  }
  return 1;
}

TB_SPM_EXPORT int tb_spm_decode(const tb_spm_model* model, const int32_t* ids, size_t num_ids, char** text,
                                size_t* text_size, char** error) {
  if (!model || !text || !text_size || (!ids && num_ids > 0)) {
    set_error(error, "tb_spm_decode: null argument");
    return 1;
  }
  try {
    const int size = model->processor.GetPieceSize();
    std::vector<int> in(num_ids);
    for (size_t i = 0; i < num_ids; ++i) {
      if (ids[i] < 0 || ids[i] >= size) {
        set_error(error, "SentencePiece decode: id " + std::to_string(ids[i]) + " is outside the vocabulary of " +
                             std::to_string(size));
        return 1;
      }
      in[i] = ids[i];
    }
    std::string out;
    const auto status = model->processor.Decode(in, &out);
    if (!status.ok()) {
      set_error(error, "SentencePiece decode failed: " + status.ToString());
      return 1;
    }
    *text = copy_out(out);
    *text_size = out.size();
    return *text ? 0 : 1;
  } catch (const std::exception& e) {
    set_error(error, std::string("SentencePiece decode failed: ") + e.what());
  } catch (...) {
    set_error(error, "SentencePiece decode failed");
  }
  return 1;
}

TB_SPM_EXPORT int tb_spm_id_to_piece(const tb_spm_model* model, int32_t id, char** piece, size_t* piece_size) {
  if (!model || !piece || !piece_size || id < 0 || id >= model->processor.GetPieceSize()) return 1;
  try {
    const std::string& p = model->processor.IdToPiece(id);
    *piece = copy_out(p);
    *piece_size = p.size();
    return *piece ? 0 : 1;
  } catch (...) {
    return 1;
  }
}

TB_SPM_EXPORT int32_t tb_spm_piece_to_id(const tb_spm_model* model, const char* piece, size_t piece_size) {
  if (!model) return -1;
  try {
    return model->processor.PieceToId(absl::string_view(piece ? piece : "", piece_size));
  } catch (...) {
    return model->processor.unk_id();
  }
}

TB_SPM_EXPORT int32_t tb_spm_vocab_size(const tb_spm_model* model) {
  return model ? model->processor.GetPieceSize() : 0;
}
TB_SPM_EXPORT int32_t tb_spm_bos_id(const tb_spm_model* model) { return model ? model->processor.bos_id() : -1; }
TB_SPM_EXPORT int32_t tb_spm_eos_id(const tb_spm_model* model) { return model ? model->processor.eos_id() : -1; }
TB_SPM_EXPORT int32_t tb_spm_pad_id(const tb_spm_model* model) { return model ? model->processor.pad_id() : -1; }
TB_SPM_EXPORT int32_t tb_spm_unk_id(const tb_spm_model* model) { return model ? model->processor.unk_id() : -1; }

TB_SPM_EXPORT int tb_spm_is_control(const tb_spm_model* model, int32_t id) {
  if (!model || id < 0 || id >= model->processor.GetPieceSize()) return 0;
  return model->processor.IsControl(id) ? 1 : 0;
}

TB_SPM_EXPORT int tb_spm_piece_info(const tb_spm_model* model, int32_t id, float* score, int32_t* type) {
  if (!model || id < 0 || id >= model->processor.GetPieceSize()) return 1;
  const auto& p = model->processor;
  if (score) *score = p.GetScore(id);
  if (type) *type = p.IsUnknown(id) ? 2 : p.IsControl(id) ? 3 : p.IsUnused(id) ? 5 : p.IsByte(id) ? 6 : 1;
  return 0;
}

TB_SPM_EXPORT void tb_spm_free_buffer(void* buffer) { std::free(buffer); }

}  // extern "C"
