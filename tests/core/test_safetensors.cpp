// safetensors reader/writer: round trips of every dtype, the byte layout the format prescribes, and
// the refusal of malformed files with a message naming the file and the tensor.
#include <QtTest>

#include "test_main.h"

#include <cstring>
#include <fstream>

#include <nlohmann/json.hpp>
#include <torch/torch.h>

#include "checkpoint/atomic_file.h"
#include "checkpoint/safetensors.h"

using namespace tb::checkpoint;

namespace {

std::string read_all(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// A file made by hand: [u64 length][header text][data bytes].
void write_raw(const std::string& path, const std::string& header, const std::string& data,
               std::optional<uint64_t> length = std::nullopt) {
  std::ofstream out(path, std::ios::binary);
  const uint64_t n = length.value_or(header.size());
  out.write(reinterpret_cast<const char*>(&n), 8);
  out << header << data;
}

bool same_bytes(const torch::Tensor& a, const torch::Tensor& b) {
  if (a.scalar_type() != b.scalar_type() || a.sizes() != b.sizes()) return false;
  const auto ca = a.contiguous(), cb = b.contiguous();
  if (ca.numel() == 0) return true;  // an empty tensor's data pointer may be null (memcmp must not see it)
  return std::memcmp(ca.data_ptr(), cb.data_ptr(), ca.numel() * ca.element_size()) == 0;
}

torch::Tensor sample(torch::ScalarType type, std::vector<int64_t> shape) {
  if (type == torch::kBool) return torch::randint(0, 2, shape).to(torch::kBool);
  if (c10::isFloatingType(type)) return torch::randn(shape).to(type);
  return torch::randint(-100, 100, shape).to(type);
}

}  // namespace

class TestSafetensors : public QObject {
  Q_OBJECT
 private:
  QTemporaryDir dir_;
  std::string file(const char* name) const { return dir_.filePath(name).toStdString(); }

 private Q_SLOTS:
  void roundTripEachDtype_data() {
    QTest::addColumn<int>("type");
    QTest::addColumn<QString>("name");
    const std::vector<std::pair<torch::ScalarType, const char*>> types = {
        {torch::kFloat, "F32"}, {torch::kBFloat16, "BF16"}, {torch::kHalf, "F16"}, {torch::kDouble, "F64"},
        {torch::kLong, "I64"},  {torch::kInt, "I32"},       {torch::kShort, "I16"}, {torch::kChar, "I8"},
        {torch::kByte, "U8"},   {torch::kBool, "BOOL"}};
    for (const auto& [t, n] : types) QTest::newRow(n) << static_cast<int>(t) << QString(n);
  }
  void roundTripEachDtype() {
    QFETCH(int, type);
    QFETCH(QString, name);
    const auto t = static_cast<torch::ScalarType>(type);
    torch::manual_seed(7);
    std::map<std::string, torch::Tensor> in = {
        {"matrix", sample(t, {3, 5})}, {"scalar", sample(t, {})}, {"empty", sample(t, {0, 4})},
        {"transposed", sample(t, {4, 2}).t()}};  // written contiguous, same values
    const auto path = file("roundtrip.safetensors");
    save_safetensors(path, in, {{"format", "pt"}});
    SafetensorsFile f(path);
    QCOMPARE(f.metadata().at("format"), std::string("pt"));
    QCOMPARE(f.entries().size(), size_t(4));
    for (const auto& [key, value] : in) {
      QCOMPARE(f.find(key)->dtype, name.toStdString());
      QVERIFY2(same_bytes(f.tensor(key), value), key.c_str());
    }
  }

