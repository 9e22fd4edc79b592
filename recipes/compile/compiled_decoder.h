// `compile: true`: what torch.compile does to a training step, done in C++. wrap_compile() wraps the
// decoder the way torch.compile wraps a module (the original under `_orig_mod`, so parameter names
// carry the `_orig_mod.` prefix that every state-dict path strips — models/compiled_names.h); the
// wrapper's forward_hidden and token_loss_sum run the step lowered to the fused kernels of
// fused_kernels.h. warm_up() is the measured first step: it chooses the plan (cached on disk), then
// checks the fused step against the eager one on the same batch and falls back to eager on a mismatch.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>
#include <torch/nn/module.h>
#include <torch/nn/pimpl.h>
#include <torch/types.h>

#include "compile/gemm.h"
#include "data/batch_tensors.h"
#include "models/transformer.h"
#include "models/loss.h"

namespace tb::compile {

// What the warm-up chose; cached per model shape, dtype, batch shape, instruction set, threads and
// LibTorch version.
struct CompilePlan {
  int64_t ce_chunk_rows = 1024;  // rows of the fused output projection + cross entropy per chunk
  int64_t attn_block = 128;      // queries (and keys) per tile of the fused causal attention
  GemmBackend gemm = GemmBackend::aten;  // who computes the step's matrix products (compile/gemm.h)
  // Fused kernels that failed the warm-up's check: each runs as its eager ops inside the compiled step
  // (kFusedPieces names them). Never cached: the warm-up decides it for its run.
  std::vector<std::string> eager_kernels;
  bool runs_eager(const char* piece) const;
  nlohmann::json to_json() const;
  // Inverse of to_json; nullopt for JSON that is not a plan this build can run.
  static std::optional<CompilePlan> from_json(const nlohmann::json& j);
};

class CompiledDecoderImpl : public torch::nn::Module {
 public:
  explicit CompiledDecoderImpl(models::TransformerDecoder original);

  models::TransformerDecoder orig_mod() const { return orig_; }
  // The final-norm output [B, T, dim], as orig_mod()->forward_hidden, through the fused kernels.
  torch::Tensor forward_hidden(const torch::Tensor& tokens, const torch::Tensor& input_pos = {});
  // As models::token_loss_sum: the fused output projection + cross entropy when the output is a
  // plain weight (tied or untied), else the eager loss.
  torch::Tensor token_loss_sum(const torch::Tensor& hidden, const torch::Tensor& labels, const models::LossSpec& spec);
  // The output weight the fused loss uses; undefined when the output projection is not a plain weight.
  torch::Tensor output_weight();

  CompilePlan plan;

 private:
  models::TransformerDecoder orig_;
};
TORCH_MODULE(CompiledDecoder);

// The torch.compile-style wrapper around `model` (which it shares, not copies).
CompiledDecoder wrap_compile(models::TransformerDecoder model);

// The fused kernels a failed check can send back to eager one at a time: "attention" (with its
// projections and rotary), "norms" (with the residual add), "swiglu", "mlp projections", "loss" (the
// output projection with the cross entropy).
inline const std::vector<std::string> kFusedPieces = {"attention", "norms", "swiglu", "mlp projections", "loss"};

// The pieces of a model's step no fused kernel computes, which run as their eager ops inside the compiled
// step (Gemma's (1 + w) norms, q/k norms, partial rotary, soft-capping, sliding windows, GeGLU, ...):
// named in the compile event. Empty for a Llama.
std::vector<std::string> eager_pieces(const models::ModelArgs& args);

// The plan cache: `$XDG_CACHE_HOME/tunebench/compile` (else `~/.cache/tunebench/compile`).
std::string plan_cache_dir();
std::string plan_cache_key(const models::ModelArgs& args, torch::ScalarType dtype, int64_t batch, int64_t seq_len);
std::optional<CompilePlan> load_cached_plan(const std::string& key);
void store_plan(const std::string& key, const CompilePlan& plan);  // best effort: a cache failure is not an error

// Why the fused step cannot run on `device`, or nothing when it can. The fused kernels are CPU
// kernels; a CUDA backend (graph capture of the step, CUDA kernels) plugs in here, and until then
// warm_up() keeps a CUDA run eager and logs this reason.
std::optional<std::string> unsupported_device_reason(const torch::Device& device);

struct WarmupReport {
  torch::Tensor loss_sum;       // the step's token-summed loss (of the path that was kept)
  bool fallback = false;        // the fused step disagreed with eager: the run continues eager
  std::string reason;           // why it fell back
  bool cache_hit = false;
  bool plan_given = false;      // the plan was handed in (rank 0's), neither cached nor tuned here
  double seconds = 0;           // the whole warm-up: tuning (unless cached) and both passes
  double loss_rel_diff = 0;     // |fused - eager| / |eager| of the first batch's loss
  double grad_rel_diff = 0;     // the largest relative difference of a parameter's gradient norm
  // bf16: both steps' errors against the same step computed in fp32 (the judge; eager's own rounding is
  // the yardstick): {"loss": {"eager": e, "compiled": c}, "groups": {"attention": {...}, ...}}.
  nlohmann::json error_vs_fp32;
  nlohmann::json plan;          // the plan it ran (CompilePlan::to_json)
  std::vector<std::string> eager;  // pieces of the step that run as eager ops (eager_pieces, then failed kernels)
  nlohmann::json event() const; // {"event":"compile","seconds":…,"cache_hit":…,"fallback":…,"plan":…,...}
};

// How a bf16 fused step is judged: against the step computed in fp32 on the same weights and batch, its
// error in the loss and in each parameter group's gradients may be at most kErrorFactor times eager
// bf16's own error there (or kErrorFloor, when eager's is smaller), and never above kErrorBound.
inline constexpr double kErrorFactor = 2.0;
inline constexpr double kErrorFloor = 1e-2;
inline constexpr double kErrorBound = 0.25;

// The first micro-batch of a compiled run, with the gradients of `params` zero or undefined: runs
// the eager step, chooses the plan (from the cache, or by timing the candidates), runs the fused step
// and judges it: in fp32 against eager (loss and per-parameter gradient norms within `tolerance`,
// relative); in bf16 against the fp32 reference above (`tolerance` unused). Leaves the
// gradients of the path it kept in `params`. On a device without a backend
// (unsupported_device_reason) it runs only the eager step and reports a fallback. TUNEBENCH_COMPILE_FORCE_MISMATCH=1 forces a mismatch
// (for tests of the fallback); TUNEBENCH_COMPILE_PLANT_ERROR=<relative error> makes the fused attention's
// output that much wrong (for tests that the judge catches a wrong kernel).
// `given`: the plan to run instead of the cache's or a tuned one (a data-parallel run's ranks run rank 0's).
WarmupReport warm_up(CompiledDecoderImpl& compiled, const data::TensorBatch& batch, const models::LossSpec& spec,
                     const std::vector<torch::Tensor>& params, double tolerance, const CompilePlan* given = nullptr);

}  // namespace tb::compile
