#include "inference/evaluate.h"

#include <chrono>
#include <cmath>

#include "components/builtin.h"
#include "config/interrupt.h"
#include "config/registry.h"
#include "data/batch_tensors.h"
#include "data/dataloader.h"
#include "data/dataset.h"
#include "inference/loaded_model.h"
#include "models/loss.h"

namespace tb::inference {

EvalResult evaluate(const config::Config& cfg, const EvalProgress& progress) {
  const auto start = std::chrono::steady_clock::now();
  LoadedModel loaded = load_model(cfg);
  auto& model = *loaded.model;
  torch::NoGradGuard no_grad;

  auto dataset = data::build_dataset(components::builtin(), cfg.at("dataset"),
                                     {loaded.tokenizer, model.args().vocab_size});
  if (dataset->size() == 0) throw std::runtime_error("the dataset has no samples to evaluate");
  data::DataLoaderOptions options;
  options.batch_size = std::max<int64_t>(1, cfg.get_int("batch_size", 1));
  options.shuffle = false;
  options.drop_last = false;  // every sample is scored once
  options.pad_id = loaded.tokenizer->pad_id();
  data::DataLoader loader(dataset, options);

  // The output projection in slices of the sequence, so a long batch's logits are never all alive.
  models::LossSpec spec;
  spec.num_output_chunks = 8;
  double loss_sum = 0;
  EvalResult result;
  const auto total = static_cast<int64_t>(dataset->size());
  while (auto batch = loader.next()) {
    config::check_interrupt();
    const auto t = data::to_tensors(*batch);
    const auto hidden = model.forward_hidden(t.tokens, t.input_pos);
    loss_sum += models::token_loss_sum(model, hidden, t.labels, spec).to(torch::kFloat64).item<double>();
    result.tokens += batch->num_label_tokens();
    result.samples += batch->batch_size;
    if (progress) progress(result.samples, total);
  }
  if (result.tokens == 0) throw std::runtime_error("the dataset has no predicted positions (every label is masked)");
  result.loss = loss_sum / double(result.tokens);
  result.perplexity = std::exp(result.loss);
  result.weights = loaded.weights;
  result.warnings = loaded.warnings;
  result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return result;
}

}  // namespace tb::inference
