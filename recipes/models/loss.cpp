#include "models/loss.h"

#include <algorithm>

#include <torch/csrc/autograd/custom_function.h>
#include <torch/nn/functional/loss.h>

#include "models/transformer.h"

namespace tb::models {

at::Tensor cross_entropy_sum(const at::Tensor& logits, const at::Tensor& labels, int64_t ignore_index) {
  namespace F = torch::nn::functional;
  return F::cross_entropy(logits.to(torch::kFloat32), labels,
                          F::CrossEntropyFuncOptions().ignore_index(ignore_index).reduction(torch::kSum));
}

namespace {

// The output projection and cross entropy of one chunk, as a closure that outlives the forward pass.
struct LossChunk : torch::CustomClassHolder {
  TransformerDecoderImpl* model = nullptr;
  torch::Tensor labels;
  int64_t ignore_index = -100;
  torch::Tensor run(const torch::Tensor& hidden) const {
    auto logits = model->output_projection(hidden);
    return cross_entropy_sum(logits.reshape({-1, logits.size(-1)}), labels.reshape({-1}), ignore_index);
  }
};

// The output projection's parameters that train (the embedding when tied; the head's weight, or its
// adapters), in a fixed order.
std::vector<torch::Tensor> trainable_head_parameters(TransformerDecoderImpl& model) {
  std::vector<torch::Tensor> out;
  const auto params = model.tied() ? std::vector<torch::Tensor>{model.tok_embeddings->weight} : model.output.ptr()->parameters();
  for (const auto& p : params)
    if (p.requires_grad()) out.push_back(p);
  return out;
}

// One chunk's loss without keeping its logits: backward recomputes them with grad enabled and returns the
// gradients of the hidden states and of the head's parameters, which are inputs of this function. So the
// autograd engine sums every chunk's head gradient (and, tied, the embedding's own) before it accumulates
// once into each parameter: gradient hooks fire once per step (optimizer_in_bwd steps the head once, after
// its whole gradient; the data-parallel sum reduces it once), as for any other parameter. (A nested
// backward into the parameters fired them once per chunk: the head stepped on each chunk's part, and a
// tied embedding changed while the embedding lookup's backward still needed it.)
struct RecomputedLossChunk : torch::autograd::Function<RecomputedLossChunk> {
  static torch::Tensor forward(torch::autograd::AutogradContext* ctx, torch::Tensor hidden, at::TensorList head,
                               c10::intrusive_ptr<LossChunk> chunk) {
    ctx->saved_data["chunk"] = c10::IValue::make_capsule(chunk);
    ctx->saved_data["head_parameters"] = static_cast<int64_t>(head.size());
    ctx->save_for_backward({hidden});
    torch::NoGradGuard no_grad;
    return chunk->run(hidden);
  }
  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grad_out) {
    auto holder = ctx->saved_data["chunk"].toCapsule();
    const auto* chunk = static_cast<const LossChunk*>(holder.get());
    auto input = ctx->get_saved_variables()[0].detach().requires_grad_(true);
    const auto head = trainable_head_parameters(*chunk->model);
    TORCH_CHECK(static_cast<int64_t>(head.size()) == ctx->saved_data["head_parameters"].toInt(),
                "the output projection's trainable parameters changed between forward and backward");
    torch::Tensor loss;
    {
      torch::AutoGradMode grad(true);
      loss = chunk->run(input);
    }
    torch::autograd::variable_list inputs{input};
    inputs.insert(inputs.end(), head.begin(), head.end());
    auto grads = torch::autograd::grad({loss}, inputs, {grad_out[0]}, /*retain_graph=*/false,
                                       /*create_graph=*/false, /*allow_unused=*/true);
    grads.emplace_back();  // the chunk closure
    return grads;
  }
};

}  // namespace

at::Tensor token_loss_sum(TransformerDecoderImpl& model, const at::Tensor& hidden, const at::Tensor& labels,
                          const LossSpec& spec) {
  const int64_t chunks = std::max<int64_t>(1, std::min<int64_t>(spec.num_output_chunks, hidden.size(1)));
  if (spec.recompute_chunks && torch::GradMode::is_enabled()) {
    auto hidden_chunks = hidden.chunk(chunks, /*dim=*/1);
    auto label_chunks = labels.chunk(chunks, /*dim=*/1);
    const auto head = trainable_head_parameters(model);
    at::Tensor total;
    for (size_t i = 0; i < hidden_chunks.size(); ++i) {
      auto chunk = c10::make_intrusive<LossChunk>();
      chunk->model = &model;
      chunk->labels = label_chunks[i];
      chunk->ignore_index = spec.ignore_index;
      auto part = RecomputedLossChunk::apply(hidden_chunks[i], at::TensorList(head), chunk);
      total = total.defined() ? total + part : part;
    }
    return total;
  }
  if (chunks == 1) {
    auto logits = model.output_projection(hidden);
    return cross_entropy_sum(logits.reshape({-1, logits.size(-1)}), labels.reshape({-1}), spec.ignore_index);
  }
  auto hidden_chunks = hidden.chunk(chunks, /*dim=*/1);
  auto label_chunks = labels.chunk(chunks, /*dim=*/1);
  at::Tensor total;
  for (size_t i = 0; i < hidden_chunks.size(); ++i) {
    auto logits = model.output_projection(hidden_chunks[i]);
    auto part =
        cross_entropy_sum(logits.reshape({-1, logits.size(-1)}), label_chunks[i].reshape({-1}), spec.ignore_index);
    total = total.defined() ? total + part : part;
  }
  return total;
}

}  // namespace tb::models
