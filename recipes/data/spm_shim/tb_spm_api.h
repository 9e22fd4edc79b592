// The C API of libtb_sentencepiece, the shim that keeps libsentencepiece out of tunecore's link.
//
// Why a shim: Debian's libsentencepiece.so.0 carries its own copy of protobuf and exports it; in one
// process with LibTorch's libprotobuf.so.32 the two interpose each other and the program crashes at
// load time. tunecore therefore dlopen()s this shim with RTLD_LOCAL | RTLD_DEEPBIND (see
// data/sentencepiece_library.h), so sentencepiece binds to its own protobuf and nothing else sees it.
//
// Rules of the API: no C++ type and no exception crosses it. Functions that can fail return 0 on
// success and non-zero on failure, with a message in *error (when error is not null). Every buffer
// the shim hands out (ids, text, error messages) is malloc'ed and released with tb_spm_free_buffer.
#pragma once

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define TB_SPM_ABI_VERSION 3

typedef struct tb_spm_model tb_spm_model;

// Bumped whenever a signature below changes; the loader refuses a shim with another version.
int tb_spm_abi_version(void);

// Loads a serialized ModelProto (a `tokenizer.model` file, or its bytes). Null on failure.
tb_spm_model* tb_spm_load_file(const char* path, char** error);
tb_spm_model* tb_spm_load_bytes(const char* data, size_t size, char** error);
void tb_spm_free(tb_spm_model* model);

// UTF-8 text in, ids out (no BOS/EOS: the caller adds them). *ids is freed with tb_spm_free_buffer.
int tb_spm_encode(const tb_spm_model* model, const char* text, size_t text_size, int32_t** ids,
                  size_t* num_ids, char** error);
// Ids in, UTF-8 text out (control tokens such as BOS/EOS decode to nothing, as in sentencepiece).
int tb_spm_decode(const tb_spm_model* model, const int32_t* ids, size_t num_ids, char** text,
                  size_t* text_size, char** error);

// The piece of an id (bytes, not NUL-terminated in general); 0 on success, non-zero when out of range.
int tb_spm_id_to_piece(const tb_spm_model* model, int32_t id, char** piece, size_t* piece_size);
// The id of a piece; the unknown id when the piece is not in the vocabulary.
int32_t tb_spm_piece_to_id(const tb_spm_model* model, const char* piece, size_t piece_size);

int32_t tb_spm_vocab_size(const tb_spm_model* model);
int32_t tb_spm_bos_id(const tb_spm_model* model);  // -1 when the model has none
int32_t tb_spm_eos_id(const tb_spm_model* model);
int32_t tb_spm_pad_id(const tb_spm_model* model);
int32_t tb_spm_unk_id(const tb_spm_model* model);
// 1 when the id is a control symbol (BOS, EOS, PAD, user-defined controls), else 0.
int tb_spm_is_control(const tb_spm_model* model, int32_t id);
// The score of an id and its type as SentencePiece's ModelProto numbers them (1 normal, 2 unknown,
// 3 control, 5 unused, 6 byte; user-defined pieces read as normal: the processor does not tell them).
// 0 on success, non-zero when out of range.
int tb_spm_piece_info(const tb_spm_model* model, int32_t id, float* score, int32_t* type);

void tb_spm_free_buffer(void* buffer);

#ifdef __cplusplus
}
#endif
