#include "data/parquet_pages.h"

#include <brotli/decode.h>
#include <lz4.h>
#include <snappy-c.h>
#include <zlib.h>
#include <zstd.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <memory>

namespace tb::data::parquet {

using json = nlohmann::ordered_json;

namespace {

std::string str(size_t n) { return std::to_string(n); }

uint32_t load_u32(const uint8_t* p) { return uint32_t(p[0]) | uint32_t(p[1]) << 8 | uint32_t(p[2]) << 16 | uint32_t(p[3]) << 24; }
uint64_t load_le(const uint8_t* p, int n) {
  uint64_t v = 0;
  for (int i = 0; i < n; ++i) v |= uint64_t(p[i]) << (8 * i);
  return v;
}

// `w` bits (at most 64) starting at bit `pos`, least significant bit first; the caller checked the bytes.
uint64_t read_bits(const uint8_t* p, uint64_t pos, int w) {
  uint64_t v = 0;
  for (int got = 0; got < w;) {
    const int off = int(pos & 7);
    const int take = std::min(8 - off, w - got);
    v |= uint64_t((p[pos >> 3] >> off) & ((1u << take) - 1)) << got;
    got += take;
    pos += take;
  }
  return v;
}

int bit_width_of(uint32_t max_value) {
  int w = 0;
  while (max_value >> w) ++w;
  return w;
}

// A cursor over bytes that throws instead of reading past them.
struct Bytes {
  const uint8_t* p;
  size_t n;
  size_t left() const { return n; }
  void need(size_t k, const char* what) const {
    if (k > n) throw PageError(std::string(what) + " needs " + str(k) + " bytes, only " + str(n) + " are left");
  }
  const uint8_t* take(size_t k, const char* what) {
    need(k, what);
    const uint8_t* q = p;
    p += k;
    n -= k;
    return q;
  }
  uint64_t varint() {
    uint64_t v = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      const uint8_t b = *take(1, "a varint");
      v |= uint64_t(b & 0x7f) << shift;
      if (!(b & 0x80)) return v;
    }
    throw PageError("a varint is longer than 10 bytes");
  }
  int64_t zigzag() {
    const uint64_t u = varint();
    return int64_t(u >> 1) ^ -int64_t(u & 1);
  }
};

// The RLE / bit-packed hybrid (levels, dictionary indices, RLE booleans); appends exactly `count`
// values or throws when the runs end first. Every run costs at least its header byte, so it terminates.
void decode_hybrid(Bytes in, int width, size_t count, std::vector<uint32_t>& out) {
  if (width < 0 || width > 32) throw PageError("bit width " + std::to_string(width) + " is over 32");
  out.reserve(out.size() + std::min(count, in.left() * 8 + 64));
  size_t done = 0;
  while (done < count) {
    if (in.left() == 0) throw PageError("the RLE/bit-packed runs end after " + str(done) + " of " + str(count) + " values");
    const uint64_t header = in.varint();
    if (header & 1) {
      const uint64_t groups = header >> 1;
      if (width > 0 && groups > in.left()) throw PageError("a bit-packed run of " + str(groups) + " groups is longer than the page");
      const size_t bytes = size_t(groups) * size_t(width);
      const uint8_t* data = in.take(bytes, "a bit-packed run");
      const size_t n = std::min<size_t>(size_t(groups) * 8, count - done);
      for (size_t i = 0; i < n; ++i) out.push_back(uint32_t(read_bits(data, uint64_t(i) * width, width)));
      done += n;
    } else {
      const uint64_t run = header >> 1;
      const uint8_t* v = in.take(size_t((width + 7) / 8), "an RLE run");
      const uint32_t value = uint32_t(load_le(v, (width + 7) / 8));
      const size_t n = size_t(std::min<uint64_t>(run, count - done));
      out.insert(out.end(), n, value);
      done += n;
    }
  }
}

// DELTA_BINARY_PACKED; appends the values (wrapping 64-bit arithmetic, which truncated to 32 bits is
// the INT32 arithmetic) and returns the bytes it used. `max_count` bounds the count its header claims.
size_t decode_delta(Bytes in, size_t max_count, std::vector<int64_t>& out) {
  const size_t start = in.left();
  const uint64_t block_size = in.varint();
  const uint64_t miniblocks = in.varint();
  const uint64_t total = in.varint();
  int64_t value = in.zigzag();
  if (block_size == 0 || block_size % 128 || miniblocks == 0 || block_size % miniblocks || (block_size / miniblocks) % 32)
    throw PageError("DELTA_BINARY_PACKED header has block size " + str(block_size) + " with " + str(miniblocks) + " miniblocks");
  if (total > max_count) throw PageError("DELTA_BINARY_PACKED claims " + str(total) + " values, the page holds " + str(max_count));
  const size_t per_mini = size_t(block_size / miniblocks);
  if (total == 0) return start - in.left();
  out.push_back(value);
  size_t done = 1;
  while (done < total) {
    const int64_t min_delta = in.zigzag();
    const uint8_t* widths = in.take(size_t(miniblocks), "DELTA_BINARY_PACKED bit widths");
    for (size_t m = 0; m < miniblocks && done < total; ++m) {
      const int w = widths[m];
      if (w > 64) throw PageError("DELTA_BINARY_PACKED bit width " + std::to_string(w) + " is over 64");
      const uint8_t* data = in.take(per_mini * size_t(w) / 8, "a DELTA_BINARY_PACKED miniblock");
      const size_t n = std::min(per_mini, size_t(total) - done);
      for (size_t i = 0; i < n; ++i) {
        value = int64_t(uint64_t(value) + uint64_t(min_delta) + read_bits(data, uint64_t(i) * w, w));
        out.push_back(value);
      }
      done += n;
    }
  }
  return start - in.left();
}

json int_value(int64_t v, const LeafDescriptor& leaf) {
  if (leaf.kind == ValueKind::UNSIGNED) {
    return leaf.type == PhysicalType::INT32 ? json(uint64_t(uint32_t(v))) : json(uint64_t(v));
  }
  if (leaf.kind == ValueKind::DECIMAL) return json(double(v) / std::pow(10.0, leaf.decimal_scale));
  return json(v);
}

json bytes_value(const uint8_t* p, size_t n, const LeafDescriptor&) {
  return json(std::string(reinterpret_cast<const char*>(p), n));
}

// PLAIN-encoded `count` values; returns the bytes used.
size_t decode_plain(Bytes in, size_t count, const LeafDescriptor& leaf, std::vector<json>& out) {
  const size_t start = in.left();
  auto fixed = [&](size_t width) {
    if (count > in.left() / width) throw PageError(str(count) + " PLAIN " + to_string(leaf.type) + " values need " + str(count * width) + " bytes, the page has " + str(in.left()));
  };
  switch (leaf.type) {
    case PhysicalType::BOOLEAN: {
      const uint8_t* d = in.take((count + 7) / 8, "PLAIN booleans");
      for (size_t i = 0; i < count; ++i) out.emplace_back(bool((d[i >> 3] >> (i & 7)) & 1));
      break;
    }
    case PhysicalType::INT32:
      fixed(4);
      for (size_t i = 0; i < count; ++i) out.push_back(int_value(int32_t(load_u32(in.take(4, "INT32"))), leaf));
      break;
    case PhysicalType::INT64:
      fixed(8);
      for (size_t i = 0; i < count; ++i) out.push_back(int_value(int64_t(load_le(in.take(8, "INT64"), 8)), leaf));
      break;
    case PhysicalType::FLOAT:
      fixed(4);
      for (size_t i = 0; i < count; ++i) {
        float f;
        std::memcpy(&f, in.take(4, "FLOAT"), 4);
        out.emplace_back(double(f));
      }
      break;
    case PhysicalType::DOUBLE:
      fixed(8);
      for (size_t i = 0; i < count; ++i) {
        double d;
        std::memcpy(&d, in.take(8, "DOUBLE"), 8);
        out.emplace_back(d);
      }
      break;
    case PhysicalType::BYTE_ARRAY:
      if (count > in.left() / 4) throw PageError(str(count) + " PLAIN BYTE_ARRAY values need at least " + str(count * 4) + " bytes, the page has " + str(in.left()));
      for (size_t i = 0; i < count; ++i) {
        const uint32_t len = load_u32(in.take(4, "a BYTE_ARRAY length"));
        out.push_back(bytes_value(in.take(len, "a BYTE_ARRAY value"), len, leaf));
      }
      break;
    case PhysicalType::FIXED_LEN_BYTE_ARRAY:
      if (leaf.type_length <= 0) throw PageError("FIXED_LEN_BYTE_ARRAY without a length");
      fixed(size_t(leaf.type_length));
      for (size_t i = 0; i < count; ++i) out.push_back(bytes_value(in.take(size_t(leaf.type_length), "FIXED_LEN_BYTE_ARRAY"), size_t(leaf.type_length), leaf));
      break;
    case PhysicalType::INT96: throw PageError("INT96 values (legacy timestamps) are not supported");
    default: throw PageError("unknown physical type " + std::to_string(int(leaf.type)));
  }
  return start - in.left();
}

// DELTA_LENGTH_BYTE_ARRAY: the lengths, DELTA_BINARY_PACKED, then the bytes end to end. Returns the bytes used.
size_t decode_delta_length(Bytes in, size_t count, const LeafDescriptor& leaf, std::vector<std::string>& out) {
  const size_t start = in.left();
  std::vector<int64_t> lengths;
  const size_t used = decode_delta(in, count, lengths);
  in.take(used, "the lengths");
  if (lengths.size() != count) throw PageError("DELTA_LENGTH_BYTE_ARRAY holds " + str(lengths.size()) + " lengths for " + str(count) + " values");
  (void)leaf;
  for (int64_t len : lengths) {
    if (len < 0) throw PageError("a negative byte array length");
    const uint8_t* d = in.take(size_t(len), "a DELTA_LENGTH_BYTE_ARRAY value");
    out.emplace_back(reinterpret_cast<const char*>(d), size_t(len));
  }
  return start - in.left();
}

// The non-null values of one page, in `encoding`, appended to `out`.
void decode_values(Bytes in, Encoding encoding, size_t count, const LeafDescriptor& leaf,
                   const std::vector<json>* dictionary, std::vector<json>& out) {
  switch (encoding) {
    case Encoding::PLAIN: decode_plain(in, count, leaf, out); return;
    case Encoding::PLAIN_DICTIONARY:
    case Encoding::RLE_DICTIONARY: {
      if (!dictionary) throw PageError("a dictionary-encoded page without a dictionary page");
      if (count == 0) return;
      const int width = *in.take(1, "the dictionary index width");
      std::vector<uint32_t> idx;
      decode_hybrid(in, width, count, idx);
      for (uint32_t i : idx) {
        if (i >= dictionary->size())
          throw PageError("dictionary index " + std::to_string(i) + " out of range (" + str(dictionary->size()) + " entries)");
        out.push_back((*dictionary)[i]);
      }
      return;
    }
    case Encoding::RLE: {
      if (leaf.type != PhysicalType::BOOLEAN) throw PageError("RLE values of type " + to_string(leaf.type) + " are not supported");
      const uint32_t len = load_u32(in.take(4, "the RLE length"));
      std::vector<uint32_t> bits;
      decode_hybrid(Bytes{in.take(len, "RLE booleans"), len}, 1, count, bits);
      for (uint32_t b : bits) out.emplace_back(b != 0);
      return;
    }
    case Encoding::DELTA_BINARY_PACKED: {
      if (leaf.type != PhysicalType::INT32 && leaf.type != PhysicalType::INT64)
        throw PageError("DELTA_BINARY_PACKED values of type " + to_string(leaf.type));
      std::vector<int64_t> v;
      decode_delta(in, count, v);
      if (v.size() != count) throw PageError("DELTA_BINARY_PACKED holds " + str(v.size()) + " values, the page needs " + str(count));
      for (int64_t x : v) out.push_back(int_value(leaf.type == PhysicalType::INT32 ? int64_t(int32_t(x)) : x, leaf));
      return;
    }
    case Encoding::DELTA_LENGTH_BYTE_ARRAY: {
      if (leaf.type != PhysicalType::BYTE_ARRAY) throw PageError("DELTA_LENGTH_BYTE_ARRAY values of type " + to_string(leaf.type));
      std::vector<std::string> s;
      decode_delta_length(in, count, leaf, s);
      for (auto& x : s) out.emplace_back(std::move(x));
      return;
    }
    case Encoding::DELTA_BYTE_ARRAY: {
      if (leaf.type != PhysicalType::BYTE_ARRAY && leaf.type != PhysicalType::FIXED_LEN_BYTE_ARRAY)
        throw PageError("DELTA_BYTE_ARRAY values of type " + to_string(leaf.type));
      std::vector<int64_t> prefixes;
      in.take(decode_delta(in, count, prefixes), "the prefix lengths");
      if (prefixes.size() != count) throw PageError("DELTA_BYTE_ARRAY holds " + str(prefixes.size()) + " prefixes for " + str(count) + " values");
      std::vector<std::string> suffixes;
      decode_delta_length(in, count, leaf, suffixes);
      std::string prev;
      for (size_t i = 0; i < count; ++i) {
        if (prefixes[i] < 0 || size_t(prefixes[i]) > prev.size())
          throw PageError("DELTA_BYTE_ARRAY prefix of " + std::to_string(prefixes[i]) + " bytes, the previous value has " + str(prev.size()));
        std::string v = prev.substr(0, size_t(prefixes[i])) + suffixes[i];
        out.emplace_back(v);
        prev = std::move(v);
      }
      return;
    }
    case Encoding::BYTE_STREAM_SPLIT: {
      size_t width = 0;
      switch (leaf.type) {
        case PhysicalType::FLOAT: case PhysicalType::INT32: width = 4; break;
        case PhysicalType::DOUBLE: case PhysicalType::INT64: width = 8; break;
        case PhysicalType::FIXED_LEN_BYTE_ARRAY: width = size_t(std::max(leaf.type_length, 0)); break;
        default: throw PageError("BYTE_STREAM_SPLIT values of type " + to_string(leaf.type));
      }
      if (width == 0 || count > in.left() / width) throw PageError("BYTE_STREAM_SPLIT: " + str(count) + " values of " + str(width) + " bytes, the page has " + str(in.left()));
      const size_t stride = count;  // stream k holds byte k of every value
      std::vector<uint8_t> joined(count * width);
      for (size_t i = 0; i < count; ++i)
        for (size_t k = 0; k < width; ++k) joined[i * width + k] = in.p[k * stride + i];
      decode_plain(Bytes{joined.data(), joined.size()}, count, leaf, out);
      return;
    }
    default: throw PageError("encoding " + to_string(encoding) + " is not supported");
  }
}

// Decompression whose output grows with what the stream actually yields, up to `expected`: for codecs
// (zstd, Brotli) whose ratio has no small bound, so a claimed size is never allocated up front.
template <typename Step>
std::vector<uint8_t> grow_decompress(size_t size, size_t expected, Step step) {
  std::vector<uint8_t> out(std::min(expected, std::max<size_t>(size * 8, 1 << 16)));
  size_t produced = 0;
  for (;;) {
    const bool finished = step(out.data() + produced, out.size() - produced, &produced);
    if (finished) break;
    if (produced < out.size()) continue;
    if (out.size() >= expected) throw PageError("the page decompresses to more than the " + str(expected) + " bytes its header says");
    out.resize(std::min(expected, out.size() * 2));
  }
  if (produced != expected) throw PageError("the page decompresses to " + str(produced) + " bytes, its header says " + str(expected));
  out.resize(produced);
  return out;
}

}  // namespace

