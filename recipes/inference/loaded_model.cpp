#include "inference/loaded_model.h"

#include <ATen/core/grad_mode.h>

#include "checkpoint/hf_checkpointer.h"
#include "components/builtin.h"
#include "config/registry.h"
#include "models/build_dtype.h"
#include "peft/adapter.h"
#include "peft/adapter_folder.h"
#include "training/runtime.h"

namespace tb::inference {

LoadedModel load_model(const config::Config& cfg) {
  const config::Registry& registry = components::builtin();
  LoadedModel out;
  const training::Runtime runtime = training::read_runtime(cfg);
  training::apply_runtime(runtime);
  out.dtype = runtime.dtype;
  at::GradMode::set_enabled(false);  // per thread, like the rest of the runtime settings
  {
    models::BuildDtype build_dtype(runtime.dtype);  // built in the run's dtype: never the whole model in fp32 first
    out.model = registry.build<models::TransformerDecoder>(cfg.at("model"));
  }
  const auto checkpointer = registry.build<std::shared_ptr<checkpoint::FullModelHFCheckpointer>>(cfg.at("checkpointer"));
  const auto report = checkpointer->load_into(*out.model, runtime.seed);
  out.weights = report.message;
  out.warnings = report.warnings;
  // A LoRA model scores, generates and exports with its adapter, as the recipe trains with it.
  const auto& ck = checkpointer->options();
  out.checkpoint_dir = ck.checkpoint_dir;
  out.adapter_dir = peft::adapter_folder(ck.adapter_checkpoint, ck.checkpoint_dir);
  if (!out.adapter_dir.empty()) {
    peft::load_adapter_into(*out.model, peft::load_peft_adapter(out.adapter_dir, out.model->args()), out.adapter_dir);
    out.weights += "; LoRA adapter from " + out.adapter_dir;
  }
  out.model->to(out.dtype);
  out.model->eval();
  out.tokenizer = registry.build<std::shared_ptr<data::Tokenizer>>(cfg.at("tokenizer"));
  if (out.tokenizer->vocab_size() > out.model->args().vocab_size)
    throw std::runtime_error("the tokenizer has " + std::to_string(out.tokenizer->vocab_size()) +
                             " tokens but the model's vocabulary is " + std::to_string(out.model->args().vocab_size));
  return out;
}

}  // namespace tb::inference
