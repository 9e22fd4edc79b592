#include "data/parquet_thrift.h"

#include <functional>

namespace tb::data::parquet {

namespace {

// Compact-protocol wire types.
enum : uint8_t {
  T_STOP = 0, T_TRUE = 1, T_FALSE = 2, T_BYTE = 3, T_I16 = 4, T_I32 = 5, T_I64 = 6,
  T_DOUBLE = 7, T_BINARY = 8, T_LIST = 9, T_SET = 10, T_MAP = 11, T_STRUCT = 12
};

// Deeper than any real footer (LogicalType inside SchemaElement inside FileMetaData is 3): a file
// nesting structs further is hostile, and recursion must not follow it.
constexpr int kMaxDepth = 32;

class CompactReader {
 public:
  CompactReader(const uint8_t* data, size_t size) : p_(data), end_(data + size), begin_(data) {}

  size_t consumed() const { return static_cast<size_t>(p_ - begin_); }
  size_t left() const { return static_cast<size_t>(end_ - p_); }

  uint8_t byte() {
    if (p_ >= end_) throw ThriftError("metadata ends in the middle of a value");
    return *p_++;
  }

  uint64_t varint() {
    uint64_t v = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      const uint8_t b = byte();
      v |= static_cast<uint64_t>(b & 0x7f) << shift;
      if (!(b & 0x80)) return v;
    }
    throw ThriftError("metadata holds a varint longer than 10 bytes");
  }

  int64_t zigzag() {
    const uint64_t u = varint();
    return static_cast<int64_t>(u >> 1) ^ -static_cast<int64_t>(u & 1);
  }

  int32_t i32() {
    const int64_t v = zigzag();
    if (v < INT32_MIN || v > INT32_MAX) throw ThriftError("metadata holds an i32 out of range");
    return static_cast<int32_t>(v);
  }

  std::string binary() {
    const uint64_t n = varint();
    if (n > left()) throw ThriftError("metadata string of " + std::to_string(n) + " bytes, only " + std::to_string(left()) + " left");
    std::string s(reinterpret_cast<const char*>(p_), static_cast<size_t>(n));
    p_ += n;
    return s;
  }

  // A list header: element count (checked: each element takes at least one byte, except booleans
  // of a struct... which also take one) and element type.
  std::pair<size_t, uint8_t> list_header() {
    const uint8_t h = byte();
    uint64_t n = h >> 4;
    if (n == 15) n = varint();
    if (n > left()) throw ThriftError("metadata list of " + std::to_string(n) + " elements, only " + std::to_string(left()) + " bytes left");
    return {static_cast<size_t>(n), static_cast<uint8_t>(h & 0x0f)};
  }

  void skip(uint8_t type, int depth) {
    if (depth > kMaxDepth) throw ThriftError("metadata nests deeper than " + std::to_string(kMaxDepth) + " levels");
    switch (type) {
      case T_TRUE: case T_FALSE: return;  // a struct field's boolean lives in its header
      case T_BYTE: byte(); return;
      case T_I16: case T_I32: case T_I64: varint(); return;
      case T_DOUBLE: advance(8); return;
      case T_BINARY: { const uint64_t n = varint(); advance(n); return; }
      case T_LIST: case T_SET: {
        auto [n, et] = list_header();
        for (size_t i = 0; i < n; ++i) {
          if (et == T_TRUE || et == T_FALSE) byte();  // in a list each boolean is one byte
          else skip(et, depth + 1);
        }
        return;
      }
      case T_MAP: {
        const uint64_t n = varint();
        if (n == 0) return;
        if (n > left()) throw ThriftError("metadata map of " + std::to_string(n) + " entries, only " + std::to_string(left()) + " bytes left");
        const uint8_t kv = byte();
        for (uint64_t i = 0; i < n; ++i) {
          skip_element(kv >> 4, depth + 1);
          skip_element(kv & 0x0f, depth + 1);
        }
        return;
      }
      case T_STRUCT: read_struct(depth + 1, [](int16_t, uint8_t) { return false; }); return;
      default: throw ThriftError("metadata holds an unknown Thrift type " + std::to_string(type));
    }
  }

