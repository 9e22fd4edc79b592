#include "checkpoint/hf_checkpointer.h"

#include <cstdio>
#include <filesystem>
#include <regex>
#include <set>
#include <stdexcept>

#include "checkpoint/hf_config.h"
#include "checkpoint/safetensors.h"
#include "models/compiled_names.h"
#include "models/deferred_weight.h"
#include "text/json_text.h"

namespace tb::checkpoint {

namespace fs = std::filesystem;

namespace {

std::string shape_text(c10::IntArrayRef sizes) {
  std::string s = "[";
  for (size_t i = 0; i < sizes.size(); ++i) s += (i ? ", " : "") + std::to_string(sizes[i]);
  return s + "]";
}

using models::strip_compiled_prefix;

std::string shard_name(size_t k, size_t n) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "model-%05zu-of-%05zu.safetensors", k, n);
  return buf;
}

}  // namespace

StateDict load_hf_state(const std::string& dir, const std::vector<std::string>& files) {
  StateDict out;
  std::map<std::string, std::string> origin;
  for (const auto& f : resolve_checkpoint_files(dir, files)) {
    const std::string path = (fs::path(dir) / f).string();
    SafetensorsFile file(path);
    for (auto& [name, t] : file.tensors()) {
      if (out.count(name)) throw std::runtime_error("tensor '" + name + "' is in both " + origin[name] + " and " + path);
      origin[name] = path;
      out.emplace(name, std::move(t));
    }
  }
  return out;
}

StateDict load_model_state(const std::string& dir, const std::vector<std::string>& files,
                           const models::ModelArgs& args) {
  try {
    return hf_to_tune(load_hf_state(dir, files), args);
  } catch (const SafetensorsError&) {
    throw;
  } catch (const std::runtime_error& e) {
    throw std::runtime_error(dir + ": " + e.what());
  }
}

void save_model_state(const std::string& folder, const StateDict& state, const nlohmann::json& hf_config,
                      uint64_t max_shard_bytes) {
  save_model_state(folder, lazy(state), hf_config, max_shard_bytes);
}

void save_model_state(const std::string& folder, const LazyStateDict& state, const nlohmann::json& hf_config,
                      uint64_t max_shard_bytes) {
  const auto args = model_args_from_hf_config(hf_config, folder + "/config.json");
  const LazyStateDict hf = tune_to_hf(state, args);
  std::vector<std::string> keys;
  for (const auto& kv : hf) keys.push_back(kv.first);
  std::sort(keys.begin(), keys.end(), natural_key_less);

  std::vector<std::vector<std::string>> shards(1);
  uint64_t shard_bytes = 0, total = 0;
  for (const auto& k : keys) {
    const auto& t = hf.at(k);
    uint64_t bytes = torch::elementSize(t.dtype);
    for (const int64_t d : t.shape) bytes *= static_cast<uint64_t>(d);
    if (!shards.back().empty() && shard_bytes + bytes > max_shard_bytes) {
      shards.emplace_back();
      shard_bytes = 0;
    }
    shards.back().push_back(k);
    shard_bytes += bytes;
    total += bytes;
  }

  fs::create_directories(folder);
  nlohmann::ordered_json index;
  index["metadata"] = {{"total_size", total}};
  nlohmann::json weight_map = nlohmann::json::object();
  std::set<std::string> written;
  for (size_t s = 0; s < shards.size(); ++s) {
    const std::string name = shard_name(s + 1, shards.size());
    LazyStateDict part;
    for (const auto& k : shards[s]) {
      part.emplace(k, hf.at(k));
      weight_map[k] = name;
    }
    save_safetensors((fs::path(folder) / name).string(), part, {{"format", "pt"}});
    written.insert(name);
  }
  index["weight_map"] = weight_map;
  write_file_atomic((fs::path(folder) / kIndexFileName).string(), text::json_text(index, 2) + "\n");
  write_file_atomic((fs::path(folder) / "config.json").string(), text::json_text(hf_config, 2) + "\n");
  // Shards of an earlier save with a different count would otherwise linger next to the index.
  static const std::regex shard_file(R"(model-\d{5}-of-\d{5}\.safetensors)");
  for (const auto& entry : fs::directory_iterator(folder)) {
    const auto fname = entry.path().filename().string();
    if (std::regex_match(fname, shard_file) && !written.count(fname)) fs::remove(entry.path());
  }
}

