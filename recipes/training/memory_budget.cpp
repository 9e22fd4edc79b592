#include "training/memory_budget.h"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
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

uint64_t held_bytes(const nlohmann::json& m) {
  return m.value("frozen_bytes", uint64_t{0}) + m.value("trainable_bytes", uint64_t{0}) +
         m.value("gradient_bytes", uint64_t{0}) + m.value("optimizer_bytes", uint64_t{0});
}

std::string gib(uint64_t bytes) {
  char text[32];
  std::snprintf(text, sizeof text, "%.1f", double(bytes) / (1024.0 * 1024.0 * 1024.0));
  return text;
}

std::string held_line(const nlohmann::json& m) {
  return gib(held_bytes(m)) + " GiB (weights " +
         gib(m.value("frozen_bytes", uint64_t{0}) + m.value("trainable_bytes", uint64_t{0})) + ", gradients " +
         gib(m.value("gradient_bytes", uint64_t{0})) + ", optimizer states " + gib(m.value("optimizer_bytes", uint64_t{0})) +
         ")";
}

}  // namespace

std::optional<std::string> memory_shortfall(const nlohmann::json& m, uint64_t memory_bytes) {
  const uint64_t held = held_bytes(m);
  if (memory_bytes == 0 || held <= memory_bytes) return std::nullopt;
  const uint64_t trainable = m.value("trainable_bytes", uint64_t{0}), params = m.value("trainable_params", uint64_t{0});
  std::string help;
  const auto add = [&help](const std::string& what) { help += (help.empty() ? "" : ", ") + what; };
  // What would shrink the largest parts, where the run does not already do it.
  if (params > 0 && trainable > m.value("frozen_bytes", uint64_t{0})) add("a LoRA or QLoRA recipe (trains adapters only)");
  if (params > 0 && m.value("optimizer_bytes", uint64_t{0}) > 3 * params)  // more than 8-bit states
    add("an 8-bit AdamW (bitsandbytes.optim.AdamW8bit: 2 bytes per parameter for its states)");
  if (m.value("gradient_bytes", uint64_t{0}) >= trainable && trainable > 0)
    add("optimizer_in_bwd: True (one gradient at a time)");
  return "memory: this run holds at least " + held_line(m) + " before any activation, more than this machine's " +
         gib(memory_bytes) + " GiB: it cannot run here" + (help.empty() ? std::string() : "; these take less: " + help);
}

std::optional<std::string> memory_tight(const nlohmann::json& m, uint64_t memory_bytes) {
  const uint64_t held = held_bytes(m);
  if (memory_bytes == 0 || held > memory_bytes || held * 10 <= memory_bytes * 9) return std::nullopt;
  return "memory: this run holds at least " + held_line(m) + " before any activation, over 90% of this machine's " +
         gib(memory_bytes) + " GiB: the activations may not fit (the system would then stop the run)";
}

uint64_t physical_memory_bytes() {
  const long pages = sysconf(_SC_PHYS_PAGES), page_size = sysconf(_SC_PAGE_SIZE);
  return pages > 0 && page_size > 0 ? uint64_t(pages) * uint64_t(page_size) : 0;
}

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