  // Reads the fields of a struct up to its STOP; `field(id, type)` reads the ones it knows and returns
  // false for the others, which are skipped.
  void read_struct(int depth, const std::function<bool(int16_t, uint8_t)>& field) {
    if (depth > kMaxDepth) throw ThriftError("metadata nests deeper than " + std::to_string(kMaxDepth) + " levels");
    int16_t last_id = 0;
    for (;;) {
      const uint8_t h = byte();
      const uint8_t type = h & 0x0f;
      if (type == T_STOP) return;
      int16_t id;
      if (h >> 4) id = static_cast<int16_t>(last_id + (h >> 4));
      else {
        const int64_t v = zigzag();
        if (v < INT16_MIN || v > INT16_MAX) throw ThriftError("metadata field id out of range");
        id = static_cast<int16_t>(v);
      }
      last_id = id;
      if (!field(id, type)) skip(type, depth);
    }
  }

  // Typed reads of a field whose header said `type`; a type that does not match parquet.thrift is an error.
  int32_t field_i32(uint8_t type) { expect(type, T_I32, "i32"); return i32(); }
  int64_t field_i64(uint8_t type) { expect(type, T_I64, "i64"); return zigzag(); }
  int8_t field_i8(uint8_t type) {
    expect(type, T_BYTE, "byte");
    return static_cast<int8_t>(byte());
  }
  bool field_bool(uint8_t type) {
    if (type != T_TRUE && type != T_FALSE) throw ThriftError("metadata field has the wrong type (expected bool)");
    return type == T_TRUE;
  }
  std::string field_string(uint8_t type) { expect(type, T_BINARY, "string"); return binary(); }
  void field_struct(uint8_t type, int depth, const std::function<bool(int16_t, uint8_t)>& f) {
    expect(type, T_STRUCT, "struct");
    read_struct(depth + 1, f);
  }
  // A list field: `element(element_type)` reads one element.
  void field_list(uint8_t type, const std::function<void(uint8_t)>& element) {
    if (type != T_LIST && type != T_SET) throw ThriftError("metadata field has the wrong type (expected list)");
    auto [n, et] = list_header();
    for (size_t i = 0; i < n; ++i) element(et);
  }

 private:
  void advance(uint64_t n) {
    if (n > left()) throw ThriftError("metadata ends in the middle of a value");
    p_ += n;
  }
  void skip_element(uint8_t type, int depth) {
    if (type == T_TRUE || type == T_FALSE) byte();
    else skip(type, depth);
  }
  static void expect(uint8_t got, uint8_t want, const char* what) {
    if (got != want) throw ThriftError(std::string("metadata field has the wrong type (expected ") + what + ")");
  }