  void layoutFollowsTheFormat() {
    // Checked on the raw bytes: u64 length, space-padded JSON, larger dtypes first, little-endian data.
    const auto path = file("layout.safetensors");
    const auto b = torch::tensor({1.5f, -2.0f});
    const auto a = torch::tensor({1.0f, 2.0f, 3.0f}).to(torch::kBFloat16);
    save_safetensors(path, {{"a", a}, {"b", b}}, {{"format", "pt"}});
    const std::string raw = read_all(path);
    uint64_t n = 0;
    std::memcpy(&n, raw.data(), 8);
    QCOMPARE(n % 8, uint64_t(0));
    QCOMPARE(raw.size(), size_t(8 + n + 8 + 6));
    const std::string header = raw.substr(8, n);
    QVERIFY(header.find_last_not_of(' ') < header.size());
    const auto j = nlohmann::json::parse(header);
    QCOMPARE(j["__metadata__"]["format"].get<std::string>(), std::string("pt"));
    QCOMPARE(j["b"]["dtype"].get<std::string>(), std::string("F32"));
    QCOMPARE(j["b"]["data_offsets"], nlohmann::json({0, 8}));
    QCOMPARE(j["a"]["dtype"].get<std::string>(), std::string("BF16"));
    QCOMPARE(j["a"]["shape"], nlohmann::json({3}));
    QCOMPARE(j["a"]["data_offsets"], nlohmann::json({8, 14}));
    float first = 0;
    std::memcpy(&first, raw.data() + 8 + n, 4);
    QCOMPARE(first, 1.5f);
    // bf16 1.0 is 0x3F80, stored low byte first.
    QCOMPARE(static_cast<unsigned char>(raw[8 + n + 8]), static_cast<unsigned char>(0x80));
    QCOMPARE(static_cast<unsigned char>(raw[8 + n + 9]), static_cast<unsigned char>(0x3F));
  }

  void readsAHandWrittenFile() {
    // Unaligned float (offset 1) and a tensor stored before another in the file but after it by name.
    const auto path = file("hand.safetensors");
    std::string data(1, '\x07');
    const float v = 3.25f;
    data.append(reinterpret_cast<const char*>(&v), 4);
    write_raw(path,
              R"({"u":{"dtype":"U8","shape":[1],"data_offsets":[0,1]},"f":{"dtype":"F32","shape":[1,1],"data_offsets":[1,5]}})",
              data);
    SafetensorsFile f(path);
    QCOMPARE(f.tensor("u").item<int>(), 7);
    QCOMPARE(f.tensor("f").item<float>(), 3.25f);
    QVERIFY_THROWS_EXCEPTION(SafetensorsError, f.tensor("missing"));
  }

  void tensorsOutliveTheFileObjectAndNeverWriteIt() {
    const auto path = file("alive.safetensors");
    save_safetensors(path, {{"w", torch::arange(6, torch::kFloat)}});
    torch::Tensor t;
    {
      SafetensorsFile f(path);
      t = f.tensor("w");
    }
    QCOMPARE(t[5].item<float>(), 5.0f);  // the mapping lives as long as the tensor
    t.fill_(-1.0f);                     // private copy-on-write pages
    QCOMPARE(load_safetensors(path).at("w")[5].item<float>(), 5.0f);
  }

  void writeIsAtomicAndReplaces() {
    const auto path = file("atomic.safetensors");
    save_safetensors(path, {{"x", torch::zeros({2})}});
    save_safetensors(path, {{"y", torch::ones({3})}});
    const auto loaded = load_safetensors(path);
    QCOMPARE(loaded.size(), size_t(1));
    QVERIFY(loaded.count("y"));
    const auto leftovers = QDir(dir_.path()).entryList({"atomic.safetensors.tmp*"}, QDir::Files);
    QVERIFY2(leftovers.isEmpty(), qPrintable(leftovers.join(",")));
    try {
      save_safetensors(file("no/such/dir/x.safetensors"), {{"x", torch::zeros({1})}});
      QFAIL("saving into a missing folder must fail");
    } catch (const SafetensorsError& e) {
      QVERIFY(std::string(e.what()).find("no/such/dir/x.safetensors") != std::string::npos);
    }
  }

