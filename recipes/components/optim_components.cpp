// Optimizers, LR schedules and losses, under torch's and torchtune's names.
#include <torch/optim.h>

#include "components/builtin.h"
#include "config/registry.h"
#include "models/loss.h"
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
}

}  // namespace

void register_optim(config::Registry& registry) {
  register_optimizers(registry);
  register_schedules(registry);
  register_losses(registry);
}

}  // namespace tb::components