std::vector<uint8_t> decompress(Codec codec, const uint8_t* src, size_t size, size_t expected) {
  auto ratio_bound = [&](size_t ratio) {
    if (expected > size * ratio + 64)
      throw PageError("a " + to_string(codec) + " page of " + str(size) + " bytes cannot hold the " + str(expected) + " bytes its header says");
  };
  const std::string corrupt = "corrupt " + to_string(codec) + " page";
  switch (codec) {
    case Codec::UNCOMPRESSED:
      if (size != expected) throw PageError("an uncompressed page of " + str(size) + " bytes, its header says " + str(expected));
      return std::vector<uint8_t>(src, src + size);
    case Codec::SNAPPY: {
      size_t len = 0;
      if (snappy_uncompressed_length(reinterpret_cast<const char*>(src), size, &len) != SNAPPY_OK) throw PageError(corrupt);
      if (len != expected) throw PageError(corrupt + ": it holds " + str(len) + " bytes, its header says " + str(expected));
      ratio_bound(24);  // a Snappy copy of 3 bytes yields at most 64
      std::vector<uint8_t> out(expected);
      size_t out_len = expected;
      if (snappy_uncompress(reinterpret_cast<const char*>(src), size, reinterpret_cast<char*>(out.data()), &out_len) != SNAPPY_OK ||
          out_len != expected)
        throw PageError(corrupt);
      return out;
    }
    case Codec::GZIP: {
      ratio_bound(1040);  // deflate expands at most 1032 times
      std::vector<uint8_t> out(expected);
      z_stream z{};
      if (inflateInit2(&z, 15 + 32) != Z_OK) throw PageError("zlib does not start");
      z.next_in = const_cast<Bytef*>(src);
      z.avail_in = uInt(size);
      z.next_out = out.data();
      z.avail_out = uInt(expected);
      const int rc = inflate(&z, Z_FINISH);
      const size_t produced = z.total_out;
      inflateEnd(&z);
      if (rc != Z_STREAM_END || produced != expected) throw PageError(corrupt + (z.msg ? std::string(": ") + z.msg : std::string()));
      return out;
    }
    case Codec::LZ4_RAW: {
      ratio_bound(256);  // an LZ4 sequence of n bytes yields at most 255 n
      std::vector<uint8_t> out(expected);
      const int n = LZ4_decompress_safe(reinterpret_cast<const char*>(src), reinterpret_cast<char*>(out.data()), int(size), int(expected));
      if (n < 0 || size_t(n) != expected) throw PageError(corrupt);
      return out;
    }
    case Codec::ZSTD: {
      std::unique_ptr<ZSTD_DCtx, size_t (*)(ZSTD_DCtx*)> ctx(ZSTD_createDCtx(), ZSTD_freeDCtx);
      ZSTD_inBuffer in{src, size, 0};
      return grow_decompress(size, expected, [&](uint8_t* dst, size_t room, size_t* produced) {
        ZSTD_outBuffer out{dst, room, 0};
        const size_t rc = ZSTD_decompressStream(ctx.get(), &out, &in);
        if (ZSTD_isError(rc)) throw PageError(corrupt + ": " + ZSTD_getErrorName(rc));
        *produced += out.pos;
        if (rc == 0) return true;
        if (in.pos == in.size && out.pos < room) throw PageError(corrupt + ": it ends early");
        return false;
      });
    }
    case Codec::BROTLI: {
      std::unique_ptr<BrotliDecoderState, void (*)(BrotliDecoderState*)> st(BrotliDecoderCreateInstance(nullptr, nullptr, nullptr),
                                                                           BrotliDecoderDestroyInstance);
      size_t avail_in = size;
      const uint8_t* next_in = src;
      return grow_decompress(size, expected, [&](uint8_t* dst, size_t room, size_t* produced) {
        size_t avail_out = room;
        uint8_t* next_out = dst;
        const BrotliDecoderResult r = BrotliDecoderDecompressStream(st.get(), &avail_in, &next_in, &avail_out, &next_out, nullptr);
        *produced += room - avail_out;
        if (r == BROTLI_DECODER_RESULT_SUCCESS) return true;
        if (r == BROTLI_DECODER_RESULT_ERROR) throw PageError(corrupt + ": " + BrotliDecoderErrorString(BrotliDecoderGetErrorCode(st.get())));
        if (r == BROTLI_DECODER_RESULT_NEEDS_MORE_INPUT) throw PageError(corrupt + ": it ends early");
        return false;
      });
    }
    case Codec::LZ4: throw PageError("LZ4 (the deprecated Hadoop framing) is not supported; LZ4_RAW is");
    default: throw PageError("compression " + to_string(codec) + " is not supported");
  }
}

