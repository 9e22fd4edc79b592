// The checkpointer component: `torchtune.training.FullModelHFCheckpointer` builds a
// std::shared_ptr<tb::checkpoint::FullModelHFCheckpointer> (checkpoint/hf_checkpointer.h).
#include <stdexcept>

#include "checkpoint/hf_checkpointer.h"
#include "checkpoint/hf_config.h"
#include "components/builtin.h"
#include "config/config.h"
#include "config/registry.h"
#include "hub/repo_path.h"

namespace tb::components {
namespace {

using checkpoint::FullModelHFCheckpointer;
using checkpoint::HFCheckpointerOptions;
using config::arg;
using config::ArgType;

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

void register_checkpointers(config::Registry& registry) {
  config::ComponentSpec spec;
  spec.kind = "checkpointer";
  spec.name = "torchtune.training.FullModelHFCheckpointer";
  spec.aliases = {"FullModelHFCheckpointer"};
  spec.help = "Hugging Face safetensors checkpoints (config.json, model*.safetensors, index)";
  spec.args = {
      arg("checkpoint_dir", ArgType::Path, "folder of the checkpoint; null: seeded random weights")
          .must_be_set()
          .or_null(),
      arg("checkpoint_files", ArgType::Any, "list of files, or {filename_format, max_filename}").or_null(),
      arg("model_type", ArgType::String,
          "torchtune's model type: LLAMA2, LLAMA3, LLAMA3_2, MISTRAL, QWEN2, QWEN3, GEMMA, GEMMA2, GEMMA3, "
          "PHI3_MINI or PHI4 (a folder's config.json decides the architecture)")
          .must_be_set()
          .one_of(checkpoint::model_type_names()),
      arg("output_dir", ArgType::Path, "where checkpoints are saved").must_be_set(),
      arg("adapter_checkpoint", ArgType::Path, "LoRA adapter to load").or_null(),
      arg("recipe_checkpoint", ArgType::Path, "recipe state to resume from").or_null(),
      arg("resume_from_checkpoint", ArgType::Bool, "load the recipe state too").or_default("false"),
      arg("should_load_recipe_state", ArgType::Bool, "torchtune's newer name for the above").or_default("false"),
      arg("safe_serialization", ArgType::Bool, "write safetensors (false is not supported)").or_default("true"),
      arg("max_shard_bytes", ArgType::Int, "start a new shard above this size (tunebench)").or_default("5000000000"),
      arg("keep_last_n_checkpoints", ArgType::Int,
          "keep only the newest n complete checkpoints; older ones are removed once a new one is complete")
          .or_null()
          .or_default("null"),
  };
  spec.check = [](const YAML::Node& node, std::string* argument) -> std::string {
    const YAML::Node keep = node["keep_last_n_checkpoints"];
    int64_t n = 0;
    if (!keep || keep.IsNull() || !YAML::convert<int64_t>::decode(keep, n) || n >= 1) return "";
    *argument = "keep_last_n_checkpoints";
    return "must be at least 1 (or null: keep every checkpoint)";
  };
  registry.add<std::shared_ptr<FullModelHFCheckpointer>>(spec, [](const config::Args& a) {
    HFCheckpointerOptions o;
    if (a.has("checkpoint_dir")) o.checkpoint_dir = hub::resolve_model_path(a.get_string("checkpoint_dir"), false);
    o.checkpoint_files = checkpoint_files_from_yaml(a.raw("checkpoint_files"));
    o.model_type = a.get_string("model_type");
    o.output_dir = a.get_string("output_dir");
    if (a.has("adapter_checkpoint")) o.adapter_checkpoint = a.get_string("adapter_checkpoint");
    if (a.has("recipe_checkpoint")) o.recipe_checkpoint = a.get_string("recipe_checkpoint");
    o.resume_from_checkpoint = a.get_bool("resume_from_checkpoint") || a.get_bool("should_load_recipe_state");
    o.safe_serialization = a.get_bool("safe_serialization");
    if (!a.is_null("keep_last_n_checkpoints") && a.get_int("keep_last_n_checkpoints") < 1)
      throw std::invalid_argument("keep_last_n_checkpoints must be at least 1 (or null: keep all)");
    const int64_t shard = a.get_int("max_shard_bytes");
    if (shard <= 0) throw std::invalid_argument("max_shard_bytes must be positive");
    o.max_shard_bytes = static_cast<uint64_t>(shard);
    return std::make_shared<FullModelHFCheckpointer>(std::move(o));
  });
}

}  // namespace tb::components
