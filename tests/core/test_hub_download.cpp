// `tunebench-cli download` against a loopback server that speaks the Hub's protocol (tests/hub/fake_hub.py):
// the cache laid out as huggingface_hub lays it out (blobs by etag, snapshots as relative links, refs),
// LFS files through a second host that never sees the token, resume after a dropped connection, retries,
// the sha256 check, the errors a user meets (private, gated, missing), offline use, plain folders and two
// downloads of one repo at once. Etags and hashes are computed here from the bytes (Qt's SHA-1/SHA-256),
// not taken from the code under test.
#include <QtTest>

#include "test_main.h"

#include <QCryptographicHash>
#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QProcess>
#include <QTemporaryDir>

#include <filesystem>
#include <map>
#include <random>
#include <sstream>

#include <nlohmann/json.hpp>

#include "fake_hub.h"
#include "test_support.h"

namespace fs = std::filesystem;

namespace {

const std::string kCommitMain = "1111111111111111111111111111111111111111";
const std::string kCommitOld = "2222222222222222222222222222222222222222";
const std::string kConfig = R"({"model_type": "llama", "hidden_size": 64})";

std::string git_blob_sha1(const std::string& bytes) {
  QCryptographicHash h(QCryptographicHash::Sha1);
  const std::string head = "blob " + std::to_string(bytes.size()) + std::string(1, '\0');
  h.addData(QByteArray::fromStdString(head));
  h.addData(QByteArray::fromStdString(bytes));
  return h.result().toHex().toStdString();
}

std::string sha256(const std::string& bytes) {
  return QCryptographicHash::hash(QByteArray::fromStdString(bytes), QCryptographicHash::Sha256).toHex().toStdString();
}

}  // namespace

class TestHubDownload : public QObject {
  Q_OBJECT

  QTemporaryDir dir_;
  QString cli_ = qEnvironmentVariable("TB_CLI");
  std::unique_ptr<tbtest::FakeHub> server_;
  std::string weights_;  // the LFS file's bytes
  nlohmann::json repos_;  // what the loopback Hub serves
  int cache_count_ = 0;

  std::string path(const std::string& name) const { return dir_.filePath(QString::fromStdString(name)).toStdString(); }

  // A fresh cache folder for one check.
  std::string freshCache() { return path("cache" + std::to_string(++cache_count_)); }

  // `shell`: commands bash runs before it becomes the program (limits on the process).
  tbtest::ProcessResult download(const QStringList& args, const std::string& cache, const QStringList& env = {},
                                 const QString& shell = {}) {
    QProcess p;
    QProcessEnvironment e = QProcessEnvironment::systemEnvironment();
    e.insert("HF_ENDPOINT", server_->endpoint());
    e.insert("HF_HOME", QString::fromStdString(path("hf_home")));  // no token file of this machine
    e.insert("HF_HUB_CACHE", QString::fromStdString(cache));
    e.remove("HF_TOKEN");
    e.remove("HF_HUB_OFFLINE");
    for (const QString& kv : env) e.insert(kv.section('=', 0, 0), kv.section('=', 1));
    p.setProcessEnvironment(e);
    if (shell.isEmpty()) p.start(cli_, QStringList{"download"} + args);
    else p.start("bash", QStringList{"-c", shell + "; exec \"$0\" download \"$@\"", cli_} + args);
    tbtest::ProcessResult r;
    if (!p.waitForFinished(120000)) {
      p.kill();
      p.waitForFinished();
      r.err = "download did not finish";
      return r;
    }
    r.code = p.exitCode();
    r.crashed = p.exitStatus() != QProcess::NormalExit;
    r.out = QString::fromUtf8(p.readAllStandardOutput());
    r.err = QString::fromUtf8(p.readAllStandardError());
    return r;
  }

  nlohmann::json result(const tbtest::ProcessResult& r) { return nlohmann::json::parse(tbtest::last_line(r.out).toStdString()); }

  nlohmann::json log() { return server_->log(); }
  // The Range header of each request to the CDN so far ("none" without one).
  std::vector<std::string> cdnRanges() {
    std::vector<std::string> ranges;
    for (const auto& e : log())
      if (e["port"] == "cdn") ranges.push_back(e["range"].is_null() ? std::string("none") : e["range"].get<std::string>());
    return ranges;
  }
  void clearLog() { server_->clearLog(); }
  void control(const nlohmann::json& faults) { server_->control(faults); }

