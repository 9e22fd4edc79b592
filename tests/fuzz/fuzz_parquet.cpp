// libFuzzer target: a whole Parquet file's bytes, read as a `source: parquet` dataset reads it
// (data/parquet_reader.h): the footer, then every row group and column. Refusals are ParquetError naming
// the file; crashes, hangs and memory out of proportion to the input are findings. The reader opens a
// path (it reads column chunks at their offsets), so each input is written to one temporary file first.
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <string>

#include "data/parquet_reader.h"

namespace {

const std::string& scratch_file() {
  static const std::string path = [] {
    char name[] = "/tmp/fuzz_parquet_XXXXXX";
    const int fd = ::mkstemp(name);
    if (fd >= 0) ::close(fd);
    return std::string(name);
  }();
  return path;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string& path = scratch_file();
  if (FILE* f = std::fopen(path.c_str(), "wb")) {
    std::fwrite(data, 1, size, f);
    std::fclose(f);
  } else {
    return 0;
  }
  try {
    tb::data::ParquetFile file(path, "fuzz.parquet");
    for (size_t g = 0; g < file.num_row_groups(); ++g) {
      const auto rows = file.read_row_group(g);
      (void)rows;
    }
  } catch (const tb::data::ParquetError&) {
  }
  return 0;
}
