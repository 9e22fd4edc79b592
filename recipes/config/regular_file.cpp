#include "config/regular_file.h"

#include <filesystem>

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

}  // namespace tb::config
