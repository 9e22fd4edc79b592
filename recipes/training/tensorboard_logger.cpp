#include "training/tensorboard_logger.h"

#include <fcntl.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <stdexcept>
#include <utility>
#include <vector>

namespace tb::training {
namespace {

// No small Debian C++ package provides CRC-32C (Boost.CRC would be a large dependency for one
// function), so this is the classic table-driven form over the reflected Castagnoli polynomial.
const std::array<uint32_t, 256>& crc32c_table() {
  static const std::array<uint32_t, 256> table = [] {
    std::array<uint32_t, 256> t{};
    for (uint32_t i = 0; i < 256; ++i) {
      uint32_t c = i;
      for (int bit = 0; bit < 8; ++bit) c = (c & 1) ? (c >> 1) ^ 0x82F63B78u : c >> 1;
      t[i] = c;
    }
    return t;
  }();
  return table;
}

// TFRecord stores a rotated CRC plus a constant, so that a CRC of bytes holding CRCs is not trivial.
uint32_t masked_crc32c(std::string_view bytes) {
  const uint32_t c = crc32c(bytes);
  return ((c >> 15) | (c << 17)) + 0xa282ead8u;
}

// The few protobuf fields written here are fixed (tensorflow/core/util/event.proto, summary.proto), so
// they are encoded by hand rather than through protobuf: each field is a key byte (field number << 3 |
// wire type: 0 varint, 1 64-bit, 2 length-delimited, 5 32-bit) and its value, little-endian.
//   Event:          wall_time = 1 (double), step = 2 (int64), file_version = 3 (string), summary = 5
//   Summary:        value = 1 (repeated Value)
//   Summary.Value:  tag = 1 (string), simple_value = 2 (float)
void put_varint(std::string& out, uint64_t v) {
  for (; v >= 0x80; v >>= 7) out += char((v & 0x7f) | 0x80);
  out += char(v);
}

template <class Bits>
void put_little_endian(std::string& out, Bits bits) {
  for (size_t i = 0; i < sizeof bits; ++i) out += char((bits >> (8 * i)) & 0xff);
}

void put_key(std::string& out, uint32_t field, uint32_t wire_type) { out += char((field << 3) | wire_type); }

void put_bytes(std::string& out, uint32_t field, std::string_view bytes) {
  put_key(out, field, 2);
  put_varint(out, bytes.size());
  out += bytes;
}

std::string event_header(double wall_time, int64_t step) {
  std::string e;
  uint64_t bits;
  std::memcpy(&bits, &wall_time, sizeof bits);
  put_key(e, 1, 1);
  put_little_endian(e, bits);
  if (step != 0) {  // proto3 leaves a default out
    put_key(e, 2, 0);
    put_varint(e, static_cast<uint64_t>(step));
  }
  return e;
}

std::string scalar_value(const std::string& tag, double value) {
  std::string v;
  put_bytes(v, 1, tag);
  const float f = static_cast<float>(value);
  uint32_t bits;
  std::memcpy(&bits, &f, sizeof bits);
  put_key(v, 2, 5);
  put_little_endian(v, bits);
  return v;
}

double unix_time() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

}  // namespace

uint32_t crc32c(std::string_view bytes) {
  const auto& table = crc32c_table();
  uint32_t c = 0xFFFFFFFFu;
  for (unsigned char b : bytes) c = table[(c ^ b) & 0xff] ^ (c >> 8);
  return c ^ 0xFFFFFFFFu;
}

std::string tfrecord_frame(std::string_view record) {
  std::string length;
  put_little_endian(length, static_cast<uint64_t>(record.size()));
  std::string frame = length;
  put_little_endian(frame, masked_crc32c(length));
  frame += record;
  put_little_endian(frame, masked_crc32c(record));
  return frame;
}

TensorBoardLogger::TensorBoardLogger(const std::string& log_dir, bool organize_logs) {
  const double now = unix_time();
  std::filesystem::path dir(log_dir);
  char name[64];
  if (organize_logs) {  // torchtune: os.path.join(log_dir, f"run_{rank}_{time.time()}")
    std::snprintf(name, sizeof name, "run_0_%.6f", now);
    dir /= name;
  }
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) throw std::runtime_error("cannot create the TensorBoard folder " + dir.string() + ": " + ec.message());
  char host[256] = {};
  if (gethostname(host, sizeof host - 1) != 0 || !host[0]) std::strcpy(host, "localhost");
  // torch's SummaryWriter names it so; TensorBoard reads any file whose name holds "tfevents".
  std::snprintf(name, sizeof name, "events.out.tfevents.%010lld.", static_cast<long long>(now));
  path_ = (dir / (name + std::string(host) + "." + std::to_string(getpid()) + ".0")).string();
  fd_ = ::open(path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd_ < 0) throw std::runtime_error("cannot open " + path_ + " for writing: " + std::strerror(errno));
  std::string first = event_header(now, 0);
  put_bytes(first, 3, "brain.Event:2");
  write_record(first);
}

TensorBoardLogger::~TensorBoardLogger() {
  if (fd_ >= 0) ::close(fd_);
}

void TensorBoardLogger::log_step(const StepMetrics& m) {
  std::vector<std::pair<std::string, double>> scalars = {
      {"loss", m.loss}, {"lr", m.lr}, {"tokens_per_second", m.tokens_per_second}, {"step_time_s", m.step_time_s}};
  if (m.peak_memory_gib > 0) scalars.emplace_back("peak_memory_gib", m.peak_memory_gib);
  std::string summary;
  for (const auto& [tag, value] : scalars) put_bytes(summary, 1, scalar_value(tag, value));
  std::string event = event_header(unix_time(), m.step);
  put_bytes(event, 5, summary);
  write_record(event);
}

// A whole frame per write(2) and no buffer of our own: a logged step is in the file when log_step
// returns (TensorBoard shows it live), and a run that stops or crashes leaves whole records only.
void TensorBoardLogger::write_record(const std::string& event) {
  const std::string frame = tfrecord_frame(event);
  std::lock_guard<std::mutex> lock(mutex_);
  for (size_t done = 0; done < frame.size();) {
    const ssize_t n = ::write(fd_, frame.data() + done, frame.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) throw std::runtime_error("cannot write " + path_ + ": " + std::strerror(errno));
    done += static_cast<size_t>(n);
  }
}

}  // namespace tb::training