  const uint8_t* p_;
  const uint8_t* end_;
  const uint8_t* begin_;
};

using Field = std::function<bool(int16_t, uint8_t)>;

LogicalType read_logical_type(CompactReader& r, uint8_t type, int depth) {
  LogicalType lt;
  using K = LogicalType::Kind;
  r.field_struct(type, depth, [&](int16_t id, uint8_t t) {
    switch (id) {
      case 1: lt.kind = K::STRING; return false;
      case 2: lt.kind = K::MAP; return false;
      case 3: lt.kind = K::LIST; return false;
      case 4: lt.kind = K::ENUM; return false;
      case 5:
        lt.kind = K::DECIMAL;
        r.field_struct(t, depth + 1, [&](int16_t i, uint8_t tt) {
          if (i == 1) { lt.decimal_scale = r.field_i32(tt); return true; }
          if (i == 2) { lt.decimal_precision = r.field_i32(tt); return true; }
          return false;
        });
        return true;
      case 6: lt.kind = K::DATE; return false;
      case 7: lt.kind = K::TIME; return false;
      case 8: lt.kind = K::TIMESTAMP; return false;
      case 10:
        lt.kind = K::INTEGER;
        r.field_struct(t, depth + 1, [&](int16_t i, uint8_t tt) {
          if (i == 1) { lt.int_bit_width = r.field_i8(tt); return true; }
          if (i == 2) { lt.int_signed = r.field_bool(tt); return true; }
          return false;
        });
        return true;
      case 11: lt.kind = K::UNKNOWN; return false;
      case 12: lt.kind = K::JSON; return false;
      case 13: lt.kind = K::BSON; return false;
      case 14: lt.kind = K::UUID; return false;
      case 15: lt.kind = K::FLOAT16; return false;
      default: lt.kind = K::OTHER; return false;
    }
  });
  return lt;
}

SchemaElement read_schema_element(CompactReader& r, uint8_t type, int depth) {
  SchemaElement e;
  bool has_name = false;
  r.field_struct(type, depth, [&](int16_t id, uint8_t t) {
    switch (id) {
      case 1: e.type = static_cast<PhysicalType>(r.field_i32(t)); return true;
      case 2: e.type_length = r.field_i32(t); return true;
      case 3: e.repetition = static_cast<Repetition>(r.field_i32(t)); return true;
      case 4: e.name = r.field_string(t); has_name = true; return true;
      case 5: e.num_children = r.field_i32(t); return true;
      case 6: e.converted_type = static_cast<ConvertedType>(r.field_i32(t)); return true;
      case 7: e.scale = r.field_i32(t); return true;
      case 8: e.precision = r.field_i32(t); return true;
      case 10: e.logical = read_logical_type(r, t, depth + 1); return true;
      default: return false;
    }
  });
  if (!has_name) throw ThriftError("a schema element has no name");
  return e;
}

ColumnMetaData read_column_meta(CompactReader& r, uint8_t type, int depth) {
  ColumnMetaData m;
  r.field_struct(type, depth, [&](int16_t id, uint8_t t) {
    switch (id) {
      case 1: m.type = static_cast<PhysicalType>(r.field_i32(t)); return true;
      case 3: r.field_list(t, [&](uint8_t et) { m.path_in_schema.push_back(r.field_string(et)); }); return true;
      case 4: m.codec = static_cast<Codec>(r.field_i32(t)); return true;
      case 5: m.num_values = r.field_i64(t); return true;
      case 6: m.total_uncompressed_size = r.field_i64(t); return true;
      case 7: m.total_compressed_size = r.field_i64(t); return true;
      case 9: m.data_page_offset = r.field_i64(t); return true;
      case 11: m.dictionary_page_offset = r.field_i64(t); return true;
      default: return false;
    }
  });
  return m;
}

ColumnChunk read_column_chunk(CompactReader& r, uint8_t type, int depth) {
  ColumnChunk c;
  r.field_struct(type, depth, [&](int16_t id, uint8_t t) {
    switch (id) {
      case 1: c.file_path = r.field_string(t); return true;
      case 2: c.file_offset = r.field_i64(t); return true;
      case 3: c.meta = read_column_meta(r, t, depth + 1); return true;
      default: return false;
    }
  });
  return c;
}

RowGroup read_row_group(CompactReader& r, uint8_t type, int depth) {
  RowGroup g;
  r.field_struct(type, depth, [&](int16_t id, uint8_t t) {
    switch (id) {
      case 1: r.field_list(t, [&](uint8_t et) { g.columns.push_back(read_column_chunk(r, et, depth + 1)); }); return true;
      case 2: g.total_byte_size = r.field_i64(t); return true;
      case 3: g.num_rows = r.field_i64(t); return true;
      default: return false;
    }
  });
  return g;
}

}  // namespace

FileMetaData parse_file_metadata(const uint8_t* data, size_t size) {
  CompactReader r(data, size);
  FileMetaData fm;
  r.read_struct(0, [&](int16_t id, uint8_t t) {
    switch (id) {
      case 1: fm.version = r.field_i32(t); return true;
      case 2: r.field_list(t, [&](uint8_t et) { fm.schema.push_back(read_schema_element(r, et, 1)); }); return true;
      case 3: fm.num_rows = r.field_i64(t); return true;
      case 4: r.field_list(t, [&](uint8_t et) { fm.row_groups.push_back(read_row_group(r, et, 1)); }); return true;
      case 6: fm.created_by = r.field_string(t); return true;
      default: return false;
    }
  });
  if (fm.schema.empty()) throw ThriftError("the footer has no schema");
  return fm;
}