  void lazyTensorsAreMadeOneAtATime() {
    // Each made tensor owns a buffer that counts itself: the writer must drop one before making the next.
    int live = 0, most = 0;
    LazyStateDict state;
    for (int i = 0; i < 5; ++i)
      state["t" + std::to_string(i)] = {{3, 4}, torch::kFloat, [&live, &most, i] {
        auto* buf = new float[12];
        for (int k = 0; k < 12; ++k) buf[k] = float(i * 100 + k);
        most = std::max(most, ++live);
        return torch::from_blob(
            buf, {3, 4}, [&live](void* p) { delete[] static_cast<float*>(p); --live; }, torch::kFloat);
      }};
    const auto path = file("lazy.safetensors");
    save_safetensors(path, state);
    QCOMPARE(most, 1);
    QCOMPARE(live, 0);
    const auto loaded = load_safetensors(path);
    for (int i = 0; i < 5; ++i) QCOMPARE(loaded.at("t" + std::to_string(i))[1][2].item<float>(), float(i * 100 + 6));
    // The same bytes as writing the made tensors all at once.
    save_safetensors(file("eager.safetensors"), materialize(state));
    QVERIFY(read_all(path) == read_all(file("eager.safetensors")));
    // A tensor made with another shape than its entry announced: an error naming it, no file left.
    state["t2"].shape = {4, 3};
    try {
      save_safetensors(file("bad.safetensors"), state);
      QFAIL("a tensor that does not match its header entry must be refused");
    } catch (const SafetensorsError& e) {
      QVERIFY2(std::string(e.what()).find("'t2'") != std::string::npos, e.what());
    }
    QVERIFY(!QFile::exists(dir_.filePath("bad.safetensors")));
    QCOMPARE(live, 0);
  }

  // The one atomic-write helper: each writer has its own temporary (write_file_atomic used a fixed
  // ".tmp" name, so two writers of one file wrote into each other), the last commit wins, nothing is left.
  void atomicFilesForOnePathDoNotShareATemporary() {
    const auto path = file("shared.json");
    {
      tb::checkpoint::AtomicFile a(path), b(path);
      a.write("first", 5);
      b.write("second", 6);
      a.commit();
      QCOMPARE(read_all(path), std::string("first"));
      b.commit();
      QCOMPARE(read_all(path), std::string("second"));
      tb::checkpoint::AtomicFile abandoned(path);
      abandoned.write("never", 5);
    }
    QCOMPARE(read_all(path), std::string("second"));
    QCOMPARE(QDir(dir_.path()).entryList({"shared.json.tmp*"}, QDir::Files).size(), 0);
  }

