#include "peft/lora_linear.h"

#include <cmath>
#include <stdexcept>
#include <string>

#include "models/build_dtype.h"
#include "quant/nf4.h"

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
                               bool bias_, bool nf4_on_load)
    : in_dim_(checked_positive(in_dim, "in_dim")),
      out_dim_(checked_positive(out_dim, "out_dim")),
      rank_(checked_positive(rank, "rank")),
      alpha_(alpha),
      dropout_p_(checked_dropout(dropout_p)),
      awaiting_weight_(nf4_on_load) {
  // The base starts as nn.Linear would (so a model built without a checkpoint is usable); a
  // checkpoint load overwrites it. Built nf4_on_load, it waits, empty, in the dtype of the build.
  torch::Tensor base;
  if (nf4_on_load) {
    base = torch::empty({0}, torch::TensorOptions().dtype(models::BuildDtype::current()));
  } else {
    base = torch::empty({out_dim, in_dim});
    torch::nn::init::kaiming_uniform_(base, std::sqrt(5.0));
  }
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

void LoRALinearImpl::set_quantized_base(std::shared_ptr<const quant::NF4Weight> nf4) {
  quantized_base = nf4;
  base_forward = [nf4](const torch::Tensor& x) { return quant::linear_nf4(x, nf4); };
  torch::NoGradGuard no_grad;
  weight.set_data(torch::empty({0}, weight.options()));
  awaiting_weight_ = false;
}

void LoRALinearImpl::take_weight(const torch::Tensor& values) {
  if (!awaiting_weight_) throw std::logic_error("LoRALinear::take_weight: the base is already set");
  if (values.sizes() != c10::IntArrayRef(weight_shape()))
    throw std::invalid_argument("LoRALinear::take_weight: values of the wrong shape");
  torch::NoGradGuard no_grad;
  // As copying into a held weight of this dtype, then quantising it, would give.
  set_quantized_base(std::make_shared<const quant::NF4Weight>(
      quant::quantize_nf4(values.to(weight.scalar_type()).contiguous())));
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
