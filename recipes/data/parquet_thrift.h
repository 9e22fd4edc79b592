// The Parquet footer and page headers: a Thrift compact-protocol decoder of our own, and the few
// metadata structs the reader needs (parquet.thrift, reduced). Written here rather than generated
// by Thrift so that every length and count is checked against the bytes that are actually there and
// nesting is bounded: a hostile file gets a ThriftError, never a huge allocation or a deep recursion.
// Fields the reader does not use (statistics, indexes, encryption, ...) are skipped, not parsed.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace tb::data::parquet {

// What is wrong with the bytes, without the file name (the reader adds it).
struct ThriftError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

enum class PhysicalType : int32_t {
  BOOLEAN = 0, INT32 = 1, INT64 = 2, INT96 = 3, FLOAT = 4, DOUBLE = 5, BYTE_ARRAY = 6, FIXED_LEN_BYTE_ARRAY = 7
};
enum class Repetition : int32_t { REQUIRED = 0, OPTIONAL = 1, REPEATED = 2 };
enum class Encoding : int32_t {
  PLAIN = 0, PLAIN_DICTIONARY = 2, RLE = 3, BIT_PACKED = 4, DELTA_BINARY_PACKED = 5,
  DELTA_LENGTH_BYTE_ARRAY = 6, DELTA_BYTE_ARRAY = 7, RLE_DICTIONARY = 8, BYTE_STREAM_SPLIT = 9
};
enum class Codec : int32_t {
  UNCOMPRESSED = 0, SNAPPY = 1, GZIP = 2, LZO = 3, BROTLI = 4, LZ4 = 5, ZSTD = 6, LZ4_RAW = 7
};
enum class PageType : int32_t { DATA_PAGE = 0, INDEX_PAGE = 1, DICTIONARY_PAGE = 2, DATA_PAGE_V2 = 3 };
// The legacy ConvertedType values the reader looks at.
enum class ConvertedType : int32_t {
  UTF8 = 0, MAP = 1, MAP_KEY_VALUE = 2, LIST = 3, ENUM = 4, DECIMAL = 5, DATE = 6,
  UINT_8 = 11, UINT_16 = 12, UINT_32 = 13, UINT_64 = 14, INT_8 = 15, INT_16 = 16, INT_32 = 17, INT_64 = 18,
  JSON = 19, BSON = 20
};

std::string to_string(Encoding e);
std::string to_string(Codec c);
std::string to_string(PhysicalType t);

// The LogicalType union, flattened to the member that is set and what the reader uses of it.
struct LogicalType {
  enum class Kind { NONE, STRING, MAP, LIST, ENUM, DECIMAL, DATE, TIME, TIMESTAMP, INTEGER, UNKNOWN, JSON, BSON, UUID, FLOAT16, OTHER };
  Kind kind = Kind::NONE;
  int32_t decimal_scale = 0;
  int32_t decimal_precision = 0;
  int8_t int_bit_width = 0;
  bool int_signed = true;
};

struct SchemaElement {
  std::optional<PhysicalType> type;  // absent for groups
  int32_t type_length = 0;
  std::optional<Repetition> repetition;  // absent only for the root
  std::string name;
  int32_t num_children = 0;
  std::optional<ConvertedType> converted_type;
  int32_t scale = 0;
  int32_t precision = 0;
  LogicalType logical;
};

struct ColumnMetaData {
  PhysicalType type = PhysicalType::BOOLEAN;
  std::vector<std::string> path_in_schema;
  Codec codec = Codec::UNCOMPRESSED;
  int64_t num_values = 0;
  int64_t total_uncompressed_size = 0;
  int64_t total_compressed_size = 0;
  int64_t data_page_offset = 0;
  std::optional<int64_t> dictionary_page_offset;
};

struct ColumnChunk {
  std::string file_path;  // set when the chunk lives in another file (not supported)
  int64_t file_offset = 0;
  std::optional<ColumnMetaData> meta;
};

struct RowGroup {
  std::vector<ColumnChunk> columns;
  int64_t total_byte_size = 0;
  int64_t num_rows = 0;
};

struct FileMetaData {
  int32_t version = 0;
  std::vector<SchemaElement> schema;  // depth-first, the root first
  int64_t num_rows = 0;
  std::vector<RowGroup> row_groups;
  std::string created_by;
};

struct DataPageHeader {
  int32_t num_values = 0;
  Encoding encoding = Encoding::PLAIN;
  Encoding definition_level_encoding = Encoding::RLE;
  Encoding repetition_level_encoding = Encoding::RLE;
};

struct DataPageHeaderV2 {
  int32_t num_values = 0;
  int32_t num_nulls = 0;
  int32_t num_rows = 0;
  Encoding encoding = Encoding::PLAIN;
  int32_t definition_levels_byte_length = 0;
  int32_t repetition_levels_byte_length = 0;
  bool is_compressed = true;
};

struct DictionaryPageHeader {
  int32_t num_values = 0;
  Encoding encoding = Encoding::PLAIN;
};

struct PageHeader {
  PageType type = PageType::DATA_PAGE;
  int32_t uncompressed_page_size = 0;
  int32_t compressed_page_size = 0;
  std::optional<DataPageHeader> data_page;
  std::optional<DictionaryPageHeader> dictionary_page;
  std::optional<DataPageHeaderV2> data_page_v2;
};

// Decodes the footer (the FileMetaData struct, exactly `size` bytes).
FileMetaData parse_file_metadata(const uint8_t* data, size_t size);
// Decodes one page header at the start of `data`; `*consumed` is set to its length in bytes.
PageHeader parse_page_header(const uint8_t* data, size_t size, size_t* consumed);

}  // namespace tb::data::parquet