PageHeader parse_page_header(const uint8_t* data, size_t size, size_t* consumed) {
  CompactReader r(data, size);
  PageHeader h;
  r.read_struct(0, [&](int16_t id, uint8_t t) {
    switch (id) {
      case 1: h.type = static_cast<PageType>(r.field_i32(t)); return true;
      case 2: h.uncompressed_page_size = r.field_i32(t); return true;
      case 3: h.compressed_page_size = r.field_i32(t); return true;
      case 5: {
        DataPageHeader d;
        r.field_struct(t, 1, [&](int16_t i, uint8_t tt) {
          switch (i) {
            case 1: d.num_values = r.field_i32(tt); return true;
            case 2: d.encoding = static_cast<Encoding>(r.field_i32(tt)); return true;
            case 3: d.definition_level_encoding = static_cast<Encoding>(r.field_i32(tt)); return true;
            case 4: d.repetition_level_encoding = static_cast<Encoding>(r.field_i32(tt)); return true;
            default: return false;
          }
        });
        h.data_page = d;
        return true;
      }
      case 7: {
        DictionaryPageHeader d;
        r.field_struct(t, 1, [&](int16_t i, uint8_t tt) {
          if (i == 1) { d.num_values = r.field_i32(tt); return true; }
          if (i == 2) { d.encoding = static_cast<Encoding>(r.field_i32(tt)); return true; }
          return false;
        });
        h.dictionary_page = d;
        return true;
      }
      case 8: {
        DataPageHeaderV2 d;
        r.field_struct(t, 1, [&](int16_t i, uint8_t tt) {
          switch (i) {
            case 1: d.num_values = r.field_i32(tt); return true;
            case 2: d.num_nulls = r.field_i32(tt); return true;
            case 3: d.num_rows = r.field_i32(tt); return true;
            case 4: d.encoding = static_cast<Encoding>(r.field_i32(tt)); return true;
            case 5: d.definition_levels_byte_length = r.field_i32(tt); return true;
            case 6: d.repetition_levels_byte_length = r.field_i32(tt); return true;
            case 7: d.is_compressed = r.field_bool(tt); return true;
            default: return false;
          }
        });
        h.data_page_v2 = d;
        return true;
      }
      default: return false;
    }
  });
  *consumed = r.consumed();
  return h;
}

std::string to_string(Encoding e) {
  switch (e) {
    case Encoding::PLAIN: return "PLAIN";
    case Encoding::PLAIN_DICTIONARY: return "PLAIN_DICTIONARY";
    case Encoding::RLE: return "RLE";
    case Encoding::BIT_PACKED: return "BIT_PACKED";
    case Encoding::DELTA_BINARY_PACKED: return "DELTA_BINARY_PACKED";
    case Encoding::DELTA_LENGTH_BYTE_ARRAY: return "DELTA_LENGTH_BYTE_ARRAY";
    case Encoding::DELTA_BYTE_ARRAY: return "DELTA_BYTE_ARRAY";
    case Encoding::RLE_DICTIONARY: return "RLE_DICTIONARY";
    case Encoding::BYTE_STREAM_SPLIT: return "BYTE_STREAM_SPLIT";
  }
  return "encoding " + std::to_string(static_cast<int32_t>(e));
}

std::string to_string(Codec c) {
  switch (c) {
    case Codec::UNCOMPRESSED: return "UNCOMPRESSED";
    case Codec::SNAPPY: return "SNAPPY";
    case Codec::GZIP: return "GZIP";
    case Codec::LZO: return "LZO";
    case Codec::BROTLI: return "BROTLI";
    case Codec::LZ4: return "LZ4";
    case Codec::ZSTD: return "ZSTD";
    case Codec::LZ4_RAW: return "LZ4_RAW";
  }
  return "codec " + std::to_string(static_cast<int32_t>(c));
}

std::string to_string(PhysicalType t) {
  switch (t) {
    case PhysicalType::BOOLEAN: return "BOOLEAN";
    case PhysicalType::INT32: return "INT32";
    case PhysicalType::INT64: return "INT64";
    case PhysicalType::INT96: return "INT96";
    case PhysicalType::FLOAT: return "FLOAT";
    case PhysicalType::DOUBLE: return "DOUBLE";
    case PhysicalType::BYTE_ARRAY: return "BYTE_ARRAY";
    case PhysicalType::FIXED_LEN_BYTE_ARRAY: return "FIXED_LEN_BYTE_ARRAY";
  }
  return "type " + std::to_string(static_cast<int32_t>(t));
}

}  // namespace tb::data::parquet
