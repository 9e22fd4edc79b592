#include "data/parquet_reader.h"

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <functional>

#include "data/parquet_pages.h"

namespace tb::data {

using json = nlohmann::ordered_json;
using namespace parquet;

// One schema element with its place in the tree and the levels at which it is defined and repeats.
struct ParquetFile::Node {
  const SchemaElement* el = nullptr;
  std::vector<int> children;
  int def = 0;  // the definition level a value has when this node is present
  int rep = 0;  // the repetition level of this node's own repetitions (when repeated)
  int leaf = -1;  // index into the leaf columns, for a primitive node
  int leaf_begin = 0, leaf_end = 0;  // the leaves under this node
  std::string path;  // dotted, for messages
  bool repeated() const { return el->repetition == Repetition::REPEATED; }
  bool is_leaf() const { return el->type.has_value(); }
};

namespace {

constexpr int kMaxSchemaDepth = 64;  // far past any real schema; bounds the recursion below
constexpr uint64_t kTrailer = 8;     // footer length (4 bytes) and "PAR1"

ValueKind value_kind(const SchemaElement& e) {
  switch (*e.type) {
    case PhysicalType::BOOLEAN: return ValueKind::BOOLEAN;
    case PhysicalType::FLOAT: return ValueKind::FLOAT;
    case PhysicalType::DOUBLE: return ValueKind::DOUBLE;
    case PhysicalType::INT32:
    case PhysicalType::INT64: {
      if (e.logical.kind == LogicalType::Kind::INTEGER) return e.logical.int_signed ? ValueKind::SIGNED : ValueKind::UNSIGNED;
      if (e.logical.kind == LogicalType::Kind::DECIMAL) return ValueKind::DECIMAL;
      if (e.converted_type) {
        switch (*e.converted_type) {
          case ConvertedType::UINT_8: case ConvertedType::UINT_16: case ConvertedType::UINT_32: case ConvertedType::UINT_64:
            return ValueKind::UNSIGNED;
          case ConvertedType::DECIMAL: return ValueKind::DECIMAL;
          default: break;
        }
      }
      return ValueKind::SIGNED;
    }
    default: return ValueKind::STRING;
  }
}

bool is_list(const SchemaElement& e) {
  return e.logical.kind == LogicalType::Kind::LIST || (e.converted_type && *e.converted_type == ConvertedType::LIST);
}
bool is_map(const SchemaElement& e) {
  return e.logical.kind == LogicalType::Kind::MAP ||
         (e.converted_type && (*e.converted_type == ConvertedType::MAP || *e.converted_type == ConvertedType::MAP_KEY_VALUE));
}

}  // namespace

ParquetFile::ParquetFile(const std::string& path, const std::string& display_name)
    : path_(path), name_(display_name.empty() ? path : display_name) {
  std::error_code ec;
  const auto size = std::filesystem::file_size(path, ec);
  if (ec) fail("cannot read it (" + ec.message() + ")");
  size_ = size;
  in_.open(path, std::ios::binary);
  if (!in_) fail("cannot open it");
  if (size_ < 12) fail("not a Parquet file (" + std::to_string(size_) + " bytes, too short for the PAR1 magic and a footer)");
  const auto head = read_at(0, 4);
  const auto tail = read_at(size_ - kTrailer, kTrailer);
  if (std::memcmp(tail.data() + 4, "PARE", 4) == 0) fail("encrypted Parquet files are not supported");
  if (std::memcmp(head.data(), "PAR1", 4) != 0) fail("not a Parquet file (no PAR1 magic)");
  if (std::memcmp(tail.data() + 4, "PAR1", 4) != 0) fail("truncated: it starts with PAR1 but does not end with it (the footer is missing)");
  const uint64_t footer_len = uint64_t(tail[0]) | uint64_t(tail[1]) << 8 | uint64_t(tail[2]) << 16 | uint64_t(tail[3]) << 24;
  const uint64_t room = size_ - kTrailer - 4;
  if (footer_len > room)
    fail("truncated: the footer says " + std::to_string(footer_len) + " bytes, " + std::to_string(room) + " are there");
  data_end_ = size_ - kTrailer - footer_len;
  const auto footer = read_at(data_end_, footer_len);
  try {
    meta_ = parse_file_metadata(footer.data(), footer.size());
  } catch (const ThriftError& e) {
    fail(std::string("corrupt footer: ") + e.what());
  }
  if (meta_.num_rows < 0) fail("the footer says " + std::to_string(meta_.num_rows) + " rows");

  // The schema is flat in the footer, depth first: rebuild the tree, checking every child count
  // against the elements that remain so a hostile count cannot run past the list.
  nodes_.resize(meta_.schema.size());
  size_t next = 0;
  std::function<int(int, int, int, const std::string&)> build = [&](int depth, int parent_def, int parent_rep, const std::string& prefix) {
    if (depth > kMaxSchemaDepth) fail("the schema nests deeper than " + std::to_string(kMaxSchemaDepth) + " levels");
    if (next >= meta_.schema.size()) fail("corrupt schema: it lists fewer elements than its groups have children");
    const int index = int(next++);
    Node& n = nodes_[size_t(index)];
    n.el = &meta_.schema[size_t(index)];
    const bool root = index == 0;
    if (!root && !n.el->repetition) fail("corrupt schema: '" + n.el->name + "' has no repetition");
    const Repetition r = root ? Repetition::REQUIRED : *n.el->repetition;
    n.def = parent_def + (r == Repetition::REQUIRED ? 0 : 1);
    n.rep = parent_rep + (r == Repetition::REPEATED ? 1 : 0);
    n.path = root ? std::string() : prefix.empty() ? n.el->name : prefix + "." + n.el->name;
    n.leaf_begin = int(leaves_.size());
    if (n.el->type && !root) {
      n.leaf = int(leaves_.size());
      leaves_.push_back(index);
    } else {
      if (n.el->num_children < 0 || size_t(n.el->num_children) > meta_.schema.size() - next)
        fail("corrupt schema: '" + n.el->name + "' claims " + std::to_string(n.el->num_children) + " children");
      for (int i = 0; i < n.el->num_children; ++i) {
        const int child = build(depth + 1, n.def, n.rep, n.path);
        nodes_[size_t(index)].children.push_back(child);
      }
    }
    nodes_[size_t(index)].leaf_end = int(leaves_.size());
    return index;
  };
  build(0, 0, 0, "");
  if (next != meta_.schema.size()) fail("corrupt schema: " + std::to_string(meta_.schema.size() - next) + " elements outside the tree");
  if (leaves_.empty()) fail("the schema has no columns");
  for (int c : nodes_[0].children) columns_.push_back(nodes_[size_t(c)].el->name);
  for (size_t g = 0; g < meta_.row_groups.size(); ++g) {
    if (meta_.row_groups[g].columns.size() != leaves_.size())
      fail("row group " + std::to_string(g) + " has " + std::to_string(meta_.row_groups[g].columns.size()) + " column chunks, the schema " +
           std::to_string(leaves_.size()) + " columns");
    if (meta_.row_groups[g].num_rows < 0) fail("row group " + std::to_string(g) + " has a negative row count");
  }
}

ParquetFile::~ParquetFile() = default;

void ParquetFile::fail(const std::string& what) const { throw ParquetError(name_ + ": " + what); }

std::vector<uint8_t> ParquetFile::read_at(uint64_t offset, uint64_t size) {
  if (offset > size_ || size > size_ - offset) fail("truncated: bytes " + std::to_string(offset) + ".." + std::to_string(offset + size) + " are past its end");
  std::vector<uint8_t> buf(size);
  in_.clear();
  in_.seekg(std::streamoff(offset));
  if (size && !in_.read(reinterpret_cast<char*>(buf.data()), std::streamsize(size))) fail("read error at byte " + std::to_string(offset));
  return buf;
}

int64_t ParquetFile::row_group_rows(size_t index) const {
  if (index >= meta_.row_groups.size()) fail("no row group " + std::to_string(index) + " (it has " + std::to_string(meta_.row_groups.size()) + ")");
  return meta_.row_groups[index].num_rows;
}

namespace {

// Rebuilds values from the decoded leaves: each leaf is walked with a cursor, and a node's presence,
// nulls and list lengths are read off the levels of the first leaf below it (all leaves of a subtree
// share those levels).
class Assembler {
 public:
  using Node = ParquetFile::Node;
  struct Cursor {
    const LeafData* data = nullptr;
    size_t pos = 0, vpos = 0;
  };

