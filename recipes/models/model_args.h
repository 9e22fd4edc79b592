// The architecture of a decoder as plain values (no LibTorch here), and the named presets.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace tb::models {

// Rotary scaling, as a Hugging Face config.json's `rope_scaling` gives it.
enum class RopeType {
  llama3,    // Llama 3.1: low frequencies divided by scale_factor, a smooth band between
  linear,    // every frequency divided by scale_factor (Gemma 3's global layers)
  longrope,  // Phi-3/4: frequency i divided by short_factor[i], cos and sin times attention_factor
};
struct RopeScaling {
  double scale_factor = 8.0;
  double low_freq_factor = 1.0;
  double high_freq_factor = 4.0;
  int64_t old_context_len = 8192;  // llama3; longrope: original_max_position_embeddings
  RopeType type = RopeType::llama3;
  std::vector<double> short_factor;  // longrope: one divisor per rotary frequency
  double attention_factor = 1.0;     // longrope
  bool operator==(const RopeScaling& o) const;
  // Llama 3.1's scaling with these factors.
  static RopeScaling llama3(double factor, double low_freq_factor, double high_freq_factor, int64_t old_context_len);
};

// The model families a Hugging Face config.json can describe (its model_type).
enum class Family { llama, mistral, qwen2, qwen3, gemma, gemma2, gemma3, phi3 };
const char* family_name(Family family);  // llama, mistral, qwen2, qwen3, gemma, gemma2, gemma3_text, phi3
std::optional<Family> family_from_name(const std::string& model_type);

// The MLP's gate activation: SwiGLU (silu) or GeGLU (GELU, tanh approximation).
enum class Activation { silu, gelu_tanh };

// The architecture of a decoder. The Llama fields come first; the rest describe what other families
// do differently, each off by default (a Llama).
struct ModelArgs {
  int64_t vocab_size = 32000;
  int64_t num_layers = 32;
  int64_t num_heads = 32;
  int64_t num_kv_heads = 32;
  int64_t embed_dim = 4096;
  int64_t max_seq_len = 4096;
  int64_t intermediate_dim = 11008;
  double norm_eps = 1e-5;
  double rope_base = 10000.0;
  std::optional<RopeScaling> rope_scaling;
  bool tie_word_embeddings = false;

  Family family = Family::llama;
  int64_t explicit_head_dim = 0;       // 0: embed_dim / num_heads
  bool attention_bias = false;         // q, k and v projections carry biases (Qwen2)
  bool qk_norm = false;                // an RMSNorm over each head of q and k before the rotary (Qwen3, Gemma 3)
  bool norm_offset = false;            // RMSNorm scales by (1 + w) in fp32, w starting at 0 (Gemma)
  bool scale_embeddings = false;       // embeddings times sqrt(embed_dim), in the model's dtype (Gemma)
  Activation activation = Activation::silu;
  bool sandwich_norms = false;         // a norm after attention and after the MLP as well (Gemma 2, 3)
  double query_pre_attn_scalar = 0;    // attention scale query_pre_attn_scalar^-0.5 (Gemma 2, 3); 0: head_dim's
  double attn_softcap = 0;             // scores -> cap * tanh(scores / cap) before the mask; 0: none (Gemma 2)
  double final_softcap = 0;            // the same on the logits; 0: none (Gemma 2)
  int64_t sliding_window = 0;          // a sliding layer's query sees the last `sliding_window` keys; 0: none
  std::vector<bool> sliding_layers;    // which layers slide; empty with a window: every layer
  double rope_local_base = 0;          // rotary base of sliding layers, unscaled (Gemma 3); 0: as the others
  double partial_rotary_factor = 1.0;  // the rotary turns the first factor * head_dim dims of a head (Phi-3/4)
  bool fused_qkv = false;              // one qkv_proj instead of q_proj, k_proj, v_proj (Phi-3/4)
  bool fused_gate_up = false;          // one gate_up_proj instead of w1 and w3 (Phi-3/4)

  int64_t head_dim() const { return explicit_head_dim > 0 ? explicit_head_dim : embed_dim / num_heads; }
  int64_t rotary_dim() const;          // the dims of a head the rotary turns (all but for Phi's partial rotary)
  bool layer_slides(int64_t layer) const;
  double attention_scale() const;      // what q k^T is multiplied by
  // Throws std::invalid_argument naming the first inconsistent field (e.g. heads not dividing dim).
  void validate() const;
  // The parameter count this architecture has (embedding counted once when tied).
  int64_t parameter_count() const;
  // Human-readable differences to `other` ("rope_base 10000 vs 500000"), empty when equal.
  std::vector<std::string> differences(const ModelArgs& other) const;
};

// The MLP hidden size torchtune's llama2 builder derives when intermediate_dim is not given:
// 2/3 of 4*dim, rounded up to a multiple of 256.
int64_t scale_hidden_dim_for_mlp(int64_t dim, int64_t multiple_of = 256);

ModelArgs llama2_7b_args();
ModelArgs llama2_13b_args();
ModelArgs llama3_2_1b_args();
ModelArgs llama3_1_8b_args();
ModelArgs mistral_7b_args();
ModelArgs llama2_stories15m_args();
ModelArgs llama2_stories110m_args();
ModelArgs llama_tiny_test_args();

// A named architecture: torchtune's builder names (qwen3_0_6b_base, gemma2_2b, phi3_mini, ...) and a few
// of ours (gemma3_1b, phi4_mini, smollm2_135m, the llama2.c stories models, llama_tiny_test).
struct Preset {
  const char* name;                 // the short name, also the component alias
  const char* component_namespace;  // e.g. "torchtune.models.qwen3." (the canonical component name's prefix)
  const char* help;
  ModelArgs (*args)();
};
const std::vector<Preset>& presets();

// Preset by short name (llama2_7b, ..., llama_tiny_test); nullopt when unknown.
std::optional<ModelArgs> preset_args(const std::string& short_name);
const std::vector<std::string>& preset_names();

}  // namespace tb::models
