// One run per output folder. Two runs writing one output_dir overwrote each other's checkpoints and
// interleaved metrics.jsonl, both "completed". A run holds an exclusive lock (flock) on
// <output_dir>/.tunebench.lock from before its log opens until it ends; the system drops the lock with
// the process, so a crash or kill -9 never leaves a folder locked.
#pragma once

#include <string>

namespace tb::training {

// True while a live process holds the lock of `output_dir` (this one included); false when the folder has
// no lock file or its run's process is gone (ended, crashed or killed): a log without an `end` event is
// then an interrupted run, not a running one.
bool output_dir_in_use(const std::string& output_dir);

class OutputDirLock {
 public:
  // Creates the folder if needed and takes the lock, or throws std::runtime_error naming the folder
  // and the pid of the run that holds it.
  explicit OutputDirLock(const std::string& output_dir);
  ~OutputDirLock();
  OutputDirLock(const OutputDirLock&) = delete;
  OutputDirLock& operator=(const OutputDirLock&) = delete;

 private:
  int fd_ = -1;
};

}  // namespace tb::training
