// Bundled configs: where they live and which recipe each is for.
#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <regex>

#include "config/config.h"
#include "config/schema.h"

namespace fs = std::filesystem;

namespace tb::config {
namespace {

std::string exe_relative_share() {
  std::error_code ec;
  fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (ec) return {};
  return (exe.parent_path().parent_path() / "share" / "tunebench").string();
}

bool is_file(const fs::path& p) {
  std::error_code ec;
  return fs::is_regular_file(p, ec);
}

}  // namespace

std::string share_dir() {
  if (const char* env = std::getenv("TUNEBENCH_SHARE_DIR"); env && *env) return env;
  std::string beside = exe_relative_share();
  std::error_code ec;
  if (!beside.empty() && fs::is_directory(beside, ec)) return beside;
  for (const char* system : {"/usr/local/share/tunebench", "/usr/share/tunebench"})
    if (fs::is_directory(system, ec)) return system;
  return beside;
}

std::vector<BundledConfig> bundled_configs() {
  std::vector<BundledConfig> out;
  fs::path root = fs::path(share_dir()) / "configs";
  std::error_code ec;
  if (!fs::is_directory(root, ec)) return out;
  for (auto it = fs::recursive_directory_iterator(root, ec); !ec && it != fs::recursive_directory_iterator();
       it.increment(ec)) {
    if (!it->is_regular_file(ec) || it->path().extension() != ".yaml") continue;
    fs::path rel = fs::relative(it->path(), root, ec);
    BundledConfig b;
    b.name = rel.replace_extension().generic_string();
    b.path = it->path().string();
    b.recipe = recipe_for_config(b.path);
    out.push_back(std::move(b));
  }
  std::sort(out.begin(), out.end(), [](const BundledConfig& a, const BundledConfig& b) { return a.name < b.name; });
  return out;
}

std::string find_config(const std::string& name_or_path) {
  if (name_or_path.empty()) return {};
  if (is_file(name_or_path)) return name_or_path;
  fs::path root = fs::path(share_dir()) / "configs";
  for (const fs::path& candidate : {root / name_or_path, root / (name_or_path + ".yaml")})
    if (is_file(candidate)) return candidate.string();
  return {};
}

std::string bundled_config_name(const std::string& path) {
  std::error_code ec;
  const fs::path file = fs::weakly_canonical(path, ec);
  if (ec || !is_file(file)) return {};
  const fs::path root = fs::weakly_canonical(fs::path(share_dir()) / "configs", ec);
  if (ec) return {};
  const fs::path rel = file.lexically_relative(root);
  if (rel.empty() || *rel.begin() == "..") return {};
  fs::path name = rel;
  return name.replace_extension().generic_string();
}

bool share_is_build_tree() {
  std::error_code ec;
  return fs::is_regular_file(fs::path(share_dir()) / ".." / ".." / "CMakeCache.txt", ec);
}

std::string resolve_input_path(const std::string& path) {
  std::error_code ec;
  if (path.empty() || fs::path(path).is_absolute() || fs::exists(path, ec)) return path;
  const fs::path shared = fs::path(share_dir()) / path;
  if (fs::exists(shared, ec)) return shared.string();
  return path;
}

std::string recipe_for_config(const std::string& path) {
  // The leading comment block may name the recipe.
  static const std::regex kRecipeComment(R"(^#\s*recipe\s*:\s*([A-Za-z0-9_]+)\s*$)");
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.empty()) continue;
    if (line[0] != '#') break;
    std::smatch m;
    if (std::regex_match(line, m, kRecipeComment)) return m[1];
  }
  std::string stem = fs::path(path).stem().string();
  std::vector<std::string> words;
  std::string word;
  for (char c : stem + "_") {
    if (c == '_' || c == '-') {
      if (!word.empty()) words.push_back(word);
      word.clear();
    } else {
      word += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    }
  }
  auto has = [&](const char* w) { return std::find(words.begin(), words.end(), w) != words.end(); };
  if (has("lora") || has("qlora") || has("dora") || has("qdora")) return "lora_finetune_single_device";
  if (has("full")) return "full_finetune_single_device";
  // Configs for eval, generate or export (torchtune's *_eval.yaml, generation.yaml, ...) hold no training keys.
  for (const char* w : {"eval", "evaluation", "generation", "generate", "export", "quantization", "inference"})
    if (has(w)) return kInferenceVerbs;
  return {};
}

}  // namespace tb::config
