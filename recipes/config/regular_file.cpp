#include "config/regular_file.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <stdexcept>

namespace tb::config {

std::optional<std::string> not_a_regular_file(const std::string& path) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const auto type = fs::status(path, ec).type();
  if (ec || type == fs::file_type::not_found || type == fs::file_type::regular) return std::nullopt;
  std::string what = "is not a regular file";
  if (type == fs::file_type::directory) what = "is a folder, not a file";
  if (type == fs::file_type::fifo) what = "is a FIFO (named pipe), not a file: reading it would wait for a writer";
  if (type == fs::file_type::character || type == fs::file_type::block) what = "is a device, not a file";
  if (type == fs::file_type::socket) what = "is a socket, not a file";
  return what;
}

std::string byte_size_text(uint64_t bytes) {
  char text[32];
  if (bytes >= (uint64_t(1) << 30)) std::snprintf(text, sizeof text, "%.1f GiB", double(bytes) / double(uint64_t(1) << 30));
  else if (bytes >= (uint64_t(1) << 20)) std::snprintf(text, sizeof text, "%.0f MiB", double(bytes) / double(uint64_t(1) << 20));
  else std::snprintf(text, sizeof text, "%llu bytes", static_cast<unsigned long long>(bytes));
  return text;
}

std::string read_input_file(const std::string& path, uint64_t max_bytes) {
  if (const auto what = not_a_regular_file(path)) throw std::runtime_error(path + ": " + *what);
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error(path + ": cannot open: " + std::strerror(errno));
  std::string text;
  char buffer[1 << 16];
  while (in.read(buffer, sizeof buffer) || in.gcount() > 0) {
    text.append(buffer, static_cast<size_t>(in.gcount()));
    if (text.size() > max_bytes)
      throw std::runtime_error(path + ": larger than " + byte_size_text(max_bytes) + ", more than such a file can be");
  }
  if (in.bad()) throw std::runtime_error(path + ": cannot read: " + std::strerror(errno));
  return text;
}

bool read_bounded_line(std::istream& in, std::string& line, size_t max_bytes, bool& too_long) {
  line.clear();
  too_long = false;
  bool any = false;
  std::streambuf* buf = in.rdbuf();
  for (int c = buf->sbumpc(); c != std::char_traits<char>::eof(); c = buf->sbumpc()) {
    any = true;
    if (c == '\n') break;
    if (too_long) continue;
    if (line.size() >= max_bytes) {
      too_long = true;
      std::string().swap(line);
      continue;
    }
    line.push_back(static_cast<char>(c));
  }
  if (!any) {
    in.setstate(std::ios::eofbit);
    return false;
  }
  if (!line.empty() && line.back() == '\r') line.pop_back();
  return true;
}

}  // namespace tb::config
