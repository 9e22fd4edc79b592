// `tunebench-cli eval`: the mean next-token cross entropy of a model over a dataset.
//
// The model, checkpointer, tokenizer and dataset come from the config exactly as a recipe builds
// them, so a training config evaluates unchanged (add `checkpointer.checkpoint_dir=<run>/epoch_1`
// to score a fine-tuned checkpoint). Every sample is scored once, in order, in batches of
// `batch_size` padded rows; padding and masked positions (label -100) never count.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "config/config.h"

namespace tb::inference {

struct EvalResult {
  double loss = 0;        // mean cross entropy over the predicted positions (nats)
  double perplexity = 0;  // exp(loss)
  int64_t tokens = 0;     // predicted positions counted
  int64_t samples = 0;
  double seconds = 0;
  std::string weights;    // where the weights came from (the checkpointer's report)
  std::vector<std::string> warnings;  // the checkpointer's warnings, for the caller to show
};

// Called after each batch with (samples done, samples in all).
using EvalProgress = std::function<void(int64_t done, int64_t total)>;

// Throws std::runtime_error with a one-line reason (no weights, empty dataset, ...).
EvalResult evaluate(const config::Config& cfg, const EvalProgress& progress = {});

}  // namespace tb::inference
