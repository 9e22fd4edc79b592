// Optimizers, LR schedules and losses in the registry, under torch's and torchtune's names.
#include <torch/optim.h>

#include "config/components.h"
#include "config/registry.h"
#include "training/optim.h"

namespace tb::training {
namespace {

using config::ArgSpec;
using config::ArgType;
using config::Args;
using config::ComponentSpec;

// `betas: [0.9, 0.999]` as a pair of doubles.
std::tuple<double, double> betas_of(const Args& args) {
  const YAML::Node node = args.raw("betas");
  if (!node.IsSequence() || node.size() != 2) throw std::runtime_error("betas must be a list of two numbers");
  return {node[0].as<double>(), node[1].as<double>()};
}

void register_optimizers(config::Registry& registry) {
  registry.add<OptimizerFactory>(
      ComponentSpec{"optimizer",
                    "torch.optim.AdamW",
                    {"AdamW", "torch.optim.adamw.AdamW"},
                    {{"lr", ArgType::Float, false, false, "0.001", "learning rate"},
                     {"betas", ArgType::Any, false, false, "[0.9, 0.999]", "(beta1, beta2)"},
                     {"eps", ArgType::Float, false, false, "1e-8", ""},
                     {"weight_decay", ArgType::Float, false, false, "0.01", "decoupled weight decay"},
                     {"amsgrad", ArgType::Bool, false, false, "false", ""},
                     {"fused", ArgType::Bool, false, false, "false", "accepted for torchtune configs; no effect on CPU eager"},
                     {"foreach", ArgType::Bool, false, true, "", "accepted for torchtune configs; no effect"}},
                    "Adam with decoupled weight decay"},
      [](const Args& args) -> OptimizerFactory {
        auto options = torch::optim::AdamWOptions(args.get_float("lr"))
                           .betas(betas_of(args))
                           .eps(args.get_float("eps"))
                           .weight_decay(args.get_float("weight_decay"))
                           .amsgrad(args.get_bool("amsgrad"));
        return [options](std::vector<torch::Tensor> params) -> std::unique_ptr<torch::optim::Optimizer> {
          return std::make_unique<torch::optim::AdamW>(std::move(params), options);
        };
      });
  registry.add<OptimizerFactory>(
      ComponentSpec{"optimizer",
                    "torch.optim.SGD",
                    {"SGD", "torch.optim.sgd.SGD"},
                    {{"lr", ArgType::Float, true, false, "", "learning rate"},
                     {"momentum", ArgType::Float, false, false, "0", ""},
                     {"dampening", ArgType::Float, false, false, "0", ""},
                     {"weight_decay", ArgType::Float, false, false, "0", ""},
                     {"nesterov", ArgType::Bool, false, false, "false", ""}},
                    "stochastic gradient descent"},
      [](const Args& args) -> OptimizerFactory {
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
  registry.add<LrScheduleFactory>(
      ComponentSpec{"lr_scheduler",
                    "torchtune.modules.get_cosine_schedule_with_warmup",
                    {"get_cosine_schedule_with_warmup",
                     "torchtune.training.lr_schedulers.get_cosine_schedule_with_warmup"},
                    {{"num_warmup_steps", ArgType::Int, true, false, "", "linear warm-up steps"},
                     {"num_cycles", ArgType::Float, false, false, "0.5", "cosine cycles over the decay"}},
                    "linear warm-up, then cosine decay to zero"},
      [](const Args& args) -> LrScheduleFactory {
        const int64_t warmup = args.get_int("num_warmup_steps");
        const double cycles = args.get_float("num_cycles");
        return [warmup, cycles](int64_t total) { return cosine_with_warmup(warmup, total, cycles); };
      });
}

void register_losses(config::Registry& registry) {
  registry.add<LossSpec>(
      ComponentSpec{"loss",
                    "torch.nn.CrossEntropyLoss",
                    {"CrossEntropyLoss"},
                    {{"ignore_index", ArgType::Int, false, false, "-100", ""},
                     {"reduction", ArgType::String, false, false, "sum", "the recipes sum and normalise by tokens"}},
                    "next-token cross entropy"},
      [](const Args& args) { return LossSpec{args.get_int("ignore_index"), 1}; });
  registry.add<LossSpec>(
      ComponentSpec{"loss",
                    "torchtune.modules.loss.CEWithChunkedOutputLoss",
                    {"CEWithChunkedOutputLoss"},
                    {{"num_output_chunks", ArgType::Int, false, false, "8", "chunks of the sequence"},
                     {"ignore_index", ArgType::Int, false, false, "-100", ""}},
                    "cross entropy over chunks of the output projection"},
      [](const Args& args) { return LossSpec{args.get_int("ignore_index"), args.get_int("num_output_chunks")}; });
}

}  // namespace

void register_optim_components(config::Registry& registry) {
  register_optimizers(registry);
  register_schedules(registry);
  register_losses(registry);
}

}  // namespace tb::training
