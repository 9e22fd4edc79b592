// A projection whose frozen weight is not kept as a full-precision tensor (QLoRA's NF4 bases,
// peft/qlora.h) takes its values through this interface, one weight at a time, as the checkpoint is
// copied in (checkpoint::copy_into_model) or random weights are drawn (init_weights): the model's
// full-precision weights then never exist all at once. Its `weight` parameter stays registered, empty,
// so names do not change; the shape it will have is weight_shape().
#pragma once

#include <map>
#include <string>
#include <vector>

#include <torch/nn/module.h>
#include <torch/types.h>

namespace tb::models {

class DeferredWeight {
 public:
  virtual ~DeferredWeight() = default;
  virtual bool awaiting_weight() const = 0;  // true until take_weight has run
  virtual std::vector<int64_t> weight_shape() const = 0;
  // The values in any dtype the model's weights take (converted as a copy into the weight would be).
  virtual void take_weight(const torch::Tensor& values) = 0;
};

// The modules of `model` awaiting their weight, by that weight's parameter name as named_parameters()
// gives it (e.g. "layers.0.attn.q_proj.weight").
std::map<std::string, DeferredWeight*> deferred_weights(const torch::nn::Module& model);

}  // namespace tb::models
