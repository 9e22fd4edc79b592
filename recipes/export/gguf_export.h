// `tunebench-cli export gguf`: a config's model, weights and tokenizer as one GGUF file for llama.cpp,
// Ollama and LM Studio, written in-process.
//
// The model is built and loaded as `eval` loads it (the checkpointer's folder, or seeded random weights
// with checkpoint_dir=null). A LoRA model is merged (W + alpha/rank * B A; the adapter from
// checkpointer.adapter_checkpoint when set). The weights go through the Hugging Face layout and names,
// as llama.cpp's converter reads them, then to llama.cpp's names, rotary layout and storage types.
// One tensor is made, converted and written at a time. With `adapter`, only the adapter of a LoRA model
// (checkpointer.adapter_checkpoint) is written, as llama.cpp's LoRA adapter file.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "config/config.h"

namespace tb::exporting {

struct GgufExportOptions {
  std::string output;        // the .gguf to write (replaced atomically)
  std::string type = "f16";  // export/gguf_layout.h file_types()
  std::string name;          // general.name; empty: the checkpoint folder's name
  bool adapter = false;      // write the LoRA adapter alone, as a llama.cpp adapter file (applied on the base)
  bool ollama = false;       // also write a Modelfile beside the GGUF (export/ollama_modelfile.h)
  bool overwrite = false;    // replace an existing output (--force); a device, FIFO, link or folder never
};

struct GgufExportResult {
  std::string path;
  uint64_t bytes = 0;          // the file's size
  int64_t parameters = 0;      // elements of the tensors written
  double seconds = 0;
  std::map<std::string, int> tensors_by_type;  // "q4_K" -> count
  std::string architecture;
  bool merged_lora = false;
  bool chat_template = false;  // tokenizer.chat_template written
  std::string modelfile;       // the Modelfile written (--ollama), else empty
  std::string weights;         // where the weights came from
  std::vector<std::string> warnings;
};

// (tensors written, tensors in all, bytes written so far)
using GgufExportProgress = std::function<void(size_t done, size_t total, uint64_t bytes)>;

// Throws std::runtime_error / std::invalid_argument with a one-line reason; no file is left behind then.
GgufExportResult export_gguf(const config::Config& cfg, const GgufExportOptions& options,
                             const GgufExportProgress& progress = {});

}  // namespace tb::exporting
