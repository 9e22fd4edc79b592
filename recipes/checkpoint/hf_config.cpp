#include "checkpoint/hf_config.h"

#include <cmath>
#include <fstream>
#include <map>
#include <optional>
#include <stdexcept>
#include <sys/stat.h>

#include "config/regular_file.h"
#include "text/json_file.h"

namespace tb::checkpoint {

namespace {

[[noreturn]] void fail(const std::string& source, const std::string& what) {
  throw std::runtime_error(source + ": " + what);
}

int64_t get_int(const nlohmann::json& c, const std::string& source, const char* key, std::optional<int64_t> def = {}) {
  const auto it = c.find(key);
  if (it == c.end() || it->is_null()) {
    if (def) return *def;
    fail(source, std::string("missing '") + key + "'");
  }
  if (!it->is_number_integer()) fail(source, std::string("'") + key + "' must be an integer, got " + it->dump());
  return it->get<int64_t>();
}

double get_float(const nlohmann::json& c, const std::string& source, const char* key, double def) {
  const auto it = c.find(key);
  if (it == c.end() || it->is_null()) return def;
  if (!it->is_number()) fail(source, std::string("'") + key + "' must be a number, got " + it->dump());
  return it->get<double>();
}

bool get_bool(const nlohmann::json& c, const std::string& source, const char* key, bool def) {
  const auto it = c.find(key);
  if (it == c.end() || it->is_null()) return def;
  if (!it->is_boolean()) fail(source, std::string("'") + key + "' must be true or false, got " + it->dump());
  return it->get<bool>();
}

}  // namespace

namespace {

using models::Activation;
using models::Family;

// The gate activation a config names, for the families whose MLP is gated by it.
Activation activation_of(const nlohmann::json& c, const std::string& source, Family family) {
  const bool gemma = family == Family::gemma || family == Family::gemma2 || family == Family::gemma3;
  // Gemma's MLP reads hidden_activation (Hugging Face falls back to the tanh GELU); the rest hidden_act.
  const char* key = gemma ? "hidden_activation" : "hidden_act";
  const auto it = c.find(key);
  const std::string act = it != c.end() && it->is_string() ? it->get<std::string>() : (gemma ? "gelu_pytorch_tanh" : "silu");
  if (act == "silu" && !gemma) return Activation::silu;
  if ((act == "gelu_pytorch_tanh" || act == "gelu_tanh") && gemma) return Activation::gelu_tanh;
  fail(source, std::string(key) + " \"" + act + "\" is not what a " + models::family_name(family) +
                   " decoder computes here (" + (gemma ? "gelu_pytorch_tanh" : "silu") + ")");
}

// rope_scaling: llama3, linear or longrope; default/null means none.
std::optional<models::RopeScaling> rope_scaling_of(const nlohmann::json& c, const std::string& source,
                                                   const models::ModelArgs& a) {
  const auto rs = c.find("rope_scaling");
  if (rs == c.end() || rs->is_null()) return std::nullopt;
  if (!rs->is_object()) fail(source, "'rope_scaling' must be an object");
  const std::string type = rs->value("rope_type", rs->value("type", std::string()));
  models::RopeScaling s;
  if (type == "default") return std::nullopt;
  if (type == "llama3") {
    s.type = models::RopeType::llama3;
    s.scale_factor = get_float(*rs, source, "factor", s.scale_factor);
    s.low_freq_factor = get_float(*rs, source, "low_freq_factor", s.low_freq_factor);
    s.high_freq_factor = get_float(*rs, source, "high_freq_factor", s.high_freq_factor);
    s.old_context_len = get_int(*rs, source, "original_max_position_embeddings", s.old_context_len);
    return s;
  }
  if (type == "linear") {
    s.type = models::RopeType::linear;
    s.scale_factor = get_float(*rs, source, "factor", 1.0);
    return s;
  }
  if (type == "longrope" || type == "su") {
    // Phi-3/4: the short factors serve sequences up to original_max_position_embeddings; Hugging Face
    // switches to the long ones beyond, which is not computed here: the model reads at most that many.
    s.type = models::RopeType::longrope;
    const auto factors = rs->find("short_factor");
    if (factors == rs->end() || !factors->is_array()) fail(source, "rope_scaling longrope needs 'short_factor'");
    for (const auto& f : *factors) {
      if (!f.is_number()) fail(source, "rope_scaling.short_factor must hold numbers");
      s.short_factor.push_back(f.get<double>());
    }
    s.old_context_len = get_int(c, source, "original_max_position_embeddings", a.max_seq_len);
    const double factor = static_cast<double>(a.max_seq_len) / static_cast<double>(s.old_context_len);
    const auto given = rs->find("attention_factor");
    s.attention_factor = given != rs->end() && given->is_number()
                             ? given->get<double>()
                             : (factor <= 1.0 ? 1.0 : std::sqrt(1.0 + std::log(factor) / std::log(double(s.old_context_len))));
    return s;
  }
  fail(source, "rope_scaling type '" + type + "' is not computed here (llama3, linear, longrope)");
}

// Which layers slide: `layer_types` when the config lists them, else the family's fixed pattern.
std::vector<bool> sliding_layers_of(const nlohmann::json& c, const std::string& source, const models::ModelArgs& a) {
  std::vector<bool> out(static_cast<size_t>(a.num_layers), false);
  const auto types = c.find("layer_types");
  if (types != c.end() && types->is_array()) {
    if (static_cast<int64_t>(types->size()) != a.num_layers)
      fail(source, "'layer_types' lists " + std::to_string(types->size()) + " layers; num_hidden_layers is " +
                       std::to_string(a.num_layers));
    for (size_t i = 0; i < types->size(); ++i) {
      const std::string t = (*types)[i].is_string() ? (*types)[i].get<std::string>() : "";
      if (t != "sliding_attention" && t != "full_attention")
        fail(source, "layer_types[" + std::to_string(i) + "] " + (*types)[i].dump() +
                         " is neither sliding_attention nor full_attention");
      out[i] = t == "sliding_attention";
    }
    return out;
  }
  if (a.family == Family::gemma2) {  // even layers slide
    for (size_t i = 0; i < out.size(); i += 2) out[i] = true;
    return out;
  }
  const int64_t pattern = get_int(c, source, "sliding_window_pattern", 6);  // Gemma 3: every pattern-th is full
  if (pattern <= 0) fail(source, "'sliding_window_pattern' must be positive");
  for (int64_t i = 0; i < a.num_layers; ++i) out[size_t(i)] = (i + 1) % pattern != 0;
  return out;
}

}  // namespace

models::ModelArgs model_args_from_hf_config(const nlohmann::json& c, const std::string& source) {
  if (!c.is_object()) fail(source, "config is not a JSON object");
  const std::string model_type = c.value("model_type", std::string("llama"));
  if (model_type == "gemma3")
    fail(source, "model_type 'gemma3' is the vision-language Gemma 3; a text model (model_type gemma3_text, "
                 "Gemma 3 270M and 1B) is what trains here");
  const auto family = models::family_from_name(model_type);
  if (!family)
    fail(source, "model_type '" + model_type +
                     "' is not a decoder this version builds (llama, mistral, qwen2, qwen3, gemma, gemma2, "
                     "gemma3_text, phi3)");
  for (const char* moe : {"num_experts", "num_local_experts", "n_routed_experts"})
    if (c.contains(moe) && !c[moe].is_null() && c[moe] != 0)
      fail(source, std::string("'") + moe + "' " + c[moe].dump() + ": mixture-of-experts models are not built here");
  if (get_bool(c, source, "mlp_bias", false)) fail(source, "mlp_bias: true is not supported");

  models::ModelArgs a;
  a.family = *family;
  a.embed_dim = get_int(c, source, "hidden_size");
  a.intermediate_dim = get_int(c, source, "intermediate_size");
  a.num_heads = get_int(c, source, "num_attention_heads");
  a.num_kv_heads = get_int(c, source, "num_key_value_heads", a.num_heads);
  a.num_layers = get_int(c, source, "num_hidden_layers");
  a.vocab_size = get_int(c, source, "vocab_size");
  a.max_seq_len = get_int(c, source, "max_position_embeddings", 2048);
  a.norm_eps = get_float(c, source, "rms_norm_eps", 1e-6);  // LlamaConfig's default
  a.rope_base = get_float(c, source, "rope_theta", 10000.0);
  a.tie_word_embeddings = get_bool(c, source, "tie_word_embeddings", *family == Family::gemma ||
                                                                         *family == Family::gemma2 ||
                                                                         *family == Family::gemma3);
  if (c.contains("head_dim") && !c["head_dim"].is_null()) {
    const int64_t hd = get_int(c, source, "head_dim");
    if (a.num_heads <= 0 || hd != a.embed_dim / a.num_heads || a.embed_dim % a.num_heads != 0) a.explicit_head_dim = hd;
  }
  a.activation = activation_of(c, source, *family);

  // What each family computes besides a Llama.
  const bool bias = get_bool(c, source, "attention_bias", false);
  switch (*family) {
    case Family::llama:
    case Family::gemma:
      if (bias) fail(source, "attention_bias: true (biases on every attention projection) is not supported");
      break;
    case Family::mistral:
      if (bias) fail(source, "attention_bias: true is not supported");
      a.sliding_window = c.contains("sliding_window") && !c["sliding_window"].is_null()
                             ? get_int(c, source, "sliding_window") : 0;
      break;
    case Family::qwen2:
    case Family::qwen3:
      a.attention_bias = *family == Family::qwen2 || bias;  // Qwen2's q, k and v always carry biases
      a.qk_norm = *family == Family::qwen3;
      if (get_bool(c, source, "use_sliding_window", false))
        fail(source, "use_sliding_window: true is not supported (Qwen's released models set it false)");
      break;
    case Family::gemma2:
    case Family::gemma3:
      if (bias) fail(source, "attention_bias: true is not supported");
      a.sandwich_norms = true;
      a.query_pre_attn_scalar = get_float(c, source, "query_pre_attn_scalar", double(a.head_dim()));
      a.attn_softcap = get_float(c, source, "attn_logit_softcapping", 0.0);
      a.final_softcap = get_float(c, source, "final_logit_softcapping", 0.0);
      a.sliding_window = c.contains("sliding_window") && !c["sliding_window"].is_null()
                             ? get_int(c, source, "sliding_window") : 0;
      if (a.sliding_window > 0) a.sliding_layers = sliding_layers_of(c, source, a);
      if (*family == Family::gemma3) {
        a.qk_norm = true;
        a.rope_local_base = get_float(c, source, "rope_local_base_freq", 10000.0);
      }
      break;
    case Family::phi3:
      if (bias) fail(source, "attention_bias: true is not supported");
      a.fused_qkv = a.fused_gate_up = true;
      a.partial_rotary_factor = get_float(c, source, "partial_rotary_factor", 1.0);
      a.sliding_window = c.contains("sliding_window") && !c["sliding_window"].is_null()
                             ? get_int(c, source, "sliding_window") : 0;
      break;
  }
  a.norm_offset = a.scale_embeddings = *family == Family::gemma || *family == Family::gemma2 || *family == Family::gemma3;
  a.rope_scaling = rope_scaling_of(c, source, a);
  if (a.rope_scaling && a.rope_scaling->type == models::RopeType::longrope)
    a.max_seq_len = std::min(a.max_seq_len, a.rope_scaling->old_context_len);
  if (a.rope_scaling && a.rope_scaling->type == models::RopeType::linear && *family != Family::gemma3 &&
      *family != Family::llama)
    fail(source, "rope_scaling linear is computed for Gemma 3 and Llama only");
  if (a.sliding_window >= a.max_seq_len) a.sliding_window = 0;  // a window as long as the model reads: none
  if (a.sliding_window == 0) a.sliding_layers.clear();
  try {
    a.validate();
  } catch (const std::invalid_argument& e) {
    fail(source, e.what());
  }
  return a;
}

std::string config_file(const std::string& path) {
  struct stat st {};
  const bool is_dir = ::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
  return is_dir ? path + "/config.json" : path;
}

nlohmann::json read_hf_config(const std::string& path) {
  const std::string file = config_file(path);
  if (const auto what = config::not_a_regular_file(file)) throw std::runtime_error(file + ": " + *what);
  return text::read_json_file(file);
}

models::ModelArgs read_hf_model_args(const std::string& path) {
  return model_args_from_hf_config(read_hf_config(path), config_file(path));  // messages name the file
}

models::ModelArgs parse_hf_model_args(const std::string& text, const std::string& source) {
  nlohmann::json config;
  try {
    config = nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception&) {
    throw std::runtime_error(source + " is not valid JSON");
  }
  return model_args_from_hf_config(config, source);
}

namespace {
struct ModelType {
  const char* name;
  Family family;
};
constexpr ModelType kModelTypes[] = {{"LLAMA2", Family::llama},  {"LLAMA3", Family::llama},   {"LLAMA3_2", Family::llama},
                                     {"MISTRAL", Family::mistral}, {"QWEN2", Family::qwen2},   {"QWEN3", Family::qwen3},
                                     {"GEMMA", Family::gemma},   {"GEMMA2", Family::gemma2},  {"GEMMA3", Family::gemma3},
                                     {"PHI3_MINI", Family::phi3}, {"PHI4", Family::phi3}};
}  // namespace

const std::vector<std::string>& model_type_names() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> n;
    for (const auto& t : kModelTypes) n.push_back(t.name);
    return n;
  }();
  return names;
}

