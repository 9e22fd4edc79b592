#include "training/output_lock.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <stdexcept>

namespace tb::training {

OutputDirLock::OutputDirLock(const std::string& output_dir) {
  std::error_code ec;
  std::filesystem::create_directories(output_dir, ec);
  if (ec) throw std::runtime_error("cannot create output_dir " + output_dir + ": " + ec.message());
  const std::string path = (std::filesystem::path(output_dir) / ".tunebench.lock").string();
  fd_ = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd_ < 0) throw std::runtime_error("cannot create " + path + ": " + std::strerror(errno));
  if (::flock(fd_, LOCK_EX | LOCK_NB) != 0) {
    const int why = errno;
    char pid[32] = {};
    const ssize_t n = ::pread(fd_, pid, sizeof pid - 1, 0);
    ::close(fd_);
    fd_ = -1;
    if (why == EWOULDBLOCK)
      throw std::runtime_error("output_dir " + output_dir + " is in use by another run" +
                               (n > 0 ? " (pid " + std::string(pid, static_cast<size_t>(n)) + ")" : std::string()) +
                               "; give this run another output_dir, or wait for that one to end");
    throw std::runtime_error("cannot lock " + path + ": " + std::strerror(why));
  }
  const std::string mine = std::to_string(::getpid());
  if (::ftruncate(fd_, 0) == 0 && ::pwrite(fd_, mine.data(), mine.size(), 0) < 0) {
    // The pid is only for the other run's message; the lock itself holds.
  }
}

bool output_dir_in_use(const std::string& output_dir) {
  const std::string path = (std::filesystem::path(output_dir) / ".tunebench.lock").string();
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  // A lock of our own on a new open file description conflicts with any holder's, in this process too.
  const bool held = ::flock(fd, LOCK_SH | LOCK_NB) != 0 && errno == EWOULDBLOCK;
  ::close(fd);  // drops the shared lock when it was taken
  return held;
}

OutputDirLock::~OutputDirLock() {
  if (fd_ >= 0) ::close(fd_);  // releases the lock
}

}  // namespace tb::training