 private Q_SLOTS:
  void initTestCase() {
    QVERIFY(dir_.isValid());
    QVERIFY2(!cli_.isEmpty(), "TB_CLI is not set (ctest sets it)");
    std::mt19937 rng(7);
    weights_.resize(3 * 1024 * 1024 + 17);
    for (auto& c : weights_) c = char(rng());
    tbtest::write_file(path("weights.bin"), weights_);
    const nlohmann::json model_files = {{"config.json", {{"text", kConfig}}},
                                        {"model.safetensors", {{"file", path("weights.bin")}, {"lfs", true}}},
                                        {"sub/dir/notes.txt", {{"text", "notes\n"}}}};
    repos_ = {
        {"repos",
         {{{"type", "model"}, {"id", "org/tiny"},
           {"commits", {{kCommitMain, {{"files", model_files}}},
                        {kCommitOld, {{"files", {{"config.json", {{"text", "{}"}}}}}}}}},
           {"refs", {{"main", kCommitMain}, {"v1.0", kCommitOld}}}},
          {{"type", "model"}, {"id", "org/base"},
           {"commits", {{kCommitMain, {{"files", {{"config.json", {{"file", std::string(TB_SOURCE_DIR) + "/resources/base_model/config.json"}}},
                                                 {"model.safetensors", {{"file", std::string(TB_SOURCE_DIR) + "/resources/base_model/model.safetensors"}, {"lfs", true}}}}}}}}},
           {"refs", {{"main", kCommitMain}}}},
          {{"type", "dataset"}, {"id", "org/data"},
           {"commits", {{kCommitMain, {{"files", {{"train.jsonl", {{"text", "{\"text\": \"hi\"}\n"}}}}}}}}},
           {"refs", {{"main", kCommitMain}}}},
          {{"type", "model"}, {"id", "org/renamed"}, {"renamed_to", "org/tiny"}},
          {{"type", "model"}, {"id", "org/empty-file"},
           {"commits", {{kCommitMain, {{"files", {{"config.json", {{"text", kConfig}}}, {"pkg/__init__.py", {{"text", ""}}}}}}}}},
           {"refs", {{"main", kCommitMain}}}},
          {{"type", "model"}, {"id", "org/private"}, {"private", true},
           {"commits", {{kCommitMain, {{"files", {{"config.json", {{"text", kConfig}}}}}}}}},
           {"refs", {{"main", kCommitMain}}}},
          {{"type", "model"}, {"id", "org/gated"}, {"gated", true},
           {"commits", {{kCommitMain, {{"files", {{"config.json", {{"text", kConfig}}}}}}}}},
           {"refs", {{"main", kCommitMain}}}}}}};
    try {
      server_ = std::make_unique<tbtest::FakeHub>(repos_, dir_.path());
    } catch (const std::exception& e) {
      QFAIL(e.what());
    }
  }

  void cleanupTestCase() { server_.reset(); }

