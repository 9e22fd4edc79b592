#include "models/deferred_weight.h"

namespace tb::models {

std::map<std::string, DeferredWeight*> deferred_weights(const torch::nn::Module& model) {
  std::map<std::string, DeferredWeight*> out;
  for (const auto& item : model.named_modules("", /*include_self=*/false))
    if (auto* deferred = dynamic_cast<DeferredWeight*>(item.value().get()); deferred && deferred->awaiting_weight())
      out.emplace(item.key() + ".weight", deferred);
  return out;
}

}  // namespace tb::models
