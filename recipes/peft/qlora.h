// QLoRA: the frozen base weight of each LoRALinear stored in NF4 (quant/nf4.h) instead of fp32/bf16.
// A qlora_* builder marks the model. The LoRA recipe builds it under NF4OnLoad: each marked base is
// quantised as the checkpoint is copied in, so the full-precision model never exists; otherwise, after
// the checkpoint is loaded, quantize_lora_bases replaces each marked base by its NF4 form. Either way the
// full-precision tensor is freed and the base path runs through linear_nf4. Saving dequantises again, one weight at a time
// (lazy_base_weights).
#pragma once

#include <cstdint>
#include <string>

#include <c10/core/ScalarType.h>
#include <torch/nn/module.h>

#include "checkpoint/hf_convert.h"
#include "checkpoint/lazy_state.h"

namespace tb::peft {

// Records on the model that its LoRA bases are to be quantised (a buffer-free flag on the module).
void mark_for_quantization(torch::nn::Module& model);
bool marked_for_quantization(const torch::nn::Module& model);

// Quantises the base weight of every marked LoRALinear in `model` to NF4 (blocks of 64, scales of 256)
// that is not in NF4 yet. Returns the number of marked bases, all now in NF4. Idempotent.
int64_t quantize_lora_bases(torch::nn::Module& model);

// Around a build (per thread, scoped as models::BuildDtype): the qlora_* builders make each marked base
// empty and quantise it to NF4 as the checkpoint is copied in or random weights are drawn
// (models::DeferredWeight), one weight at a time, as torchtune's QLoRA loads. Outside it, the bases are
// built in full precision and quantize_lora_bases converts them after the load (eval, generate, export
// and the tests that compare the two).
class NF4OnLoad {
 public:
  NF4OnLoad();
  ~NF4OnLoad();
  NF4OnLoad(const NF4OnLoad&) = delete;
  NF4OnLoad& operator=(const NF4OnLoad&) = delete;
  static bool active();

 private:
  bool previous_;
};

// The model's base weights under our names (as checkpoint::base_model_state), with every NF4 base
// dequantised to `dtype` so that a checkpoint can be written from them.
checkpoint::StateDict base_weights(const torch::nn::Module& model, torch::ScalarType dtype);
// The same, each NF4 base dequantised only when a writer reaches it (what a save uses: the model's
// weights in `dtype` never exist all at once).
checkpoint::LazyStateDict lazy_base_weights(const torch::nn::Module& model, torch::ScalarType dtype);

// Bytes of the model's parameters by role, for the memory line before training.
struct ParameterBytes {
  int64_t frozen = 0;       // frozen weights as stored (NF4 bases at their packed size)
  int64_t trainable = 0;    // weights that train
  int64_t frozen_params = 0, trainable_params = 0, nf4_params = 0;  // element counts
  int64_t nf4_bytes = 0;    // of `frozen`: the NF4 bases (codes, scales, their scales)
};
ParameterBytes parameter_bytes(const torch::nn::Module& model);

}  // namespace tb::peft
