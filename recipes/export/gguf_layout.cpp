#include "export/gguf_layout.h"

#include <stdexcept>
#include <utility>

#include "text/strings.h"

namespace tb::exporting {

namespace {

using text::ends_with;

// Hugging Face's name inside a layer -> llama.cpp's; sandwich-norm families (Gemma 2/3) name the norms
// after attention and around the MLP differently.
std::optional<std::string> layer_tensor(const std::string& inner, bool sandwich_norms) {
  static const std::pair<const char*, const char*> kCommon[] = {
      {"input_layernorm", "attn_norm"},     {"self_attn.q_proj", "attn_q"},  {"self_attn.k_proj", "attn_k"},
      {"self_attn.v_proj", "attn_v"},       {"self_attn.o_proj", "attn_output"},
      {"self_attn.qkv_proj", "attn_qkv"},   {"self_attn.q_norm", "attn_q_norm"},
      {"self_attn.k_norm", "attn_k_norm"},  {"mlp.gate_proj", "ffn_gate"},   {"mlp.up_proj", "ffn_up"},
      {"mlp.down_proj", "ffn_down"},        {"mlp.gate_up_proj", "ffn_up"},
      {"pre_feedforward_layernorm", "ffn_norm"}, {"post_feedforward_layernorm", "post_ffw_norm"},
  };
  const auto dot = inner.rfind('.');
  if (dot == std::string::npos) return std::nullopt;
  const std::string module = inner.substr(0, dot), leaf = inner.substr(dot);  // ".weight" / ".bias"
  if (module == "post_attention_layernorm") return std::string(sandwich_norms ? "post_attention_norm" : "ffn_norm") + leaf;
  for (const auto& [hf, gguf] : kCommon)
    if (module == hf) return std::string(gguf) + leaf;
  return std::nullopt;
}

int64_t layer_of(const std::string& gguf_name) {
  if (gguf_name.rfind("blk.", 0) != 0) return -1;
  return std::stoll(gguf_name.substr(4, gguf_name.find('.', 4) - 4));
}

// llama.cpp's use_more_bits: the first and last eighth of the layers and every third one between.
bool use_more_bits(int64_t layer, int64_t layers) {
  return layer < layers / 8 || layer >= 7 * layers / 8 || (layer - layers / 8) % 3 == 2;
}

// A type whose blocks a row of `cols` does not fill falls back as llama.cpp's quantizer falls back;
// past that, f16.
quant::GgmlType fit_rows(quant::GgmlType type, uint64_t cols) {
  const auto fits = [cols](quant::GgmlType t) { return cols % static_cast<uint64_t>(quant::ggml_block_size(t)) == 0; };
  if (fits(type)) return type;
  quant::GgmlType fallback = quant::GgmlType::F16;
  switch (type) {
    case quant::GgmlType::Q4_K: fallback = quant::GgmlType::Q5_0; break;
    case quant::GgmlType::Q5_K: fallback = quant::GgmlType::Q5_1; break;
    case quant::GgmlType::Q6_K: fallback = quant::GgmlType::Q8_0; break;
    default: break;
  }
  return fits(fallback) ? fallback : quant::GgmlType::F16;
}

}  // namespace

std::string gguf_architecture(models::Family family) {
  switch (family) {
    case models::Family::llama:
    case models::Family::mistral: return "llama";
    case models::Family::qwen2: return "qwen2";
    case models::Family::qwen3: return "qwen3";
    case models::Family::phi3: return "phi3";
    case models::Family::gemma: return "gemma";
    case models::Family::gemma2: return "gemma2";
    case models::Family::gemma3: return "gemma3";
  }
  throw std::invalid_argument("export gguf: unknown model family");
}

std::optional<std::string> gguf_tensor_name(const std::string& hf_name, const models::ModelArgs& args) {
  if (hf_name == "model.embed_tokens.weight") return std::string("token_embd.weight");
  if (hf_name == "model.norm.weight") return std::string("output_norm.weight");
  if (hf_name == "lm_head.weight") return std::string("output.weight");
  const std::string prefix = "model.layers.";
  if (hf_name.rfind(prefix, 0) != 0) return std::nullopt;
  const auto dot = hf_name.find('.', prefix.size());
  if (dot == std::string::npos) return std::nullopt;
  const std::string layer = hf_name.substr(prefix.size(), dot - prefix.size());
  const auto inner = layer_tensor(hf_name.substr(dot + 1), args.sandwich_norms);
  if (!inner) return std::nullopt;
  return "blk." + layer + "." + *inner;
}

const std::vector<FileType>& file_types() {
  static const std::vector<FileType> kTypes = {
      {"f32", 0, quant::GgmlType::F32},     {"f16", 1, quant::GgmlType::F16},
      {"bf16", 32, quant::GgmlType::BF16},  {"q8_0", 7, quant::GgmlType::Q8_0},
      {"q4_0", 2, quant::GgmlType::Q4_0},   {"q4_k_m", 15, quant::GgmlType::Q4_K},
      {"q5_k_m", 17, quant::GgmlType::Q5_K}, {"q6_k", 18, quant::GgmlType::Q6_K},
  };
  return kTypes;
}

const FileType& file_type(const std::string& name) {
  std::string accepted;
  for (const auto& t : file_types()) {
    if (name == t.name) return t;
    accepted += std::string(accepted.empty() ? "" : ", ") + t.name;
  }
  throw std::invalid_argument("unknown GGUF type '" + name + "' (accepted: " + accepted + ")");
}

quant::GgmlType gguf_tensor_type(const std::string& name, const std::vector<uint64_t>& ne, const FileType& ftype,
                                 const TensorTypeContext& context) {
  using quant::GgmlType;
  const bool matrix = ne.size() >= 2;
  if (!matrix || !ends_with(name, "weight") || ends_with(name, "_norm.weight")) return GgmlType::F32;
  const GgmlType base = ftype.base;
  if (base == GgmlType::F32 || base == GgmlType::F16 || base == GgmlType::BF16) return base;

  GgmlType type = base;
  const bool output = name == "output.weight" || (!context.has_output && name == "token_embd.weight");
  const int64_t layer = layer_of(name);
  const bool mix = ftype.llama_ftype == 15 || ftype.llama_ftype == 17;  // q4_k_m, q5_k_m
  if (output) {
    // The output layer: q8_0 stays q8_0, everything else q6_K (q8_0 when rows do not fill 256).
    if (ne[0] % static_cast<uint64_t>(quant::ggml_block_size(base)) != 0) type = GgmlType::Q8_0;
    else if (base != GgmlType::Q8_0) type = GgmlType::Q6_K;
  } else if (mix && (ends_with(name, "attn_v.weight") || ends_with(name, "attn_qkv.weight") ||
                     ends_with(name, "ffn_down.weight"))) {
    if (use_more_bits(layer, context.num_layers)) type = GgmlType::Q6_K;
  }
  return fit_rows(type, ne[0]);
}

}  // namespace tb::exporting