  // huggingface_hub's layout: blobs named by etag (the git blob id; an LFS file's sha256), snapshot
  // entries as relative links into blobs/, refs/main holding the commit (no newline). The LFS bytes come
  // from the second host, which never sees the token; a second download fetches nothing.
  void cacheLayoutAsHuggingFaceHub() {
    const std::string cache = freshCache();
    clearLog();
    auto r = download({"org/tiny", "--token", "hf_good"}, cache);
    QVERIFY2(r.code == 0, qPrintable(r.err));
    const auto j = result(r);
    const fs::path repo = fs::path(cache) / "models--org--tiny";
    QCOMPARE(j["folder"].get<std::string>(), (repo / "snapshots" / kCommitMain).string());
    QCOMPARE(j["commit"].get<std::string>(), kCommitMain);
    QCOMPARE(j["files"], nlohmann::json({"config.json", "model.safetensors", "sub/dir/notes.txt"}));
    QCOMPARE(j["bytes"].get<int64_t>(), int64_t(kConfig.size() + weights_.size() + 6));
    QCOMPARE(j["fetched"].get<int64_t>(), j["bytes"].get<int64_t>());
    QCOMPARE(tbtest::read_file((repo / "refs" / "main").string()), kCommitMain);
    const fs::path snap = repo / "snapshots" / kCommitMain;
    QCOMPARE(fs::read_symlink(snap / "config.json").string(), "../../blobs/" + git_blob_sha1(kConfig));
    QCOMPARE(fs::read_symlink(snap / "model.safetensors").string(), "../../blobs/" + sha256(weights_));
    QCOMPARE(fs::read_symlink(snap / "sub/dir/notes.txt").string(), "../../../../blobs/" + git_blob_sha1("notes\n"));
    QCOMPARE(tbtest::read_file((snap / "model.safetensors").string()), weights_);
    QCOMPARE(tbtest::read_file((snap / "sub/dir/notes.txt").string()), std::string("notes\n"));
    QVERIFY(fs::exists(fs::path(cache) / ".locks" / "models--org--tiny"));
    int cdn_requests = 0;
    for (const auto& e : log()) {
      if (e["port"] == "cdn") {
        ++cdn_requests;
        QVERIFY2(!e["authorization"].get<bool>(), "the token went to the CDN");
      } else {
        QVERIFY2(e["authorization"].get<bool>(), e.dump().c_str());
      }
    }
    QCOMPARE(cdn_requests, 1);
    // Again: nothing is fetched, no file is asked for.
    clearLog();
    r = download({"org/tiny", "--token", "hf_good"}, cache);
    QVERIFY2(r.code == 0, qPrintable(r.err));
    QCOMPARE(result(r)["fetched"].get<int64_t>(), int64_t(0));
    for (const auto& e : log()) QVERIFY2(e["path"].get<std::string>().find("/resolve/") == std::string::npos, e.dump().c_str());
  }

  // A tag resolves to its commit and is recorded in refs/; a commit is used as it is; --include keeps the
  // matching files; a renamed repo is followed; a dataset repo goes to datasets--org--data.
  void revisionsPatternsAndDatasets() {
    const std::string cache = freshCache();
    auto r = download({"org/tiny", "--revision", "v1.0"}, cache);
    QVERIFY2(r.code == 0, qPrintable(r.err));
    QCOMPARE(result(r)["commit"].get<std::string>(), kCommitOld);
    QCOMPARE(tbtest::read_file((fs::path(cache) / "models--org--tiny" / "refs" / "v1.0").string()), kCommitOld);
    r = download({"org/tiny", "--revision", QString::fromStdString(kCommitMain), "--include", "*.json", "sub/"}, cache);
    QVERIFY2(r.code == 0, qPrintable(r.err));
    QCOMPARE(result(r)["files"], nlohmann::json({"config.json", "sub/dir/notes.txt"}));
    QVERIFY(!fs::exists(fs::path(cache) / "models--org--tiny" / "refs" / "main"));
    r = download({"org/tiny", "--exclude", "*.safetensors", "--include", "*"}, cache);
    QCOMPARE(result(r)["files"], nlohmann::json({"config.json", "sub/dir/notes.txt"}));
    // A renamed repo: the Hub redirects its old name (API and files, 307 to a relative Location).
    r = download({"org/renamed", "--include", "config.json"}, cache);
    QVERIFY2(r.code == 0, qPrintable(r.err));
    QCOMPARE(result(r)["commit"].get<std::string>(), kCommitMain);
    r = download({"org/data", "--repo-type", "dataset"}, cache);
    QVERIFY2(r.code == 0, qPrintable(r.err));
    QVERIFY(fs::is_regular_file(fs::path(cache) / "datasets--org--data" / "snapshots" / kCommitMain / "train.jsonl"));
  }

  // The connection drops after 1 MB: the next try asks for the rest (Range), not the whole file.
  void aDroppedConnectionResumes() {
    const std::string cache = freshCache();
    control({{"drop_after", {{sha256(weights_), 1000000}}}});
    clearLog();
    const auto r = download({"org/tiny", "--include", "*.safetensors"}, cache);
    QVERIFY2(r.code == 0, qPrintable(r.err));
    QCOMPARE(tbtest::read_file((fs::path(cache) / "models--org--tiny" / "snapshots" / kCommitMain / "model.safetensors").string()),
             weights_);
    const auto ranges = cdnRanges();
    QCOMPARE(ranges, (std::vector<std::string>{"none", "bytes=1000000-"}));
  }

