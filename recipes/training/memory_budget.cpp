#include "training/memory_budget.h"

#include <sstream>

#include <torch/nn/module.h>
#include <torch/optim/optimizer.h>

#include "peft/qlora.h"
#include "training/adamw8bit.h"
#include "training/optim.h"

namespace tb::training {

nlohmann::json memory_budget_event(const torch::nn::Module& model, const torch::optim::Optimizer& optimizer,
                                   const std::vector<at::Tensor>& trainable) {
  const auto bytes = peft::parameter_bytes(model);
  // 8-bit AdamW: one byte per moment and element, an fp32 absmax per block, 32-bit small tensors.
  const auto* eight_bit = dynamic_cast<const AdamW8bit*>(&optimizer);
  const int64_t optimizer_bytes = eight_bit ? eight_bit->state_bytes() : optimizer_state_bytes(optimizer, trainable);
  const double mib = 1024.0 * 1024.0;
  std::ostringstream line;
  line.precision(3);
  line << "memory: frozen weights " << double(bytes.frozen) / mib << " MiB (" << bytes.frozen_params << " params";
  if (bytes.nf4_params > 0) line << ", " << bytes.nf4_params << " in NF4";
  line << "), trainable weights " << double(bytes.trainable) / mib << " MiB (" << bytes.trainable_params
       << " params), gradients " << double(bytes.trainable) / mib << " MiB, optimizer states "
       << double(optimizer_bytes) / mib << " MiB";
  return {{"event", "info"},
          {"message", line.str()},
          {"memory",
           {{"frozen_bytes", bytes.frozen},
            {"trainable_bytes", bytes.trainable},
            {"gradient_bytes", bytes.trainable},  // one gradient per trainable weight, same dtype
            {"optimizer_bytes", optimizer_bytes},
            {"frozen_params", bytes.frozen_params},
            {"trainable_params", bytes.trainable_params},
            {"nf4_params", bytes.nf4_params},
            {"nf4_bytes", bytes.nf4_bytes}}}};
}

}  // namespace tb::training
