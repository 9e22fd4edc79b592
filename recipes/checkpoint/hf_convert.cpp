#include "checkpoint/hf_convert.h"

#include <cctype>
#include <regex>
#include <stdexcept>

#include "models/compiled_names.h"
#include "text/strings.h"

namespace tb::checkpoint {

namespace {

struct LayerName {
  const char* hf;    // after model.layers.N.
  const char* ours;  // after layers.N.
};

// Every family's layer tensors; a model has the ones its architecture builds (copy_into_model checks).
const std::vector<LayerName>& layer_names(bool sandwich_norms) {
  static const std::vector<LayerName> shared = {
      {"self_attn.q_proj.weight", "attn.q_proj.weight"},
      {"self_attn.q_proj.bias", "attn.q_proj.bias"},
      {"self_attn.k_proj.weight", "attn.k_proj.weight"},
      {"self_attn.k_proj.bias", "attn.k_proj.bias"},
      {"self_attn.v_proj.weight", "attn.v_proj.weight"},
      {"self_attn.v_proj.bias", "attn.v_proj.bias"},
      {"self_attn.qkv_proj.weight", "attn.qkv_proj.weight"},
      {"self_attn.o_proj.weight", "attn.output_proj.weight"},
      {"self_attn.q_norm.weight", "attn.q_norm.scale"},
      {"self_attn.k_norm.weight", "attn.k_norm.scale"},
      {"mlp.gate_proj.weight", "mlp.w1.weight"},
      {"mlp.down_proj.weight", "mlp.w2.weight"},
      {"mlp.up_proj.weight", "mlp.w3.weight"},
      {"mlp.gate_up_proj.weight", "mlp.gate_up_proj.weight"},
      {"input_layernorm.weight", "sa_norm.scale"},
  };
  // Llama's post_attention_layernorm is the norm before the MLP; Gemma 2/3 put a norm after each block.
  static const std::vector<LayerName> llama = [] {
    auto n = shared;
    n.push_back({"post_attention_layernorm.weight", "mlp_norm.scale"});
    return n;
  }();
  static const std::vector<LayerName> sandwich = [] {
    auto n = shared;
    n.push_back({"post_attention_layernorm.weight", "sa_scale.scale"});
    n.push_back({"pre_feedforward_layernorm.weight", "mlp_norm.scale"});
    n.push_back({"post_feedforward_layernorm.weight", "mlp_scale.scale"});
    return n;
  }();
  return sandwich_norms ? sandwich : llama;
}

using models::strip_compiled_prefix;

std::string shape_text(const torch::Tensor& t) {
  std::string s = "[";
  for (int64_t i = 0; i < t.dim(); ++i) s += (i ? ", " : "") + std::to_string(t.size(i));
  return s + "]";
}

// Rows (or entries) of `num_heads` heads: in each head the first rotary_dim move between HF's halves
// [a][i] (a = half, i = pair) and our pairs [i][a]; the rest of the head stays.
torch::Tensor permute_rows(const torch::Tensor& w, int64_t num_heads, int64_t rotary_dim, bool to_interleaved) {
  const int64_t rows = w.size(0), cols = w.numel() / std::max<int64_t>(rows, 1), hd = rows / num_heads;
  const auto heads = w.reshape({num_heads, hd, cols});
  const int64_t r = rotary_dim > 0 ? rotary_dim : hd;
  const auto rot = heads.narrow(1, 0, r);
  const auto src = to_interleaved ? rot.reshape({num_heads, 2, r / 2, cols}) : rot.reshape({num_heads, r / 2, 2, cols});
  auto moved = src.transpose(1, 2).reshape({num_heads, r, cols});
  if (r < hd) moved = torch::cat({moved, heads.narrow(1, r, hd - r)}, 1);
  return moved.reshape(w.sizes()).contiguous();
}

}  // namespace

std::optional<std::string> hf_to_tune_name(const std::string& hf, bool sandwich_norms) {
  if (hf == "model.embed_tokens.weight") return "tok_embeddings.weight";
  if (hf == "model.norm.weight") return "norm.scale";
  if (hf == "lm_head.weight") return "output.weight";
  static const std::regex layer(R"(model\.layers\.(\d+)\.(.+))");
  std::smatch m;
  if (!std::regex_match(hf, m, layer)) return std::nullopt;
  for (const auto& n : layer_names(sandwich_norms))
    if (m[2] == n.hf) return "layers." + m[1].str() + "." + n.ours;
  return std::nullopt;
}

std::optional<std::string> tune_to_hf_name(const std::string& full_name, bool sandwich_norms) {
  const std::string name = strip_compiled_prefix(full_name);
  if (name == "tok_embeddings.weight") return "model.embed_tokens.weight";
  if (name == "norm.scale") return "model.norm.weight";
  if (name == "output.weight") return "lm_head.weight";
  static const std::regex layer(R"(layers\.(\d+)\.(.+))");
  std::smatch m;
  if (!std::regex_match(name, m, layer)) return std::nullopt;
  for (const auto& n : layer_names(sandwich_norms))
    if (m[2] == n.ours) return "model.layers." + m[1].str() + "." + n.hf;
  return std::nullopt;
}

torch::Tensor permute_hf_to_interleaved(const torch::Tensor& w, int64_t num_heads, int64_t rotary_dim) {
  return permute_rows(w, num_heads, rotary_dim, true);
}

torch::Tensor permute_interleaved_to_hf(const torch::Tensor& w, int64_t num_heads, int64_t rotary_dim) {
  return permute_rows(w, num_heads, rotary_dim, false);
}

namespace {

void expect_shape(const std::string& shown, const torch::Tensor& t, std::vector<int64_t> shape) {
  if (t.sizes().vec() == shape) return;
  std::string want = "[";
  for (size_t i = 0; i < shape.size(); ++i) want += (i ? ", " : "") + std::to_string(shape[i]);
  throw std::runtime_error("tensor '" + shown + "' has shape " + shape_text(t) + " but the model expects " + want + "]");
}

using text::ends_with;

}  // namespace

torch::Tensor to_rotary_layout(const std::string& ours, const std::string& shown, const torch::Tensor& t,
                               const models::ModelArgs& a, bool to_interleaved) {
  const int64_t hd = a.head_dim(), rd = a.rotary_dim(), H = a.num_heads, KV = a.num_kv_heads;
  auto rows = [&](const torch::Tensor& block, int64_t heads) { return permute_rows(block, heads, rd, to_interleaved); };
  for (const auto& [part, heads] : {std::pair<const char*, int64_t>{".attn.q_proj.", H}, {".attn.k_proj.", KV}}) {
    if (ours.find(part) == std::string::npos) continue;
    if (ends_with(ours, ".weight")) expect_shape(shown, t, {heads * hd, a.embed_dim});
    if (ends_with(ours, ".bias")) expect_shape(shown, t, {heads * hd});
    return rows(t, heads);
  }
  if (ends_with(ours, ".attn.q_norm.scale") || ends_with(ours, ".attn.k_norm.scale")) {
    expect_shape(shown, t, {hd});
    return rows(t, 1);  // one head's entries, as each head's q or k meets them
  }
  if (ends_with(ours, ".attn.qkv_proj.weight")) {
    expect_shape(shown, t, {(H + 2 * KV) * hd, a.embed_dim});
    return torch::cat({rows(t.narrow(0, 0, H * hd), H), rows(t.narrow(0, H * hd, KV * hd), KV),
                       t.narrow(0, (H + KV) * hd, KV * hd)});
  }
  return t;
}

StateDict hf_to_tune(const StateDict& hf, const models::ModelArgs& args) {
  StateDict out;
  for (const auto& [hf_name, t] : hf) {
    if (hf_name.find("rotary_emb.inv_freq") != std::string::npos) continue;  // recomputed, not a weight
    if (hf_name == "lm_head.weight" && args.tie_word_embeddings) continue;   // tied: the embedding serves
    const auto ours = hf_to_tune_name(hf_name, args.sandwich_norms);
    if (!ours)
      throw std::runtime_error("checkpoint tensor '" + hf_name + "' is not a weight of a " +
                               models::family_name(args.family) + " model");
    out[*ours] = to_rotary_layout(*ours, hf_name, t, args, /*to_interleaved=*/true);
  }
  return out;
}

LazyStateDict tune_to_hf(const LazyStateDict& ours, const models::ModelArgs& args) {
  LazyStateDict out;
  for (const auto& [name, t] : ours) {
    const auto hf = tune_to_hf_name(name, args.sandwich_norms);
    if (!hf)
      throw std::runtime_error("'" + name + "' is not a base weight of a " + models::family_name(args.family) +
                               " model");
    if (*hf == "lm_head.weight" && args.tie_word_embeddings) continue;
    out[*hf] = {t.shape, t.dtype, [t, name = name, args] {
                  return to_rotary_layout(strip_compiled_prefix(name), name, t.make(), args, /*to_interleaved=*/false);
                }};
  }
  return out;
}

StateDict tune_to_hf(const StateDict& ours, const models::ModelArgs& args) {
  return materialize(tune_to_hf(lazy(ours), args));
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
