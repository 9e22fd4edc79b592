// What the weights, gradients and optimizer states of a run take, said before it starts.
#pragma once

#include <vector>

#include <ATen/core/Tensor.h>
#include <nlohmann/json.hpp>

namespace torch::nn {
class Module;
}
namespace torch::optim {
class Optimizer;
}

namespace tb::training {

// An "info" event whose message is the readable line and whose "memory" object holds the bytes
// (frozen_bytes, trainable_bytes, gradient_bytes, optimizer_bytes, and the element counts), for the
// bench and the GUI.
nlohmann::json memory_budget_event(const torch::nn::Module& model, const torch::optim::Optimizer& optimizer,
                                   const std::vector<at::Tensor>& trainable);

}  // namespace tb::training
