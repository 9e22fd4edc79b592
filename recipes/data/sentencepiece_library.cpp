#include "data/sentencepiece_library.h"

#include <dlfcn.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <mutex>
#include <stdexcept>
#include <vector>

namespace tb::data {
namespace {

constexpr const char* kLibraryName = "libtb_sentencepiece.so";

#if defined(__SANITIZE_ADDRESS__)
constexpr bool kUnderAddressSanitizer = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
constexpr bool kUnderAddressSanitizer = true;
#else
constexpr bool kUnderAddressSanitizer = false;
#endif
#else
constexpr bool kUnderAddressSanitizer = false;
#endif

// RTLD_DEEPBIND keeps the shim's protobuf apart from LibTorch's. AddressSanitizer refuses DEEPBIND, so
// under it the shim gets a link namespace of its own (dlmopen): the same isolation, with its own copy of
// the C and C++ libraries, which is safe because no C++ object or buffer crosses the shim's C API
// unreleased by the shim itself. The shim is built uninstrumented for that build (recipes/CMakeLists.txt).
void* open_shim(const std::string& path) {
  if (kUnderAddressSanitizer) return dlmopen(LM_ID_NEWLM, path.c_str(), RTLD_NOW | RTLD_LOCAL);
  return dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL | RTLD_DEEPBIND);
}

std::filesystem::path executable_dir() {
  std::error_code ec;
  const auto exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  return ec ? std::filesystem::path() : exe.parent_path();
}

std::vector<std::string> candidate_paths() {
  std::vector<std::string> out;
  if (const char* env = std::getenv("TUNEBENCH_SPM_LIB"); env && *env) out.emplace_back(env);
  const auto exe_dir = executable_dir();
  if (!exe_dir.empty()) {
    out.push_back((exe_dir / ".." / "lib" / kLibraryName).lexically_normal().string());
#ifdef TB_PRIVATE_LIBDIR
    out.push_back((exe_dir / ".." / TB_PRIVATE_LIBDIR / kLibraryName).lexically_normal().string());  // installed
#endif
  }
#ifdef TB_INSTALL_LIBDIR
  out.push_back((std::filesystem::path(TB_INSTALL_LIBDIR) / kLibraryName).string());
#endif
  out.emplace_back(kLibraryName);  // the dynamic loader's own search path
  return out;
}

template <class Fn>
void resolve(void* handle, const char* name, Fn& slot, const std::string& path) {
  slot = reinterpret_cast<Fn>(dlsym(handle, name));
  if (!slot) throw std::runtime_error(path + " lacks the symbol " + name);
}

SentencePieceLibrary open_library() {
  std::string tried;
  for (const auto& path : candidate_paths()) {
    const bool is_plain_name = path.find('/') == std::string::npos;
    if (!is_plain_name && !std::filesystem::exists(path)) {
      tried += "\n  " + path + ": not found";
      continue;
    }
    void* handle = open_shim(path);
    if (!handle) {
      const char* why = dlerror();
      tried += "\n  " + path + ": " + (why ? why : "cannot open");
      continue;
    }
    // The handle stays open for the life of the process: models hold pointers into it.
    SentencePieceLibrary lib;
    lib.path = path;
    resolve(handle, "tb_spm_abi_version", lib.abi_version, path);
    if (lib.abi_version() != TB_SPM_ABI_VERSION) {
      tried += "\n  " + path + ": ABI version " + std::to_string(lib.abi_version()) + ", expected " +
               std::to_string(TB_SPM_ABI_VERSION);
      continue;
    }
    resolve(handle, "tb_spm_load_file", lib.load_file, path);
    resolve(handle, "tb_spm_load_bytes", lib.load_bytes, path);
    resolve(handle, "tb_spm_free", lib.free_model, path);
    resolve(handle, "tb_spm_encode", lib.encode, path);
    resolve(handle, "tb_spm_decode", lib.decode, path);
    resolve(handle, "tb_spm_id_to_piece", lib.id_to_piece, path);
    resolve(handle, "tb_spm_piece_to_id", lib.piece_to_id, path);
    resolve(handle, "tb_spm_vocab_size", lib.vocab_size, path);
    resolve(handle, "tb_spm_bos_id", lib.bos_id, path);
    resolve(handle, "tb_spm_eos_id", lib.eos_id, path);
    resolve(handle, "tb_spm_pad_id", lib.pad_id, path);
    resolve(handle, "tb_spm_unk_id", lib.unk_id, path);
    resolve(handle, "tb_spm_is_control", lib.is_control, path);
    resolve(handle, "tb_spm_piece_info", lib.piece_info, path);
    resolve(handle, "tb_spm_free_buffer", lib.free_buffer, path);
    return lib;
  }
  throw std::runtime_error("cannot load the SentencePiece shim " + std::string(kLibraryName) +
                           " (set TUNEBENCH_SPM_LIB to its path); tried:" + tried);
}

}  // namespace

const SentencePieceLibrary& SentencePieceLibrary::get() {
  // Not a function-local static initialised by a throwing call: a failure is remembered and rethrown
  // the same way each time.
  static std::once_flag once;
  static SentencePieceLibrary library;
  static std::string failure;
  std::call_once(once, [] {
    try {
      library = open_library();
    } catch (const std::exception& e) {
      failure = e.what();
    }
  });
  if (!failure.empty()) throw std::runtime_error(failure);
  return library;
}

std::string SentencePieceLibrary::take_error(char* error) const {
  if (!error) return "unknown error";
  std::string message(error);
  free_buffer(error);
  return message;
}

}  // namespace tb::data
