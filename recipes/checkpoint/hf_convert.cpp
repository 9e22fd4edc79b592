#include "checkpoint/hf_convert.h"

#include <cctype>
#include <regex>
#include <stdexcept>

#include "models/compiled_names.h"

namespace tb::checkpoint {

namespace {

struct LayerName {
  const char* hf;    // after model.layers.N.
  const char* ours;  // after layers.N.
};

const std::vector<LayerName>& layer_names() {
  static const std::vector<LayerName> names = {
      {"self_attn.q_proj.weight", "attn.q_proj.weight"},
      {"self_attn.k_proj.weight", "attn.k_proj.weight"},
      {"self_attn.v_proj.weight", "attn.v_proj.weight"},
      {"self_attn.o_proj.weight", "attn.output_proj.weight"},
      {"mlp.gate_proj.weight", "mlp.w1.weight"},
      {"mlp.down_proj.weight", "mlp.w2.weight"},
      {"mlp.up_proj.weight", "mlp.w3.weight"},
      {"input_layernorm.weight", "sa_norm.scale"},
      {"post_attention_layernorm.weight", "mlp_norm.scale"},
  };
  return names;
}

using models::strip_compiled_prefix;

std::string shape_text(const torch::Tensor& t) {
  std::string s = "[";
  for (int64_t i = 0; i < t.dim(); ++i) s += (i ? ", " : "") + std::to_string(t.size(i));
  return s + "]";
}

torch::Tensor permute_rows(const torch::Tensor& w, int64_t num_heads, bool to_interleaved) {
  const int64_t rows = w.size(0), cols = w.numel() / std::max<int64_t>(rows, 1), hd = rows / num_heads;
  // HF rows of a head are [a][i] (a = half, i = pair); ours are [i][a].
  const auto src = to_interleaved ? w.reshape({num_heads, 2, hd / 2, cols}) : w.reshape({num_heads, hd / 2, 2, cols});
  return src.transpose(1, 2).reshape(w.sizes()).contiguous();
}

}  // namespace

std::optional<std::string> hf_to_tune_name(const std::string& hf) {
  if (hf == "model.embed_tokens.weight") return "tok_embeddings.weight";
  if (hf == "model.norm.weight") return "norm.scale";
  if (hf == "lm_head.weight") return "output.weight";
  static const std::regex layer(R"(model\.layers\.(\d+)\.(.+))");
  std::smatch m;
  if (!std::regex_match(hf, m, layer)) return std::nullopt;
  for (const auto& n : layer_names())
    if (m[2] == n.hf) return "layers." + m[1].str() + "." + n.ours;
  return std::nullopt;
}

std::optional<std::string> tune_to_hf_name(const std::string& full_name) {
  const std::string name = strip_compiled_prefix(full_name);
  if (name == "tok_embeddings.weight") return "model.embed_tokens.weight";
  if (name == "norm.scale") return "model.norm.weight";
  if (name == "output.weight") return "lm_head.weight";
  static const std::regex layer(R"(layers\.(\d+)\.(.+))");
  std::smatch m;
  if (!std::regex_match(name, m, layer)) return std::nullopt;
  for (const auto& n : layer_names())
    if (m[2] == n.ours) return "model.layers." + m[1].str() + "." + n.hf;
  return std::nullopt;
}

torch::Tensor permute_hf_to_interleaved(const torch::Tensor& w, int64_t num_heads) {
  return permute_rows(w, num_heads, true);
}

torch::Tensor permute_interleaved_to_hf(const torch::Tensor& w, int64_t num_heads) {
  return permute_rows(w, num_heads, false);
}

namespace {

// num_heads for a q/k projection weight name (ours), 0 for others; checks the shape against args.
int64_t rotary_heads(const std::string& ours, const std::string& shown, const torch::Tensor& w,
                     const models::ModelArgs& a) {
  const bool q = ours.find(".attn.q_proj.weight") != std::string::npos;
  const bool k = ours.find(".attn.k_proj.weight") != std::string::npos;
  if (!q && !k) return 0;
  const int64_t heads = q ? a.num_heads : a.num_kv_heads;
  const int64_t rows = heads * a.head_dim();
  if (w.dim() != 2 || w.size(0) != rows || w.size(1) != a.embed_dim)
    throw std::runtime_error("tensor '" + shown + "' has shape " + shape_text(w) + " but the model expects [" +
                             std::to_string(rows) + ", " + std::to_string(a.embed_dim) + "]");
  return heads;
}

}  // namespace

StateDict hf_to_tune(const StateDict& hf, const models::ModelArgs& args) {
  StateDict out;
  for (const auto& [hf_name, t] : hf) {
    if (hf_name.find("rotary_emb.inv_freq") != std::string::npos) continue;  // recomputed, not a weight
    if (hf_name == "lm_head.weight" && args.tie_word_embeddings) continue;   // tied: the embedding serves
    const auto ours = hf_to_tune_name(hf_name);
    if (!ours) throw std::runtime_error("checkpoint tensor '" + hf_name + "' is not a Llama-family weight");
    const int64_t heads = rotary_heads(*ours, hf_name, t, args);
    out[*ours] = heads ? permute_hf_to_interleaved(t, heads) : t;
  }
  return out;
}

StateDict tune_to_hf(const StateDict& ours, const models::ModelArgs& args) {
  StateDict out;
  for (const auto& [name, t] : ours) {
    const auto hf = tune_to_hf_name(name);
    if (!hf) throw std::runtime_error("'" + name + "' is not a base weight of a Llama-family model");
    if (*hf == "lm_head.weight" && args.tie_word_embeddings) continue;
    const int64_t heads = rotary_heads(strip_compiled_prefix(name), name, t, args);
    out[*hf] = heads ? permute_interleaved_to_hf(t, heads) : t;
  }
  return out;
}

bool natural_key_less(const std::string& a, const std::string& b) {
  size_t i = 0, j = 0;
  while (i < a.size() && j < b.size()) {
    if (std::isdigit(static_cast<unsigned char>(a[i])) && std::isdigit(static_cast<unsigned char>(b[j]))) {
      size_t ie = i, je = j;
      while (ie < a.size() && std::isdigit(static_cast<unsigned char>(a[ie]))) ++ie;
      while (je < b.size() && std::isdigit(static_cast<unsigned char>(b[je]))) ++je;
      const auto na = std::stoull(a.substr(i, ie - i)), nb = std::stoull(b.substr(j, je - j));
      if (na != nb) return na < nb;
      i = ie;
      j = je;
      continue;
    }
    if (a[i] != b[j]) return a[i] < b[j];
    ++i;
    ++j;
  }
  return a.size() - i < b.size() - j;
}

std::string hf_torch_dtype_name(torch::ScalarType dtype) {
  switch (dtype) {
    case torch::kFloat: return "float32";
    case torch::kBFloat16: return "bfloat16";
    case torch::kHalf: return "float16";
    default: throw std::invalid_argument(std::string("no Hugging Face torch_dtype for ") + c10::toString(dtype));
  }
}

}  // namespace tb::checkpoint