StateDict base_model_state(const torch::nn::Module& model) {
  StateDict out;
  for (const auto& item : model.named_parameters())
    if (models::is_base_parameter(item.key())) out[strip_compiled_prefix(item.key())] = item.value().detach();
  return out;
}

void copy_into_model(torch::nn::Module& model, const StateDict& state, const std::string& source) {
  torch::NoGradGuard no_grad;
  std::set<std::string> used;
  std::vector<std::string> missing;
  const auto deferred = models::deferred_weights(model);  // QLoRA bases, quantised as they come
  for (auto& item : model.named_parameters()) {
    if (!models::is_base_parameter(item.key())) continue;
    const std::string name = strip_compiled_prefix(item.key());
    const auto it = state.find(name);
    if (it == state.end()) {
      missing.push_back(name);
      continue;
    }
    auto& param = item.value();
    const auto taker = deferred.find(item.key());
    const std::vector<int64_t> shape =
        taker != deferred.end() ? taker->second->weight_shape() : param.sizes().vec();
    if (it->second.sizes() != c10::IntArrayRef(shape))
      throw std::runtime_error(source + ": tensor '" + tune_to_hf_name(name).value_or(name) + "' (" + name +
                               ") has shape " + shape_text(it->second.sizes()) + " in the checkpoint but " +
                               shape_text(shape) + " in the model; does the model match the checkpoint?");
    // An integer tensor would be converted to float without a word (e.g. I32 written over a weight).
    if (param.is_floating_point() && !it->second.is_floating_point())
      throw std::runtime_error(source + ": tensor '" + tune_to_hf_name(name).value_or(name) + "' is stored as " +
                               c10::toString(it->second.scalar_type()) + " but is a floating-point weight of the model");
    if (taker != deferred.end())
      taker->second->take_weight(it->second);
    else
      param.copy_(it->second);
    used.insert(name);
  }
  if (!missing.empty())
    throw std::runtime_error(source + ": the checkpoint has no '" + tune_to_hf_name(missing[0]).value_or(missing[0]) +
                             "' (" + missing[0] + ")" +
                             (missing.size() > 1 ? " and " + std::to_string(missing.size() - 1) + " more weights" : ""));
  for (const auto& kv : state)
    if (!used.count(kv.first))
      throw std::runtime_error(source + ": checkpoint tensor '" + tune_to_hf_name(kv.first).value_or(kv.first) +
                               "' has no place in the model (more layers than the model?)");
}

FullModelHFCheckpointer::FullModelHFCheckpointer(HFCheckpointerOptions options) : options_(std::move(options)) {
  check_model_type(options_.model_type);
  if (!options_.safe_serialization)
    throw std::invalid_argument("safe_serialization: false (PyTorch .bin files) is not supported; tunebench writes safetensors");
  if (options_.max_shard_bytes == 0) throw std::invalid_argument("max_shard_bytes must be positive");
}

std::optional<models::ModelArgs> FullModelHFCheckpointer::checkpoint_args() const {
  if (!options_.checkpoint_dir || !fs::exists(fs::path(*options_.checkpoint_dir) / "config.json")) return std::nullopt;
  return read_hf_model_args(*options_.checkpoint_dir);
}

StateDict FullModelHFCheckpointer::load_model_state(const models::ModelArgs& model_args) const {
  if (!options_.checkpoint_dir) throw std::logic_error("checkpointer has no checkpoint_dir to load from");
  const auto ckpt_args = checkpoint_args();
  return checkpoint::load_model_state(*options_.checkpoint_dir, options_.checkpoint_files,
                                      ckpt_args.value_or(model_args));
}