  // A disk that fills mid-file (here a file-size limit on the process: writes past 1 MiB fail as on a full
  // disk): one line naming the file that could not be written, the partial blob kept, nothing placed in the
  // snapshot; the next download resumes from the bytes that were written.
  void aFullDiskKeepsThePartialFile() {
    const std::string cache = freshCache();
    const auto full = download({"org/tiny", "--include", "*.safetensors"}, cache, {}, "trap '' XFSZ; ulimit -f 1024");
    QCOMPARE(full.code, 1);
    QVERIFY2(full.err.contains("cannot write ") && full.err.contains(".incomplete (File too large); the partial file is kept"),
             qPrintable(full.err));
    const fs::path blobs = fs::path(cache) / "models--org--tiny" / "blobs";
    const fs::path partial = blobs / (sha256(weights_) + ".incomplete");
    QVERIFY(fs::exists(partial));
    const auto kept = int64_t(fs::file_size(partial));
    QCOMPARE(kept, int64_t(1024 * 1024));
    QVERIFY(!fs::exists(blobs / sha256(weights_)));
    QVERIFY(!fs::exists(fs::path(cache) / "models--org--tiny" / "snapshots" / kCommitMain / "model.safetensors"));
    clearLog();
    const auto r = download({"org/tiny", "--include", "*.safetensors"}, cache);
    QVERIFY2(r.code == 0, qPrintable(r.err));
    QCOMPARE(tbtest::read_file((fs::path(cache) / "models--org--tiny" / "snapshots" / kCommitMain / "model.safetensors").string()),
             weights_);
    const auto ranges = cdnRanges();
    QCOMPARE(ranges, (std::vector<std::string>{"bytes=" + std::to_string(kept) + "-"}));
    QCOMPARE(result(r)["fetched"].get<int64_t>(), int64_t(weights_.size()) - kept);
  }

  // TLS is verified: a Hub (and CDN) whose certificate no system authority signed is refused at once,
  // in one line that says what to do; with REQUESTS_CA_BUNDLE naming its certificate, the LFS file comes
  // through both HTTPS hosts.
  void tlsIsVerified() {
    const QString cert = QString::fromStdString(path("tls_cert.pem")), key = QString::fromStdString(path("tls_key.pem"));
    const auto made = tbtest::run_process("openssl", {"req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", key, "-out", cert,
                                                      "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1", "-days", "2"});
    QVERIFY2(made.code == 0, qPrintable(made.err));
    QDir().mkpath(QString::fromStdString(path("tls_hub")));
    std::unique_ptr<tbtest::FakeHub> secure;
    try {
      secure = std::make_unique<tbtest::FakeHub>(repos_, QString::fromStdString(path("tls_hub")), cert, key);
    } catch (const std::exception& e) {
      QFAIL(e.what());
    }
    QVERIFY(secure->endpoint().startsWith("https://"));
    const std::string cache = freshCache();
    const auto refused = download({"org/tiny", "--include", "*.safetensors"}, cache, {"HF_ENDPOINT=" + secure->endpoint()});
    QCOMPARE(refused.code, 1);
    QVERIFY2(refused.err.contains("org/tiny: the server's TLS certificate was not accepted: ") &&
                 refused.err.contains("REQUESTS_CA_BUNDLE") && !refused.err.contains("tries"),
             qPrintable(refused.err));
    const auto r = download({"org/tiny", "--include", "*.safetensors"}, cache,
                            {"HF_ENDPOINT=" + secure->endpoint(), "REQUESTS_CA_BUNDLE=" + cert});
    QVERIFY2(r.code == 0, qPrintable(r.err));
    QCOMPARE(tbtest::read_file((fs::path(cache) / "models--org--tiny" / "snapshots" / kCommitMain / "model.safetensors").string()),
             weights_);
    int cdn = 0;
    for (const auto& e : secure->log()) cdn += e["port"] == "cdn";
    QCOMPARE(cdn, 1);  // the bytes came over the second HTTPS host
  }