  Assembler(const std::vector<Node>& nodes, std::vector<Cursor>& cursors, std::function<void(int, const std::string&)> fail)
      : nodes_(nodes), cursors_(cursors), fail_(std::move(fail)) {}

  // One row's value of a top-level column.
  json row_value(const Node& n) {
    if (rep(n.leaf_begin) != 0) fail(n.leaf_begin, "a row starts inside a list (repetition level is not 0)");
    return value(n);
  }

 private:
  const Node& child(const Node& n, size_t i) const { return nodes_[size_t(n.children[i])]; }

  Cursor& at(int leaf) {
    Cursor& c = cursors_[size_t(leaf)];
    if (c.pos >= c.data->count) fail(leaf, "the levels end before the rows do");
    return c;
  }
  int def(int leaf) { Cursor& c = at(leaf); return c.data->def.empty() ? 0 : c.data->def[c.pos]; }
  int rep(int leaf) { Cursor& c = at(leaf); return c.data->rep.empty() ? 0 : c.data->rep[c.pos]; }

  // `n` is absent here (null, or an empty list): each leaf below holds one entry saying so.
  void skip(const Node& n) {
    for (int l = n.leaf_begin; l < n.leaf_end; ++l) {
      if (def(l) >= n.def) fail(l, "its levels disagree with the other columns of its group");
      ++cursors_[size_t(l)].pos;
    }
  }