namespace {

void append_levels(const std::vector<uint32_t>& v, int max, const char* what, std::vector<uint16_t>& out) {
  for (uint32_t x : v) {
    if (x > uint32_t(max)) throw PageError(std::string(what) + " level " + std::to_string(x) + " is over the maximum " + std::to_string(max));
    out.push_back(uint16_t(x));
  }
}

}  // namespace

LeafData decode_column_chunk(const uint8_t* data, size_t size, const LeafDescriptor& leaf, Codec codec, int64_t num_values) {
  if (num_values < 0) throw PageError("the column chunk claims " + std::to_string(num_values) + " values");
  LeafData out;
  std::vector<json> dictionary;
  bool have_dictionary = false;
  Bytes chunk{data, size};
  const int def_width = bit_width_of(uint32_t(leaf.max_def));
  const int rep_width = bit_width_of(uint32_t(leaf.max_rep));

  while (out.count < uint64_t(num_values)) {
    if (chunk.left() == 0) throw PageError("the pages end after " + str(out.count) + " of the " + std::to_string(num_values) + " values the metadata says");
    size_t header_len = 0;
    PageHeader h;
    try {
      h = parse_page_header(chunk.p, chunk.left(), &header_len);
    } catch (const ThriftError& e) {
      throw PageError(std::string("page header: ") + e.what());
    }
    chunk.take(header_len, "the page header");
    if (h.compressed_page_size < 0 || h.uncompressed_page_size < 0) throw PageError("a page header with a negative size");
    if (size_t(h.compressed_page_size) > chunk.left())
      throw PageError("a page header claims " + std::to_string(h.compressed_page_size) + " bytes, the column chunk has " + str(chunk.left()) + " left");
    const uint8_t* body = chunk.take(size_t(h.compressed_page_size), "the page");
    const size_t body_len = size_t(h.compressed_page_size);

    if (h.type == PageType::DICTIONARY_PAGE) {
      if (!h.dictionary_page) throw PageError("a dictionary page without its header");
      if (have_dictionary) throw PageError("a second dictionary page");
      const auto& dp = *h.dictionary_page;
      if (dp.encoding != Encoding::PLAIN && dp.encoding != Encoding::PLAIN_DICTIONARY)
        throw PageError("dictionary page encoding " + to_string(dp.encoding));
      if (dp.num_values < 0) throw PageError("a dictionary page with a negative count");
      const auto raw = decompress(codec, body, body_len, size_t(h.uncompressed_page_size));
      decode_plain(Bytes{raw.data(), raw.size()}, size_t(dp.num_values), leaf, dictionary);
      have_dictionary = true;
      continue;
    }
    if (h.type != PageType::DATA_PAGE && h.type != PageType::DATA_PAGE_V2) continue;  // index pages and unknown kinds

    const bool v2 = h.type == PageType::DATA_PAGE_V2;
    if (v2 ? !h.data_page_v2 : !h.data_page) throw PageError("a data page without its header");
    const int32_t page_values = v2 ? h.data_page_v2->num_values : h.data_page->num_values;
    const Encoding encoding = v2 ? h.data_page_v2->encoding : h.data_page->encoding;
    if (page_values < 0 || uint64_t(page_values) > uint64_t(num_values) - out.count)
      throw PageError("a data page claims " + std::to_string(page_values) + " values, the chunk has " + str(uint64_t(num_values) - out.count) + " left");
    const size_t n = size_t(page_values);

    std::vector<uint8_t> raw;  // the decompressed bytes that hold the values (and the v1 levels)
    Bytes rest{nullptr, 0};
    std::vector<uint32_t> levels;
    if (v2) {
      const auto& p = *h.data_page_v2;
      if (p.repetition_levels_byte_length < 0 || p.definition_levels_byte_length < 0) throw PageError("negative level lengths");
      Bytes lv{body, body_len};
      const size_t rl = size_t(p.repetition_levels_byte_length), dl = size_t(p.definition_levels_byte_length);
      const uint8_t* rep = lv.take(rl, "the repetition levels");
      const uint8_t* def = lv.take(dl, "the definition levels");
      if (leaf.max_rep > 0) {
        decode_hybrid(Bytes{rep, rl}, rep_width, n, levels);
        append_levels(levels, leaf.max_rep, "repetition", out.rep);
        levels.clear();
      }
      if (leaf.max_def > 0) {
        decode_hybrid(Bytes{def, dl}, def_width, n, levels);
        append_levels(levels, leaf.max_def, "definition", out.def);
        levels.clear();
      }
      if (size_t(h.uncompressed_page_size) < rl + dl) throw PageError("the page is smaller than its levels");
      const size_t values_size = size_t(h.uncompressed_page_size) - rl - dl;
      if (p.is_compressed && codec != Codec::UNCOMPRESSED) raw = decompress(codec, lv.p, lv.left(), values_size);
      else raw = decompress(Codec::UNCOMPRESSED, lv.p, lv.left(), values_size);
      rest = Bytes{raw.data(), raw.size()};
    } else {
      raw = decompress(codec, body, body_len, size_t(h.uncompressed_page_size));
      rest = Bytes{raw.data(), raw.size()};
      auto v1_levels = [&](int max, int width, Encoding enc, const char* what, std::vector<uint16_t>& dst) {
        if (max == 0) return;
        if (enc != Encoding::RLE) throw PageError(std::string(what) + " levels in " + to_string(enc) + " are not supported");
        const uint32_t len = load_u32(rest.take(4, "the level length"));
        decode_hybrid(Bytes{rest.take(len, "the levels"), len}, width, n, levels);
        append_levels(levels, max, what, dst);
        levels.clear();
      };
      v1_levels(leaf.max_rep, rep_width, h.data_page->repetition_level_encoding, "repetition", out.rep);
      v1_levels(leaf.max_def, def_width, h.data_page->definition_level_encoding, "definition", out.def);
    }
    size_t non_null = n;
    if (leaf.max_def > 0) non_null = size_t(std::count(out.def.end() - std::ptrdiff_t(n), out.def.end(), uint16_t(leaf.max_def)));
    decode_values(rest, encoding, non_null, leaf, have_dictionary ? &dictionary : nullptr, out.values);
    out.count += n;
  }
  return out;
}

}  // namespace tb::data::parquet
