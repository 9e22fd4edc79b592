// Optimizers, LR schedules and losses, under torch's and torchtune's names.
#include <algorithm>

#include <torch/optim.h>

#include "components/builtin.h"
#include "config/registry.h"
#include "models/loss.h"
#include "training/adamw8bit.h"
#include "training/optim.h"

namespace tb::components {
namespace {

using config::arg;
using config::Args;
using config::ArgType;
using config::ComponentSpec;

// `betas: [0.9, 0.999]` as a pair of doubles.
std::tuple<double, double> betas_of(const Args& args) {
  const YAML::Node node = args.raw("betas");
  if (!node.IsSequence() || node.size() != 2) throw std::runtime_error("betas must be a list of two numbers");
  return {node[0].as<double>(), node[1].as<double>()};
}

// `key` of a component node, or `fallback` when it is absent or null (the types are checked already).
template <class T>
T value_or(const YAML::Node& node, const char* key, T fallback) {
  const YAML::Node value = node[key];
  return value && !value.IsNull() ? value.as<T>() : fallback;
}

std::string betas_problem(const YAML::Node& node) {
  const YAML::Node betas = node["betas"];
  if (!betas || betas.IsNull()) return "";
  if (!betas.IsSequence() || betas.size() != 2) return "must be a list of two numbers";
  for (const auto& beta : betas) {
    double b = -1;
    if (!YAML::convert<double>::decode(beta, b) || b < 0 || b >= 1) return "each beta must be a number in [0, 1)";
  }
  return "";
}

// The arguments of bitsandbytes' AdamW classes (percentile_clipping and block_wise until bitsandbytes 0.50).
std::vector<config::ArgSpec> bnb_adamw_args(const std::string& optim_bits_help, bool takes_is_paged) {
  std::vector<config::ArgSpec> args = {
      arg("lr", ArgType::Float, "learning rate").or_default("0.001"),
      arg("betas", ArgType::Any, "(beta1, beta2)").or_default("[0.9, 0.999]"),
      arg("eps", ArgType::Float).or_default("1e-8"),
      arg("weight_decay", ArgType::Float, "decoupled weight decay").or_default("0.01"),
      arg("amsgrad", ArgType::Bool, "false only: bitsandbytes does not compute AMSGrad").or_default("false"),
      arg("optim_bits", ArgType::Int, optim_bits_help).or_default("32"),
      arg("args", ArgType::Any, "bitsandbytes' argument object: null only").or_null(),
      arg("min_8bit_size", ArgType::Int, "8-bit states: parameters with fewer elements keep 32-bit states")
          .or_default("4096"),
      arg("percentile_clipping", ArgType::Int, "100 only (no percentile clipping; use clip_grad_norm)")
          .or_default("100"),
      arg("block_wise", ArgType::Bool, "true only: 8-bit states are quantized per block of 256").or_default("true")};
  if (takes_is_paged)
    args.push_back(
        arg("is_paged", ArgType::Bool, "accepted, no effect: paging is CUDA unified memory").or_default("false"));
  return args;
}

// What a bitsandbytes AdamW node asks for that is not computed here (naming the argument), or "".
std::string bnb_adamw_refusal(const YAML::Node& node, std::string* argument, const std::vector<int64_t>& allowed_bits) {
  auto refuse = [argument](const char* key, const std::string& why) {
    *argument = key;
    return why;
  };
  if (const std::string problem = betas_problem(node); !problem.empty()) return refuse("betas", problem);
  if (value_or(node, "amsgrad", false))
    return refuse("amsgrad", "bitsandbytes' AdamW does not compute AMSGrad: set it false");
  const int64_t bits = value_or<int64_t>(node, "optim_bits", 32);
  if (std::find(allowed_bits.begin(), allowed_bits.end(), bits) == allowed_bits.end())
    return refuse("optim_bits", allowed_bits.size() == 1
                                    ? "this class takes optim_bits: 32 only (bitsandbytes refuses others too)"
                                    : "32 or 8 only");
  if (value_or<int64_t>(node, "percentile_clipping", 100) != 100)
    return refuse("percentile_clipping",
                  "clipping to a percentile of recent gradient norms is not computed here: leave it at 100 and use "
                  "clip_grad_norm");
  if (!value_or(node, "block_wise", true))
    return refuse("block_wise", "only block-wise 8-bit states (blocks of 256) are computed here: set it true");
  if (node["args"] && !node["args"].IsNull())
    return refuse("args", "bitsandbytes' argument object cannot be given here: use the keyword arguments");
  if (value_or<int64_t>(node, "min_8bit_size", 4096) < 0) return refuse("min_8bit_size", "must be at least 0");
  return "";
}

training::OptimizerFactory adamw8bit_factory(const Args& args, int64_t min_8bit_size) {
  const auto options = training::AdamW8bitOptions(args.get_float("lr"))
                           .betas(betas_of(args))
                           .eps(args.get_float("eps"))
                           .weight_decay(args.get_float("weight_decay"))
                           .min_8bit_size(min_8bit_size);
  return [options](std::vector<torch::Tensor> params) -> std::unique_ptr<torch::optim::Optimizer> {
    return std::make_unique<training::AdamW8bit>(std::move(params), options);
  };
}

// bitsandbytes' AdamW8bit and PagedAdamW8bit, torchao's AdamW8bit; PagedAdamW and PagedAdamW32bit.
void register_bnb_optimizers(config::Registry& registry) {
  const std::string eight_bit_help =
      "8-bit AdamW as bitsandbytes computes it: both moments block-wise quantized (blocks of 256, dynamic "
      "maps, an fp32 absmax per block), about 2 bytes of state per parameter; parameters below min_8bit_size "
      "keep 32-bit states";
  for (const bool paged : {false, true}) {
    const std::string name = paged ? "PagedAdamW8bit" : "AdamW8bit";
    ComponentSpec spec{
        "optimizer",
        "bitsandbytes.optim." + name,
        {"bitsandbytes.optim.adamw." + name},
        bnb_adamw_args("32 only (the states are 8-bit whatever it says, as in bitsandbytes)", !paged),
        eight_bit_help + (paged ? "; paging is CUDA unified memory, so on CPU the same as AdamW8bit" : "")};
    if (paged) spec.aliases.push_back(name);
    spec.check = [](const YAML::Node& node, std::string* argument) { return bnb_adamw_refusal(node, argument, {32}); };
    registry.add<training::OptimizerFactory>(
        std::move(spec), [](const Args& args) { return adamw8bit_factory(args, args.get_int("min_8bit_size")); });
  }
  // 32-bit paged AdamW: paging is a CUDA unified-memory feature, so on CPU it is torch's AdamW (fused
  // under compile). bitsandbytes' 32-bit kernel decays the weights after the update instead of
  // before, a difference of lr^2 * weight_decay * update per step.
  for (const bool any_bits : {true, false}) {
    const std::string name = any_bits ? "PagedAdamW" : "PagedAdamW32bit";
    ComponentSpec spec{
        "optimizer",
        "bitsandbytes.optim." + name,
        {name, "bitsandbytes.optim.adamw." + name},
        bnb_adamw_args(any_bits ? "32: 32-bit states; 8: the 8-bit states of PagedAdamW8bit" : "32 only", false),
        "32-bit AdamW; paging is a CUDA unified-memory feature, so on CPU this is torch.optim.AdamW" +
            std::string(any_bits ? " (optim_bits: 8 makes it PagedAdamW8bit, as in bitsandbytes)" : "")};
    const std::vector<int64_t> bits = any_bits ? std::vector<int64_t>{32, 8} : std::vector<int64_t>{32};
    spec.check = [bits](const YAML::Node& node, std::string* argument) {
      return bnb_adamw_refusal(node, argument, bits);
    };
    registry.add<training::OptimizerFactory>(std::move(spec), [](const Args& args) -> training::OptimizerFactory {
      if (args.get_int("optim_bits") == 8) return adamw8bit_factory(args, args.get_int("min_8bit_size"));
      const auto options = torch::optim::AdamWOptions(args.get_float("lr"))
                               .betas(betas_of(args))
                               .eps(args.get_float("eps"))
                               .weight_decay(args.get_float("weight_decay"));
      return [options](std::vector<torch::Tensor> params) -> std::unique_ptr<torch::optim::Optimizer> {
        return std::make_unique<torch::optim::AdamW>(std::move(params), options);
      };
    });
  }
  ComponentSpec torchao{"optimizer",
                        "torchao.optim.AdamW8bit",
                        {"torchao.prototype.low_bit_optim.AdamW8bit"},
                        {arg("lr", ArgType::Float, "learning rate").or_default("0.001"),
                         arg("betas", ArgType::Any, "(beta1, beta2)").or_default("[0.9, 0.999]"),
                         arg("eps", ArgType::Float).or_default("1e-8"),
                         arg("weight_decay", ArgType::Float, "decoupled weight decay").or_default("0.01"),
                         arg("amsgrad", ArgType::Bool, "false only").or_default("false"),
                         arg("block_size", ArgType::Int, "256 only").or_default("256"),
                         arg("bf16_stochastic_round", ArgType::Bool, "false only").or_default("false")},
                        "torchao's 8-bit AdamW, computed as bitsandbytes' AdamW8bit (blocks of 256, the same dynamic "
                        "maps); torchao rounds to the map, orders weight decay and picks its 32-bit tensors slightly "
                        "differently"};
  torchao.check = [](const YAML::Node& node, std::string* argument) -> std::string {
    auto refuse = [argument](const char* key, const std::string& why) {
      *argument = key;
      return why;
    };
    if (const std::string problem = betas_problem(node); !problem.empty()) return refuse("betas", problem);
    if (value_or(node, "amsgrad", false)) return refuse("amsgrad", "AMSGrad with 8-bit states is not computed here");
    if (value_or<int64_t>(node, "block_size", 256) != 256)
      return refuse("block_size", "only blocks of 256 are computed here (bitsandbytes' block size)");
    if (value_or(node, "bf16_stochastic_round", false))
      return refuse("bf16_stochastic_round", "stochastic rounding of bf16 weights is not computed here");
    return "";
  };
  registry.add<training::OptimizerFactory>(std::move(torchao), [](const Args& args) {
    return adamw8bit_factory(args, 4096);  // torchao keeps tensors under 4096 elements in 32 bits too
  });
}

void register_optimizers(config::Registry& registry) {
  registry.add<training::OptimizerFactory>(
      ComponentSpec{
          "optimizer",
          "torch.optim.AdamW",
          {"AdamW", "torch.optim.adamw.AdamW"},
          {arg("lr", ArgType::Float, "learning rate").or_default("0.001"),
           arg("betas", ArgType::Any, "(beta1, beta2)").or_default("[0.9, 0.999]"),
           arg("eps", ArgType::Float).or_default("1e-8"),
           arg("weight_decay", ArgType::Float, "decoupled weight decay").or_default("0.01"),
           arg("amsgrad", ArgType::Bool).or_default("false"),
           arg("fused", ArgType::Bool, "accepted for torchtune configs; no effect on CPU eager").or_default("false"),
           arg("foreach", ArgType::Bool, "accepted for torchtune configs; no effect").or_null()},
          "Adam with decoupled weight decay"},
      [](const Args& args) -> training::OptimizerFactory {
        auto options = torch::optim::AdamWOptions(args.get_float("lr"))
                           .betas(betas_of(args))
                           .eps(args.get_float("eps"))
                           .weight_decay(args.get_float("weight_decay"))
                           .amsgrad(args.get_bool("amsgrad"));
        return [options](std::vector<torch::Tensor> params) -> std::unique_ptr<torch::optim::Optimizer> {
          return std::make_unique<torch::optim::AdamW>(std::move(params), options);
        };
      });
  registry.add<training::OptimizerFactory>(
      ComponentSpec{
          "optimizer",
          "torch.optim.SGD",
          {"SGD", "torch.optim.sgd.SGD"},
          {arg("lr", ArgType::Float, "learning rate").must_be_set(), arg("momentum", ArgType::Float).or_default("0"),
           arg("dampening", ArgType::Float).or_default("0"), arg("weight_decay", ArgType::Float).or_default("0"),
           arg("nesterov", ArgType::Bool).or_default("false")},
          "stochastic gradient descent"},
      [](const Args& args) -> training::OptimizerFactory {
        auto options = torch::optim::SGDOptions(args.get_float("lr"))
                           .momentum(args.get_float("momentum"))
                           .dampening(args.get_float("dampening"))
                           .weight_decay(args.get_float("weight_decay"))
                           .nesterov(args.get_bool("nesterov"));
        return [options](std::vector<torch::Tensor> params) -> std::unique_ptr<torch::optim::Optimizer> {
          return std::make_unique<torch::optim::SGD>(std::move(params), options);
        };
      });
}

void register_schedules(config::Registry& registry) {
  registry.add<training::LrScheduleFactory>(
      ComponentSpec{
          "lr_scheduler",
          "torchtune.modules.get_cosine_schedule_with_warmup",
          {"get_cosine_schedule_with_warmup", "torchtune.training.lr_schedulers.get_cosine_schedule_with_warmup"},
          {arg("num_warmup_steps", ArgType::Int, "linear warm-up steps").must_be_set(),
           arg("num_cycles", ArgType::Float, "cosine cycles over the decay").or_default("0.5")},
          "linear warm-up, then cosine decay to zero"},
      [](const Args& args) -> training::LrScheduleFactory {
        const int64_t warmup = args.get_int("num_warmup_steps");
        const double cycles = args.get_float("num_cycles");
        return [warmup, cycles](int64_t total) { return training::cosine_with_warmup(warmup, total, cycles); };
      });
}

void register_losses(config::Registry& registry) {
  registry.add<models::LossSpec>(
      ComponentSpec{"loss",
                    "torch.nn.CrossEntropyLoss",
                    {"CrossEntropyLoss"},
                    {arg("ignore_index", ArgType::Int).or_default("-100"),
                     arg("reduction", ArgType::String, "the recipes sum and normalise by tokens").or_default("sum")},
                    "next-token cross entropy"},
      [](const Args& args) {
        return models::LossSpec{args.get_int("ignore_index"), 1};
      });
  registry.add<models::LossSpec>(
      ComponentSpec{"loss",
                    "torchtune.modules.loss.CEWithChunkedOutputLoss",
                    {"CEWithChunkedOutputLoss"},
                    {arg("num_output_chunks", ArgType::Int, "chunks of the sequence").or_default("8"),
                     arg("ignore_index", ArgType::Int).or_default("-100")},
                    "cross entropy over chunks of the output projection"},
      [](const Args& args) {
        return models::LossSpec{args.get_int("ignore_index"), args.get_int("num_output_chunks")};
      });
  registry.add<models::LossSpec>(
      ComponentSpec{"loss",
                    "torchtune.modules.loss.LinearCrossEntropyLoss",
                    {"LinearCrossEntropyLoss"},
                    {arg("num_output_chunks", ArgType::Int, "chunks of the sequence").or_default("8"),
                     arg("ignore_index", ArgType::Int).or_default("-100"),
                     arg("tp_enabled", ArgType::Bool, "tensor parallelism: not on one device").or_default("false"),
                     arg("mask_ignored_tokens", ArgType::Bool, "skip ignored rows before the projection")
                         .or_default("true")},
                    "the output projection and cross entropy in chunks; each chunk's logits are recomputed in "
                    "backward, so only one chunk of logits ever exists (eager too)"},
      [](const Args& args) {
        if (args.get_bool("tp_enabled")) throw std::runtime_error("LinearCrossEntropyLoss: tp_enabled needs tensor parallelism");
        models::LossSpec spec{args.get_int("ignore_index"), args.get_int("num_output_chunks")};
        spec.recompute_chunks = true;
        return spec;
      });
}

}  // namespace

void register_optim(config::Registry& registry) {
  register_optimizers(registry);
  register_bnb_optimizers(registry);
  register_schedules(registry);
  register_losses(registry);
}

}  // namespace tb::components
