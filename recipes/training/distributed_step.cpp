#include "training/distributed_step.h"

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include <torch/torch.h>

namespace tb::training {
namespace {

constexpr int64_t kBucketBytes = 25 << 20;  // DDP's bucket_cap_mb default

}  // namespace

DistributedStep::DistributedStep(std::unique_ptr<TrainStep> step, distributed::ProcessGroup& group, int64_t accumulation)
    : WrappedStep(std::move(step)), group_(group), accumulation_(std::max<int64_t>(1, accumulation)) {
  if (const char* env = std::getenv("TUNEBENCH_DDP_OVERLAP"); env && std::strcmp(env, "0") == 0) overlap_ = false;
  const auto& params = step_->trainable();
  bucket_of_.resize(params.size());
  int64_t bytes = 0;
  for (size_t i = params.size(); i-- > 0;) {  // backward reaches the last layers first
    if (buckets_.empty() || (bytes + params[i].numel() * 4 > kBucketBytes && !buckets_.back().params.empty())) {
      buckets_.emplace_back();
      bytes = 0;
    }
    buckets_.back().params.push_back(i);
    bucket_of_[i] = buckets_.size() - 1;
    bytes += params[i].numel() * 4;
  }
  if (!overlap_) return;
  // A parameter without an accumulator (not a leaf that requires grad) has its bucket summed after backward.
  for (size_t i = 0; i < params.size(); ++i) hooks_->add(params[i], [this, i] { gradient_ready(i); });
}

DistributedStep::~DistributedStep() {
  hooks_.reset();
  started_.clear();  // a sum still in flight is waited for (and its failure dropped) by its destructor
}

at::Tensor DistributedStep::forward_backward(const data::TensorBatch& batch) {
  armed_ = overlap_ && (++micro_batches_ % accumulation_ == 0);
  if (armed_) {
    started_.clear();
    started_.resize(buckets_.size());
    for (auto& b : buckets_) b.waiting = b.params.size();
  }
  at::Tensor loss = step_->forward_backward(batch);
  armed_ = false;
  return loss;
}

void DistributedStep::gradient_ready(size_t param) {
  if (!armed_) return;
  Bucket& b = buckets_[bucket_of_[param]];
  if (b.waiting > 0 && --b.waiting == 0) start_ready_buckets();
}

void DistributedStep::start_ready_buckets() {
  for (size_t b = 0; b < buckets_.size(); ++b) {
    if (started_[b]) continue;
    if (buckets_[b].waiting > 0) return;  // the ones after it wait for it
    start_bucket(b);
  }
}

void DistributedStep::start_bucket(size_t b) {
  std::vector<at::Tensor> grads;
  for (size_t i : buckets_[b].params) {
    auto p = step_->trainable()[i];
    // A parameter no token of this shard reached has no gradient here but may have one on another rank.
    if (!p.grad().defined()) p.mutable_grad() = at::zeros_like(p);
    grads.push_back(p.grad());
  }
  started_[b] = group_.start_sum(grads);
}

void DistributedStep::optimizer_step(int64_t tokens) {
  const auto start = std::chrono::steady_clock::now();
  if (started_.size() != buckets_.size()) started_.resize(buckets_.size());
  // The compile warm-up ran backward twice and may have swapped the gradients since: what was summed
  // during it is dropped (every rank warms up on the same micro-batch, so all drop alike) and summed again.
  const bool redo = step_->last_was_warmup();
  int64_t hidden = 0;  // buckets whose sum started during backward
  for (size_t b = 0; b < buckets_.size(); ++b) {
    const bool overlapped = started_[b] != nullptr;
    if (overlapped && redo) {
      started_[b]->finish(false);
      started_[b].reset();
    }
    if (overlapped && !redo) ++hidden;
    if (!started_[b]) start_bucket(b);
  }
  for (auto& s : started_) s->finish();
  started_.clear();
  overlapped_buckets_ += hidden;
  buckets_total_ += static_cast<int64_t>(buckets_.size());
  wait_seconds_ += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  ++steps_;
  step_->optimizer_step(tokens);
}

std::string DistributedStep::summary() const {
  if (steps_ == 0) return step_->summary();
  char text[256];
  std::snprintf(text, sizeof text,
                "all-reduce of the gradients over %d processes: %.3f s per step after backward (%lld of %lld "
                "buckets started during backward; %lld steps)",
                group_.size(), wait_seconds_ / double(steps_), static_cast<long long>(overlapped_buckets_),
                static_cast<long long>(buckets_total_), static_cast<long long>(steps_));
  const std::string inner = step_->summary();
  return inner.empty() ? text : inner + "; " + text;
}

}  // namespace tb::training
