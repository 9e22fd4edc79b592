#include "peft/adapter.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <regex>
#include <stdexcept>

#include <nlohmann/json.hpp>

#include "checkpoint/hf_checkpointer.h"
#include "checkpoint/safetensors.h"
#include "models/compiled_names.h"
#include "models/transformer.h"
#include "text/json_file.h"
#include "text/json_text.h"
#include "text/strings.h"

namespace fs = std::filesystem;

namespace tb::peft {

namespace {

const std::string kPeftPrefix = "base_model.model.";

using models::strip_compiled_prefix;

using text::ends_with;

bool has_segment(const std::string& name, const std::string& segment) {
  return name.compare(0, segment.size(), segment) == 0 || name.find("." + segment) != std::string::npos;
}

std::string last_segment(const std::string& dotted) {
  const auto dot = dotted.rfind('.');
  return dot == std::string::npos ? dotted : dotted.substr(dot + 1);
}

std::string shape_text(c10::IntArrayRef sizes) {
  std::string s = "[";
  for (size_t i = 0; i < sizes.size(); ++i) s += (i ? ", " : "") + std::to_string(sizes[i]);
  return s + "]";
}
std::string shape_text(const torch::Tensor& t) { return shape_text(t.sizes()); }

std::string join(const std::vector<std::string>& items) {
  std::string s;
  for (const auto& it : items) s += (s.empty() ? "" : ", ") + it;
  return s;
}

// One adapter tensor's name split into the module it adapts and which half it is.
struct AdapterKey {
  std::string module;  // "layers.0.attn.q_proj"; empty for a bare LoRALinear
  bool is_a = true;    // lora_a (down-projection) or lora_b (up-projection)
};

// Our names: <module>.lora_a.weight / <module>.lora_b.weight (or lora_a.weight for a bare module).
std::optional<AdapterKey> parse_our_key(const std::string& full_name) {
  const std::string name = strip_compiled_prefix(full_name);
  for (const bool is_a : {true, false}) {
    const std::string leaf = is_a ? "lora_a.weight" : "lora_b.weight";
    if (name == leaf) return AdapterKey{"", is_a};
    if (ends_with(name, "." + leaf)) return AdapterKey{name.substr(0, name.size() - leaf.size() - 1), is_a};
  }
  return std::nullopt;
}

std::string our_key(const AdapterKey& k) {
  const std::string leaf = k.is_a ? "lora_a.weight" : "lora_b.weight";
  return k.module.empty() ? leaf : k.module + "." + leaf;
}

bool is_projection(const std::string& our_module) {
  const auto& names = models::projection_names();
  return std::find(names.begin(), names.end(), last_segment(our_module)) != names.end();
}

// in/out features of one of our projections in a model of `args`; nullopt when the model has no
// such module (layer out of range, or `output` of a tied model).
std::optional<std::pair<int64_t, int64_t>> projection_dims(const std::string& module, const models::ModelArgs& a) {
  if (module == "output") {
    if (a.tie_word_embeddings) return std::nullopt;
    return std::make_pair(a.embed_dim, a.vocab_size);
  }
  static const std::regex layer_site(R"(layers\.(\d+)\.(attn|mlp)\.(\w+))");
  std::smatch m;
  if (!std::regex_match(module, m, layer_site) || std::stoll(m[1].str()) >= a.num_layers) return std::nullopt;
  const int64_t dim = a.embed_dim, hd = a.head_dim(), q_dim = a.num_heads * hd, kv_dim = a.num_kv_heads * hd;
  const std::string site = m[3].str();
  if (a.fused_qkv != (site == "qkv_proj") && (site == "qkv_proj" || site == "q_proj" || site == "k_proj" ||
                                               site == "v_proj"))
    return std::nullopt;
  if (a.fused_gate_up != (site == "gate_up_proj") && (site == "gate_up_proj" || site == "w1" || site == "w3"))
    return std::nullopt;
  if (site == "q_proj") return std::make_pair(dim, q_dim);
  if (site == "k_proj" || site == "v_proj") return std::make_pair(dim, kv_dim);
  if (site == "qkv_proj") return std::make_pair(dim, q_dim + 2 * kv_dim);
  if (site == "output_proj") return std::make_pair(q_dim, dim);
  if (site == "w1" || site == "w3") return std::make_pair(dim, a.intermediate_dim);
  if (site == "gate_up_proj") return std::make_pair(dim, 2 * a.intermediate_dim);
  if (site == "w2") return std::make_pair(a.intermediate_dim, dim);
  return std::nullopt;
}

// lora_b of `module` between the rotary layouts: its rows follow the base weight's (q and k heads,
// and the q and k blocks of a fused qkv_proj); other modules' come back as they are.
torch::Tensor lora_b_layout(const std::string& module, const torch::Tensor& b, const models::ModelArgs& a,
                            bool to_interleaved) {
  const std::string site = last_segment(module);
  const int64_t hd = a.head_dim(), rd = a.rotary_dim(), H = a.num_heads, KV = a.num_kv_heads;
  auto rows = [&](const torch::Tensor& block, int64_t heads) {
    return to_interleaved ? checkpoint::permute_hf_to_interleaved(block, heads, rd)
                          : checkpoint::permute_interleaved_to_hf(block, heads, rd);
  };
  if (site == "q_proj") return rows(b, H);
  if (site == "k_proj") return rows(b, KV);
  if (site == "qkv_proj")
    return torch::cat({rows(b.narrow(0, 0, H * hd), H), rows(b.narrow(0, H * hd, KV * hd), KV),
                       b.narrow(0, (H + KV) * hd, KV * hd)});
  return b;
}

[[noreturn]] void fail(const std::string& source, const std::string& message) {
  throw std::runtime_error((source.empty() ? std::string("adapter") : source) + ": " + message);
}

// The two halves of one module's adapter, with the names they had in the input (for messages).
struct Half {
  std::string shown;
  torch::Tensor tensor;
};
struct AdapterPair {
  std::optional<Half> a, b;
};
using AdapterPairs = std::map<std::string, AdapterPair>;  // by our module name

void add_half(AdapterPairs& pairs, const AdapterKey& key, const std::string& shown, const torch::Tensor& t,
              const std::string& source) {
  auto& slot = key.is_a ? pairs[key.module].a : pairs[key.module].b;
  if (slot) fail(source, "'" + shown + "' duplicates '" + slot->shown + "'");
  slot = Half{shown, t};
}

// Both halves present and 2-D with a common rank; returns the rank.
int64_t check_halves(const std::string& module, const AdapterPair& p, const std::string& source) {
  if (!p.a || !p.b) {
    const Half& present = p.a ? *p.a : *p.b;
    fail(source,
         "'" + present.shown + "' has no matching " + (p.a ? "lora_b" : "lora_a") + " for module '" + module + "'");
  }
  const auto &a = p.a->tensor, &b = p.b->tensor;
  if (a.dim() != 2) fail(source, "'" + p.a->shown + "' has shape " + shape_text(a) + "; lora_a must be [rank, in]");
  if (b.dim() != 2) fail(source, "'" + p.b->shown + "' has shape " + shape_text(b) + "; lora_b must be [out, rank]");
  if (a.size(0) != b.size(1))
    fail(source, "'" + p.a->shown + "' " + shape_text(a) + " and '" + p.b->shown + "' " + shape_text(b) +
                     " disagree on the rank");
  return a.size(0);
}

// Each pair fits the module it adapts in a model of `args`.
void check_against_model(const AdapterPairs& pairs, const models::ModelArgs& args, const std::string& source) {
  for (const auto& [module, p] : pairs) {
    const int64_t rank = check_halves(module, p, source);
    const auto dims = projection_dims(module, args);
    if (!dims) fail(source, "'" + p.a->shown + "' adapts '" + module + "', which this model does not have");
    const auto [in, out] = *dims;
    if (p.a->tensor.size(1) != in)
      fail(source, "'" + p.a->shown + "' has shape " + shape_text(p.a->tensor) + " but the model expects [" +
                       std::to_string(rank) + ", " + std::to_string(in) + "]");
    if (p.b->tensor.size(0) != out)
      fail(source, "'" + p.b->shown + "' has shape " + shape_text(p.b->tensor) + " but the model expects [" +
                       std::to_string(out) + ", " + std::to_string(rank) + "]");
  }
}

AdapterPairs pairs_from_ours(const StateDict& ours, const std::string& source) {
  AdapterPairs pairs;
  for (const auto& [name, t] : ours) {
    const auto key = parse_our_key(name);
    if (!key) fail(source, "'" + name + "' is not a LoRA adapter tensor (lora_a/lora_b)");
    add_half(pairs, *key, name, t, source);
  }
  return pairs;
}

// Hugging Face module names in the order PEFT users see them listed.
const std::vector<std::string>& hf_target_order() {
  static const std::vector<std::string> order = {"q_proj",    "k_proj",       "v_proj",    "qkv_proj",
                                                 "o_proj",    "gate_proj",    "down_proj", "up_proj",
                                                 "gate_up_proj", "lm_head"};
  return order;
}

// target_modules of adapter_config.json: the Hugging Face leaf names of the adapted modules.
std::vector<std::string> target_modules_of(const StateDict& peft) {
  std::vector<std::string> found;
  for (const auto& [name, t] : peft) {
    const std::string module = name.substr(0, name.rfind(".lora_"));
    const std::string leaf = last_segment(module);
    if (std::find(found.begin(), found.end(), leaf) == found.end()) found.push_back(leaf);
  }
  const auto& order = hf_target_order();
  auto rank_of = [&](const std::string& m) { return std::find(order.begin(), order.end(), m) - order.begin(); };
  std::sort(found.begin(), found.end(), [&](const auto& x, const auto& y) { return rank_of(x) < rank_of(y); });
  return found;
}

// PEFT types lora_alpha as an int; keep integral values integral in the JSON.
nlohmann::ordered_json number_json(double v) {
  if (std::isfinite(v) && v == std::floor(v) && std::abs(v) < 9e15) return static_cast<int64_t>(v);
  return v;
}

bool is_true(const nlohmann::json& j, const char* key) {
  return j.contains(key) && j[key].is_boolean() && j[key].get<bool>();
}

bool non_empty_object(const nlohmann::json& j, const char* key) {
  return j.contains(key) && j[key].is_object() && !j[key].empty();
}

bool is_targeted_adapter_key(const std::string& name, const LoraSettings& t) {
  const auto key = parse_our_key(name);
  if (!key) return false;
  const std::string site = last_segment(key->module);
  if (site == "q_proj" || site == "k_proj" || site == "v_proj" || site == "output_proj" || site == "qkv_proj")
    return lora_targets(t, models::ProjectionSite{site});
  if (site == "w1" || site == "w2" || site == "w3" || site == "gate_up_proj") return t.apply_lora_to_mlp;
  if (key->module == "output") return t.apply_lora_to_output;
  return false;
}

}  // namespace

bool is_adapter_parameter(const std::string& full_name) {
  const std::string name = strip_compiled_prefix(full_name);
  return has_segment(name, "lora_a.") || has_segment(name, "lora_b.");
}

StateDict adapter_state_dict(const torch::nn::Module& module) {
  StateDict out;
  for (const auto& item : module.named_parameters(/*recurse=*/true))
    if (is_adapter_parameter(item.key())) out[strip_compiled_prefix(item.key())] = item.value().detach();
  return out;
}

void set_trainable_params(torch::nn::Module& module) {
  for (auto& item : module.named_parameters(/*recurse=*/true))
    item.value().set_requires_grad(is_adapter_parameter(item.key()));
}

std::optional<std::string> tune_to_peft_name(const std::string& ours) {
  const auto key = parse_our_key(ours);
  if (!key || !is_projection(key->module)) return std::nullopt;
  const auto hf_weight = checkpoint::tune_to_hf_name(key->module + ".weight");
  if (!hf_weight) return std::nullopt;
  const std::string hf_module = hf_weight->substr(0, hf_weight->size() - std::string(".weight").size());
  return kPeftPrefix + hf_module + (key->is_a ? ".lora_A.weight" : ".lora_B.weight");
}

std::optional<std::string> peft_to_tune_name(const std::string& peft) {
  if (peft.compare(0, kPeftPrefix.size(), kPeftPrefix) != 0) return std::nullopt;
  const std::string rest = peft.substr(kPeftPrefix.size());
  for (const bool is_a : {true, false}) {
    const std::string leaf = is_a ? ".lora_A.weight" : ".lora_B.weight";
    if (!ends_with(rest, leaf)) continue;
    const auto ours_weight = checkpoint::hf_to_tune_name(rest.substr(0, rest.size() - leaf.size()) + ".weight");
    if (!ours_weight || !ends_with(*ours_weight, ".weight")) return std::nullopt;
    const std::string module = ours_weight->substr(0, ours_weight->size() - std::string(".weight").size());
    if (!is_projection(module)) return std::nullopt;
    return our_key({module, is_a});
  }
  return std::nullopt;
}

StateDict adapter_to_peft(const StateDict& ours, const models::ModelArgs& args) {
  const AdapterPairs pairs = pairs_from_ours(ours, "");
  check_against_model(pairs, args, "");
  StateDict out;
  for (const auto& [module, p] : pairs) {
    out[*tune_to_peft_name(our_key({module, true}))] = p.a->tensor;
    out[*tune_to_peft_name(our_key({module, false}))] = lora_b_layout(module, p.b->tensor, args, false);
  }
  return out;
}

StateDict adapter_from_peft(const StateDict& peft, const models::ModelArgs& args, const std::string& source) {
  AdapterPairs pairs;
  for (const auto& [name, t] : peft) {
    const auto ours = peft_to_tune_name(name);
    if (!ours) fail(source, "'" + name + "' is not a LoRA adapter of a projection this decoder has");
    add_half(pairs, *parse_our_key(*ours), name, t, source);
  }
  check_against_model(pairs, args, source);
  StateDict out;
  for (const auto& [module, p] : pairs) {
    out[our_key({module, true})] = p.a->tensor;
    out[our_key({module, false})] = lora_b_layout(module, p.b->tensor, args, true);
  }
  return out;
}

void save_peft_adapter(const std::string& dir, const StateDict& adapter_ours, const models::ModelArgs& args,
                       const AdapterConfig& cfg) {
  if (adapter_ours.empty()) throw std::runtime_error(dir + ": no adapter parameters to save");
  const StateDict peft = adapter_to_peft(adapter_ours, args);
  for (const auto& [name, t] : peft) {
    const int64_t rank = ends_with(name, ".lora_A.weight") ? t.size(0) : t.size(1);
    if (rank != cfg.rank)
      throw std::runtime_error("adapter '" + name + "' has rank " + std::to_string(rank) +
                               " but the config says r=" + std::to_string(cfg.rank));
  }
  fs::create_directories(dir);
  checkpoint::save_safetensors((fs::path(dir) / kAdapterWeightsFile).string(), peft, {{"format", "pt"}});

  nlohmann::ordered_json j;
  j["r"] = cfg.rank;
  j["lora_alpha"] = number_json(cfg.alpha);
  j["target_modules"] = target_modules_of(peft);
  j["peft_type"] = "LORA";
  j["task_type"] = "CAUSAL_LM";
  j["lora_dropout"] = cfg.dropout;
  j["bias"] = "none";
  j["base_model_name_or_path"] = cfg.base_model_name_or_path.empty()
                                     ? nlohmann::ordered_json(nullptr)
                                     : nlohmann::ordered_json(cfg.base_model_name_or_path);
  checkpoint::write_file_atomic((fs::path(dir) / kAdapterConfigFile).string(), text::json_text(j, 2) + "\n");
}

AdapterConfig read_adapter_config(const std::string& dir) {
  const std::string path = (fs::path(dir) / kAdapterConfigFile).string();
  const nlohmann::json j = text::read_json_file(path);
  if (!j.is_object()) throw std::runtime_error(path + ": expected a JSON object");
  auto bad = [&](const std::string& why) { return std::runtime_error(path + ": " + why); };

  if (j.contains("peft_type") && j["peft_type"] != "LORA")
    throw bad("peft_type is " + j["peft_type"].dump() + "; only LORA adapters are supported");
  if (is_true(j, "use_dora")) throw bad("use_dora: DoRA adapters are not supported");
  if (is_true(j, "use_rslora")) throw bad("use_rslora: rank-stabilised scaling (alpha/sqrt(r)) is not supported");
  if (non_empty_object(j, "rank_pattern") || non_empty_object(j, "alpha_pattern"))
    throw bad("per-module rank_pattern/alpha_pattern is not supported");

  AdapterConfig cfg;
  if (!j.contains("r") || !j["r"].is_number_integer() || j["r"].get<int64_t>() <= 0)
    throw bad("'r' must be a positive integer");
  cfg.rank = j["r"].get<int64_t>();
  if (!j.contains("lora_alpha") || !j["lora_alpha"].is_number()) throw bad("'lora_alpha' must be a number");
  cfg.alpha = j["lora_alpha"].get<double>();
  if (j.contains("lora_dropout") && !j["lora_dropout"].is_null()) {
    if (!j["lora_dropout"].is_number()) throw bad("'lora_dropout' must be a number");
    cfg.dropout = j["lora_dropout"].get<double>();
  }
  if (j.contains("base_model_name_or_path") && j["base_model_name_or_path"].is_string())
    cfg.base_model_name_or_path = j["base_model_name_or_path"].get<std::string>();
  if (j.contains("target_modules")) {
    const auto& t = j["target_modules"];
    if (t.is_string()) {
      cfg.target_modules.push_back(t.get<std::string>());  // PEFT allows one regex; kept as written
    } else if (t.is_array()) {
      for (const auto& m : t) {
        if (!m.is_string()) throw bad("'target_modules' must list strings");
        cfg.target_modules.push_back(m.get<std::string>());
      }
    } else if (!t.is_null()) {
      throw bad("'target_modules' must be a list of module names");
    }
  }
  return cfg;
}

StateDict load_peft_adapter(const std::string& dir, const models::ModelArgs& args) {
  const AdapterConfig cfg = read_adapter_config(dir);
  const std::string path = (fs::path(dir) / kAdapterWeightsFile).string();
  if (!fs::exists(path)) throw std::runtime_error(path + ": not found (only safetensors adapters are supported)");
  const StateDict peft = checkpoint::load_safetensors(path);
  StateDict ours = adapter_from_peft(peft, args, path);  // validates names and shapes first
  for (const auto& [name, t] : peft) {
    const int64_t rank = ends_with(name, ".lora_A.weight") ? t.size(0) : t.size(1);
    if (rank != cfg.rank)
      fail(path, "'" + name + "' has rank " + std::to_string(rank) + " but " + kAdapterConfigFile +
                     " says r=" + std::to_string(cfg.rank));
  }
  return ours;
}

checkpoint::LazyStateDict merge_lora(const checkpoint::LazyStateDict& base_ours, const StateDict& adapter_ours,
                                     double alpha, int64_t rank) {
  if (rank <= 0) throw std::invalid_argument("merge_lora: rank must be positive, got " + std::to_string(rank));
  const AdapterPairs pairs = pairs_from_ours(adapter_ours, "merge_lora");
  checkpoint::LazyStateDict out;
  for (const auto& [name, t] : base_ours)
    if (!is_adapter_parameter(name)) out[name] = t;

  const double scale = alpha / static_cast<double>(rank);
  for (const auto& [module, p] : pairs) {
    check_halves(module, p, "merge_lora");
    const std::string base_key = module.empty() ? "weight" : module + ".weight";
    const auto it = out.find(base_key);
    if (it == out.end()) fail("merge_lora", "adapter '" + p.a->shown + "' has no base weight '" + base_key + "'");
    const auto& shape = it->second.shape;
    const torch::Tensor a = p.a->tensor, b = p.b->tensor;
    if (a.size(0) != rank)
      fail("merge_lora",
           "'" + p.a->shown + "' has rank " + std::to_string(a.size(0)) + ", expected " + std::to_string(rank));
    if (shape.size() != 2 || shape[0] != b.size(0) || shape[1] != a.size(1))
      fail("merge_lora", "'" + base_key + "' " + shape_text(shape) +
                             " does not fit lora_b " + shape_text(b) + " @ lora_a " + shape_text(a));
    // Made when the writer reaches it: the base (e.g. dequantised from NF4) and its delta exist only then.
    it->second.make = [base = it->second.make, a, b, scale] {
      const torch::Tensor w = base();
      const auto delta = torch::matmul(b.to(torch::kFloat), a.to(torch::kFloat)).mul_(scale);
      return (w.to(torch::kFloat) + delta.to(w.device())).to(w.scalar_type());
    };
  }
  return out;
}

StateDict merge_lora(const StateDict& base_ours, const StateDict& adapter_ours, double alpha, int64_t rank) {
  return checkpoint::materialize(merge_lora(checkpoint::lazy(base_ours), adapter_ours, alpha, rank));
}

void validate_missing_and_unexpected_for_lora(const LoraSettings& targets,
                                              const std::vector<std::string>& base_missing,
                                              const std::vector<std::string>& base_unexpected,
                                              const std::vector<std::string>& adapter_missing,
                                              const std::vector<std::string>& adapter_unexpected) {
  std::vector<std::string> problems;
  auto report = [&](const char* what, const std::vector<std::string>& keys) {
    if (!keys.empty()) problems.push_back(std::string(what) + ": " + join(keys));
  };
  std::vector<std::string> missing_base_weights, missing_adapters;
  for (const auto& k : base_missing)
    if (!is_targeted_adapter_key(k, targets)) missing_base_weights.push_back(k);
  for (const auto& k : adapter_missing)
    if (is_adapter_parameter(k)) missing_adapters.push_back(k);
  report("missing from the base checkpoint (not LoRA adapter keys of the targeted modules)", missing_base_weights);
  report("unexpected in the base checkpoint", base_unexpected);
  report("LoRA adapter keys missing from the adapter checkpoint", missing_adapters);
  report("unexpected in the adapter checkpoint", adapter_unexpected);
  if (!problems.empty()) {
    std::string message = "LoRA checkpoint load:";
    for (const auto& p : problems) message += " " + p + ";";
    message.pop_back();
    throw std::runtime_error(message);
  }
}

void load_adapter_into(torch::nn::Module& model, const StateDict& adapter, const std::string& source) {
  torch::NoGradGuard no_grad;
  std::vector<std::string> missing, mismatched;
  size_t used = 0;
  for (auto& item : model.named_parameters(/*recurse=*/true)) {
    if (!is_adapter_parameter(item.key())) continue;
    const auto it = adapter.find(strip_compiled_prefix(item.key()));
    if (it == adapter.end()) {
      missing.push_back(item.key());
      continue;
    }
    if (it->second.sizes() != item.value().sizes()) {
      mismatched.push_back(item.key() + " " + shape_text(it->second) + " (the model's is " + shape_text(item.value()) + ")");
      continue;
    }
    item.value().copy_(it->second);
    ++used;
  }
  std::vector<std::string> unexpected;
  if (used + mismatched.size() != adapter.size())
    for (const auto& [name, tensor] : adapter)
      if (!model.named_parameters().contains(name) && !model.named_parameters().contains(std::string(models::kCompiledPrefix) + name))
        unexpected.push_back(name);
  if (!missing.empty() || !mismatched.empty() || !unexpected.empty()) {
    std::string why;
    if (!missing.empty()) why += " missing: " + join(missing) + ";";
    if (!unexpected.empty()) why += " not in the model: " + join(unexpected) + ";";
    if (!mismatched.empty()) why += " wrong shape: " + join(mismatched) + ";";
    why.pop_back();
    throw std::runtime_error(source + ": the adapter does not fit the model's LoRA layers (rank or targets differ?):" + why);
  }
}

}  // namespace tb::peft