  // A proxy comes from the environment (http_proxy), as huggingface_hub's requests takes it: every request,
  // to the Hub and to its CDN, goes through the loopback proxy (tests/hub/forward_proxy.py); the token
  // reaches only the Hub's own URLs through it.
  void aProxyFromTheEnvironment() {
    const QString folder = QString::fromStdString(path("proxy"));
    QDir().mkpath(folder);
    QProcess proxy;
    proxy.start(tbtest::reference_python(), {QString(TB_SOURCE_DIR) + "/tests/hub/forward_proxy.py", "--port-file",
                                             folder + "/port.json", "--log", folder + "/log.jsonl"});
    QVERIFY(proxy.waitForStarted());
    for (int i = 0; i < 300 && !QFile::exists(folder + "/port.json"); ++i) QTest::qWait(100);
    QVERIFY2(QFile::exists(folder + "/port.json"), qPrintable(QString::fromUtf8(proxy.readAllStandardError())));
    const int port = nlohmann::json::parse(tbtest::read_file((folder + "/port.json").toStdString()))["proxy"].get<int>();
    const std::string cache = freshCache();
    const auto r = download({"org/tiny", "--include", "*.safetensors", "--token", "hf_good"}, cache,
                            {QString("http_proxy=http://127.0.0.1:%1").arg(port), "no_proxy=", "NO_PROXY="});
    proxy.terminate();
    proxy.waitForFinished(10000);
    QVERIFY2(r.code == 0, qPrintable(r.err));
    QCOMPARE(tbtest::read_file((fs::path(cache) / "models--org--tiny" / "snapshots" / kCommitMain / "model.safetensors").string()),
             weights_);
    int hub = 0, cdn = 0;
    std::istringstream lines(tbtest::read_file((folder + "/log.jsonl").toStdString()));
    for (std::string line; std::getline(lines, line);) {
      const auto e = nlohmann::json::parse(line);
      const std::string url = e["url"];
      if (url.rfind(server_->endpoint().toStdString() + "/", 0) == 0) {
        ++hub;
        QVERIFY2(e["authorization"].get<bool>(), line.c_str());
      } else if (url.find(":" + std::to_string(server_->cdnPort()) + "/") != std::string::npos) {
        ++cdn;
        QVERIFY2(!e["authorization"].get<bool>(), line.c_str());
      }
    }
    QVERIFY2(hub >= 2, qPrintable(QString("%1 Hub requests through the proxy").arg(hub)));  // the file list, the resolve
    QCOMPARE(cdn, 1);
  }

  // An empty file (a package's __init__.py) is placed as an empty blob (it failed as "has -1 bytes": no byte
  // ever arrived to create the partial file); a second download finds it there.
  void anEmptyFile() {
    const std::string cache = freshCache();
    for (int round = 0; round < 2; ++round) {
      const auto r = download({"org/empty-file"}, cache);
      QVERIFY2(r.code == 0, qPrintable(r.err));
      const fs::path file = fs::path(cache) / "models--org--empty-file" / "snapshots" / kCommitMain / "pkg" / "__init__.py";
      QVERIFY(fs::is_regular_file(file));
      QCOMPARE(int64_t(fs::file_size(file)), int64_t(0));
      QCOMPARE(result(r)["files"], nlohmann::json({"config.json", "pkg/__init__.py"}));
    }
  }

  // A rate limit (429 with Retry-After) and two 503s are waited out.
  void rateLimitsAndServerErrorsAreRetried() {
    const std::string cache = freshCache();
    control({{"rate_limit", {{"/api/", 1}}}, {"server_error", {{"/org/tiny/resolve/", 2}}}});
    const auto r = download({"org/tiny", "--include", "config.json"}, cache);
    QVERIFY2(r.code == 0, qPrintable(r.err));
    QCOMPARE(result(r)["files"], nlohmann::json({"config.json"}));
  }

  // One line each, naming the repo and what to do; nothing half-written.
  void errorsSayWhatToDo_data() {
    QTest::addColumn<QStringList>("args");
    QTest::addColumn<QString>("said");
    QTest::newRow("private, no token") << QStringList{"org/private"} << "org/private needs a token: it is private, or no model repo has that name";
    QTest::newRow("private, bad token") << QStringList{"org/private", "--token", "hf_bad"} << "org/private: the token was refused (401)";
    QTest::newRow("gated") << QStringList{"org/gated", "--token", "hf_good"} << "org/gated is gated: accept its conditions at http://127.0.0.1:";
    QTest::newRow("no repo") << QStringList{"org/missing"} << "no model repo 'org/missing' on http://127.0.0.1:";
    QTest::newRow("no revision") << QStringList{"org/tiny", "--revision", "v9"} << "org/tiny has no revision 'v9'";
    QTest::newRow("nothing included") << QStringList{"org/tiny", "--include", "*.gguf"} << "org/tiny at 'main' has no file that --include/--exclude let through";
    QTest::newRow("not a repo id") << QStringList{"../etc"} << "'../etc' is not a repo id";
  }
  void errorsSayWhatToDo() {
    QFETCH(QStringList, args);
    QFETCH(QString, said);
    const std::string cache = freshCache();
    const auto r = download(args, cache);
    QCOMPARE(r.code, 1);
    QVERIFY2(r.err.contains("tunebench-cli: download: " + said), qPrintable(r.err));
    QCOMPARE(r.err.count('\n'), 1);
    QVERIFY(!fs::exists(fs::path(cache) / "models--org--tiny" / "snapshots"));
    QVERIFY(!r.err.contains("hf_good") && !r.err.contains("hf_bad"));  // a token is never printed
  }