  json value(const Node& n) {
    if (n.repeated()) return repeated(n, [&] { return present(n); });  // a bare repeated field is a list
    if (def(n.leaf_begin) < n.def) {
      skip(n);
      return nullptr;
    }
    return present(n);
  }

  json present(const Node& n) {
    if (n.is_leaf()) {
      Cursor& c = at(n.leaf);
      if (c.vpos >= c.data->values.size()) fail(n.leaf, "fewer values than the levels say");
      ++c.pos;
      return c.data->values[c.vpos++];
    }
    if (is_map(*n.el)) fail(n.leaf_begin, "MAP columns are not supported");
    if (is_list(*n.el)) {
      if (n.children.size() != 1 || !child(n, 0).repeated()) fail(n.leaf_begin, "a LIST group that is not a repeated field");
      const Node& r = child(n, 0);
      // The spec's three levels (list > repeated group > element), unless the repeated field is itself
      // the element, as the older two-level writers made it.
      const bool two_level = r.is_leaf() || r.children.size() != 1 || r.el->name == "array" || r.el->name == n.el->name + "_tuple";
      if (two_level) return repeated(r, [&] { return present(r); });
      return repeated(r, [&] { return value(child(r, 0)); });
    }
    json obj = json::object();
    for (size_t i = 0; i < n.children.size(); ++i) obj[child(n, i).el->name] = value(child(n, i));
    return obj;
  }

  template <typename Element>
  json repeated(const Node& r, Element element) {
    json arr = json::array();
    if (def(r.leaf_begin) < r.def) {
      skip(r);
      return arr;
    }
    for (;;) {
      arr.push_back(element());
      const Cursor& c = cursors_[size_t(r.leaf_begin)];
      if (c.pos >= c.data->count) break;
      const int next = rep(r.leaf_begin);
      if (next < r.rep) break;
      if (next > r.rep) fail(r.leaf_begin, "a repetition level deeper than the list it continues");
    }
    return arr;
  }

  [[noreturn]] void fail(int leaf, const std::string& what) {
    fail_(leaf, what);
    throw std::logic_error("unreachable");
  }

