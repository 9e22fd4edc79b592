#include "hub/blob_writer.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace tb::hub {

namespace {

constexpr size_t kPiece = size_t(256) << 10;
constexpr size_t kQueued = 16;

// All of `data` to `fd`, through short writes and signals; errno on failure.
bool write_all(int fd, const char* data, size_t size) {
  while (size > 0) {
    const ssize_t n = ::write(fd, data, size);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      if (n == 0) errno = EIO;
      return false;
    }
    data += n;
    size -= size_t(n);
  }
  return true;
}

}  // namespace

BlobWriter::BlobWriter(const std::filesystem::path& path, bool append, bool hash, int64_t hash_from_disk)
    : path_(path), hash_from_disk_(append ? hash_from_disk : 0) {
  fd_ = ::open(path.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC | (append ? O_APPEND : O_TRUNC), 0644);
  if (fd_ < 0) {
    failed_ = true;
    error_ = std::strerror(errno);
    return;
  }
  if (hash) hash_ = std::make_unique<Sha256>();
  filling_.reserve(kPiece);
  thread_ = std::thread([this] { run(); });
}

BlobWriter::~BlobWriter() {
  if (!finished_) finish();
}

void BlobWriter::push(std::vector<char>&& piece) {
  std::unique_lock<std::mutex> lock(mutex_);
  changed_.wait(lock, [&] { return queue_.size() < kQueued || failed_; });
  if (!failed_) queue_.push_back(std::move(piece));
  changed_.notify_all();
}

bool BlobWriter::write(const char* data, size_t size) {
  while (size > 0) {
    const size_t take = std::min(size, kPiece - filling_.size());
    filling_.insert(filling_.end(), data, data + take);
    data += take;
    size -= take;
    if (filling_.size() == kPiece) {
      push(std::move(filling_));
      std::lock_guard<std::mutex> lock(mutex_);
      if (!spare_.empty()) {
        filling_ = std::move(spare_.back());
        spare_.pop_back();
      } else {
        filling_ = std::vector<char>();
        filling_.reserve(kPiece);
      }
    }
  }
  std::lock_guard<std::mutex> lock(mutex_);
  return !failed_;
}

bool BlobWriter::finish() {
  if (finished_) return !failed_;
  finished_ = true;
  if (thread_.joinable()) {
    if (!filling_.empty()) push(std::move(filling_));
    {
      std::lock_guard<std::mutex> lock(mutex_);
      closing_ = true;
    }
    changed_.notify_all();
    thread_.join();
  }
  if (fd_ >= 0 && ::close(fd_) != 0 && !failed_) {
    failed_ = true;
    error_ = std::strerror(errno);
  }
  fd_ = -1;
  if (!failed_ && hash_) digest_ = hash_->hex();
  return !failed_;
}

void BlobWriter::run() {
  const auto fail = [&](const std::string& why) {
    std::lock_guard<std::mutex> lock(mutex_);
    failed_ = true;
    error_ = why;
    queue_.clear();
    changed_.notify_all();
  };
  if (hash_ && hash_from_disk_ > 0) {  // a resumed file: the part from an earlier try
    try {
      std::vector<char> buffer(size_t(1) << 20);
      const int in = ::open(path_.c_str(), O_RDONLY | O_CLOEXEC);
      int64_t left = hash_from_disk_;
      while (in >= 0 && left > 0) {
        const ssize_t n = ::read(in, buffer.data(), size_t(std::min<int64_t>(left, int64_t(buffer.size()))));
        if (n <= 0) break;
        hash_->update(buffer.data(), size_t(n));
        left -= n;
      }
      if (in >= 0) ::close(in);
      if (left > 0) return fail("cannot read back the part downloaded before");
    } catch (const std::exception& e) {
      return fail(e.what());
    }
  }
  for (;;) {
    std::vector<char> piece;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      changed_.wait(lock, [&] { return !queue_.empty() || closing_ || failed_; });
      if (failed_ || queue_.empty()) return;  // closing, everything written
      piece = std::move(queue_.front());
      queue_.pop_front();
      changed_.notify_all();
    }
    if (!write_all(fd_, piece.data(), piece.size())) return fail(std::strerror(errno));
    if (hash_) hash_->update(piece.data(), piece.size());
    piece.clear();
    std::lock_guard<std::mutex> lock(mutex_);
    spare_.push_back(std::move(piece));
  }
}

}  // namespace tb::hub
