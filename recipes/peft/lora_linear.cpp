#include "peft/lora_linear.h"

#include <cmath>
#include <stdexcept>
#include <string>

namespace tb::peft {

namespace {

int64_t checked_positive(int64_t value, const char* what) {
  if (value <= 0)
    throw std::invalid_argument(std::string("LoRALinear: ") + what + " must be positive, got " + std::to_string(value));
  return value;
}

double checked_dropout(double p) {
  if (!(p >= 0.0 && p < 1.0))
    throw std::invalid_argument("LoRALinear: dropout must be in [0, 1), got " + std::to_string(p));
  return p;
}

torch::nn::Linear bias_free_linear(int64_t in, int64_t out) {
  return torch::nn::Linear(torch::nn::LinearOptions(in, out).bias(false));
}

}  // namespace

LoRALinearImpl::LoRALinearImpl(int64_t in_dim, int64_t out_dim, int64_t rank, double alpha, double dropout_p,
                               bool bias_)
    : in_dim_(checked_positive(in_dim, "in_dim")),
      out_dim_(checked_positive(out_dim, "out_dim")),
      rank_(checked_positive(rank, "rank")),
      alpha_(alpha),
      dropout_p_(checked_dropout(dropout_p)) {
  // The base starts as nn.Linear would (so a model built without a checkpoint is usable); a
  // checkpoint load overwrites it.
  auto base = torch::empty({out_dim, in_dim});
  torch::nn::init::kaiming_uniform_(base, std::sqrt(5.0));
  weight = register_parameter("weight", base, /*requires_grad=*/false);
  if (bias_) bias = register_parameter("bias", torch::zeros({out_dim}), /*requires_grad=*/false);
  lora_a = register_module("lora_a", bias_free_linear(in_dim, rank));
  lora_b = register_module("lora_b", bias_free_linear(rank, out_dim));
  dropout = register_module("dropout", torch::nn::Dropout(dropout_p));
  reset_lora_parameters();
}

void LoRALinearImpl::reset_lora_parameters() {
  torch::NoGradGuard no_grad;
  torch::nn::init::kaiming_uniform_(lora_a->weight, std::sqrt(5.0));
  lora_b->weight.zero_();
}

torch::Tensor LoRALinearImpl::forward(const torch::Tensor& x) {
  const auto base = base_forward ? (bias.defined() ? base_forward(x) + bias : base_forward(x))
                                 : torch::linear(x, weight, bias);
  // Dropout touches the LoRA input only; with p = 0 the call is skipped, not just a no-op.
  const auto lora_in = dropout_p_ > 0.0 ? dropout->forward(x) : x;
  return base + scale() * lora_b->forward(lora_a->forward(lora_in));
}

void LoRALinearImpl::pretty_print(std::ostream& stream) const {
  stream << "tb::peft::LoRALinear(in=" << in_dim_ << ", out=" << out_dim_ << ", rank=" << rank_ << ", alpha=" << alpha_
         << ", dropout=" << dropout_p_ << (base_forward ? ", quantized base" : "") << ")";
}

std::vector<std::pair<std::string, LoRALinearImpl*>> lora_modules(const torch::nn::Module& model) {
  std::vector<std::pair<std::string, LoRALinearImpl*>> out;
  for (const auto& item : model.named_modules("", /*include_self=*/false))
    if (auto* lora = dynamic_cast<LoRALinearImpl*>(item.value().get())) out.emplace_back(item.key(), lora);
  return out;
}

}  // namespace tb::peft
