// The one way a checkpoint's files reach the disk: written to a unique temporary name beside the
// target, fsynced, renamed over it, and the folder fsynced, so a reader (or a crash) sees the old file
// or the new one, never a mix; a failed write (ENOSPC, EFBIG, EROFS) throws and leaves no temporary. A path
// that is a device, FIFO, symbolic link or folder is refused, never replaced.
#pragma once

#include <cstddef>
#include <string>

namespace tb::checkpoint {

class AtomicFile {
 public:
  explicit AtomicFile(const std::string& path);  // throws std::runtime_error "<path>: ..."
  ~AtomicFile();                                  // without commit(): the temporary is removed
  AtomicFile(const AtomicFile&) = delete;
  AtomicFile& operator=(const AtomicFile&) = delete;

  void write(const void* data, size_t n);  // throws with the system's reason
  void commit();                           // fsync, rename over the target, fsync the folder

 private:
  std::string path_, tmp_;
  int fd_ = -1;
  bool committed_ = false;
};

// Throws std::runtime_error naming `path` when it exists and is not a regular file (a device, FIFO,
// symbolic link, folder or socket): what AtomicFile refuses, for callers that check before working.
void refuse_non_regular_target(const std::string& path);

// Small files (JSON): the whole text through one AtomicFile.
void write_file_atomic(const std::string& path, const std::string& text);

}  // namespace tb::checkpoint
