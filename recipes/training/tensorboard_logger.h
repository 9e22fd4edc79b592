// TensorBoard event files, written without TensorFlow or protobuf: a TFRecord file of Event messages
// (a file_version first, then one Event of scalar summaries per logged step), which `tensorboard --logdir`
// reads as torchtune's TensorBoardLogger output.
#pragma once

#include <cstdint>
#include <mutex>
#include <string>
#include <string_view>

#include "training/metrics.h"

namespace tb::training {

// CRC-32C (Castagnoli), the checksum of TFRecord frames.
uint32_t crc32c(std::string_view bytes);

// One TFRecord frame around `record`: length (uint64 LE), masked CRC-32C of the length, the record,
// masked CRC-32C of the record.
std::string tfrecord_frame(std::string_view record);

class TensorBoardLogger : public MetricLogger {
 public:
  // Writes <log_dir>/events.out.tfevents.<time>.<host>.<pid>.0, or with `organize_logs` (torchtune's
  // default) the same inside <log_dir>/run_0_<time>/, a folder TensorBoard shows as a run of its own.
  // Throws std::runtime_error when the folder or file cannot be made.
  explicit TensorBoardLogger(const std::string& log_dir, bool organize_logs = true);
  ~TensorBoardLogger() override;
  TensorBoardLogger(const TensorBoardLogger&) = delete;
  TensorBoardLogger& operator=(const TensorBoardLogger&) = delete;

  const std::string& path() const { return path_; }
  // One Event at m.step with the scalars loss, lr, tokens_per_second, step_time_s (and peak_memory_gib
  // when it was measured), named as in metrics.jsonl.
  void log_step(const StepMetrics& m) override;
  void log_event(const nlohmann::json&) override {}  // TensorBoard plots numbers; events stay in metrics.jsonl

 private:
  void write_record(const std::string& event);
  std::string path_;
  int fd_ = -1;
  std::mutex mutex_;
};

}  // namespace tb::training
