#include "config/suggest.h"

#include <algorithm>
#include <cctype>
#include <map>

namespace tb::config {
namespace {

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

// Optimal string alignment distance: Levenshtein plus swapped neighbours ("lerning" / "elarning").
size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<std::vector<size_t>> d(a.size() + 1, std::vector<size_t>(b.size() + 1));
  for (size_t i = 0; i <= a.size(); ++i) d[i][0] = i;
  for (size_t j = 0; j <= b.size(); ++j) d[0][j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    for (size_t j = 1; j <= b.size(); ++j) {
      size_t cost = a[i - 1] == b[j - 1] ? 0 : 1;
      d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1]) d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
    }
  }
  return d[a.size()][b.size()];
}

// Names people carry over from other trainers (Hugging Face, Lightning) for our keys.
const std::multimap<std::string, std::string>& synonyms() {
  static const std::multimap<std::string, std::string> table = {
      {"lr", "learning_rate"},
      {"epochs", "num_epochs"},
      {"epochs", "n_epochs"},
      {"epochs", "num_train_epochs"},
      {"batch_size", "bs"},
      {"batch_size", "per_device_train_batch_size"},
      {"batch_size", "train_batch_size"},
      {"gradient_accumulation_steps", "grad_accum"},
      {"gradient_accumulation_steps", "gradient_accumulation"},
      {"gradient_accumulation_steps", "accumulate_grad_batches"},
      {"max_steps_per_epoch", "max_steps"},
      {"output_dir", "out_dir"},
      {"checkpoint_dir", "ckpt_dir"},
      {"enable_activation_checkpointing", "gradient_checkpointing"},
      {"enable_activation_checkpointing", "activation_checkpointing"},
      {"log_every_n_steps", "logging_steps"},
      {"log_every_n_steps", "log_interval"},
      {"save_every_n_steps", "save_steps"},
      {"clip_grad_norm", "max_grad_norm"},
      {"clip_grad_norm", "grad_clip"},
      {"clip_grad_norm", "gradient_clip_val"},
      {"lora_rank", "rank"},
      {"lora_rank", "r"},
      {"lora_alpha", "alpha"},
      {"lora_dropout", "dropout"},
      {"num_warmup_steps", "warmup_steps"},
      {"weight_decay", "wd"},
      {"seed", "random_seed"},
      {"num_threads", "threads"},
      {"num_threads", "n_threads"},
  };
  return table;
}

size_t tolerance(const std::string& word) { return std::max<size_t>(1, std::min<size_t>(3, word.size() / 3)); }

}  // namespace

std::string closest_match(const std::string& word, const std::vector<std::string>& candidates) {
  const std::string w = lower(word);
  std::string best;
  size_t best_distance = tolerance(w) + 1;
  auto consider = [&](const std::string& spelled, const std::string& candidate) {
    size_t dist = edit_distance(w, lower(spelled));
    if (dist < best_distance) {
      best_distance = dist;
      best = candidate;
    }
  };
  for (const std::string& c : candidates) {
    if (c == word) continue;
    consider(c, c);
    auto range = synonyms().equal_range(c);
    for (auto it = range.first; it != range.second; ++it) consider(it->second, c);
  }
  return best;
}

std::string did_you_mean(const std::string& word, const std::vector<std::string>& candidates) {
  std::string m = closest_match(word, candidates);
  return m.empty() ? "" : " (did you mean '" + m + "'?)";
}

std::string join_names(const std::vector<std::string>& names, size_t limit) {
  std::string out;
  for (size_t i = 0; i < names.size() && i < limit; ++i) out += (i ? ", " : "") + names[i];
  if (names.size() > limit) out += ", ...";
  return out;
}

}  // namespace tb::config