  const std::vector<Node>& nodes_;
  std::vector<Cursor>& cursors_;
  std::function<void(int, const std::string&)> fail_;
};

}  // namespace

std::vector<json> ParquetFile::read_row_group(size_t index, const std::vector<std::string>& columns) {
  row_group_rows(index);  // checks the index
  const RowGroup& group = meta_.row_groups[index];
  const std::string where = ", row group " + std::to_string(index) + ": ";
  const Node& root = nodes_[0];

  std::vector<int> wanted;  // top-level nodes, in schema order
  for (const std::string& name : columns) {
    if (std::find(columns_.begin(), columns_.end(), name) == columns_.end()) {
      std::string all;
      for (const auto& c : columns_) all += (all.empty() ? "" : ", ") + c;
      fail("no column '" + name + "' (it has: " + all + ")");
    }
  }
  for (int c : root.children)
    if (columns.empty() || std::find(columns.begin(), columns.end(), nodes_[size_t(c)].el->name) != columns.end()) wanted.push_back(c);

  std::vector<LeafData> data(leaves_.size());
  std::vector<Assembler::Cursor> cursors(leaves_.size());
  for (int top : wanted) {
    const Node& t = nodes_[size_t(top)];
    for (int l = t.leaf_begin; l < t.leaf_end; ++l) {
      const Node& leaf = nodes_[size_t(leaves_[size_t(l)])];
      const std::string col = "column '" + leaf.path + "'" + where;
      const ColumnChunk& chunk = group.columns[size_t(l)];
      if (!chunk.file_path.empty()) fail(col + "the chunk lives in another file (" + chunk.file_path + "), which is not supported");
      if (!chunk.meta) fail(col + "the column chunk has no metadata");
      const ColumnMetaData& m = *chunk.meta;
      if (m.type != *leaf.el->type) fail(col + "the chunk holds " + to_string(m.type) + ", the schema says " + to_string(*leaf.el->type));
      int64_t start = m.data_page_offset;
      if (m.dictionary_page_offset && *m.dictionary_page_offset > 0 && *m.dictionary_page_offset < start) start = *m.dictionary_page_offset;
      if (start < 4 || m.total_compressed_size < 0 || uint64_t(start) > data_end_ || uint64_t(m.total_compressed_size) > data_end_ - uint64_t(start))
        fail(col + "the chunk at byte " + std::to_string(start) + " (" + std::to_string(m.total_compressed_size) + " bytes) lies outside the data (" +
             std::to_string(data_end_) + " bytes)");
      const auto bytes = read_at(uint64_t(start), uint64_t(m.total_compressed_size));
      LeafDescriptor d;
      d.type = *leaf.el->type;
      d.type_length = leaf.el->type_length;
      d.kind = value_kind(*leaf.el);
      d.decimal_scale = leaf.el->logical.kind == LogicalType::Kind::DECIMAL ? leaf.el->logical.decimal_scale : leaf.el->scale;
      d.max_def = leaf.def;
      d.max_rep = leaf.rep;
      try {
        data[size_t(l)] = decode_column_chunk(bytes.data(), bytes.size(), d, m.codec, m.num_values);
      } catch (const PageError& e) {
        fail(col + e.what());
      }
      cursors[size_t(l)].data = &data[size_t(l)];
    }
  }

  Assembler assemble(nodes_, cursors, [&](int leaf, const std::string& what) {
    fail("column '" + nodes_[size_t(leaves_[size_t(leaf)])].path + "'" + where + what);
  });
  std::vector<json> rows;
  if (wanted.empty()) return rows;
  rows.reserve(size_t(std::min<uint64_t>(uint64_t(group.num_rows), data[size_t(nodes_[size_t(wanted[0])].leaf_begin)].count)));
  for (int64_t r = 0; r < group.num_rows; ++r) {
    json row = json::object();
    for (int top : wanted) row[nodes_[size_t(top)].el->name] = assemble.row_value(nodes_[size_t(top)]);
    rows.push_back(std::move(row));
  }
  for (int top : wanted) {
    const Node& t = nodes_[size_t(top)];
    for (int l = t.leaf_begin; l < t.leaf_end; ++l) {
      const auto& c = cursors[size_t(l)];
      if (c.pos != c.data->count || c.vpos != c.data->values.size())
        fail("column '" + nodes_[size_t(leaves_[size_t(l)])].path + "'" + where + "it holds more values than the row group's " +
             std::to_string(group.num_rows) + " rows");
    }
  }
  return rows;
}

}  // namespace tb::data
