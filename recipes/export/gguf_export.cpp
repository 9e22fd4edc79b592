#include "export/gguf_export.h"

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <stdexcept>

#include <torch/torch.h>

#include "checkpoint/atomic_file.h"
#include "checkpoint/gguf_file.h"
#include "checkpoint/hf_convert.h"
#include "export/gguf_layout.h"
#include "export/gguf_vocab.h"
#include "export/ollama_modelfile.h"
#include "inference/loaded_model.h"
#include "models/layers.h"
#include "peft/adapter.h"
#include "peft/lora_linear.h"
#include "peft/qlora.h"
#include "text/strings.h"

namespace tb::exporting {

namespace {

// The model's weights under our names: its base weights, with its LoRA adapters merged in.
checkpoint::LazyStateDict merged_weights(const inference::LoadedModel& loaded, bool& merged) {
  const auto& model = *loaded.model;
  auto base = peft::lazy_base_weights(model, loaded.dtype);
  const auto loras = peft::lora_modules(model);
  merged = !loras.empty();
  if (!merged) return base;
  return peft::merge_lora(base, peft::adapter_state_dict(model), loras.front().second->alpha(),
                          loras.front().second->rank());
}

// What llama.cpp's converter changes besides names. Its "llama" architecture turns pairs (x[2i],
// x[2i+1]) of a head, as Meta's checkpoints (and ours) lay out q and k: Hugging Face's rows are moved
// back. Gemma's norms scale by (1 + w); llama.cpp's by w, so the converter stores 1 + w.
torch::Tensor to_llama_cpp_layout(const std::string& gguf_name, torch::Tensor t, const models::ModelArgs& args,
                                  const std::string& arch) {
  const auto ends = [&](const char* tail) { return text::ends_with(gguf_name, tail); };
  if (args.norm_offset && ends("norm.weight")) return t.to(torch::kFloat) + 1;
  if (arch != "llama") return t;
  if (ends(".attn_q.weight") || ends(".attn_q.bias"))
    return checkpoint::permute_hf_to_interleaved(t, args.num_heads, args.rotary_dim());
  if (ends(".attn_k.weight") || ends(".attn_k.bias"))
    return checkpoint::permute_hf_to_interleaved(t, args.num_kv_heads, args.rotary_dim());
  return t;
}

std::vector<uint8_t> encode_rows(const torch::Tensor& t, quant::GgmlType type) {
  const torch::Tensor f = t.to(torch::kFloat).contiguous();
  const int64_t cols = f.dim() == 0 ? 1 : f.size(-1);
  const int64_t rows = cols == 0 ? 0 : f.numel() / cols;
  std::vector<uint8_t> out;
  out.reserve(static_cast<size_t>(rows * quant::ggml_row_bytes(type, cols)));
  const float* p = f.data_ptr<float>();
  for (int64_t r = 0; r < rows; ++r) quant::quantize_row(type, p + r * cols, cols, out);
  return out;
}

// Llama 3.1's rotary scaling as llama.cpp takes it: a tensor of one divisor per frequency.
std::vector<float> llama3_rope_factors(const models::ModelArgs& args) {
  const auto plain = models::rope_inverse_frequencies(args.rotary_dim(), args.rope_base, std::nullopt);
  const auto scaled = models::rope_inverse_frequencies(args.rotary_dim(), args.rope_base, args.rope_scaling);
  std::vector<float> factors(plain.size());
  for (size_t i = 0; i < plain.size(); ++i) factors[i] = static_cast<float>(plain[i] / scaled[i]);
  return factors;
}

// Gemma's differences, as llama.cpp reads them. llama.cpp fixes what our config.json reading leaves
// open: which layers slide (Gemma 2: the even ones; Gemma 3: all but every sixth), the sliding layers'
// rotary base (10000) and the attention scale (head_dim^-1/2, or (dim/heads)^-1/2 for the 27B models it
// recognises by their layer count); a model that differs cannot be written faithfully and is refused.
void add_gemma_metadata(checkpoint::GgufMetadata& kv, const std::string& arch, const models::ModelArgs& a) {
  const auto refuse = [&](const std::string& what) {
    throw std::invalid_argument("export gguf: llama.cpp's " + arch + " " + what);
  };
  kv.set_u32(arch + ".attention.key_length", static_cast<uint32_t>(a.head_dim()));
  kv.set_u32(arch + ".attention.value_length", static_cast<uint32_t>(a.head_dim()));
  if (arch == "gemma2" && (a.attn_softcap <= 0 || a.final_softcap <= 0))
    refuse("always soft-caps attention scores and logits; this model does not");  // (defaults 50 and 30)
  if (a.attn_softcap > 0) kv.set_f32(arch + ".attn_logit_softcapping", static_cast<float>(a.attn_softcap));
  if (a.final_softcap > 0) kv.set_f32(arch + ".final_logit_softcapping", static_cast<float>(a.final_softcap));
  if (a.sliding_window > 0) {
    for (int64_t i = 0; i < a.num_layers; ++i) {
      const bool expected = arch == "gemma2" ? i % 2 == 0 : (i + 1) % 6 != 0;
      if (a.layer_slides(i) != expected) refuse("slides fixed layers; this model's layer " + std::to_string(i) + " differs");
    }
    if (arch == "gemma3" && a.rope_local_base != 0 && a.rope_local_base != 10000.0)
      refuse("turns sliding layers with rotary base 10000, this model with " + std::to_string(a.rope_local_base));
  }
  if (arch == "gemma") return;
  const bool big = (arch == "gemma2" && a.num_layers == 46) || (arch == "gemma3" && a.num_layers == 62);
  const double scalar = big ? double(a.embed_dim / a.num_heads) : double(a.head_dim());
  if (a.query_pre_attn_scalar != 0 && a.query_pre_attn_scalar != scalar)
    refuse("scales attention by " + std::to_string(scalar) + "^-1/2 for this shape; query_pre_attn_scalar is " +
           std::to_string(a.query_pre_attn_scalar));
}

void add_architecture_metadata(checkpoint::GgufMetadata& kv, const std::string& arch, const models::ModelArgs& a) {
  const auto u32 = [](int64_t v) { return static_cast<uint32_t>(v); };
  kv.set_u32(arch + ".vocab_size", u32(a.vocab_size));
  kv.set_u32(arch + ".context_length", u32(a.max_seq_len));
  kv.set_u32(arch + ".embedding_length", u32(a.embed_dim));
  kv.set_u32(arch + ".block_count", u32(a.num_layers));
  kv.set_u32(arch + ".feed_forward_length", u32(a.intermediate_dim));
  kv.set_u32(arch + ".rope.dimension_count", u32(a.rotary_dim()));
  kv.set_u32(arch + ".attention.head_count", u32(a.num_heads));
  kv.set_u32(arch + ".attention.head_count_kv", u32(a.num_kv_heads));
  if (a.head_dim() * a.num_heads != a.embed_dim && arch.rfind("gemma", 0) != 0) {  // Gemma: always written
    kv.set_u32(arch + ".attention.key_length", u32(a.head_dim()));
    kv.set_u32(arch + ".attention.value_length", u32(a.head_dim()));
  }
  kv.set_f32(arch + ".attention.layer_norm_rms_epsilon", static_cast<float>(a.norm_eps));
  kv.set_f32(arch + ".rope.freq_base", static_cast<float>(a.rope_base));
  if (a.sliding_window > 0 && arch != "llama") kv.set_u32(arch + ".attention.sliding_window", u32(a.sliding_window));
  if (arch.rfind("gemma", 0) == 0) add_gemma_metadata(kv, arch, a);
  if (!a.rope_scaling || a.rope_scaling->type == models::RopeType::llama3) return;  // llama3: rope_freqs tensor
  if (a.rope_scaling->type == models::RopeType::linear && arch == "gemma3") {
    kv.set_string(arch + ".rope.scaling.type", "linear");
    kv.set_f32(arch + ".rope.scaling.factor", static_cast<float>(a.rope_scaling->scale_factor));
    return;
  }
  if (a.rope_scaling->type == models::RopeType::longrope && arch == "phi3") {
    kv.set_u32(arch + ".rope.scaling.original_context_length", u32(a.rope_scaling->old_context_len));
    kv.set_f32(arch + ".rope.scaling.attn_factor", static_cast<float>(a.rope_scaling->attention_factor));
    return;  // the factors: rope_factors_short/long tensors
  }
  throw std::invalid_argument("export gguf: this model's rotary scaling is not exported yet (llama3's and Phi's longrope are)");
}

bool adapter_type_ok(quant::GgmlType t) {
  return t == quant::GgmlType::F32 || t == quant::GgmlType::F16 || t == quant::GgmlType::BF16 || t == quant::GgmlType::Q8_0;
}

// Sort key: the embedding first, then the layers in order, then the final norm and the output.
std::pair<int, std::string> tensor_order(const std::string& name) {
  if (name == "token_embd.weight" || name.rfind("rope_f", 0) == 0) return {0, name};
  if (name.rfind("blk.", 0) == 0) return {1, name};
  return {2, name};
}

}  // namespace

GgufExportResult export_gguf(const config::Config& cfg, const GgufExportOptions& options,
                             const GgufExportProgress& progress) {
  const auto start = std::chrono::steady_clock::now();
  if (options.output.empty()) throw std::invalid_argument("export gguf: no output file given");
  const FileType& ftype = file_type(options.type);
  if (options.adapter && options.ollama)
    throw std::invalid_argument("export gguf: --ollama writes a model's Modelfile; an adapter has none (leave out --adapter)");
  if (options.adapter && !adapter_type_ok(ftype.base))
    throw std::invalid_argument("export gguf --adapter: llama.cpp reads adapters in f32, f16, bf16 or q8_0, not " +
                                options.type);

  // What would be replaced is said before the model is loaded: an existing file only with overwrite, and
  // never anything but a regular file.
  std::vector<std::string> targets = {options.output};
  if (options.ollama) targets.push_back((std::filesystem::path(options.output).parent_path() / "Modelfile").string());
  for (const auto& target : targets) {
    checkpoint::refuse_non_regular_target(target);
    std::error_code ec;
    if (!options.overwrite && std::filesystem::exists(std::filesystem::symlink_status(target, ec)))
      throw std::invalid_argument("export gguf: " + target + " exists (use --force to replace it)");
  }

  GgufExportResult result;
  result.path = options.output;
  inference::LoadedModel loaded = inference::load_model(cfg);
  const models::ModelArgs& args = loaded.model->args();
  result.architecture = gguf_architecture(args.family);
  result.weights = loaded.weights;
  result.warnings = loaded.warnings;
  const std::string& arch = result.architecture;

  checkpoint::GgufMetadata kv;
  kv.set_string("general.architecture", arch);
  std::string name = options.name;
  if (name.empty() && loaded.checkpoint_dir) name = std::filesystem::path(*loaded.checkpoint_dir).lexically_normal().filename().string();
  if (name.empty()) name = "tunebench-model";

  std::optional<data::ChatTemplate> chat_template;
  TensorTypeContext context;
  context.num_layers = args.num_layers;
  std::vector<checkpoint::GgufTensor> tensors;
  const auto add = [&](const std::string& gguf_name, std::vector<int64_t> shape, quant::GgmlType type,
                       std::function<torch::Tensor()> make) {
    checkpoint::GgufTensor t;
    t.name = gguf_name;
    for (auto it = shape.rbegin(); it != shape.rend(); ++it) t.ne.push_back(static_cast<uint64_t>(*it));
    t.type = type;
    t.data = [make, type] { return encode_rows(make(), type); };
    int64_t n = 1;
    for (int64_t d : shape) n *= d;
    result.parameters += n;
    ++result.tensors_by_type[quant::ggml_type_name(t.type)];
    tensors.push_back(std::move(t));
  };
  const auto gguf_name_of = [&](const std::string& hf_name) {
    const auto n = gguf_tensor_name(hf_name, args);
    if (!n) throw std::runtime_error("export gguf: no llama.cpp tensor for " + hf_name);
    return *n;
  };

  if (options.adapter) {
    // llama.cpp's LoRA adapter file: per adapted weight W, W.lora_a [rank, in] and W.lora_b [out, rank],
    // scaled by adapter.lora.alpha / rank at load.
    const auto loras = peft::lora_modules(*loaded.model);
    if (loras.empty() || loaded.adapter_dir.empty())
      throw std::invalid_argument(
          "export gguf --adapter: no LoRA adapter to export: use a LoRA config (lora_* or qlora_* model) with "
          "checkpointer.adapter_checkpoint set to the adapter's folder");
    kv.set_string("general.type", "adapter");
    kv.set_string("general.name", name);
    kv.set_string("adapter.type", "lora");
    kv.set_f32("adapter.lora.alpha", static_cast<float>(loras.front().second->alpha()));
    // PEFT's form (Hugging Face names and rotary layout: lora_b's q/k rows follow their base's), then
    // llama.cpp's layout of each base tensor.
    const std::string prefix = "base_model.model.";
    for (const auto& [peft_name, tensor] : peft::adapter_to_peft(peft::adapter_state_dict(*loaded.model), args)) {
      const bool is_a = peft_name.find(".lora_A.") != std::string::npos;
      const std::string module = peft_name.substr(prefix.size(), peft_name.find(is_a ? ".lora_A." : ".lora_B.") - prefix.size());
      const std::string base = gguf_name_of(module + ".weight");
      const torch::Tensor t = is_a ? tensor : to_llama_cpp_layout(base, tensor, args, arch);
      add(base + (is_a ? ".lora_a" : ".lora_b"), t.sizes().vec(), ftype.base, [t] { return t; });
    }
  } else {
    const checkpoint::LazyStateDict hf = checkpoint::tune_to_hf(merged_weights(loaded, result.merged_lora), args);
    kv.set_string("general.name", name);
    add_architecture_metadata(kv, arch, args);
    kv.set_u32("general.file_type", ftype.llama_ftype);
    kv.set_u32("general.quantization_version", 2);
    std::filesystem::path tokenizer_dir = cfg.get_string("tokenizer.path", "");
    if (!tokenizer_dir.empty() && !std::filesystem::is_directory(tokenizer_dir)) tokenizer_dir = tokenizer_dir.parent_path();
    for (auto& w : add_tokenizer_metadata(kv, *loaded.tokenizer, args.vocab_size, tokenizer_dir.string()))
      result.warnings.push_back(std::move(w));
    chat_template = find_chat_template(*loaded.tokenizer, loaded.checkpoint_dir);
    if (chat_template) {
      kv.set_string("tokenizer.chat_template", chat_template->source());
      result.chat_template = true;
    }
    context.has_output = hf.count("lm_head.weight") > 0;
    for (const auto& [hf_name, lazy] : hf) {
      const std::string n = gguf_name_of(hf_name);
      std::vector<uint64_t> ne(lazy.shape.rbegin(), lazy.shape.rend());
      add(n, lazy.shape, gguf_tensor_type(n, ne, ftype, context),
          [make = lazy.make, n, &args, arch] { return to_llama_cpp_layout(n, make(), args, arch); });
    }
    if (args.rope_scaling && args.rope_scaling->type == models::RopeType::longrope) {
      // llama.cpp takes the long factors past original_max_position_embeddings; we train and run with the
      // short ones at every length, so both tensors hold those.
      std::vector<float> factors(args.rope_scaling->short_factor.begin(), args.rope_scaling->short_factor.end());
      for (const char* n : {"rope_factors_long.weight", "rope_factors_short.weight"})
        add(n, {static_cast<int64_t>(factors.size())}, quant::GgmlType::F32, [factors] { return torch::tensor(factors); });
    }
    if (args.rope_scaling && args.rope_scaling->type == models::RopeType::llama3) {
      const auto factors = llama3_rope_factors(args);
      add("rope_freqs.weight", {static_cast<int64_t>(factors.size())}, quant::GgmlType::F32,
          [factors] { return torch::tensor(std::vector<float>(factors)); });
    }
  }
  std::sort(tensors.begin(), tensors.end(), [](const auto& a, const auto& b) {
    const auto ka = tensor_order(a.name), kb = tensor_order(b.name);
    if (ka.first != kb.first) return ka.first < kb.first;
    return checkpoint::natural_key_less(ka.second, kb.second);
  });

  torch::NoGradGuard no_grad;
  result.bytes = checkpoint::write_gguf(options.output, kv, tensors, progress);
  if (options.ollama) {
    const std::filesystem::path gguf(options.output);
    Modelfile modelfile;
    modelfile.from = "./" + gguf.filename().string();
    for (int64_t id : loaded.tokenizer->stop_tokens()) modelfile.stop.push_back(loaded.tokenizer->id_to_token(id));
    if (chat_template) modelfile.system = default_system_prompt(*chat_template);
    // Trained on the Alpaca format and no chat template: Ollama sends the instruction as that format.
    if (!chat_template && cfg.get_string("dataset._component_", "").find("alpaca") != std::string::npos)
      modelfile.prompt_template = alpaca_ollama_template();
    result.modelfile = (gguf.parent_path() / "Modelfile").string();
    checkpoint::write_file_atomic(result.modelfile, modelfile_text(modelfile));
  }
  result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return result;
}

}  // namespace tb::exporting
