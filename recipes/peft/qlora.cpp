#include "peft/qlora.h"

#include "checkpoint/hf_checkpointer.h"
#include "models/compiled_names.h"
#include "peft/lora_linear.h"
#include "quant/nf4.h"

namespace tb::peft {
namespace {

template <typename Fn>
void for_each_lora(const torch::nn::Module& model, const Fn& fn) {
  for (const auto& [name, lora] : lora_modules(model)) fn(name, *lora);
}

using models::strip_compiled_prefix;

}  // namespace

void mark_for_quantization(torch::nn::Module& model) {
  for_each_lora(model, [](const std::string&, LoRALinearImpl& lora) { lora.quantize_base = true; });
}

bool marked_for_quantization(const torch::nn::Module& model) {
  bool marked = false;
  for_each_lora(model, [&](const std::string&, LoRALinearImpl& lora) { marked = marked || lora.quantize_base; });
  return marked;
}

namespace {
thread_local bool nf4_on_load = false;
}

NF4OnLoad::NF4OnLoad() : previous_(nf4_on_load) { nf4_on_load = true; }
NF4OnLoad::~NF4OnLoad() { nf4_on_load = previous_; }
bool NF4OnLoad::active() { return nf4_on_load; }

int64_t quantize_lora_bases(torch::nn::Module& model) {
  int64_t count = 0;
  for_each_lora(model, [&](const std::string&, LoRALinearImpl& lora) {
    if (!lora.quantize_base) return;
    if (lora.awaiting_weight()) throw std::logic_error("quantize_lora_bases: a base weight was never loaded");
    if (!lora.quantized_base)
      lora.set_quantized_base(std::make_shared<const quant::NF4Weight>(quant::quantize_nf4(lora.weight.detach())));
    ++count;
  });
  return count;
}

checkpoint::LazyStateDict lazy_base_weights(const torch::nn::Module& model, torch::ScalarType dtype) {
  checkpoint::LazyStateDict state = checkpoint::lazy(checkpoint::base_model_state(model));
  for_each_lora(model, [&](const std::string& name, LoRALinearImpl& lora) {
    if (const auto nf4 = lora.quantized_base)
      state[strip_compiled_prefix(name) + ".weight"] = {nf4->shape, dtype,
                                                        [nf4, dtype] { return quant::dequantize_nf4(*nf4, dtype); }};
  });
  return state;
}

checkpoint::StateDict base_weights(const torch::nn::Module& model, torch::ScalarType dtype) {
  return checkpoint::materialize(lazy_base_weights(model, dtype));
}

ParameterBytes parameter_bytes(const torch::nn::Module& model) {
  ParameterBytes out;
  for (const auto& item : model.parameters()) {
    const int64_t bytes = item.numel() * static_cast<int64_t>(item.element_size());
    if (item.requires_grad()) {
      out.trainable += bytes;
      out.trainable_params += item.numel();
    } else {
      out.frozen += bytes;
      out.frozen_params += item.numel();
    }
  }
  for_each_lora(model, [&](const std::string&, LoRALinearImpl& lora) {
    if (!lora.quantized_base) return;
    out.frozen += lora.quantized_base->bytes();
    out.frozen_params += lora.quantized_base->numel();
    out.nf4_params += lora.quantized_base->numel();
    out.nf4_bytes += lora.quantized_base->bytes();
  });
  return out;
}

}  // namespace tb::peft
