#include "checkpoint/atomic_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <stdexcept>

namespace tb::checkpoint {

namespace {

[[noreturn]] void fail(const std::string& path, const std::string& what) {
  const int e = errno;
  throw std::runtime_error(path + ": " + what + ": " + std::strerror(e) +
                           (e == ENOSPC ? " (the disk is full)" : e == EFBIG ? " (a file size limit)" : ""));
}

}  // namespace

// The rename would put a regular file where a device, a pipe, a link or a folder was (as root an export to
// /dev/null replaced the device): only a missing path or a regular file is replaced.
void refuse_non_regular_target(const std::string& path) {
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0 || S_ISREG(st.st_mode)) return;
  const char* what = S_ISLNK(st.st_mode)    ? "a symbolic link (give the path of the file itself)"
                     : S_ISDIR(st.st_mode)  ? "a folder"
                     : S_ISFIFO(st.st_mode) ? "a FIFO (named pipe)"
                     : S_ISCHR(st.st_mode) || S_ISBLK(st.st_mode) ? "a device"
                     : S_ISSOCK(st.st_mode) ? "a socket"
                                            : "not a regular file";
  throw std::runtime_error(path + " is " + what + ": refusing to replace it with a file");
}

AtomicFile::AtomicFile(const std::string& path) : path_(path), tmp_(path + ".tmp-XXXXXX") {
  refuse_non_regular_target(path);
  fd_ = mkstemp(tmp_.data());
  if (fd_ < 0) fail(path, "cannot create a temporary file next to it");
  fchmod(fd_, 0644);
}

AtomicFile::~AtomicFile() {
  if (fd_ >= 0) ::close(fd_);
  if (!committed_) ::unlink(tmp_.c_str());
}

void AtomicFile::write(const void* data, size_t n) {
  const char* p = static_cast<const char*>(data);
  while (n > 0) {
    const ssize_t w = ::write(fd_, p, n);
    if (w < 0 && errno == EINTR) continue;
    if (w == 0) errno = ENOSPC;
    if (w <= 0) fail(path_, "write failed");
    p += w;
    n -= static_cast<size_t>(w);
  }
}

void AtomicFile::commit() {
  if (fsync(fd_) != 0) fail(path_, "fsync failed");
  const int fd = fd_;
  fd_ = -1;
  if (::close(fd) != 0) fail(path_, "close failed");
  if (std::rename(tmp_.c_str(), path_.c_str()) != 0) fail(path_, "cannot rename the temporary file");
  committed_ = true;
  // The rename itself reaches the disk with the folder's metadata.
  const std::string folder = std::filesystem::path(path_).parent_path().string();
  const int dir = ::open(folder.empty() ? "." : folder.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir >= 0) {
    ::fsync(dir);
    ::close(dir);
  }
}

void write_file_atomic(const std::string& path, const std::string& text) {
  AtomicFile out(path);
  out.write(text.data(), text.size());
  out.commit();
}

}  // namespace tb::checkpoint
