#include "inference/generate.h"

#include <algorithm>
#include <chrono>

#include "data/sft_datasets.h"
#include "inference/loaded_model.h"

namespace tb::inference {
namespace {

// A prompt cut at max_seq_len would lose its end (the assistant's header): refused instead.
std::vector<int64_t> untruncated(const data::TokenizedMessages& prompt, const data::Tokenizer& tokenizer) {
  if (prompt.truncated)
    throw std::runtime_error("the prompt does not fit in tokenizer.max_seq_len (" +
                             std::to_string(*tokenizer.max_seq_len()) + " tokens): shorten it or raise max_seq_len");
  return prompt.tokens;
}

// The prompt's token ids: a chat turn through the tokenizer's conversation formatting, raw text after BOS,
// or the Alpaca instruction through the tokenizer's message path, exactly as alpaca_dataset tokenizes the
// prompt it trains on.
std::vector<int64_t> prompt_tokens(const data::Tokenizer& tokenizer, const GenerateOptions& options,
                                   std::string& prompt_text) {
  if (options.chat) {
    prompt_text = options.prompt;
    std::vector<data::Message> messages;
    if (!options.system.empty()) messages.emplace_back("system", options.system, true);
    messages.emplace_back("user", options.prompt, true);
    messages.emplace_back("assistant", "");
    return untruncated(tokenizer.tokenize_messages(messages, /*add_end_tokens=*/false), tokenizer);
  }
  if (!options.instruct) {
    prompt_text = options.prompt;
    return tokenizer.encode(options.prompt, /*add_bos=*/true, /*add_eos=*/false);
  }
  prompt_text = data::alpaca_prompt(options.prompt, options.input);
  const std::vector<data::Message> messages{data::Message("user", prompt_text, true), data::Message("assistant", "")};
  return untruncated(tokenizer.tokenize_messages(messages, /*add_end_tokens=*/false), tokenizer);
}

int64_t pick_token(const torch::Tensor& logits, const GenerateOptions& options, at::Generator& generator) {
  if (options.temperature <= 0) return logits.argmax().item<int64_t>();
  auto scaled = logits.to(torch::kFloat32) / options.temperature;
  if (options.top_k > 0 && options.top_k < scaled.size(0)) {
    const auto kth = std::get<0>(scaled.topk(options.top_k)).min();
    scaled = scaled.masked_fill(scaled < kth, -std::numeric_limits<float>::infinity());
  }
  const auto probs = torch::softmax(scaled, 0);
  return torch::multinomial(probs, 1, /*replacement=*/false, generator).item<int64_t>();
}

}  // namespace

GenerateResult generate(const config::Config& cfg, const GenerateOptions& options, const GenerateStream& stream) {
  if (options.max_new_tokens < 0) throw std::runtime_error("max_new_tokens must be >= 0");
  LoadedModel loaded = load_model(cfg);
  auto& model = *loaded.model;
  const data::Tokenizer& tokenizer = *loaded.tokenizer;
  torch::NoGradGuard no_grad;

  GenerateResult result;
  result.warnings = loaded.warnings;
  result.prompt_tokens = prompt_tokens(tokenizer, options, result.prompt_text);
  const auto prompt_len = static_cast<int64_t>(result.prompt_tokens.size());
  const int64_t limit = model.args().max_seq_len;
  if (prompt_len == 0) throw std::runtime_error("the prompt is empty");
  if (prompt_len >= limit)
    throw std::runtime_error("the prompt has " + std::to_string(prompt_len) + " tokens; the model reads at most " +
                             std::to_string(limit) + " (max_seq_len)");
  const int64_t new_tokens = std::min(options.max_new_tokens, limit - prompt_len);

  const auto start = std::chrono::steady_clock::now();
  model.setup_caches(1, loaded.dtype, prompt_len + new_tokens);
  auto generator = at::make_generator<at::CPUGeneratorImpl>(options.seed);
  const auto stops = tokenizer.stop_tokens();
  auto input = torch::tensor(result.prompt_tokens, torch::kLong).unsqueeze(0);
  for (int64_t i = 0; i < new_tokens; ++i) {
    const auto logits = model.forward(input).select(1, -1).squeeze(0);  // last position, [vocab]
    const int64_t next = pick_token(logits, options, generator);
    if (std::find(stops.begin(), stops.end(), next) != stops.end()) {
      result.stopped_at_eos = true;
      break;
    }
    result.tokens.push_back(next);
    if (stream) stream(tokenizer.decode(result.tokens));
    input = torch::full({1, 1}, next, torch::kLong);
  }
  model.teardown_caches();
  result.text = tokenizer.decode(result.tokens);
  result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return result;
}

}  // namespace tb::inference
