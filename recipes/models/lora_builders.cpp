#include "models/lora_builders.h"

#include <stdexcept>

namespace tb::models {

void validate_lora_settings(const LoraSettings& s) {
  for (const auto& m : s.lora_attn_modules)
    if (m != "q_proj" && m != "k_proj" && m != "v_proj" && m != "output_proj")
      throw std::invalid_argument("lora_attn_modules: '" + m + "' is not one of q_proj, k_proj, v_proj, output_proj");
  if (s.lora_rank <= 0) throw std::invalid_argument("lora_rank must be positive");
  if (s.lora_dropout < 0 || s.lora_dropout >= 1) throw std::invalid_argument("lora_dropout must be in [0, 1)");
}

TransformerDecoder build_lora_decoder(const ModelArgs& args, const LoraSettings& settings) {
  args.validate();
  validate_lora_settings(settings);
  throw std::runtime_error(std::string(settings.quantize_base ? "QLoRA" : "LoRA") +
                           " models arrive with the LoRA recipe; this build has the full-model builders only");
}

}  // namespace tb::models
