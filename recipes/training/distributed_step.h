// The step of a data-parallel run: the step it wraps (eager or compiled) computes each micro-batch on
// this process's shard; the trainable parameters' gradients (sums over this rank's tokens) are summed
// over the ranks before the optimizer steps, so that, divided by the step's tokens summed over the
// ranks (the loop's), every rank applies the update one process would at world_size times the batch.
//
// The sums overlap the backward pass of a step's last micro-batch, as torch's DDP does: the parameters
// are grouped into buckets of about 25 MB in reverse order (the order backward reaches them), a hook on
// each parameter's gradient accumulator counts it done, and a bucket whose parameters are all done
// starts its sum while backward goes on. Buckets start in one fixed order on every rank (a bucket waits
// for the ones before it), so the ranks' collectives always match. TUNEBENCH_DDP_OVERLAP=0 sums every
// bucket after backward instead (to measure what the overlap buys).
#pragma once

#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

#include "distributed/process_group.h"
#include "training/gradient_hooks.h"
#include "training/train_step.h"

namespace tb::training {

class DistributedStep : public WrappedStep {
 public:
  // `accumulation`: micro-batches per optimizer step (the loop's gradient_accumulation_steps).
  DistributedStep(std::unique_ptr<TrainStep> step, distributed::ProcessGroup& group, int64_t accumulation);
  ~DistributedStep() override;
  at::Tensor forward_backward(const data::TensorBatch& batch) override;
  // `tokens`: the step's tokens over every rank.
  void optimizer_step(int64_t tokens) override;
  std::string summary() const override;

 private:
  struct Bucket {
    std::vector<size_t> params;  // indices into trainable()
    size_t waiting = 0;          // parameters whose gradient is not final yet in this backward
  };
  void gradient_ready(size_t param);
  void start_ready_buckets();  // in order, as far as they are ready
  void start_bucket(size_t b);

  distributed::ProcessGroup& group_;
  int64_t accumulation_;
  bool overlap_ = true;
  std::vector<Bucket> buckets_;
  std::vector<size_t> bucket_of_;  // per trainable parameter
  std::unique_ptr<GradientReadyHooks> hooks_ = std::make_unique<GradientReadyHooks>();
  std::vector<std::unique_ptr<distributed::PendingSum>> started_;  // bucket b's sum at index b
  int64_t micro_batches_ = 0;
  bool armed_ = false;          // the hooks start sums (the step's last micro-batch is in backward)
  double wait_seconds_ = 0;     // spent in optimizer_step waiting for sums (not hidden by backward)
  int64_t steps_ = 0, overlapped_buckets_ = 0, buckets_total_ = 0;
};

}  // namespace tb::training
