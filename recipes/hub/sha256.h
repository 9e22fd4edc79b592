// SHA-256 through OpenSSL's libcrypto: what the Hub records for each LFS file (its etag), checked
// before a downloaded blob is kept.
#pragma once

#include <cstddef>
#include <filesystem>
#include <string>

namespace tb::hub {

class Sha256 {
 public:
  Sha256();
  ~Sha256();
  Sha256(const Sha256&) = delete;
  Sha256& operator=(const Sha256&) = delete;
  void update(const void* data, size_t size);
  std::string hex();  // the digest, lower-case hex; ends the hash

 private:
  void* ctx_;  // EVP_MD_CTX*
};

// The SHA-256 of a file's bytes, read in 1 MiB pieces.
std::string sha256_of_file(const std::filesystem::path& path);

}  // namespace tb::hub
