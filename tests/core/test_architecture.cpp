// The engine's include rule (ARCHITECTURE.md): a file of recipes/ includes headers of its own folder
// and of lower layers only, and no Qt header. The layers are read from ARCHITECTURE.md's `layers`
// block, so the document and the check cannot drift apart.
#include <QtTest>

#include "test_main.h"

#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

namespace fs = std::filesystem;

namespace {

// Folder -> rank (0 = bottom) from the ```layers block; lines list folders top to bottom.
std::map<std::string, int> read_layers(const fs::path& architecture_md, std::string* error) {
  std::ifstream in(architecture_md);
  std::vector<std::vector<std::string>> lines;
  bool inside = false;
  for (std::string line; std::getline(in, line);) {
    if (!inside && line.rfind("```layers", 0) == 0) {
      inside = true;
    } else if (inside && line.rfind("```", 0) == 0) {
      break;
    } else if (inside) {
      std::istringstream words(line);
      std::vector<std::string> folders;
      for (std::string w; words >> w;) folders.push_back(w);
      if (!folders.empty()) lines.push_back(folders);
    }
  }
  std::map<std::string, int> rank;
  for (size_t i = 0; i < lines.size(); ++i)
    for (const auto& folder : lines[i]) rank[folder] = static_cast<int>(lines.size() - 1 - i);
  if (rank.empty() && error) *error = architecture_md.string() + " has no ```layers block";
  return rank;
}

// The layer a file of the engine belongs to: its first folder under the root, "." for root files.
std::string folder_of(const fs::path& relative) {
  return relative.has_parent_path() ? relative.begin()->string() : std::string(".");
}

// Every include of the engine under `root` that breaks the rule, as "file:line: why".
std::vector<std::string> violations(const fs::path& root, const std::map<std::string, int>& rank) {
  std::vector<std::string> out;
  // (A raw string literal here trips moc's preprocessor.)
  const std::regex include("^\\s*#\\s*include\\s*([<\"])([^>\"]+)[>\"]");
  for (const auto& entry : fs::recursive_directory_iterator(root)) {
    const auto ext = entry.path().extension();
    if (!entry.is_regular_file() || (ext != ".h" && ext != ".cpp")) continue;
    const fs::path relative = fs::relative(entry.path(), root);
    const std::string own = folder_of(relative);
    const auto own_rank = rank.find(own);
    if (own_rank == rank.end()) {
      out.push_back(relative.string() + ": its folder '" + own + "' is not in ARCHITECTURE.md's layers");
      continue;
    }
    std::ifstream in(entry.path());
    int number = 0;
    for (std::string line; std::getline(in, line);) {
      ++number;
      std::smatch m;
      if (!std::regex_search(line, m, include)) continue;
      const std::string where = relative.string() + ":" + std::to_string(number) + ": ";
      const std::string target = m[2];
      if (m[1] == "<") {
        if (target.size() > 1 && target[0] == 'Q' && std::isupper(static_cast<unsigned char>(target[1])))
          out.push_back(where + "includes the Qt header <" + target + ">; the engine never uses Qt");
        continue;
      }
      if (fs::exists(entry.path().parent_path() / target) && !fs::exists(root / target)) continue;  // a neighbour
      if (!fs::exists(root / target)) continue;  // not an engine header
      const std::string theirs = folder_of(fs::path(target));
      if (theirs == own) continue;
      const auto their_rank = rank.find(theirs);
      if (their_rank == rank.end()) {
        out.push_back(where + "includes " + target + " from '" + theirs + "', which is in no layer");
      } else if (their_rank->second >= own_rank->second) {
        out.push_back(where + "includes " + target + ": '" + theirs + "' is " +
                      (their_rank->second == own_rank->second ? "on the same layer as" : "a layer above") + " '" + own +
                      "'");
      }
    }
  }
  std::sort(out.begin(), out.end());
  return out;
}

void write(const fs::path& path, const std::string& text) {
  fs::create_directories(path.parent_path());
  std::ofstream(path) << text;
}

}  // namespace

class TestArchitecture : public QObject {
  Q_OBJECT
 private Q_SLOTS:
  void engineFollowsItsLayers() {
    std::string error;
    const auto rank = read_layers(fs::path(TB_SOURCE_DIR) / "ARCHITECTURE.md", &error);
    QVERIFY2(!rank.empty(), error.c_str());
    QVERIFY(rank.at("config") < rank.at("models") && rank.at("compile") < rank.at("training"));
    std::string report;
    for (const auto& v : violations(fs::path(TB_SOURCE_DIR) / "recipes", rank)) report += v + "\n";
    QVERIFY2(report.empty(), report.c_str());
  }

  // The check itself: on a small tree, upward includes, peers' includes and a Qt header are found;
  // downward includes and a neighbour's header are not.
  void checkFindsWhatBreaksTheRule() {
    QTemporaryDir dir;
    const fs::path root = dir.path().toStdString();
    write(root / "ARCHITECTURE.md", "intro\n```layers\n. top\nmid other\nbase\n```\n");
    write(root / "recipes/base/a.h", "#include <vector>\n");
    write(root / "recipes/mid/b.h", "#include \"base/a.h\"\n#include \"local.h\"\n");
    write(root / "recipes/mid/local.h", "\n");
    write(root / "recipes/other/c.cpp", "#include \"mid/b.h\"\n");
    write(root / "recipes/base/d.cpp", "#include \"base/a.h\"\n\n#include \"top/e.h\"\n");
    write(root / "recipes/top/e.h", "#include \"mid/b.h\"\n#include <QString>\n");
    write(root / "recipes/f.cpp", "#include \"top/e.h\"\n");
    std::string error;
    const auto found = violations(root / "recipes", read_layers(root / "ARCHITECTURE.md", &error));
    const std::vector<std::string> expected = {
        "base/d.cpp:3: includes top/e.h: 'top' is a layer above 'base'",
        "f.cpp:1: includes top/e.h: 'top' is on the same layer as '.'",
        "other/c.cpp:1: includes mid/b.h: 'mid' is on the same layer as 'other'",
        "top/e.h:2: includes the Qt header <QString>; the engine never uses Qt",
    };
    QCOMPARE(found, expected);
  }
};

TB_TEST(TestArchitecture)
#include "test_architecture.moc"
