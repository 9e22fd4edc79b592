// The architecture of a Llama-family decoder as plain values (no LibTorch here), and the named presets.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace tb::models {

// Llama 3.1 style rope scaling ("rope_type": "llama3" in a Hugging Face config.json).
struct RopeScaling {
  double scale_factor = 8.0;
  double low_freq_factor = 1.0;
  double high_freq_factor = 4.0;
  int64_t old_context_len = 8192;
  bool operator==(const RopeScaling& o) const;
};

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

  int64_t head_dim() const { return embed_dim / num_heads; }
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

// Preset by short name (llama2_7b, ..., llama_tiny_test); nullopt when unknown.
std::optional<ModelArgs> preset_args(const std::string& short_name);
const std::vector<std::string>& preset_names();

}  // namespace tb::models
