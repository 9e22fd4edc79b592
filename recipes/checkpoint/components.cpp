// Components of recipes/checkpoint/ in the registry. `torchtune.training.FullModelHFCheckpointer`
// builds a std::shared_ptr<tb::checkpoint::FullModelHFCheckpointer> (checkpoint/hf_checkpointer.h).
#include "config/components.h"
#include "config/registry.h"

#include <stdexcept>

#include "checkpoint/hf_checkpointer.h"

namespace tb::checkpoint {

namespace {
config::ArgSpec arg(std::string name, config::ArgType type, bool required, bool nullable, std::string default_value,
                    std::string help, std::vector<std::string> choices = {}) {
  config::ArgSpec s;
  s.name = std::move(name);
  s.type = type;
  s.required = required;
  s.nullable = nullable;
  s.default_value = std::move(default_value);
  s.help = std::move(help);
  s.choices = std::move(choices);
  return s;
}

// checkpoint_files: a list of names, or torchtune's {filename_format: "model-{}-of-{}.safetensors",
// max_filename: "00004"} expanded to model-00001-of-00004.safetensors ... model-00004-of-00004.safetensors.
std::vector<std::string> checkpoint_files_from_yaml(const YAML::Node& node) {
  std::vector<std::string> out;
  if (!node || node.IsNull()) return out;
  if (node.IsSequence()) {
    for (const auto& f : node) out.push_back(f.as<std::string>());
    return out;
  }
  if (!node.IsMap() || !node["filename_format"] || !node["max_filename"])
    throw std::invalid_argument("checkpoint_files must be a list of file names or {filename_format, max_filename}");
  const auto format = node["filename_format"].as<std::string>();
  const auto max_name = node["max_filename"].as<std::string>();
  int64_t count = 0;
  try {
    count = std::stoll(max_name);
  } catch (const std::exception&) {
    throw std::invalid_argument("checkpoint_files.max_filename '" + max_name + "' is not a number");
  }
  const auto first = format.find("{}");
  const auto second = first == std::string::npos ? first : format.find("{}", first + 2);
  if (second == std::string::npos)
    throw std::invalid_argument("checkpoint_files.filename_format '" + format + "' needs two {} placeholders");
  for (int64_t i = 1; i <= count; ++i) {
    std::string index = std::to_string(i);
    if (index.size() < max_name.size()) index.insert(0, max_name.size() - index.size(), '0');
    out.push_back(format.substr(0, first) + index + format.substr(first + 2, second - first - 2) + max_name +
                  format.substr(second + 2));
  }
  return out;
}

}  // namespace

void register_components(config::Registry& registry) {
  using config::ArgSpec;
  using config::ArgType;
  config::ComponentSpec spec;
  spec.kind = "checkpointer";
  spec.name = "torchtune.training.FullModelHFCheckpointer";
  spec.aliases = {"FullModelHFCheckpointer"};
  spec.help = "Hugging Face safetensors checkpoints (config.json, model*.safetensors, index)";
  spec.args = {
      arg("checkpoint_dir", ArgType::Path, true, true, "", "folder of the checkpoint; null: seeded random weights"),
      arg("checkpoint_files", ArgType::Any, false, true, "", "list of files, or {filename_format, max_filename}"),
      arg("model_type", ArgType::String, true, false, "", "LLAMA2, LLAMA3, LLAMA3_2 or MISTRAL",
          {"LLAMA2", "LLAMA3", "LLAMA3_2", "MISTRAL"}),
      arg("output_dir", ArgType::Path, true, false, "", "where checkpoints are saved"),
      arg("adapter_checkpoint", ArgType::Path, false, true, "", "LoRA adapter to load"),
      arg("recipe_checkpoint", ArgType::Path, false, true, "", "recipe state to resume from"),
      arg("resume_from_checkpoint", ArgType::Bool, false, false, "false", "load the recipe state too"),
      arg("should_load_recipe_state", ArgType::Bool, false, false, "false", "torchtune's newer name for the above"),
      arg("safe_serialization", ArgType::Bool, false, false, "true", "write safetensors (false is not supported)"),
      arg("max_shard_bytes", ArgType::Int, false, false, "5000000000", "start a new shard above this size (tunebench)"),
  };
  registry.add<std::shared_ptr<FullModelHFCheckpointer>>(spec, [](const config::Args& a) {
    HFCheckpointerOptions o;
    if (a.has("checkpoint_dir")) o.checkpoint_dir = a.get_string("checkpoint_dir");
    o.checkpoint_files = checkpoint_files_from_yaml(a.raw("checkpoint_files"));
    o.model_type = a.get_string("model_type");
    o.output_dir = a.get_string("output_dir");
    if (a.has("adapter_checkpoint")) o.adapter_checkpoint = a.get_string("adapter_checkpoint");
    if (a.has("recipe_checkpoint")) o.recipe_checkpoint = a.get_string("recipe_checkpoint");
    o.resume_from_checkpoint = a.get_bool("resume_from_checkpoint") || a.get_bool("should_load_recipe_state");
    o.safe_serialization = a.get_bool("safe_serialization");
    const int64_t shard = a.get_int("max_shard_bytes");
    if (shard <= 0) throw std::invalid_argument("max_shard_bytes must be positive");
    o.max_shard_bytes = static_cast<uint64_t>(shard);
    return std::make_shared<FullModelHFCheckpointer>(std::move(o));
  });
}

}  // namespace tb::checkpoint
