#include "training/gradient_hooks.h"

#include <torch/csrc/autograd/function.h>
#include <torch/csrc/autograd/function_hook.h>
#include <torch/csrc/autograd/variable.h>

namespace tb::training {
namespace {

struct GradientReadyHook : torch::autograd::FunctionPostHook {
  std::function<void()> ready;
  explicit GradientReadyHook(std::function<void()> f) : ready(std::move(f)) {}
  torch::autograd::variable_list operator()(const torch::autograd::variable_list& outputs,
                                            const torch::autograd::variable_list&) override {
    ready();
    return outputs;
  }
};

}  // namespace

GradientReadyHooks::~GradientReadyHooks() {
  for (auto& [accumulator, key] : hooks_) accumulator->del_post_hook(key);
}

bool GradientReadyHooks::add(const at::Tensor& param, std::function<void()> ready) {
  auto accumulator = torch::autograd::impl::grad_accumulator(param);
  if (!accumulator) return false;
  const uintptr_t key = accumulator->add_post_hook(std::make_unique<GradientReadyHook>(std::move(ready)));
  hooks_.emplace_back(std::move(accumulator), key);
  return true;
}

}  // namespace tb::training