  // Offline: the cache answers, by branch name; a repo not in it names the command to run.
  void offlineUsesTheCache() {
    const std::string cache = freshCache();
    QCOMPARE(download({"org/tiny", "--include", "*.json"}, cache).code, 0);
    auto r = download({"org/tiny"}, cache, {"HF_HUB_OFFLINE=1", "HF_ENDPOINT=http://127.0.0.1:1"});
    QVERIFY2(r.code == 0, qPrintable(r.err));
    QCOMPARE(result(r)["files"], nlohmann::json({"config.json"}));
    QCOMPARE(result(r)["commit"].get<std::string>(), kCommitMain);
    r = download({"org/data", "--repo-type", "dataset", "--offline"}, cache);
    QCOMPARE(r.code, 1);
    QVERIFY2(r.err.contains("this is offline: run `tunebench-cli download org/data`"), qPrintable(r.err));
  }

  // --local-dir (torchtune's --output-dir): plain files, and huggingface_hub's metadata beside them
  // (commit, etag), so a second run fetches nothing.
  void aPlainFolder() {
    const std::string folder = path("plain");
    auto r = download({"org/tiny", "--output-dir", QString::fromStdString(folder)}, freshCache());
    QVERIFY2(r.code == 0, qPrintable(r.err));
    QVERIFY(fs::is_regular_file(fs::symlink_status(fs::path(folder) / "model.safetensors")));
    QCOMPARE(tbtest::read_file(folder + "/model.safetensors"), weights_);
    QCOMPARE(tbtest::read_file(folder + "/sub/dir/notes.txt"), std::string("notes\n"));
    const std::string meta = tbtest::read_file(folder + "/.cache/huggingface/download/config.json.metadata");
    QVERIFY2(meta.rfind(kCommitMain + "\n" + git_blob_sha1(kConfig) + "\n", 0) == 0, meta.c_str());
    QCOMPARE(result(r)["files"].size(), size_t(3));
    r = download({"org/tiny", "--local-dir", QString::fromStdString(folder)}, freshCache());
    QCOMPARE(result(r)["fetched"].get<int64_t>(), int64_t(0));
  }