models::Family family_of_model_type(const std::string& model_type) {
  for (const auto& t : kModelTypes)
    if (model_type == t.name) return t.family;
  check_model_type(model_type);  // throws
  return Family::llama;
}

std::string hf_model_type(const nlohmann::json& c) {
  if (!c.is_object()) return "LLAMA2";
  const std::string type = c.value("model_type", std::string());
  const auto vocab = c.find("vocab_size");
  const int64_t vocab_size = vocab != c.end() && vocab->is_number_integer() ? vocab->get<int64_t>() : 0;
  if (type == "mistral") return "MISTRAL";
  if (type == "qwen2") return "QWEN2";
  if (type == "qwen3") return "QWEN3";
  if (type == "gemma") return "GEMMA";
  if (type == "gemma2") return "GEMMA2";
  if (type == "gemma3_text") return "GEMMA3";
  if (type == "phi3") return vocab_size >= 100000 ? "PHI4" : "PHI3_MINI";  // Phi-4's vocabularies are 100k+
  if (vocab_size >= 128000) {
    const auto tied = c.find("tie_word_embeddings");
    return tied != c.end() && tied->is_boolean() && tied->get<bool>() ? "LLAMA3_2" : "LLAMA3";
  }
  return "LLAMA2";
}

void check_model_type(const std::string& t) {
  for (const auto& known : kModelTypes)
    if (t == known.name) return;
  std::string names;
  for (const auto& known : kModelTypes) names += std::string(names.empty() ? "" : ", ") + known.name;
  throw std::invalid_argument("model_type '" + t + "' is not supported; use one of " + names);
}

