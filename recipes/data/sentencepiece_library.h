// Access to libtb_sentencepiece (the shim of data/spm_shim/) through dlopen.
//
// tunecore never links libsentencepiece: that library exports its own copy of protobuf, which clashes
// with LibTorch's libprotobuf in one process. The shim is opened with RTLD_NOW | RTLD_LOCAL |
// RTLD_DEEPBIND, so sentencepiece (a dependency of the shim, opened in the same call) resolves its
// protobuf symbols inside itself, and nothing it exports enters the global scope.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "data/spm_shim/tb_spm_api.h"

namespace tb::data {

// The function table of the shim, resolved once per process.
struct SentencePieceLibrary {
  std::string path;  // the file that was opened

  decltype(&tb_spm_abi_version) abi_version = nullptr;
  decltype(&tb_spm_load_file) load_file = nullptr;
  decltype(&tb_spm_load_bytes) load_bytes = nullptr;
  decltype(&tb_spm_free) free_model = nullptr;
  decltype(&tb_spm_encode) encode = nullptr;
  decltype(&tb_spm_decode) decode = nullptr;
  decltype(&tb_spm_id_to_piece) id_to_piece = nullptr;
  decltype(&tb_spm_piece_to_id) piece_to_id = nullptr;
  decltype(&tb_spm_vocab_size) vocab_size = nullptr;
  decltype(&tb_spm_bos_id) bos_id = nullptr;
  decltype(&tb_spm_eos_id) eos_id = nullptr;
  decltype(&tb_spm_pad_id) pad_id = nullptr;
  decltype(&tb_spm_unk_id) unk_id = nullptr;
  decltype(&tb_spm_is_control) is_control = nullptr;
  decltype(&tb_spm_piece_info) piece_info = nullptr;
  decltype(&tb_spm_free_buffer) free_buffer = nullptr;

  // Opens the shim on first use (thread-safe). Search order: $TUNEBENCH_SPM_LIB, then
  // <dir of the executable>/../lib/, <dir of the executable>/../lib/tunebench/, the install lib dir,
  // then the plain name through the loader's search path. Throws std::runtime_error naming every
  // place tried when none works.
  static const SentencePieceLibrary& get();

  // Takes a malloc'ed message from the shim (may be null) and frees it.
  std::string take_error(char* error) const;
};

}  // namespace tb::data
