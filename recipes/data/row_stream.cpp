#include "data/row_stream.h"

#include <sys/stat.h>

#include <chrono>
#include <cmath>
#include <cstdio>

#include "config/interrupt.h"

namespace tb::data {
namespace {

thread_local const ReadProgressScope* t_scope = nullptr;

double now_seconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

uint64_t file_size(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode) ? uint64_t(st.st_size) : 0;
}

// 1234567 -> "1,234,567": row counts of large datasets read at a glance.
std::string grouped(uint64_t n) {
  std::string digits = std::to_string(n), out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return out;
}

// "42 s", "2 min 8 s", "1 h 5 min"
std::string duration_text(double seconds) {
  const auto s = uint64_t(std::ceil(seconds));
  char buf[48];
  if (s < 90) std::snprintf(buf, sizeof buf, "%llu s", (unsigned long long)s);
  else if (s < 5400) std::snprintf(buf, sizeof buf, "%llu min %llu s", (unsigned long long)(s / 60), (unsigned long long)(s % 60));
  else std::snprintf(buf, sizeof buf, "%llu h %llu min", (unsigned long long)(s / 3600), (unsigned long long)(s / 60 % 60));
  return buf;
}

}  // namespace

bool RowVectorReader::next(Row& row) {
  if (at_ >= rows_.size()) return false;
  row = std::move(rows_[at_++]);
  return true;
}

uint64_t RowVectorReader::bytes_read() const {
  return rows_.empty() ? file_bytes_ : file_bytes_ * at_ / rows_.size();
}

std::string read_progress_text(const ReadProgress& p) {
  std::string text = grouped(p.rows) + " rows";
  if (p.bytes_total > 0 && !p.done) text += " (" + std::to_string(p.bytes_read * 100 / p.bytes_total) + "%)";
  if (p.seconds > 0.05) text += ", " + grouped(uint64_t(double(p.rows) / p.seconds)) + " rows/s";
  if (!p.done && p.bytes_total > 0 && p.bytes_read > 0 && p.seconds > 0.05) {
    const double left = p.seconds * double(p.bytes_total - std::min(p.bytes_read, p.bytes_total)) / double(p.bytes_read);
    text += ", about " + duration_text(left) + " left";
  }
  if (p.done) text += " in " + duration_text(p.seconds);
  return text;
}

ReadProgressScope::ReadProgressScope(ReadProgressSink sink, double interval)
    : previous_(t_scope), sink_(std::move(sink)), interval_(interval) {
  t_scope = this;
}

ReadProgressScope::~ReadProgressScope() { t_scope = previous_; }

RowStream::RowStream(std::vector<std::string> paths, std::vector<std::string> names, Opener open)
    : paths_(std::move(paths)), names_(std::move(names)), open_(std::move(open)), start_(now_seconds()) {
  for (const auto& p : paths_) bytes_total_ += file_size(p);
  last_report_ = start_;
}

bool RowStream::next(Row& row) {
  while (true) {
    if (!reader_) {
      if (file_ >= paths_.size()) {
        report(true);
        return false;
      }
      reader_ = open_(paths_[file_], names_[file_]);
    }
    if ((rows_ & 1023) == 0) config::check_interrupt();  // a stop asked for while a large dataset is read
    if (reader_->next(row)) {
      if ((++rows_ & 0xFFFF) == 0) report(false);
      return true;
    }
    bytes_before_ += file_size(paths_[file_]);
    reader_.reset();
    ++file_;
  }
}

uint64_t RowStream::bytes_read() const { return bytes_before_ + (reader_ ? reader_->bytes_read() : 0); }

int64_t RowStream::count_rows() const {
  int64_t total = 0;
  for (size_t i = 0; i < paths_.size(); ++i) {
    auto reader = open_(paths_[i], names_[i]);
    const int64_t known = reader->known_rows();
    if (known >= 0) {
      total += known;
      continue;
    }
    Row row;
    while (reader->next(row)) {
      if ((++total & 1023) == 0) config::check_interrupt();
    }
  }
  return total;
}

void RowStream::report(bool done) {
  if (!t_scope || reported_done_) return;
  const double now = now_seconds();
  // Small datasets say nothing: a line only once reading has taken a while.
  if (!done && now - last_report_ < t_scope->interval()) return;
  if (done && now - start_ < t_scope->interval()) return;
  last_report_ = now;
  reported_done_ = done;
  ReadProgress p;
  p.files = paths_.size() == 1 ? names_[0] : std::to_string(paths_.size()) + " files";
  p.rows = rows_;
  p.bytes_read = bytes_read();
  p.bytes_total = bytes_total_;
  p.seconds = now - start_;
  p.done = done;
  t_scope->report(p);
}

bool SlicedRows::next(Row& row) {
  if (begin_ >= end_) return false;  // an empty slice reads nothing
  while (at_ < begin_) {
    if (!rows_->next(row)) return false;
    ++at_;
  }
  if (at_ >= end_ || !rows_->next(row)) return false;
  ++at_;
  return true;
}

bool ChainedRows::next(Row& row) {
  while (true) {
    if (!current_) {
      if (part_ >= parts_.size()) return false;
      current_ = parts_[part_++]();
    }
    if (current_->next(row)) return true;
    bytes_before_ += current_->bytes_read();
    current_.reset();
  }
}

}  // namespace tb::data
