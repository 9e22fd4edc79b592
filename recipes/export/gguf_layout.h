// How llama.cpp names and stores a model of each family we train: the GGUF architecture, the tensor
// names its loader looks up (Hugging Face name -> GGUF name, as its converter maps them), the file
// types of `export gguf --type`, and the per-tensor storage types llama.cpp's quantizer picks for each
// (llama_tensor_get_type: the _M mixes give attn_v and ffn_down of some layers more bits, the output
// layer q6_K; rows that do not divide into a type's blocks fall back to a smaller block type, then f16).
// No LibTorch here: names and rules only.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "models/model_args.h"
#include "quant/ggml_blocks.h"

namespace tb::exporting {

// llama.cpp's architecture name for a family: llama (Llama, Mistral, SmolLM2), qwen2, qwen3, phi3, gemma,
// gemma2, gemma3.
std::string gguf_architecture(models::Family family);

// The GGUF name of a Hugging Face tensor name (model.layers.3.self_attn.q_proj.weight ->
// blk.3.attn_q.weight); nullopt for a name llama.cpp has no tensor for.
std::optional<std::string> gguf_tensor_name(const std::string& hf_name, const models::ModelArgs& args);

// `--type` values and llama_ftype numbers (general.file_type).
struct FileType {
  const char* name;             // f32, f16, bf16, q8_0, q4_0, q4_k_m, q5_k_m, q6_k
  uint32_t llama_ftype;         // LLAMA_FTYPE_*: 0, 1, 32, 7, 2, 15, 17, 18
  quant::GgmlType base;         // the type of most 2D weights
};
const std::vector<FileType>& file_types();
// Throws std::invalid_argument naming the accepted values.
const FileType& file_type(const std::string& name);

// Counts the quantizer's rules depend on (attn_v and ffn_down are counted over the model's layers).
struct TensorTypeContext {
  int64_t num_layers = 0;
  bool has_output = true;  // an output.weight of its own (else the embedding doubles as the output)
};

// The storage type of one tensor (GGUF name, ggml dims) in a file of `ftype`: 1-D tensors and norms f32;
// 2-D weights the file type's base, as llama.cpp's quantizer adjusts it.
quant::GgmlType gguf_tensor_type(const std::string& gguf_name, const std::vector<uint64_t>& ne,
                                 const FileType& ftype, const TensorTypeContext& context);

}  // namespace tb::exporting
