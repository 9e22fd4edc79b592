// A state dict whose tensors are made only when a writer reaches them. A save then holds one made
// tensor at a time: a QLoRA model's dequantised, merged weights (twice the NF4 model in bf16, four
// times in fp32) never exist all at once, which is what torchtune's `low_cpu_ram` buys with a memory
// map. Shape and dtype are known up front, so a file's header can be written before any data.
#pragma once

#include <functional>
#include <map>
#include <string>
#include <vector>

#include <torch/types.h>

namespace tb::checkpoint {

struct LazyTensor {
  std::vector<int64_t> shape;
  torch::ScalarType dtype = torch::kFloat;
  std::function<torch::Tensor()> make;  // returns a tensor of exactly that shape and dtype
};

using LazyStateDict = std::map<std::string, LazyTensor>;

// A tensor that already exists, made by returning it.
inline LazyTensor lazy(const torch::Tensor& t) { return {t.sizes().vec(), t.scalar_type(), [t] { return t; }}; }

inline LazyStateDict lazy(const std::map<std::string, torch::Tensor>& state) {
  LazyStateDict out;
  for (const auto& [name, t] : state) out.emplace(name, lazy(t));
  return out;
}

// Every tensor made (for callers that want them all, e.g. tests).
inline std::map<std::string, torch::Tensor> materialize(const LazyStateDict& state) {
  std::map<std::string, torch::Tensor> out;
  for (const auto& [name, t] : state) out.emplace(name, t.make());
  return out;
}

}  // namespace tb::checkpoint