  // A repo id where a config names a model folder (model.path, checkpointer.checkpoint_dir) is its cached
  // snapshot, fetched first when the cache lacks it: eval of the bundled base model by repo id (an empty
  // cache, the loopback Hub) scores as from its own folder, and a second eval fetches nothing; a revision
  // after '@' names that commit. Offline, a repo id not in the cache names the download to run; a repo the
  // Hub does not have says so, naming the config key. `run` logs what it waits for.
  void aRepoIdIsFetchedOnDemand() {
    const std::string cache = freshCache();
    const auto cli = [&](const QStringList& args, const QStringList& env = {}) {
      QProcess p;
      QProcessEnvironment e = QProcessEnvironment::systemEnvironment();
      e.insert("HF_ENDPOINT", server_->endpoint());
      e.insert("HF_HOME", QString::fromStdString(path("hf_home")));
      e.insert("HF_HUB_CACHE", QString::fromStdString(cache));
      e.remove("HF_HUB_OFFLINE");
      for (const QString& kv : env) e.insert(kv.section('=', 0, 0), kv.section('=', 1));
      p.setProcessEnvironment(e);
      p.setWorkingDirectory(TB_SOURCE_DIR);
      p.start(cli_, args);
      p.waitForFinished(300000);
      tbtest::ProcessResult r;
      r.code = p.exitCode();
      r.out = QString::fromUtf8(p.readAllStandardOutput());
      r.err = QString::fromUtf8(p.readAllStandardError());
      return r;
    };
    const auto eval = [&](const QString& folder, const QStringList& env = {}) {
      return cli({"eval", "--config", "tiny/eval_stories", "model.path=" + folder, "checkpointer.checkpoint_dir=" + folder,
                  "num_threads=1"}, env);
    };
    const auto local = eval("resources/base_model");
    QVERIFY2(local.code == 0, qPrintable(local.err));
    const double loss = result(local)["loss"].get<double>();

    const auto offline = eval("org/base", {"HF_HUB_OFFLINE=1"});
    QCOMPARE(offline.code, 1);
    QVERIFY2(offline.err.contains("model.path: 'org/base' is no folder here; as a Hub repo id: org/base at 'main' is not in") &&
                 offline.err.contains("this is offline") &&
                 offline.err.contains("run `tunebench-cli download org/base`"),
             qPrintable(offline.err));
    QVERIFY(!QDir(QString::fromStdString(cache + "/models--org--base/snapshots")).exists());

    clearLog();
    const auto fetched = eval("org/base");
    QVERIFY2(fetched.code == 0, qPrintable(fetched.err));
    QCOMPARE(result(fetched)["loss"].get<double>(), loss);
    QVERIFY2(fetched.err.contains("eval: fetching org/base: ") && fetched.err.contains("(100%)"), qPrintable(fetched.err));
    QVERIFY2(fetched.err.contains(QString::fromStdString(cache)), qPrintable(fetched.err));  // the weights came from there
    int gets = 0;
    for (const auto& r : log()) gets += r["method"] == "GET" && r["path"].get<std::string>().rfind("/api/", 0) != 0;
    QCOMPARE(gets, 2);  // config.json and model.safetensors (from the CDN), each once although two keys name the repo

    clearLog();
    const auto again = eval("org/base@" + QString::fromStdString(kCommitMain));
    QVERIFY2(again.code == 0, qPrintable(again.err));
    QCOMPARE(result(again)["loss"].get<double>(), loss);
    QVERIFY2(!again.err.contains("fetching"), qPrintable(again.err));
    QCOMPARE(log().size(), size_t(0));  // the cache answered: not even the file list

    const auto missing = eval("org/other");
    QCOMPARE(missing.code, 1);
    QVERIFY2(missing.err.contains("model.path: 'org/other' is no folder here; as a Hub repo id: no model repo 'org/other' on " +
                                  server_->endpoint()),
             qPrintable(missing.err));

    // A recipe run through the harness: its log says what the run waited for before it started.
    const std::string runCache = freshCache();
    const QString out = QString::fromStdString(path("run_fetch"));
    const auto run = cli({"run", "lora_finetune_single_device", "--config", "tiny/lora_single_device", "model.path=org/base",
                          "checkpointer.checkpoint_dir=org/base", "output_dir=" + out, "epochs=1", "max_steps_per_epoch=1",
                          "num_threads=1"},
                         {"HF_HUB_CACHE=" + QString::fromStdString(runCache)});
    QVERIFY2(run.code == 0, qPrintable(run.err + run.out));
    QVERIFY2(run.out.contains("waiting for org/base (model.path) from the Hub: ") && run.out.contains("(100%)"), qPrintable(run.out));
    const QString metrics = QString::fromStdString(tbtest::read_file((out + "/logs/metrics.jsonl").toStdString()));
    QVERIFY2(metrics.indexOf("waiting for org/base") >= 0 && metrics.indexOf("waiting for org/base") < metrics.indexOf("\"step\""),
             qPrintable(metrics.left(2000)));
  }

