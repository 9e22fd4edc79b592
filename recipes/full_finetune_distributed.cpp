// full_finetune_distributed: the full fine-tune, data parallel. Every rank holds the whole model and
// trains full_finetune_single_device's recipe on its shard of each global batch; the gradients are
// summed over the ranks before each optimizer step, so N processes at batch_size b train as one process
// at N x b. Rank 0 logs and writes the checkpoints. Start it with `tunebench-cli run --nproc-per-node N`
// or under torchrun.
#include "recipe.h"
#include "training/data_parallel.h"

namespace tb {

training::RunResult run_full_finetune_single_device(const config::Config&, training::MetricLogger&,
                                                    training::RunControl&);

training::RunResult run_full_finetune_distributed(const config::Config& cfg, training::MetricLogger& logger,
                                                  training::RunControl& control) {
  return training::run_data_parallel([&] { return run_full_finetune_single_device(cfg, logger, control); }, logger);
}

}  // namespace tb
