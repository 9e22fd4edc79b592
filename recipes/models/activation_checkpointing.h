// enable_activation_checkpointing: the decoder's forward pass keeping only each layer's input; the
// layer's activations are recomputed, with the same random state, when the gradient reaches it.
#pragma once

#include <ATen/core/Tensor.h>

namespace tb::models {

class TransformerDecoderImpl;

// forward_hidden with per-layer recomputation in backward. Gradients equal those of model.forward_hidden.
at::Tensor checkpointed_forward_hidden(TransformerDecoderImpl& model, const at::Tensor& tokens,
                                       const at::Tensor& input_pos = {});

}  // namespace tb::models
