#include "models/activation_checkpointing.h"

#include <ATen/CPUGeneratorImpl.h>
#include <torch/csrc/autograd/custom_function.h>

#include "models/transformer.h"

namespace tb::models {

namespace {

// One layer call that outlives the forward pass: backward runs after forward_hidden has returned.
struct LayerClosure : torch::CustomClassHolder {
  TransformerDecoderImpl* model = nullptr;
  int64_t index = 0;
  PositionInfo pos;
  torch::Tensor run(const torch::Tensor& h) const { return model->forward_layer(index, h, pos); }
};

// Runs one decoder layer without keeping its graph; backward recomputes it with grad enabled and
// back-propagates through the recomputed graph (gradients land in the layer's parameters).
struct CheckpointedLayer : torch::autograd::Function<CheckpointedLayer> {
  static torch::Tensor forward(torch::autograd::AutogradContext* ctx, torch::Tensor h,
                               c10::intrusive_ptr<LayerClosure> layer) {
    ctx->saved_data["layer"] = c10::IValue::make_capsule(layer);
    ctx->saved_data["rng"] = at::detail::getDefaultCPUGenerator().get_state();
    ctx->save_for_backward({h});
    torch::NoGradGuard no_grad;
    return layer->run(h);
  }
  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grad_out) {
    auto holder = ctx->saved_data["layer"].toCapsule();
    const auto* layer = static_cast<const LayerClosure*>(holder.get());
    auto input = ctx->get_saved_variables()[0].detach().requires_grad_(true);
    auto generator = at::detail::getDefaultCPUGenerator();
    auto rng_now = generator.get_state();
    generator.set_state(ctx->saved_data["rng"].toTensor());
    torch::Tensor out;
    {
      torch::AutoGradMode grad(true);
      out = layer->run(input);
    }
    generator.set_state(rng_now);
    torch::autograd::backward({out}, {grad_out[0]});
    return {input.grad(), torch::Tensor()};
  }
};

}  // namespace

at::Tensor checkpointed_forward_hidden(TransformerDecoderImpl& model, const at::Tensor& tokens,
                                       const at::Tensor& input_pos) {
  const auto pos =
      model.make_positions(tokens.size(0), tokens.size(1), input_pos, {}, model.tok_embeddings->weight.device());
  auto h = model.tok_embeddings->forward(tokens);
  // A custom function's output needs grad only when an input does: with a frozen embedding (LoRA,
  // QLoRA) the layers' own trainable weights would get no gradient, so the first input is made a leaf
  // that asks for one (its gradient, one activation's size, is dropped).
  if (torch::GradMode::is_enabled() && !h.requires_grad()) h = h.detach().requires_grad_(true);
  for (int64_t i = 0; i < model.num_layers(); ++i) {
    auto layer = c10::make_intrusive<LayerClosure>();
    layer->model = &model;
    layer->index = i;
    layer->pos = pos;
    h = torch::GradMode::is_enabled() ? CheckpointedLayer::apply(h, layer) : layer->run(h);
  }
  return model.norm->forward(h);
}

}  // namespace tb::models
