// What the tests of checkpoints and model families share: the reference folders' JSON and tokens, the
// mean next-token loss the references compute, and bitwise comparison of saved folders.
#pragma once

#include <QDir>
#include <QString>

#include <cstring>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include <torch/torch.h>
#include <nlohmann/json.hpp>

#include "checkpoint/safetensors.h"

namespace tbtest {

inline nlohmann::json read_json(const QString& path) {
  std::ifstream in(path.toStdString());
  return nlohmann::json::parse(in);
}

// tokens.json {"tokens": [[...], ...]} of a reference variant folder, as int64 [B, T].
inline torch::Tensor tokens_of(const QString& variant_dir) {
  const auto j = read_json(variant_dir + "/tokens.json")["tokens"];
  std::vector<int64_t> flat;
  for (const auto& row : j)
    for (const auto& t : row) flat.push_back(t.get<int64_t>());
  return torch::tensor(flat).view({static_cast<int64_t>(j.size()), -1});
}

// Mean cross entropy of logits [B, T, V] predicting tokens[:, 1:], in fp32.
inline torch::Tensor next_token_loss_tensor(const torch::Tensor& logits, const torch::Tensor& tokens) {
  const int64_t T = tokens.size(1), V = logits.size(-1);
  const auto l = logits.slice(1, 0, T - 1).to(torch::kFloat).reshape({-1, V});
  return torch::nn::functional::cross_entropy(l, tokens.slice(1, 1).reshape({-1}));
}
inline double next_token_loss(const torch::Tensor& logits, const torch::Tensor& tokens) {
  return next_token_loss_tensor(logits, tokens).item<double>();
}

// Every tensor of every safetensors file in a folder (but logits*), keyed by name.
inline std::map<std::string, torch::Tensor> folder_tensors(const QString& folder) {
  std::map<std::string, torch::Tensor> out;
  for (const auto& f : QDir(folder).entryList({"*.safetensors"}, QDir::Files)) {
    if (f.startsWith("logits") || f.startsWith("grads") || f.startsWith("adapter")) continue;
    for (auto& [k, v] : tb::checkpoint::load_safetensors((folder + "/" + f).toStdString())) out[k] = v;
  }
  return out;
}

inline bool bitwise_equal(const torch::Tensor& a, const torch::Tensor& b) {
  if (a.scalar_type() != b.scalar_type() || a.sizes() != b.sizes()) return false;
  const auto ca = a.contiguous(), cb = b.contiguous();
  return std::memcmp(ca.data_ptr(), cb.data_ptr(), ca.numel() * ca.element_size()) == 0;
}

// ||got - want|| / ||want||, in float64.
inline double relative_error(const torch::Tensor& got, const torch::Tensor& want) {
  const auto g = got.to(torch::kDouble), w = want.to(torch::kDouble);
  return ((g - w).norm() / w.norm().clamp_min(1e-30)).item<double>();
}

}  // namespace tbtest
