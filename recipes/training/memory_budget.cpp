#include "training/memory_budget.h"

#include <algorithm>
#include <sstream>

#include <torch/nn/module.h>
#include <torch/optim/optimizer.h>

#include "models/transformer.h"
#include "peft/qlora.h"
#include "training/adamw8bit.h"
#include "training/optim.h"

namespace tb::training {

namespace {

nlohmann::json step_shape(const models::TransformerDecoderImpl& model, int64_t nf4_params) {
  int64_t matmul = nf4_params, trainable = 0;
  for (const auto& item : model.named_parameters()) {
    const auto& p = item.value();
    const bool embedding = item.key().find("tok_embeddings") != std::string::npos;
    if (p.dim() != 2 || (embedding && !model.tied())) continue;  // an untied embedding is a lookup
    matmul += p.numel();
    if (p.requires_grad()) trainable += p.numel();
  }
  const auto& a = model.args();
  return {{"matmul_params", matmul},         {"trainable_matmul_params", trainable},
          {"layers", a.num_layers},          {"attention_dim", a.num_heads * a.head_dim()},
          {"dim", a.embed_dim},              {"hidden", a.intermediate_dim}};
}

}  // namespace

double step_flops(const nlohmann::json& shape, int64_t sequences, int64_t seq_len) {
  const double tokens = double(sequences) * double(seq_len);
  const double matmul = 4.0 * shape.value("matmul_params", 0.0) + 2.0 * shape.value("trainable_matmul_params", 0.0);
  const double attention = 6.0 * shape.value("layers", 0.0) * shape.value("attention_dim", 0.0) * double(seq_len) *
                           double(seq_len) * double(sequences);
  return matmul * tokens + attention;
}

nlohmann::json memory_budget_event(const models::TransformerDecoderImpl& model, const torch::optim::Optimizer& optimizer,
                                   const std::vector<at::Tensor>& trainable, bool gradients_one_at_a_time) {
  const auto bytes = peft::parameter_bytes(model);
  int64_t gradient_bytes = bytes.trainable;  // one gradient per trainable weight, same dtype
  if (gradients_one_at_a_time) {
    gradient_bytes = 0;
    for (const auto& p : trainable)
      gradient_bytes = std::max<int64_t>(gradient_bytes, p.numel() * static_cast<int64_t>(p.element_size()));
  }
  // 8-bit AdamW: one byte per moment and element, an fp32 absmax per block, 32-bit small tensors.
  const auto* eight_bit = dynamic_cast<const AdamW8bit*>(&optimizer);
  const int64_t optimizer_bytes = eight_bit ? eight_bit->state_bytes() : optimizer_state_bytes(optimizer, trainable);
  const double mib = 1024.0 * 1024.0;
  std::ostringstream line;
  line.precision(3);
  line << "memory: frozen weights " << double(bytes.frozen) / mib << " MiB (" << bytes.frozen_params << " params";
  if (bytes.nf4_params > 0) line << ", " << bytes.nf4_params << " in NF4";
  line << "), trainable weights " << double(bytes.trainable) / mib << " MiB (" << bytes.trainable_params
       << " params), gradients " << double(gradient_bytes) / mib << " MiB"
       << (gradients_one_at_a_time ? " (one at a time: optimizer_in_bwd)" : "") << ", optimizer states "
       << double(optimizer_bytes) / mib << " MiB";
  return {{"event", "info"},
          {"message", line.str()},
          {"memory",
           {{"frozen_bytes", bytes.frozen},
            {"trainable_bytes", bytes.trainable},
            {"gradient_bytes", gradient_bytes},
            {"optimizer_bytes", optimizer_bytes},
            {"frozen_params", bytes.frozen_params},
            {"trainable_params", bytes.trainable_params},
            {"nf4_params", bytes.nf4_params},
            {"nf4_bytes", bytes.nf4_bytes}}},
          {"shape", step_shape(model, bytes.nf4_params)}};
}

}  // namespace tb::training
