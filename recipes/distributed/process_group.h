// The process group of a data-parallel run, on LibTorch's c10d: a TCPStore for the rendezvous (rank 0
// serves it) and ProcessGroupGloo for the collectives, with a timeout on both so that a peer that
// died or hangs ends the run instead of blocking it. As torch.distributed, one default group per
// process: the distributed recipes join it, the loader, the step and the loop read it.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <ATen/core/Tensor.h>

#include "distributed/world.h"

namespace tb::distributed {

// A sum over the ranks in flight (ProcessGroup::start_sum): its tensors were copied into one fp32
// buffer when it started; finish() waits for it and writes the sums back into them.
class PendingSum {
 public:
  virtual ~PendingSum() = default;
  // Waits; with `write_back`, the tensors it started from receive the sums.
  virtual void finish(bool write_back = true) = 0;
};

class ProcessGroup {
 public:
  // Joins the rendezvous at world.master_addr:master_port (rank 0 listens there) and connects the
  // ranks. Throws std::runtime_error with a one-line reason (the port in use, a peer that never came).
  explicit ProcessGroup(const World& world);
  ~ProcessGroup();

  int rank() const { return world_.rank; }
  int size() const { return world_.size; }
  bool is_main() const { return world_.rank == 0; }
  const World& world() const { return world_; }

  // Sums `tensors` over the ranks in one fp32 buffer, started now and finished later (a step sums a
  // bucket of gradients while backward goes on). Every rank must start its sums in the same order.
  std::unique_ptr<PendingSum> start_sum(const std::vector<at::Tensor>& tensors);
  // The sums over the ranks of a few numbers (a step's loss, its tokens, a stop request).
  std::vector<double> sum(const std::vector<double>& values);

  // Text that rank 0 publishes under `key` and every other rank waits for (the compile plan, a seed).
  void publish(const std::string& key, const std::string& value);
  std::string await(const std::string& key);

 private:
  struct Impl;
  World world_;
  std::unique_ptr<Impl> impl_;
};

// The default group: set while a distributed recipe runs (a ProcessGroupScope is alive), else null
// (one process).
ProcessGroup* default_group();

// Joins the group for its lifetime and makes it the default; a world of one joins nothing.
class ProcessGroupScope {
 public:
  explicit ProcessGroupScope(const World& world);
  ~ProcessGroupScope();
  ProcessGroupScope(const ProcessGroupScope&) = delete;
  ProcessGroupScope& operator=(const ProcessGroupScope&) = delete;

 private:
  std::unique_ptr<ProcessGroup> group_;
};

}  // namespace tb::distributed