  // Hugging Face's own JavaScript client (@huggingface/hub, tests/reference/hub_js) judges the layout: its
  // cache scan reads what `download` wrote (repo, commit, refs, each file's blob and size); what its
  // snapshotDownload wrote, `download --offline` reads, byte for byte.
  void huggingFaceJsClientSharesTheCache() {
    const QString script = QString(TB_SOURCE_DIR) + "/tests/reference/hub_js/hub_cache_reference.mjs";
    QVERIFY2(QFile::exists(QString(TB_SOURCE_DIR) + "/tests/reference/hub_js/node_modules/@huggingface/hub/package.json"),
             "the JS client is not installed: scripts/setup.sh test installs it (npm ci in tests/reference/hub_js)");
    const std::string ours = freshCache();
    QCOMPARE(download({"org/tiny"}, ours).code, 0);
    auto r = tbtest::run_process("node", {script, "scan", QString::fromStdString(ours)});
    QVERIFY2(r.code == 0, qPrintable(r.err));
    const auto scan = nlohmann::json::parse(tbtest::last_line(r.out).toStdString());
    QVERIFY2(scan["warnings"].empty(), scan.dump().c_str());
    QCOMPARE(scan["repos"].size(), size_t(1));
    const auto& repo = scan["repos"][0];
    QCOMPARE(repo["name"].get<std::string>(), std::string("org/tiny"));
    QCOMPARE(repo["type"].get<std::string>(), std::string("model"));
    QCOMPARE(repo["revisions"].size(), size_t(1));
    const auto& rev = repo["revisions"][0];
    QCOMPARE(rev["commit"].get<std::string>(), kCommitMain);
    QCOMPARE(rev["refs"], nlohmann::json({"main"}));
    std::map<std::string, std::pair<std::string, int64_t>> files;  // its scan lists the snapshot's top level
    for (const auto& f : rev["files"]) files[f["path"].get<std::string>()] = {f["blob"].get<std::string>(), f["size"].get<int64_t>()};
    QCOMPARE(files["config.json"], std::make_pair(git_blob_sha1(kConfig), int64_t(kConfig.size())));
    QCOMPARE(files["model.safetensors"], std::make_pair(sha256(weights_), int64_t(weights_.size())));

    const std::string theirs = freshCache();
    r = tbtest::run_process("node", {script, "snapshot", QString::fromStdString(theirs), server_->endpoint(), "org/tiny", "main"});
    QVERIFY2(r.code == 0, qPrintable(r.err));
    r = download({"org/tiny", "--offline"}, theirs, {"HF_ENDPOINT=http://127.0.0.1:1"});
    QVERIFY2(r.code == 0, qPrintable(r.err));
    const auto j = result(r);
    QCOMPARE(j["commit"].get<std::string>(), kCommitMain);
    QCOMPARE(j["files"], nlohmann::json({"config.json", "model.safetensors", "sub/dir/notes.txt"}));
    QCOMPARE(tbtest::read_file(j["folder"].get<std::string>() + "/model.safetensors"), weights_);
  }

  // Two processes download one repo at once: both succeed, with one blob per file.
  void twoDownloadsAtOnce() {
    const std::string cache = freshCache();
    QProcess a, b;
    for (QProcess* p : {&a, &b}) {
      QProcessEnvironment e = QProcessEnvironment::systemEnvironment();
      e.insert("HF_ENDPOINT", server_->endpoint());
      e.insert("HF_HOME", QString::fromStdString(path("hf_home")));
      e.insert("HF_HUB_CACHE", QString::fromStdString(cache));
      p->setProcessEnvironment(e);
      p->start(cli_, {"download", "org/tiny"});
    }
    for (QProcess* p : {&a, &b}) {
      QVERIFY(p->waitForFinished(120000));
      QVERIFY2(p->exitCode() == 0, p->readAllStandardError().constData());
    }
    int blobs = 0;
    for (const auto& e : fs::directory_iterator(fs::path(cache) / "models--org--tiny" / "blobs")) {
      ++blobs;
      QVERIFY2(e.path().extension() != ".incomplete", e.path().c_str());
    }
    QCOMPARE(blobs, 3);
    QCOMPARE(tbtest::read_file((fs::path(cache) / "models--org--tiny" / "snapshots" / kCommitMain / "model.safetensors").string()),
             weights_);
  }

  // Bytes that do not match the sha256 the Hub lists are refused, and neither the blob nor the partial
  // file is kept. (Last: the server serves that blob corrupted from now on.)
  void aBlobThatDoesNotMatchItsSha256IsNotKept() {
    const std::string cache = freshCache();
    control({{"corrupt", {sha256(weights_)}}});
    const auto r = download({"org/tiny", "--include", "*.safetensors"}, cache);
    QCOMPARE(r.code, 1);
    QVERIFY2(r.err.contains("model.safetensors: the bytes received do not match the sha256 the Hub lists"), qPrintable(r.err));
    const fs::path blobs = fs::path(cache) / "models--org--tiny" / "blobs";
    for (const auto& e : fs::directory_iterator(blobs)) QFAIL(qPrintable(QString::fromStdString(e.path().string())));
  }
};

TB_TEST(TestHubDownload)
#include "test_hub_download.moc"
