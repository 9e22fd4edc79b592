// A downloaded file's bytes written and hashed on a thread of their own, so the thread that receives them
// from the network only copies: the receiving thread fills 4 MiB pieces, the writer thread appends each to
// the file and feeds it to SHA-256. At most four pieces wait (memory stays flat whatever the file's size);
// a full queue makes the receiver wait, which slows the transfer instead of growing.
#pragma once

#include <condition_variable>
#include <deque>
#include <filesystem>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "hub/sha256.h"

namespace tb::hub {

class BlobWriter {
 public:
  // Opens `path` to append (or truncated when !append). With `hash`, the bytes are hashed; a resumed file's
  // first `hash_from_disk` bytes are read back into the hash first (on the writer thread).
  BlobWriter(const std::filesystem::path& path, bool append, bool hash, int64_t hash_from_disk);
  ~BlobWriter();  // finishes (errors ignored) when finish() was not called
  BlobWriter(const BlobWriter&) = delete;
  BlobWriter& operator=(const BlobWriter&) = delete;

  // False once writing failed (error() says why): the caller stops receiving.
  bool write(const char* data, size_t size);
  // Waits for every byte to reach the file; false on a write error. Then digest() holds the hash.
  bool finish();
  const std::string& error() const { return error_; }
  const std::optional<std::string>& digest() const { return digest_; }

 private:
  void run();
  void push(std::vector<char>&& piece);

  int fd_ = -1;
  std::filesystem::path path_;
  std::unique_ptr<Sha256> hash_;
  int64_t hash_from_disk_ = 0;
  std::vector<char> filling_;
  std::mutex mutex_;
  std::condition_variable changed_;
  std::deque<std::vector<char>> queue_;
  std::vector<std::vector<char>> spare_;  // written pieces, reused (fresh 4 MiB buffers cost page faults)
  bool closing_ = false, failed_ = false, finished_ = false;
  std::string error_;
  std::optional<std::string> digest_;
  std::thread thread_;
};

}  // namespace tb::hub