LoadReport FullModelHFCheckpointer::load_into(models::TransformerDecoderImpl& model, uint64_t seed) const {
  return load_into(model, model.args(), seed);
}

LoadReport FullModelHFCheckpointer::load_into(torch::nn::Module& model, const models::ModelArgs& args,
                                              uint64_t seed) const {
  LoadReport report;
  if (!options_.checkpoint_dir) {
    models::init_weights(model, seed);
    report.random_init = true;
    report.message = "checkpoint_dir is null: the model starts from seeded random weights (seed " +
                     std::to_string(seed) + ", normal std 0.02, biases 0, norms at identity)";
    return report;
  }
  const std::string& dir = *options_.checkpoint_dir;
  const auto ckpt_args = checkpoint_args();
  if (ckpt_args) {
    for (const auto& d : args.differences(*ckpt_args))
      report.warnings.push_back("model and " + dir + "/config.json differ: " + d);
    if (family_of_model_type(options_.model_type) != ckpt_args->family)
      report.warnings.push_back("checkpointer.model_type " + options_.model_type + " names another family than " + dir +
                                "/config.json's model_type '" + models::family_name(ckpt_args->family) +
                                "', which is what loads and saves");
  } else {
    report.warnings.push_back(dir + " has no config.json; assuming the model's architecture");
  }
  auto state = checkpoint::load_model_state(dir, options_.checkpoint_files, ckpt_args.value_or(args));
  // A tied model can take an untied checkpoint whose lm_head equals the embedding, and an untied model
  // a tied checkpoint (the output projection starts as a copy of the embedding).
  const auto out = state.find("output.weight"), emb = state.find("tok_embeddings.weight");
  if (args.tie_word_embeddings && out != state.end()) {
    if (emb == state.end() || !torch::equal(out->second, emb->second))
      throw std::runtime_error(dir + ": the checkpoint has its own lm_head.weight but the model ties it to the "
                               "embedding; use an untied model (e.g. tunebench.models.from_hf_config)");
    state.erase(out);
  } else if (!args.tie_word_embeddings && out == state.end() && emb != state.end()) {
    state["output.weight"] = emb->second;
    report.warnings.push_back("the checkpoint ties lm_head to the embedding; the untied model starts with a copy");
  }
  copy_into_model(model, state, dir);
  report.message = "loaded " + std::to_string(state.size()) + " tensors from " + dir;
  return report;
}

std::string FullModelHFCheckpointer::save(const std::string& folder, const models::TransformerDecoderImpl& model) const {
  return save(folder, model, model.args());
}

std::string FullModelHFCheckpointer::save(const std::string& folder, const torch::nn::Module& model,
                                          const models::ModelArgs& args) const {
  return save_state(folder, base_model_state(model), args);
}

std::string FullModelHFCheckpointer::save_state(const std::string& folder, const StateDict& state,
                                                const models::ModelArgs& args) const {
  return save_state(folder, lazy(state), args);
}

std::string FullModelHFCheckpointer::save_state(const std::string& folder, const LazyStateDict& state,
                                                const models::ModelArgs& args) const {
  const fs::path target = fs::path(folder).is_absolute() || options_.output_dir.empty()
                              ? fs::path(folder)
                              : fs::path(options_.output_dir) / folder;
  if (state.empty()) throw std::runtime_error("the model has no base weights to save");
  const auto dtype = state.begin()->second.dtype;
  nlohmann::json config;
  if (options_.checkpoint_dir && fs::exists(fs::path(*options_.checkpoint_dir) / "config.json")) {
    config = read_hf_config(*options_.checkpoint_dir);
    config["torch_dtype"] = hf_torch_dtype_name(dtype);
  } else {
    config = hf_config_from_model_args(args, options_.model_type, hf_torch_dtype_name(dtype));
  }
  save_model_state(target.string(), state, config, options_.max_shard_bytes);
  return target.string();
}

}  // namespace tb::checkpoint