  void refusesMalformedFiles_data() {
    QTest::addColumn<QByteArray>("header");
    QTest::addColumn<int>("dataBytes");
    QTest::addColumn<qlonglong>("lengthField");  // -1: the header's own length
    QTest::addColumn<QString>("expected");
    const QByteArray two_f32 = R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})";
    QTest::newRow("oversized header length") << two_f32 << 8 << qlonglong(200'000'000) << "exceeds the limit";
    QTest::newRow("header past end of file") << two_f32 << 8 << qlonglong(4096) << "runs past the end";
    QTest::newRow("truncated data") << two_f32 << 5 << qlonglong(-1) << "tensor 'a': data_offsets [0, 8] exceed the data area of 5 bytes";
    QTest::newRow("offset out of range")
        << QByteArray(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[100,108]}})") << 8 << qlonglong(-1)
        << "tensor 'a': data_offsets [100, 108] exceed";
    QTest::newRow("overlapping tensors")
        << QByteArray(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"b":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}})")
        << 12 << qlonglong(-1) << "tensor 'b': bytes overlap those of tensor 'a'";
    // As the reference implementation reads: the data area exactly covered, each name once.
    QTest::newRow("gap between tensors")
        << QByteArray(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"b":{"dtype":"F32","shape":[2],"data_offsets":[12,20]}})")
        << 20 << qlonglong(-1) << "tensor 'b': starts at byte 12 of the data area, leaving a gap after tensor 'a'";
    QTest::newRow("bytes after the last tensor") << two_f32 << 9 << qlonglong(-1) << "the data area has 1 bytes after the last tensor";
    // A padded header whose length field is one short: every tensor would be read one byte early.
    QTest::newRow("header length one short") << two_f32 + "       " << 8 << qlonglong(two_f32.size() + 6)
                                             << "the data area has 1 bytes after the last tensor";
    QTest::newRow("a name twice")
        << QByteArray(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})")
        << 8 << qlonglong(-1) << "tensor 'a': named twice in the header";
    QTest::newRow("size does not match shape")
        << QByteArray(R"({"a":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}})") << 8 << qlonglong(-1)
        << "tensor 'a': data_offsets [0, 8] hold 8 bytes but dtype F32 and shape [3] need 12";
    QTest::newRow("offsets backwards")
        << QByteArray(R"({"a":{"dtype":"F32","shape":[0],"data_offsets":[8,0]}})") << 8 << qlonglong(-1) << "run backwards";
    QTest::newRow("bad json") << QByteArray(R"({"a":{"dtype":"F32",)") << 8 << qlonglong(-1) << "header is not valid JSON";
    // Found by fuzzing: a number past a double's range is an out_of_range, not a parse_error, in the JSON
    // library; it escaped without the file's name.
    QTest::newRow("number out of range")
        << QByteArray(R"({"a":{"dtype":"F32","shape":[1e999],"data_offsets":[0,8]}})") << 8 << qlonglong(-1)
        << "header is not valid JSON";
    QTest::newRow("not an object") << QByteArray("[1, 2]") << 0 << qlonglong(-1) << "header is not a JSON object";
    QTest::newRow("unknown dtype")
        << QByteArray(R"({"a":{"dtype":"F7","shape":[2],"data_offsets":[0,8]}})") << 8 << qlonglong(-1)
        << "tensor 'a': unsupported dtype 'F7'";
    QTest::newRow("missing dtype") << QByteArray(R"({"a":{"shape":[2],"data_offsets":[0,8]}})") << 8 << qlonglong(-1)
                                   << "tensor 'a': missing string 'dtype'";
    QTest::newRow("missing offsets") << QByteArray(R"({"a":{"dtype":"F32","shape":[2]}})") << 8 << qlonglong(-1)
                                     << "tensor 'a': 'data_offsets' must be two non-negative integers";
    QTest::newRow("negative shape")
        << QByteArray(R"({"a":{"dtype":"F32","shape":[-2],"data_offsets":[0,8]}})") << 8 << qlonglong(-1)
        << "not a non-negative integer";
    QTest::newRow("metadata not strings")
        << QByteArray(R"({"__metadata__":{"format":1},"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})") << 8
        << qlonglong(-1) << "__metadata__ value of 'format' is not a string";
  }
  void refusesMalformedFiles() {
    QFETCH(QByteArray, header);
    QFETCH(int, dataBytes);
    QFETCH(qlonglong, lengthField);
    QFETCH(QString, expected);
    const auto path = file("bad.safetensors");
    std::optional<uint64_t> length;
    if (lengthField >= 0) length = static_cast<uint64_t>(lengthField);
    write_raw(path, header.toStdString(), std::string(static_cast<size_t>(dataBytes), '\0'), length);
    try {
      SafetensorsFile f(path);
      QFAIL("the file was accepted");
    } catch (const SafetensorsError& e) {
      const std::string msg = e.what();
      QVERIFY2(msg.rfind(path + ": ", 0) == 0, msg.c_str());  // names the file first
      QVERIFY2(msg.find(expected.toStdString()) != std::string::npos, msg.c_str());
    }
  }

  void refusesFilesShorterThanTheLengthField() {
    const auto path = file("tiny.safetensors");
    std::ofstream(path, std::ios::binary) << "abc";
    try {
      SafetensorsFile f(path);
      QFAIL("accepted a 3-byte file");
    } catch (const SafetensorsError& e) {
      QVERIFY2(std::string(e.what()).find("too short") != std::string::npos, e.what());
    }
    QVERIFY_THROWS_EXCEPTION(SafetensorsError, SafetensorsFile(file("does-not-exist.safetensors")));
  }

  void truncatedRealFileIsRefused() {
    const auto path = file("cut.safetensors");
    save_safetensors(path, {{"w", torch::randn({16, 16})}});
    const std::string raw = read_all(path);
    std::ofstream(path, std::ios::binary | std::ios::trunc) << raw.substr(0, raw.size() - 100);
    try {
      SafetensorsFile f(path);
      QFAIL("accepted a truncated file");
    } catch (const SafetensorsError& e) {
      QVERIFY2(std::string(e.what()).find("tensor 'w'") != std::string::npos, e.what());
      QVERIFY2(std::string(e.what()).find("truncated") != std::string::npos, e.what());
    }
  }
};

TB_TEST(TestSafetensors)
#include "test_safetensors.moc"
