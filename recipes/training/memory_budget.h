// What the weights, gradients and optimizer states of a run take, said before it starts.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <ATen/core/Tensor.h>
#include <nlohmann/json.hpp>

namespace torch::nn {
class Module;
}
namespace torch::optim {
class Optimizer;
}
namespace tb::models {
class TransformerDecoderImpl;
}

namespace tb::training {

// An "info" event whose message is the readable line and whose "memory" object holds the bytes
// (frozen_bytes, trainable_bytes, gradient_bytes, optimizer_bytes, and the element counts), for the
// bench and the GUI; its "shape" object, what a step's FLOPs are counted from (matmul_params: the
// weights every token multiplies, NF4 and a tied head included; trainable_matmul_params; layers,
// attention_dim, dim, hidden), for `bench compile`'s MFU.
// `gradients_one_at_a_time` (optimizer_in_bwd): each gradient is freed once its parameter has stepped,
// so gradient_bytes is the largest single one.
nlohmann::json memory_budget_event(const models::TransformerDecoderImpl& model, const torch::optim::Optimizer& optimizer,
                                   const std::vector<at::Tensor>& trainable, bool gradients_one_at_a_time = false);

// Refuses a run that cannot fit this machine, before its first step: the weights, gradients and optimizer
// states of `memory` (the event's "memory" object) are held together at least, activations come on top.
// Returns the error when they exceed `memory_bytes`, naming what would help; nullopt when they fit.
std::optional<std::string> memory_shortfall(const nlohmann::json& memory, uint64_t memory_bytes);
// A warning when they fit but leave less than a tenth of `memory_bytes` for activations and the rest.
std::optional<std::string> memory_tight(const nlohmann::json& memory, uint64_t memory_bytes);
// This machine's physical memory in bytes (0 when unknown).
uint64_t physical_memory_bytes();

// A training step's model FLOPs (forward and backward, no recomputation) from the "shape" object above:
// every matmul weight twice forward and twice for the input gradients, a trainable one twice more for
// its own gradient, per token; causal attention 6 * layers * attention_dim * seq_len^2 per sequence.
double step_flops(const nlohmann::json& shape, int64_t sequences, int64_t seq_len);

}  // namespace tb::training
