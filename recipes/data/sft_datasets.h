// Supervised fine-tuning datasets: rows of a local JSON/JSONL file -> messages -> tokenize_messages ->
// samples with shifted labels, the prompt masked with -100 unless trained on. Mirrors torchtune's
// AlpacaToMessages / InputOutputToMessages / OpenAIToMessages / ShareGPTToMessages + SFTDataset.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "data/dataset.h"
#include "data/json_rows.h"
#include "data/row_sources.h"
#include "data/tokenizer.h"

namespace tb::data {

enum class MaskingStrategy {
  TrainOnAll,        // user and assistant text both count (system text never does)
  TrainOnAssistant,  // only assistant text counts
  TrainOnLast,       // only the last assistant message counts
};
// torchtune's rule: train_on_input, when given, wins (true: all, false: assistant); else the named
// strategy (train_on_all, train_on_assistant, train_on_last). Throws std::invalid_argument.
MaskingStrategy masking_strategy(std::optional<bool> train_on_input, const std::string& strategy);
void mask_messages(std::vector<Message>& messages, MaskingStrategy strategy);

// The Alpaca prompt (the format of the Stanford Alpaca data): a preamble, "### Instruction:",
// "### Input:" when there is an input, and "### Response:" followed by a newline.
std::string alpaca_prompt(const std::string& instruction, const std::string& input);

struct AlpacaOptions {
  std::map<std::string, std::string> column_map;  // instruction/input/output -> the file's column names
  MaskingStrategy masking = MaskingStrategy::TrainOnAll;
};
std::vector<Message> alpaca_to_messages(const Row& row, const AlpacaOptions& options);

struct InputOutputOptions {
  std::map<std::string, std::string> column_map;  // input/output -> column names
  std::optional<std::string> new_system_prompt;
  MaskingStrategy masking = MaskingStrategy::TrainOnAssistant;
};
std::vector<Message> input_output_to_messages(const Row& row, const InputOutputOptions& options);

struct ChatOptions {
  std::string conversation_column = "messages";
  std::string conversation_style = "openai";  // openai: role/content; sharegpt: from/value
  std::optional<std::string> new_system_prompt;  // replaces the rows' own system messages
  MaskingStrategy masking = MaskingStrategy::TrainOnAssistant;
};
std::vector<Message> chat_to_messages(const Row& row, const ChatOptions& options);

// torchtune's validate_messages: at least one user/assistant turn, a system message only first, no two
// user messages in a row, no assistant message before the first user message.
void validate_messages(const std::vector<Message>& messages, const Row& row);

using MessageTransform = std::function<std::vector<Message>(const Row& row)>;

// Every row through `transform`, validate_messages and the tokenizer. A bad row is a DataError naming its
// file and line, or is skipped and counted (origin.skip_bad_rows). A sample whose every label is masked
// (nothing to learn: e.g. truncation cut the whole answer) is dropped and counted; stats() reports both.
std::shared_ptr<InMemoryDataset> make_sft_dataset(RowReader& rows, const MessageTransform& transform,
                                                  const Tokenizer& tokenizer, const DatasetOrigin& origin);

}  // namespace tb::data
