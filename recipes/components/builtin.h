// The components a config names by `_component_` (torchtune's dotted names and short aliases), all
// registered here, at the top of the engine: only this layer sees every folder whose objects it builds.
// The folders below know the registry's mechanism (config/registry.h) and nothing of its contents.
#pragma once

namespace tb::config {
class Registry;
}

namespace tb::components {

// The registry with every built-in component (built once, thread-safe).
const config::Registry& builtin();

// One family each, in the order builtin() registers them; tests build partial registries from them.
void register_models(config::Registry& registry);          // decoders, LoRA / QLoRA variants, from_hf_config
void register_checkpointers(config::Registry& registry);   // FullModelHFCheckpointer
void register_data(config::Registry& registry);            // tokenizers and datasets (register_datasets)
void register_datasets(config::Registry& registry);        // dataset components: local files and Hub datasets
void register_metric_loggers(config::Registry& registry);  // DiskLogger, StdoutLogger, TensorBoardLogger (WandB, Comet, MLflow refused), the profiler
void register_optim(config::Registry& registry);           // optimizers, LR schedules, losses

}  // namespace tb::components
