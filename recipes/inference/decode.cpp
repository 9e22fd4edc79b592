#include "inference/decode.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>

#include "config/interrupt.h"

namespace tb::inference {
namespace {

int64_t pick_token(const torch::Tensor& logits, const DecodeSettings& settings, at::Generator& generator) {
  if (settings.temperature <= 0) return logits.argmax().item<int64_t>();
  // Shifted by the largest first: a tiny temperature (1e-45) sends every other logit to -inf instead of
  // making inf - inf = NaN probabilities (multinomial then failed with a LibTorch stack trace).
  const auto wide = logits.to(torch::kFloat64);
  auto scaled = (wide - wide.max()) / settings.temperature;
  if (settings.top_k > 0 && settings.top_k < scaled.size(0)) {
    const auto kth = std::get<0>(scaled.topk(settings.top_k)).min();
    scaled = scaled.masked_fill(scaled < kth, -std::numeric_limits<float>::infinity());
  }
  const auto probs = torch::softmax(scaled, 0);
  return torch::multinomial(probs, 1, /*replacement=*/false, generator).item<int64_t>();
}

}  // namespace

std::vector<int64_t> conversation_prompt(const data::Tokenizer& tokenizer, std::vector<data::Message> turns) {
  turns.emplace_back("assistant", "");
  const data::TokenizedMessages prompt = tokenizer.tokenize_messages(turns, /*add_end_tokens=*/false);
  if (prompt.truncated)
    throw std::runtime_error("the prompt does not fit in tokenizer.max_seq_len (" +
                             std::to_string(*tokenizer.max_seq_len()) + " tokens): shorten it or raise max_seq_len");
  return prompt.tokens;
}

Decoded decode(models::TransformerDecoderImpl& model, const data::Tokenizer& tokenizer, c10::ScalarType dtype,
               const std::vector<int64_t>& prompt, const DecodeSettings& settings, const OnToken& on_token) {
  if (settings.max_new_tokens < 0) throw std::runtime_error("max_new_tokens must be >= 0");
  if (!std::isfinite(settings.temperature) || settings.temperature < 0)
    throw std::runtime_error("temperature must be a number >= 0 (0: greedy), not " + std::to_string(settings.temperature));
  if (settings.top_k < 0) throw std::runtime_error("top_k must be >= 0 (0: all tokens), not " + std::to_string(settings.top_k));
  const auto prompt_len = static_cast<int64_t>(prompt.size());
  const int64_t limit = model.args().max_seq_len;
  if (prompt_len == 0) throw std::runtime_error("the prompt is empty");
  if (prompt_len >= limit)
    throw std::runtime_error("the prompt has " + std::to_string(prompt_len) + " tokens; the model reads at most " +
                             std::to_string(limit) + " (max_seq_len)");
  const int64_t new_tokens = std::min(settings.max_new_tokens, limit - prompt_len);

  torch::NoGradGuard no_grad;
  Decoded out;
  const auto start = std::chrono::steady_clock::now();
  model.setup_caches(1, dtype, prompt_len + new_tokens);
  auto generator = at::make_generator<at::CPUGeneratorImpl>(settings.seed);
  const auto stops = tokenizer.stop_tokens();
  auto input = torch::tensor(prompt, torch::kLong).unsqueeze(0);
  try {
    for (int64_t i = 0; i < new_tokens; ++i) {
      config::check_interrupt();
      const auto logits = model.forward(input).select(1, -1).squeeze(0);  // last position, [vocab]
      const int64_t next = pick_token(logits, settings, generator);
      if (std::find(stops.begin(), stops.end(), next) != stops.end()) {
        out.stopped_at_eos = true;
        break;
      }
      out.tokens.push_back(next);
      if (on_token && !on_token(out.tokens)) {
        out.cancelled = true;
        break;
      }
      input = torch::full({1, 1}, next, torch::kLong);
    }
  } catch (...) {
    model.teardown_caches();
    throw;
  }
  model.teardown_caches();
  out.at_context_limit = !out.stopped_at_eos && !out.cancelled && new_tokens < settings.max_new_tokens &&
                         static_cast<int64_t>(out.tokens.size()) == new_tokens;
  out.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return out;
}

}  // namespace tb::inference