nlohmann::json hf_config_from_model_args(const models::ModelArgs& a, const std::string& model_type,
                                         const std::string& torch_dtype) {
  check_model_type(model_type);
  const Family f = a.family;
  static const std::map<Family, const char*> architectures = {
      {Family::llama, "LlamaForCausalLM"},   {Family::mistral, "MistralForCausalLM"},
      {Family::qwen2, "Qwen2ForCausalLM"},   {Family::qwen3, "Qwen3ForCausalLM"},
      {Family::gemma, "GemmaForCausalLM"},   {Family::gemma2, "Gemma2ForCausalLM"},
      {Family::gemma3, "Gemma3ForCausalLM"}, {Family::phi3, "Phi3ForCausalLM"}};
  nlohmann::json c;
  c["architectures"] = {architectures.at(f)};
  c["model_type"] = models::family_name(f);
  c["hidden_size"] = a.embed_dim;
  c["intermediate_size"] = a.intermediate_dim;
  c["num_attention_heads"] = a.num_heads;
  c["num_key_value_heads"] = a.num_kv_heads;
  c["num_hidden_layers"] = a.num_layers;
  c["head_dim"] = a.head_dim();
  c["vocab_size"] = a.vocab_size;
  c["max_position_embeddings"] = a.max_seq_len;
  c["rms_norm_eps"] = a.norm_eps;
  c["rope_theta"] = a.rope_base;
  c["tie_word_embeddings"] = a.tie_word_embeddings;
  const bool gemma = f == Family::gemma || f == Family::gemma2 || f == Family::gemma3;
  if (gemma)
    c["hidden_activation"] = "gelu_pytorch_tanh";
  else
    c["hidden_act"] = "silu";
  c["attention_bias"] = f == Family::qwen3 ? a.attention_bias : f == Family::qwen2;
  c["attention_dropout"] = 0.0;
  c["initializer_range"] = 0.02;
  c["use_cache"] = true;
  c["torch_dtype"] = torch_dtype;
  if (f == Family::llama || f == Family::mistral) c["mlp_bias"] = false;
  if (f == Family::mistral || f == Family::phi3) c["sliding_window"] = a.sliding_window > 0 ? nlohmann::json(a.sliding_window) : nlohmann::json();
  if (f == Family::qwen2 || f == Family::qwen3) c["use_sliding_window"] = false;
  if (f == Family::gemma2 || f == Family::gemma3) {
    c["query_pre_attn_scalar"] = a.query_pre_attn_scalar;
    c["attn_logit_softcapping"] = a.attn_softcap > 0 ? nlohmann::json(a.attn_softcap) : nlohmann::json();
    c["final_logit_softcapping"] = a.final_softcap > 0 ? nlohmann::json(a.final_softcap) : nlohmann::json();
    c["sliding_window"] = a.sliding_window > 0 ? nlohmann::json(a.sliding_window) : nlohmann::json();
    nlohmann::json types = nlohmann::json::array();
    for (int64_t i = 0; i < a.num_layers; ++i) types.push_back(a.layer_slides(i) ? "sliding_attention" : "full_attention");
    c["layer_types"] = types;
  }
  if (f == Family::gemma3) c["rope_local_base_freq"] = a.rope_local_base > 0 ? a.rope_local_base : a.rope_base;
  if (f == Family::phi3) c["partial_rotary_factor"] = a.partial_rotary_factor;
  if (!a.rope_scaling) {
    c["rope_scaling"] = nullptr;
  } else if (a.rope_scaling->type == models::RopeType::llama3) {
    c["rope_scaling"] = {{"rope_type", "llama3"},
                         {"factor", a.rope_scaling->scale_factor},
                         {"low_freq_factor", a.rope_scaling->low_freq_factor},
                         {"high_freq_factor", a.rope_scaling->high_freq_factor},
                         {"original_max_position_embeddings", a.rope_scaling->old_context_len}};
  } else if (a.rope_scaling->type == models::RopeType::linear) {
    c["rope_scaling"] = {{"rope_type", "linear"}, {"factor", a.rope_scaling->scale_factor}};
  } else {
    // Only the short factors are computed here; the long ones equal them, so no reader switches.
    c["rope_scaling"] = {{"type", "longrope"},
                         {"short_factor", a.rope_scaling->short_factor},
                         {"long_factor", a.rope_scaling->short_factor},
                         {"attention_factor", a.rope_scaling->attention_factor}};
    c["original_max_position_embeddings"] = a.rope_scaling->old_context_len;
  }
  return c;
}

}  // namespace tb::checkpoint
