#include "models/model_args.h"

#include <cmath>
#include <cstdio>
#include <sstream>
#include <stdexcept>

namespace tb::models {

bool RopeScaling::operator==(const RopeScaling& o) const {
  return type == o.type && scale_factor == o.scale_factor && low_freq_factor == o.low_freq_factor &&
         high_freq_factor == o.high_freq_factor && old_context_len == o.old_context_len &&
         short_factor == o.short_factor && attention_factor == o.attention_factor;
}

RopeScaling RopeScaling::llama3(double factor, double low_freq_factor, double high_freq_factor,
                                int64_t old_context_len) {
  RopeScaling s;
  s.scale_factor = factor;
  s.low_freq_factor = low_freq_factor;
  s.high_freq_factor = high_freq_factor;
  s.old_context_len = old_context_len;
  return s;
}

namespace {
struct FamilyName {
  Family family;
  const char* name;
};
constexpr FamilyName kFamilies[] = {{Family::llama, "llama"},   {Family::mistral, "mistral"},
                                    {Family::qwen2, "qwen2"},   {Family::qwen3, "qwen3"},
                                    {Family::gemma, "gemma"},   {Family::gemma2, "gemma2"},
                                    {Family::gemma3, "gemma3_text"}, {Family::phi3, "phi3"}};
}  // namespace

const char* family_name(Family family) {
  for (const auto& f : kFamilies)
    if (f.family == family) return f.name;
  return "llama";
}

std::optional<Family> family_from_name(const std::string& model_type) {
  for (const auto& f : kFamilies)
    if (model_type == f.name) return f.family;
  return std::nullopt;
}

int64_t ModelArgs::rotary_dim() const {
  // Hugging Face: int(head_dim * partial_rotary_factor).
  return static_cast<int64_t>(static_cast<double>(head_dim()) * partial_rotary_factor);
}

bool ModelArgs::layer_slides(int64_t layer) const {
  if (sliding_window <= 0) return false;
  if (sliding_layers.empty()) return true;
  return layer >= 0 && layer < static_cast<int64_t>(sliding_layers.size()) && sliding_layers[size_t(layer)];
}

double ModelArgs::attention_scale() const {
  return 1.0 / std::sqrt(query_pre_attn_scalar > 0 ? query_pre_attn_scalar : static_cast<double>(head_dim()));
}

namespace {

constexpr long double kMaxParameters = 1e13L;  // 10 trillion: far past any model built here

// An upper estimate of parameter_count() that cannot overflow, for the check before building.
long double approximate_parameter_count(const ModelArgs& a) {
  const long double d = a.embed_dim, heads = a.num_heads + 2.0L * a.num_kv_heads;
  const long double hd = a.explicit_head_dim > 0 ? a.explicit_head_dim : d / a.num_heads;
  const long double per_layer = 2.0L * d * heads * hd + 3.0L * d * a.intermediate_dim + 4.0L * d;
  return static_cast<long double>(a.vocab_size) * d * 2.0L + static_cast<long double>(a.num_layers) * per_layer;
}

}  // namespace

void ModelArgs::validate() const {
  auto fail = [](const std::string& what) { throw std::invalid_argument("model arguments: " + what); };
  auto positive = [&](int64_t v, const char* name) {
    if (v <= 0) fail(std::string(name) + " must be positive, got " + std::to_string(v));
  };
  positive(vocab_size, "vocab_size");
  positive(num_layers, "num_layers");
  positive(num_heads, "num_heads");
  positive(num_kv_heads, "num_kv_heads");
  positive(embed_dim, "embed_dim");
  positive(max_seq_len, "max_seq_len");
  positive(intermediate_dim, "intermediate_dim");
  if (explicit_head_dim < 0) fail("head_dim must be positive");
  if (explicit_head_dim == 0 && embed_dim % num_heads != 0)
    fail("embed_dim " + std::to_string(embed_dim) + " is not divisible by num_heads " + std::to_string(num_heads));
  if (num_heads % num_kv_heads != 0)
    fail("num_heads " + std::to_string(num_heads) + " is not divisible by num_kv_heads " +
         std::to_string(num_kv_heads));
  if (!(partial_rotary_factor > 0 && partial_rotary_factor <= 1)) fail("partial_rotary_factor must be in (0, 1]");
  if (rotary_dim() % 2 != 0 || rotary_dim() < 2)
    fail("the rotary dims of a head (" + std::to_string(rotary_dim()) + ") must be even for rotary embeddings");
  if (!(norm_eps > 0)) fail("norm_eps must be positive");
  if (!(rope_base > 0)) fail("rope_base must be positive");
  if (rope_local_base < 0) fail("rope_local_base must not be negative");
  if (rope_scaling) {
    const auto& s = *rope_scaling;
    if (!(s.scale_factor > 0) || !(s.low_freq_factor > 0) || s.old_context_len <= 0)
      fail("rope scaling factors must be positive");
    if (s.type == RopeType::llama3 && !(s.high_freq_factor > s.low_freq_factor))
      fail("rope scaling needs high_freq_factor > low_freq_factor");
    if (s.type == RopeType::longrope) {
      if (static_cast<int64_t>(s.short_factor.size()) != rotary_dim() / 2)
        fail("longrope short_factor has " + std::to_string(s.short_factor.size()) + " values; the rotary has " +
             std::to_string(rotary_dim() / 2) + " frequencies");
      for (double f : s.short_factor)
        if (!(f > 0)) fail("longrope short_factor values must be positive");
      if (!(s.attention_factor > 0)) fail("longrope attention factor must be positive");
    }
  }
  if (!(query_pre_attn_scalar >= 0)) fail("query_pre_attn_scalar must not be negative");
  if (!(attn_softcap >= 0) || !(final_softcap >= 0)) fail("soft-capping values must not be negative");
  if (sliding_window < 0) fail("sliding_window must not be negative");
  if (!sliding_layers.empty() && static_cast<int64_t>(sliding_layers.size()) != num_layers)
    fail("the sliding/full layer pattern names " + std::to_string(sliding_layers.size()) + " layers, the model has " +
         std::to_string(num_layers));
  // Sizes that multiply past any model (a typo in config.json: hidden_size 1e12, 1e9 layers) are refused
  // here, counted in long double so the count itself cannot overflow, before anything is allocated.
  const long double count = approximate_parameter_count(*this);
  if (count > kMaxParameters)
    fail("these sizes make a model of about " + [&] {
      char text[32];
      std::snprintf(text, sizeof text, "%.3Lg", count);
      return std::string(text);
    }() + " parameters (num_layers " + std::to_string(num_layers) + ", embed_dim " + std::to_string(embed_dim) +
         ", intermediate_dim " + std::to_string(intermediate_dim) + ", vocab_size " + std::to_string(vocab_size) +
         "); no model is that large: is the config right?");
}


int64_t ModelArgs::parameter_count() const {
  const int64_t q_dim = num_heads * head_dim(), kv_dim = num_kv_heads * head_dim();
  int64_t attn = 2 * embed_dim * q_dim + 2 * embed_dim * kv_dim;
  if (attention_bias) attn += q_dim + 2 * kv_dim;
  if (qk_norm) attn += 2 * head_dim();
  const int64_t mlp = 3 * embed_dim * intermediate_dim;
  const int64_t per_layer = attn + mlp + (sandwich_norms ? 4 : 2) * embed_dim;
  const int64_t embeddings = vocab_size * embed_dim * (tie_word_embeddings ? 1 : 2);
  return embeddings + num_layers * per_layer + embed_dim;
}

std::vector<std::string> ModelArgs::differences(const ModelArgs& o) const {
  std::vector<std::string> out;
  auto cmp = [&](const char* name, auto a, auto b) {
    if (a != b) {
      std::ostringstream s;
      s << name << " " << a << " vs " << b;
      out.push_back(s.str());
    }
  };
  cmp("vocab_size", vocab_size, o.vocab_size);
  cmp("num_layers", num_layers, o.num_layers);
  cmp("num_heads", num_heads, o.num_heads);
  cmp("num_kv_heads", num_kv_heads, o.num_kv_heads);
  cmp("embed_dim", embed_dim, o.embed_dim);
  cmp("max_seq_len", max_seq_len, o.max_seq_len);
  cmp("intermediate_dim", intermediate_dim, o.intermediate_dim);
  cmp("norm_eps", norm_eps, o.norm_eps);
  cmp("rope_base", rope_base, o.rope_base);
  cmp("tie_word_embeddings", tie_word_embeddings, o.tie_word_embeddings);
  cmp("family", std::string(family_name(family)), std::string(family_name(o.family)));
  cmp("head_dim", head_dim(), o.head_dim());
  cmp("attention_bias", attention_bias, o.attention_bias);
  cmp("qk_norm", qk_norm, o.qk_norm);
  cmp("norm_offset", norm_offset, o.norm_offset);
  cmp("scale_embeddings", scale_embeddings, o.scale_embeddings);
  cmp("activation", activation == Activation::silu ? "silu" : "gelu_tanh",
      o.activation == Activation::silu ? "silu" : "gelu_tanh");
  cmp("sandwich_norms", sandwich_norms, o.sandwich_norms);
  cmp("query_pre_attn_scalar", query_pre_attn_scalar, o.query_pre_attn_scalar);
  cmp("attn_softcap", attn_softcap, o.attn_softcap);
  cmp("final_softcap", final_softcap, o.final_softcap);
  cmp("sliding_window", sliding_window, o.sliding_window);
  if (sliding_window > 0 || o.sliding_window > 0)
    for (int64_t i = 0; i < std::min(num_layers, o.num_layers); ++i)
      if (layer_slides(i) != o.layer_slides(i)) {
        out.push_back("layer " + std::to_string(i) + (layer_slides(i) ? " slides" : " is full") + " vs " +
                      (o.layer_slides(i) ? "slides" : "full"));
        break;
      }
  cmp("rope_local_base", rope_local_base, o.rope_local_base);
  cmp("partial_rotary_factor", partial_rotary_factor, o.partial_rotary_factor);
  cmp("fused_qkv", fused_qkv, o.fused_qkv);
  cmp("fused_gate_up", fused_gate_up, o.fused_gate_up);
  if (rope_scaling.has_value() != o.rope_scaling.has_value() ||
      (rope_scaling && !(*rope_scaling == *o.rope_scaling)))
    out.push_back(std::string("rope_scaling ") + (rope_scaling ? "set" : "none") + " vs " +
                  (o.rope_scaling ? "set" : "none") + (rope_scaling && o.rope_scaling ? " (different factors)" : ""));
  return out;
}

int64_t scale_hidden_dim_for_mlp(int64_t dim, int64_t multiple_of) {
  const int64_t hidden = 2 * (4 * dim) / 3;
  return multiple_of * ((hidden + multiple_of - 1) / multiple_of);
}

namespace {
ModelArgs make(int64_t vocab, int64_t layers, int64_t heads, int64_t kv_heads, int64_t dim, int64_t max_seq,
               int64_t hidden, double rope_base = 10000.0) {
  ModelArgs a;
  a.vocab_size = vocab;
  a.num_layers = layers;
  a.num_heads = heads;
  a.num_kv_heads = kv_heads;
  a.embed_dim = dim;
  a.max_seq_len = max_seq;
  a.intermediate_dim = hidden;
  a.norm_eps = 1e-5;
  a.rope_base = rope_base;
  return a;
}
}  // namespace

ModelArgs llama2_7b_args() { return make(32000, 32, 32, 32, 4096, 4096, 11008); }
ModelArgs llama2_13b_args() { return make(32000, 40, 40, 40, 5120, 4096, 13824); }
ModelArgs llama3_2_1b_args() {
  ModelArgs a = make(128256, 16, 32, 8, 2048, 131072, 8192, 500000.0);
  a.rope_scaling = RopeScaling::llama3(32.0, 1.0, 4.0, 8192);
  a.tie_word_embeddings = true;
  return a;
}
ModelArgs llama3_1_8b_args() {
  ModelArgs a = make(128256, 32, 32, 8, 4096, 131072, 14336, 500000.0);
  a.rope_scaling = RopeScaling::llama3(8.0, 1.0, 4.0, 8192);
  return a;
}
ModelArgs mistral_7b_args() { return make(32000, 32, 32, 8, 4096, 32768, 14336); }
// llama2.c ties the classifier to the embedding (15.19M and 109.53M parameters).
ModelArgs llama2_stories15m_args() {
  ModelArgs a = make(32000, 6, 6, 6, 288, 256, 768);
  a.tie_word_embeddings = true;
  return a;
}
ModelArgs llama2_stories110m_args() {
  ModelArgs a = make(32000, 12, 12, 12, 768, 1024, 2048);
  a.tie_word_embeddings = true;
  return a;
}
ModelArgs llama_tiny_test_args() { return make(512, 2, 4, 2, 64, 256, 128); }

namespace {

// Family shapes: each the Llama defaults plus what the family's published config sets.
ModelArgs qwen2_like(int64_t vocab, int64_t layers, int64_t heads, int64_t kv, int64_t dim, int64_t hidden,
                     int64_t max_seq, bool tied, double eps = 1e-6) {
  ModelArgs a = make(vocab, layers, heads, kv, dim, max_seq, hidden, 1000000.0);
  a.family = Family::qwen2;
  a.attention_bias = true;
  a.tie_word_embeddings = tied;
  a.norm_eps = eps;
  return a;
}

ModelArgs qwen3_like(int64_t layers, int64_t heads, int64_t dim, int64_t hidden, int64_t max_seq, bool tied) {
  ModelArgs a = make(151936, layers, heads, 8, dim, max_seq, hidden, 1000000.0);
  a.family = Family::qwen3;
  a.explicit_head_dim = 128;
  a.qk_norm = true;
  a.tie_word_embeddings = tied;
  a.norm_eps = 1e-6;
  return a;
}

ModelArgs gemma_like(Family family, int64_t vocab, int64_t layers, int64_t heads, int64_t kv, int64_t head_dim,
                     int64_t dim, int64_t hidden, int64_t max_seq) {
  ModelArgs a = make(vocab, layers, heads, kv, dim, max_seq, hidden);
  a.family = family;
  a.explicit_head_dim = head_dim;
  a.norm_eps = 1e-6;
  a.norm_offset = a.scale_embeddings = true;
  a.activation = Activation::gelu_tanh;
  a.tie_word_embeddings = true;
  if (family == Family::gemma) return a;
  a.sandwich_norms = true;
  a.query_pre_attn_scalar = double(head_dim);
  if (family == Family::gemma2) {  // even layers slide over 4096 tokens; tanh caps 50 and 30
    a.attn_softcap = 50.0;
    a.final_softcap = 30.0;
    a.sliding_window = 4096;
    for (int64_t i = 0; i < layers; ++i) a.sliding_layers.push_back(i % 2 == 0);
    return a;
  }
  // Gemma 3: five sliding layers (window 512, rotary base 10k) to a full one (base 1M); q/k norms.
  a.qk_norm = true;
  a.rope_base = 1000000.0;
  a.rope_local_base = 10000.0;
  a.sliding_window = 512;
  for (int64_t i = 0; i < layers; ++i) a.sliding_layers.push_back((i + 1) % 6 != 0);
  return a;
}

ModelArgs phi3_like(int64_t vocab, int64_t layers, int64_t heads, int64_t kv, int64_t dim, int64_t hidden,
                    int64_t max_seq, double rope_base, bool tied, double partial_rotary) {
  ModelArgs a = make(vocab, layers, heads, kv, dim, max_seq, hidden, rope_base);
  a.family = Family::phi3;
  a.fused_qkv = a.fused_gate_up = true;
  a.tie_word_embeddings = tied;
  a.partial_rotary_factor = partial_rotary;
  return a;
}

ModelArgs smollm2(int64_t layers, int64_t heads, int64_t kv, int64_t dim, int64_t hidden, double rope_base) {
  ModelArgs a = make(49152, layers, heads, kv, dim, 8192, hidden, rope_base);
  a.tie_word_embeddings = true;
  return a;
}

}  // namespace

// The torchtune builders' published shapes (and a few the Hub has that torchtune never built).
const std::vector<Preset>& presets() {
  static const std::vector<Preset> all = {
      {"llama2_7b", "torchtune.models.llama2.", "Llama 2 7B", llama2_7b_args},
      {"llama2_13b", "torchtune.models.llama2.", "Llama 2 13B", llama2_13b_args},
      {"llama3_2_1b", "torchtune.models.llama3_2.", "Llama 3.2 1B (tied embeddings, rope scaling 32)", llama3_2_1b_args},
      {"llama3_2_3b", "torchtune.models.llama3_2.", "Llama 3.2 3B (tied embeddings, rope scaling 32)",
       [] {
         ModelArgs a = llama3_2_1b_args();
         a.num_layers = 28, a.num_heads = 24, a.embed_dim = 3072;
         return a;
       }},
      {"llama3_8b", "torchtune.models.llama3.", "Llama 3 8B", [] { return make(128256, 32, 32, 8, 4096, 8192, 14336, 500000.0); }},
      {"llama3_1_8b", "torchtune.models.llama3_1.", "Llama 3.1 8B (rope scaling 8)", llama3_1_8b_args},
      {"mistral_7b", "torchtune.models.mistral.", "Mistral 7B (full attention, no sliding window)", mistral_7b_args},
      {"qwen2_0_5b", "torchtune.models.qwen2.", "Qwen2 0.5B", [] { return qwen2_like(151936, 24, 14, 2, 896, 4864, 32768, true); }},
      {"qwen2_1_5b", "torchtune.models.qwen2.", "Qwen2 1.5B", [] { return qwen2_like(151936, 28, 12, 2, 1536, 8960, 32768, true); }},
      {"qwen2_7b", "torchtune.models.qwen2.", "Qwen2 7B", [] { return qwen2_like(152064, 28, 28, 4, 3584, 18944, 32768, false); }},
      {"qwen2_5_0_5b", "torchtune.models.qwen2_5.", "Qwen2.5 0.5B", [] { return qwen2_like(151936, 24, 14, 2, 896, 4864, 32768, true); }},
      {"qwen2_5_1_5b_base", "torchtune.models.qwen2_5.", "Qwen2.5 1.5B base", [] { return qwen2_like(151936, 28, 12, 2, 1536, 8960, 131072, true); }},
      {"qwen2_5_1_5b_instruct", "torchtune.models.qwen2_5.", "Qwen2.5 1.5B instruct", [] { return qwen2_like(151936, 28, 12, 2, 1536, 8960, 32768, true); }},
      {"qwen2_5_3b", "torchtune.models.qwen2_5.", "Qwen2.5 3B", [] { return qwen2_like(151936, 36, 16, 2, 2048, 11008, 32768, true); }},
      {"qwen2_5_7b_base", "torchtune.models.qwen2_5.", "Qwen2.5 7B base", [] { return qwen2_like(152064, 28, 28, 4, 3584, 18944, 131072, false); }},
      {"qwen2_5_7b_instruct", "torchtune.models.qwen2_5.", "Qwen2.5 7B instruct", [] { return qwen2_like(152064, 28, 28, 4, 3584, 18944, 32768, false); }},
      {"qwen2_5_14b_base", "torchtune.models.qwen2_5.", "Qwen2.5 14B base", [] { return qwen2_like(152064, 48, 40, 8, 5120, 13824, 131072, false, 1e-5); }},
      {"qwen2_5_14b_instruct", "torchtune.models.qwen2_5.", "Qwen2.5 14B instruct", [] { return qwen2_like(152064, 48, 40, 8, 5120, 13824, 32768, false); }},
      {"qwen3_0_6b_base", "torchtune.models.qwen3.", "Qwen3 0.6B base", [] { return qwen3_like(28, 16, 1024, 3072, 32768, true); }},
      {"qwen3_0_6b_instruct", "torchtune.models.qwen3.", "Qwen3 0.6B", [] { return qwen3_like(28, 16, 1024, 3072, 40960, true); }},
      {"qwen3_1_7b_base", "torchtune.models.qwen3.", "Qwen3 1.7B base", [] { return qwen3_like(28, 16, 2048, 6144, 32768, true); }},
      {"qwen3_1_7b_instruct", "torchtune.models.qwen3.", "Qwen3 1.7B", [] { return qwen3_like(28, 16, 2048, 6144, 40960, true); }},
      {"qwen3_4b_base", "torchtune.models.qwen3.", "Qwen3 4B base", [] { return qwen3_like(36, 32, 2560, 9728, 32768, true); }},
      {"qwen3_4b_instruct", "torchtune.models.qwen3.", "Qwen3 4B", [] { return qwen3_like(36, 32, 2560, 9728, 40960, true); }},
      {"qwen3_8b_base", "torchtune.models.qwen3.", "Qwen3 8B base", [] { return qwen3_like(36, 32, 4096, 12288, 32768, false); }},
      {"qwen3_8b_instruct", "torchtune.models.qwen3.", "Qwen3 8B", [] { return qwen3_like(36, 32, 4096, 12288, 40960, false); }},
      {"qwen3_14b_base", "torchtune.models.qwen3.", "Qwen3 14B base", [] { return qwen3_like(40, 40, 5120, 17408, 32768, false); }},
      {"qwen3_14b_instruct", "torchtune.models.qwen3.", "Qwen3 14B", [] { return qwen3_like(40, 40, 5120, 17408, 40960, false); }},
      {"gemma_2b", "torchtune.models.gemma.", "Gemma 2B", [] { return gemma_like(Family::gemma, 256000, 18, 8, 1, 256, 2048, 16384, 8192); }},
      {"gemma_7b", "torchtune.models.gemma.", "Gemma 7B", [] { return gemma_like(Family::gemma, 256000, 28, 16, 16, 256, 3072, 24576, 8192); }},
      {"gemma2_2b", "torchtune.models.gemma2.", "Gemma 2 2B", [] { return gemma_like(Family::gemma2, 256000, 26, 8, 4, 256, 2304, 9216, 8192); }},
      {"gemma2_9b", "torchtune.models.gemma2.", "Gemma 2 9B", [] { return gemma_like(Family::gemma2, 256000, 42, 16, 8, 256, 3584, 14336, 8192); }},
      {"gemma2_27b", "torchtune.models.gemma2.", "Gemma 2 27B (queries scaled by 144, not head_dim)",
       [] {
         ModelArgs a = gemma_like(Family::gemma2, 256000, 46, 32, 16, 128, 4608, 36864, 8192);
         a.query_pre_attn_scalar = 144.0;  // embed_dim / num_heads, as the published config
         return a;
       }},
      {"gemma3_270m", "tunebench.models.gemma3.", "Gemma 3 270M (text)", [] { return gemma_like(Family::gemma3, 262144, 18, 4, 1, 256, 640, 2048, 32768); }},
      {"gemma3_1b", "tunebench.models.gemma3.", "Gemma 3 1B (text)", [] { return gemma_like(Family::gemma3, 262144, 26, 4, 1, 256, 1152, 6912, 32768); }},
      {"phi3_mini", "torchtune.models.phi3.", "Phi-3-mini 4k (sliding window 2047)",
       [] {
         ModelArgs a = phi3_like(32064, 32, 32, 32, 3072, 8192, 4096, 10000.0, false, 1.0);
         a.sliding_window = 2047;
         return a;
       }},
      {"phi4_14b", "torchtune.models.phi4.", "Phi-4 14B", [] { return phi3_like(100352, 40, 40, 10, 5120, 17920, 16384, 250000.0, false, 1.0); }},
      {"phi4_mini", "tunebench.models.phi4.", "Phi-4-mini (partial rotary 0.75; without longrope: 4096 tokens)",
       [] { return phi3_like(200064, 32, 24, 8, 3072, 8192, 4096, 10000.0, true, 0.75); }},
      {"smollm2_135m", "tunebench.models.smollm2.", "SmolLM2 135M (Llama architecture, tied)", [] { return smollm2(30, 9, 3, 576, 1536, 100000.0); }},
      {"smollm2_360m", "tunebench.models.smollm2.", "SmolLM2 360M (Llama architecture, tied)", [] { return smollm2(32, 15, 5, 960, 2560, 100000.0); }},
      {"smollm2_1_7b", "tunebench.models.smollm2.", "SmolLM2 1.7B (Llama architecture, tied)", [] { return smollm2(24, 32, 32, 2048, 8192, 130000.0); }},
      {"llama2_stories15m", "tunebench.models.", "llama2.c stories15M: dim 288, 6 layers, 6 heads, tied embeddings", llama2_stories15m_args},
      {"llama2_stories110m", "tunebench.models.", "llama2.c stories110M: dim 768, 12 layers, 12 heads, tied embeddings", llama2_stories110m_args},
      {"llama_tiny_test", "tunebench.models.", "tiny test model: dim 64, 2 layers, 4 heads, 2 kv heads, vocab 512", llama_tiny_test_args},
  };
  return all;
}

const std::vector<std::string>& preset_names() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> n;
    for (const auto& p : presets()) n.push_back(p.name);
    return n;
  }();
  return names;
}

std::optional<ModelArgs> preset_args(const std::string& n) {
  for (const auto& p : presets())
    if (n == p.name) return p.args();
  return std::nullopt;
}

}  // namespace tb::models
