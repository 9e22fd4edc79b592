// The pages of one Parquet column chunk, decoded into its repetition and definition levels and the
// list of its non-null values as JSON. Decompression (none, Snappy, gzip, zstd, LZ4_RAW, Brotli),
// the RLE/bit-packed hybrid, and the value encodings: PLAIN, dictionary, DELTA_BINARY_PACKED,
// DELTA_LENGTH_BYTE_ARRAY, DELTA_BYTE_ARRAY and BYTE_STREAM_SPLIT; data pages v1 and v2.
// Everything is read from a buffer the caller holds and checked against its size: a count or length
// a page claims is believed only as far as the bytes behind it go, so a corrupt page is a PageError
// and never a large allocation. Reassembling nested values from the levels is the reader's job.
#pragma once

#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "data/parquet_thrift.h"

namespace tb::data::parquet {

// What is wrong with a page, without file or column (the reader adds them).
struct PageError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// How a leaf's physical values become JSON: what its logical (or converted) type says.
enum class ValueKind { STRING, BOOLEAN, SIGNED, UNSIGNED, FLOAT, DOUBLE, DECIMAL };

struct LeafDescriptor {
  PhysicalType type = PhysicalType::INT32;
  int32_t type_length = 0;  // FIXED_LEN_BYTE_ARRAY only
  ValueKind kind = ValueKind::SIGNED;
  int32_t decimal_scale = 0;
  int max_def = 0;
  int max_rep = 0;
};

// One column chunk, decoded. `def` and `rep` are empty when the level can only be 0; `count` is the
// number of level entries (values and nulls); `values` holds the non-null values in order.
struct LeafData {
  size_t count = 0;
  std::vector<uint16_t> def;
  std::vector<uint16_t> rep;
  std::vector<nlohmann::ordered_json> values;
};

// Decodes the pages in `data` (the whole chunk, dictionary page first when there is one) until
// `num_values` level entries are read.
LeafData decode_column_chunk(const uint8_t* data, size_t size, const LeafDescriptor& leaf, Codec codec,
                             int64_t num_values);

// Exposed for the tests of the pieces.
std::vector<uint8_t> decompress(Codec codec, const uint8_t* src, size_t size, size_t uncompressed_size);

}  // namespace tb::data::parquet
