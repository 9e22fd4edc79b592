#include "checkpoint/hf_config.h"

#include <fstream>
#include <optional>
#include <stdexcept>
#include <sys/stat.h>

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

models::ModelArgs model_args_from_hf_config(const nlohmann::json& c, const std::string& source) {
  if (!c.is_object()) fail(source, "config is not a JSON object");
  const std::string model_type = c.value("model_type", std::string("llama"));
  if (model_type != "llama" && model_type != "mistral")
    fail(source, "model_type '" + model_type + "' is not a Llama-family decoder (llama, mistral)");
  if (c.contains("hidden_act") && c["hidden_act"] != "silu")
    fail(source, "hidden_act " + c["hidden_act"].dump() + " is not supported (silu only)");
  if (get_bool(c, source, "attention_bias", false)) fail(source, "attention_bias: true is not supported");
  if (get_bool(c, source, "mlp_bias", false)) fail(source, "mlp_bias: true is not supported");

  models::ModelArgs a;
  a.embed_dim = get_int(c, source, "hidden_size");
  a.intermediate_dim = get_int(c, source, "intermediate_size");
  a.num_heads = get_int(c, source, "num_attention_heads");
  a.num_kv_heads = get_int(c, source, "num_key_value_heads", a.num_heads);
  a.num_layers = get_int(c, source, "num_hidden_layers");
  a.vocab_size = get_int(c, source, "vocab_size");
  a.max_seq_len = get_int(c, source, "max_position_embeddings", 2048);
  a.norm_eps = get_float(c, source, "rms_norm_eps", 1e-6);  // LlamaConfig's default
  a.rope_base = get_float(c, source, "rope_theta", 10000.0);
  a.tie_word_embeddings = get_bool(c, source, "tie_word_embeddings", false);
  if (a.num_heads > 0 && c.contains("head_dim") && !c["head_dim"].is_null() &&
      get_int(c, source, "head_dim") != a.embed_dim / a.num_heads)
    fail(source, "head_dim " + c["head_dim"].dump() + " differs from hidden_size / num_attention_heads; not supported");

  const auto rs = c.find("rope_scaling");
  if (rs != c.end() && !rs->is_null()) {
    if (!rs->is_object()) fail(source, "'rope_scaling' must be an object");
    const std::string type = rs->value("rope_type", rs->value("type", std::string()));
    if (type == "llama3") {
      models::RopeScaling s;
      s.scale_factor = get_float(*rs, source, "factor", s.scale_factor);
      s.low_freq_factor = get_float(*rs, source, "low_freq_factor", s.low_freq_factor);
      s.high_freq_factor = get_float(*rs, source, "high_freq_factor", s.high_freq_factor);
      s.old_context_len = get_int(*rs, source, "original_max_position_embeddings", s.old_context_len);
      a.rope_scaling = s;
    } else if (type != "default") {
      fail(source, "rope_scaling type '" + type + "' is not supported (llama3 only)");
    }
  }
  try {
    a.validate();
  } catch (const std::invalid_argument& e) {
    fail(source, e.what());
  }
  return a;
}

namespace {
// <path>/config.json for a folder, else `path` itself.
std::string config_file(const std::string& path) {
  struct stat st {};
  const bool is_dir = ::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
  return is_dir ? path + "/config.json" : path;
}
}  // namespace

nlohmann::json read_hf_config(const std::string& path) {
  const std::string file = config_file(path);
  std::ifstream in(file);
  if (!in) throw std::runtime_error(file + ": cannot open (a Hugging Face checkpoint folder holds a config.json)");
  try {
    return nlohmann::json::parse(in);
  } catch (const nlohmann::json::parse_error& e) {
    throw std::runtime_error(file + ": not valid JSON: " + e.what());
  }
}

models::ModelArgs read_hf_model_args(const std::string& path) {
  return model_args_from_hf_config(read_hf_config(path), config_file(path));  // messages name the file
}

std::string hf_model_type(const nlohmann::json& c) {
  if (!c.is_object()) return "LLAMA2";
  if (c.value("model_type", std::string()) == "mistral") return "MISTRAL";
  const auto vocab = c.find("vocab_size");
  if (vocab != c.end() && vocab->is_number_integer() && vocab->get<int64_t>() >= 128000) {
    const auto tied = c.find("tie_word_embeddings");
    return tied != c.end() && tied->is_boolean() && tied->get<bool>() ? "LLAMA3_2" : "LLAMA3";
  }
  return "LLAMA2";
}

void check_model_type(const std::string& t) {
  if (t != "LLAMA2" && t != "LLAMA3" && t != "LLAMA3_2" && t != "MISTRAL")
    throw std::invalid_argument("model_type '" + t + "' is not supported; use LLAMA2, LLAMA3, LLAMA3_2 or MISTRAL");
}

nlohmann::json hf_config_from_model_args(const models::ModelArgs& a, const std::string& model_type,
                                         const std::string& torch_dtype) {
  check_model_type(model_type);
  const bool mistral = model_type == "MISTRAL";
  nlohmann::json c;
  c["architectures"] = {mistral ? "MistralForCausalLM" : "LlamaForCausalLM"};
  c["model_type"] = mistral ? "mistral" : "llama";
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
  c["hidden_act"] = "silu";
  c["attention_bias"] = false;
  c["attention_dropout"] = 0.0;
  c["mlp_bias"] = false;
  c["initializer_range"] = 0.02;
  c["use_cache"] = true;
  c["torch_dtype"] = torch_dtype;
  if (mistral) c["sliding_window"] = nullptr;  // our attention is full; HF's default window is 4096
  if (a.rope_scaling) {
    c["rope_scaling"] = {{"rope_type", "llama3"},
                         {"factor", a.rope_scaling->scale_factor},
                         {"low_freq_factor", a.rope_scaling->low_freq_factor},
                         {"high_freq_factor", a.rope_scaling->high_freq_factor},
                         {"original_max_position_embeddings", a.rope_scaling->old_context_len}};
  } else {
    c["rope_scaling"] = nullptr;
  }
  return c;
}

}  // namespace tb::checkpoint
