#include "inference/generate.h"

#include "data/sft_datasets.h"
#include "inference/decode.h"
#include "inference/loaded_model.h"

namespace tb::inference {
namespace {

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
    return conversation_prompt(tokenizer, messages);
  }
  if (!options.instruct) {
    prompt_text = options.prompt;
    return tokenizer.encode(options.prompt, /*add_bos=*/true, /*add_eos=*/false);
  }
  prompt_text = data::alpaca_prompt(options.prompt, options.input);
  return conversation_prompt(tokenizer, {data::Message("user", prompt_text, true)});
}

}  // namespace

GenerateResult generate(const config::Config& cfg, const GenerateOptions& options, const GenerateStream& stream) {
  if (options.max_new_tokens < 0) throw std::runtime_error("max_new_tokens must be >= 0");
  if (options.instruct && options.chat)
    throw std::runtime_error("--instruct and --chat are two ways to send the prompt: give one of them");
  if (!options.instruct && !options.input.empty()) throw std::runtime_error("--input is the Alpaca input: it needs --instruct");
  if (!options.chat && !options.system.empty()) throw std::runtime_error("--system is a chat turn: it needs --chat");
  LoadedModel loaded = load_model(cfg);
  const data::Tokenizer& tokenizer = *loaded.tokenizer;

  GenerateResult result;
  result.warnings = loaded.warnings;
  result.prompt_tokens = prompt_tokens(tokenizer, options, result.prompt_text);
  const DecodeSettings settings{options.max_new_tokens, options.temperature, options.top_k, options.seed};
  const Decoded decoded = decode(*loaded.model, tokenizer, loaded.dtype, result.prompt_tokens, settings,
                                 [&](const std::vector<int64_t>& tokens) {
                                   if (stream) stream(tokenizer.decode(tokens));
                                   return true;
                                 });
  result.tokens = decoded.tokens;
  result.stopped_at_eos = decoded.stopped_at_eos;
  if (decoded.at_context_limit)
    result.warnings.push_back("stopped after " + std::to_string(decoded.tokens.size()) +
                              " new tokens: the model reads at most " + std::to_string(loaded.model->args().max_seq_len) +
                              " (max_seq_len), prompt included");
  result.text = tokenizer.decode(result.tokens);
  result.seconds = decoded.seconds;
  return result;
}

}  // namespace tb::inference
