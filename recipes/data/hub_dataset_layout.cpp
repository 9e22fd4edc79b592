// Hub dataset repo layout and split slicing as the Python `datasets` library resolves them. Each rule names the
// datasets source file and function it follows; the code is our own.
#include "data/hub_dataset_layout.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <map>
#include <regex>
#include <set>
#include <stdexcept>
#include <tuple>

namespace tb::data {
namespace {

using SplitFiles = std::vector<std::pair<std::string, std::vector<std::string>>>;  // split -> patterns or files

[[noreturn]] void fail(const std::string& message) { throw std::invalid_argument(message); }

std::string join(const std::vector<std::string>& items) {
  std::string out;
  for (const auto& item : items) out += (out.empty() ? "" : ", ") + item;
  return out.empty() ? "none" : out;
}

std::vector<std::string> split_path(const std::string& path) {
  std::vector<std::string> parts;
  size_t start = 0;
  while (start <= path.size()) {
    const size_t slash = std::min(path.find('/', start), path.size());
    if (slash > start) parts.push_back(path.substr(start, slash - start));
    start = slash + 1;
  }
  return parts;
}

std::string basename(const std::string& path) {
  const size_t slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

// Split names: datasets' naming.py, _split_re "^\w+(\.\w+)*$" (ASCII word characters here).
bool valid_split_name(const std::string& name) {
  static const std::regex re(R"(^\w+(\.\w+)*$)");
  return std::regex_match(name, re);
}

// ---- glob matching (fsspec's glob_translate, which data_files.py resolve_pattern relies on) ----------------------

bool match_component(const std::string& pat, size_t p, const std::string& s, size_t i) {
  while (p < pat.size()) {
    const char c = pat[p];
    if (c == '*') {
      for (size_t k = i; k <= s.size(); ++k)
        if (match_component(pat, p + 1, s, k)) return true;
      return false;
    }
    if (i >= s.size()) return false;
    if (c == '?') {
      ++p, ++i;
      continue;
    }
    if (c == '[') {  // fnmatch classes: '!' negates, ']' first is literal, an unclosed '[' is literal
      size_t q = p + 1;
      if (q < pat.size() && pat[q] == '!') ++q;
      if (q < pat.size() && pat[q] == ']') ++q;
      while (q < pat.size() && pat[q] != ']') ++q;
      if (q < pat.size()) {
        size_t k = p + 1;
        const bool negate = pat[k] == '!';
        if (negate) ++k;
        bool hit = false;
        while (k < q) {
          if (k + 2 < q && pat[k + 1] == '-') {
            hit = hit || (static_cast<unsigned char>(s[i]) >= static_cast<unsigned char>(pat[k]) &&
                          static_cast<unsigned char>(s[i]) <= static_cast<unsigned char>(pat[k + 2]));
            k += 3;
          } else {
            hit = hit || s[i] == pat[k];
            ++k;
          }
        }
        if (hit == negate) return false;
        p = q + 1, ++i;
        continue;
      }
    }
    if (c != s[i]) return false;
    ++p, ++i;
  }
  return i == s.size();
}

bool match_parts(const std::vector<std::string>& pat, size_t p, const std::vector<std::string>& path, size_t i) {
  if (p == pat.size()) return i == path.size();
  if (pat[p] == "**") {
    if (p + 1 == pat.size()) return i < path.size();  // a final '**' takes the rest (a file: at least one part)
    for (size_t k = i; k <= path.size(); ++k)
      if (match_parts(pat, p + 1, path, k)) return true;
    return false;
  }
  return i < path.size() && match_component(pat[p], 0, path[i], 0) && match_parts(pat, p + 1, path, i + 1);
}

bool has_magic(const std::string& pattern) { return pattern.find_first_of("*?[") != std::string::npos; }

// ---- file resolution: data_files.py, resolve_pattern -------------------------------------------------------------

// FILES_TO_IGNORE in data_files.py.
const std::set<std::string> kFilesToIgnore = {"README.md",         "config.json",    "dataset_info.json",
                                              "dataset_infos.json", "dummy_data.zip", "dataset_dict.json"};

// Extension -> packaged module, a subset of packaged_modules/__init__.py _EXTENSION_TO_MODULE: every tabular and
// text format, and the common media extensions of the folder builders (enough to tell such a repo apart).
const std::map<std::string, std::string>& extension_modules() {
  static const std::map<std::string, std::string> table = [] {
    std::map<std::string, std::string> t = {
        {".csv", "csv"},         {".tsv", "csv"},         {".json", "json"},  {".jsonl", "json"},
        {".ndjson", "json"},     {".parquet", "parquet"}, {".geoparquet", "parquet"}, {".gpq", "parquet"},
        {".arrow", "arrow"},     {".txt", "text"},        {".conll", "conll"}, {".conllu", "conll"},
        {".tar", "webdataset"},  {".xml", "xml"},         {".hdf5", "hdf5"},  {".h5", "hdf5"},
        {".eval", "eval"},       {".lance", "lance"},     {".tsfile", "tsfile"}};
    const std::vector<std::pair<std::string, std::vector<std::string>>> media = {
        {"imagefolder", {".jpg", ".jpeg", ".png", ".gif", ".bmp", ".tif", ".tiff", ".webp"}},
        {"audiofolder", {".wav", ".mp3", ".flac", ".ogg", ".opus", ".m4a"}},
        {"videofolder", {".mp4", ".avi", ".mkv", ".mov", ".webm"}},
        {"pdffolder", {".pdf"}},
        {"niftifolder", {".nii"}}};
    for (const auto& [module, exts] : media)
      for (const auto& ext : exts) {
        std::string upper = ext;
        std::transform(upper.begin(), upper.end(), upper.begin(), [](unsigned char ch) { return std::toupper(ch); });
        t[ext] = module;
        t[upper] = module;
      }
    return t;
  }();
  return table;
}

std::vector<std::string> suffixes(const std::string& path) {  // "." + each part of the basename after the first
  std::vector<std::string> out;
  const std::string base = basename(path);
  size_t dot = base.find('.');
  while (dot != std::string::npos) {
    const size_t next = base.find('.', dot + 1);
    out.push_back(base.substr(dot, next == std::string::npos ? std::string::npos : next - dot));
    dot = next;
  }
  return out;
}

// resolve_pattern's allowed_extensions test (load.py passes _ALL_ALLOWED_EXTENSIONS: the modules' and ".zip").
bool allowed_extension(const std::string& path) {
  for (const auto& ext : suffixes(path))
    if (ext == ".zip" || extension_modules().count(ext)) return true;
  return false;
}

// Parts of `path` that start with `prefix`; data_files.py counts these in
// _is_unrequested_hidden_file_or_is_inside_unrequested_hidden_dir ('.', all parts, dots-only excluded) and
// _is_inside_unrequested_special_dir ('__', parent parts only).
size_t count_parts(const std::vector<std::string>& parts, const std::string& prefix, bool parents_only) {
  size_t n = 0;
  for (size_t i = 0; i + (parents_only ? 1 : 0) < parts.size(); ++i)
    if (parts[i].rfind(prefix, 0) == 0 && (prefix != "." || parts[i].find_first_not_of('.') != std::string::npos))
      ++n;
  return n;
}

// data_files.py resolve_pattern: the files matching `pattern` (repo-relative), sorted as fsspec's glob returns
// them, without ignored names, unrequested hidden or '__' special parts, and (when asked) disallowed extensions.
std::vector<std::string> resolve_pattern(const std::string& pattern, const std::vector<std::string>& sorted_files,
                                         bool filter_extensions) {
  const auto pat = split_path(pattern);
  for (const auto& part : pat)
    if (part != "**" && part.find("**") != std::string::npos)
      fail("data file pattern '" + pattern + "' is invalid: '**' can only be an entire path component");
  const std::string pattern_base = pat.empty() ? "" : pat.back();
  std::vector<std::string> out;
  for (const auto& file : sorted_files) {
    const auto parts = split_path(file);
    if (!match_parts(pat, 0, parts, 0)) continue;
    if (kFilesToIgnore.count(parts.back()) && parts.back() != pattern_base) continue;
    if (count_parts(parts, "__", true) != count_parts(pat, "__", true)) continue;
    if (count_parts(parts, ".", false) != count_parts(pat, ".", false)) continue;
    if (filter_extensions && !allowed_extension(file)) continue;
    out.push_back(file);
  }
  return out;
}

std::string under(const std::string& base, const std::string& pattern) {
  return base.empty() ? pattern : base + "/" + pattern;
}

// data_files.py DataFilesList.from_patterns: each pattern's files in turn (no de-duplication); a pattern without
// wildcards that finds nothing is an error, one with wildcards is skipped.
std::vector<std::string> resolve_patterns(const std::string& repo_id, const std::vector<std::string>& patterns,
                                          const std::string& base, const std::vector<std::string>& files,
                                          bool filter_extensions) {
  std::vector<std::string> out;
  for (const auto& pattern : patterns) {
    const auto found = resolve_pattern(under(base, pattern), files, filter_extensions);
    if (found.empty() && !has_magic(pattern))
      fail("data file '" + under(base, pattern) + "' not found in " + repo_id + " (or not of a data format)");
    out.insert(out.end(), found.begin(), found.end());
  }
  return out;
}

// ---- default patterns: data_files.py get_data_patterns / _get_data_files_patterns --------------------------------

const std::vector<std::pair<std::string, std::vector<std::string>>> kSplitKeywords = {  // SPLIT_KEYWORDS
    {"train", {"train", "training"}},
    {"validation", {"validation", "valid", "dev", "val"}},
    {"test", {"test", "testing", "eval", "evaluation"}}};

// KEYWORDS_IN_FILENAME_BASE_PATTERNS / KEYWORDS_IN_DIR_NAME_BASE_PATTERNS (fsspec >= 2023.12) with
// NON_WORDS_CHARS "-._ 0-9", expanded per keyword as DEFAULT_PATTERNS_SPLIT_IN_FILENAME / _IN_DIR_NAME do.
SplitFiles keyword_patterns(bool in_dir) {
  const std::string sep = "[-._ 0-9]";
  SplitFiles out;
  for (const auto& [split, keywords] : kSplitKeywords) {
    std::vector<std::string> patterns;
    for (const auto& k : keywords) {
      if (in_dir) {
        for (const auto& p : {"**/" + k + "/**", "**/" + k + sep + "*/**", "**/*" + sep + k + "/**",
                              "**/*" + sep + k + sep + "*/**"})
          patterns.push_back(p);
      } else {
        patterns.push_back("**/" + k + sep + "*");
        patterns.push_back("**/*" + sep + k + sep + "*");
      }
    }
    out.emplace_back(split, patterns);
  }
  return out;
}

// The split of a sharded file name "{split}-00000-of-00003...": string_to_dict (utils/py_utils.py) with
// SPLIT_PATTERN_SHARDED's basename; its greedy "(.+)" takes the last "-ddddd-of-dddd" occurrence.
std::string shard_split(const std::string& base) {
  static const std::regex shard(R"(-[0-9]{5}-of-[0-9]{4})");
  for (size_t i = base.size(); i-- > 1;) {
    std::smatch m;
    const std::string rest = base.substr(i);
    if (std::regex_search(rest, m, shard, std::regex_constants::match_continuous)) return base.substr(0, i);
  }
  return {};
}

// get_data_patterns: split -> patterns for the files under `base` (repo-relative, "" for the root). Empty when
// the directory holds no data files (datasets' EmptyDatasetError).
SplitFiles default_patterns(const std::string& base, const std::vector<std::string>& files) {
  const std::string sharded = "data/{split}-[0-9][0-9][0-9][0-9][0-9]-of-[0-9][0-9][0-9][0-9][0-9]*.*";
  const auto shards = resolve_pattern(under(base, "data/*-[0-9][0-9][0-9][0-9][0-9]-of-[0-9][0-9][0-9][0-9][0-9]*.*"),
                                      files, false);
  if (!shards.empty()) {
    std::set<std::string> splits;
    for (const auto& f : shards) splits.insert(shard_split(basename(f)));
    for (const auto& s : splits)
      if (!valid_split_name(s)) fail("sharded data file split name '" + s + "' is not a valid split name");
    std::vector<std::string> order;  // DEFAULT_SPLITS first, then the others sorted
    for (const char* known : {"train", "validation", "test"})
      if (splits.erase(known)) order.push_back(known);
    order.insert(order.end(), splits.begin(), splits.end());
    SplitFiles out;
    for (const auto& s : order) {
      std::string p = sharded;
      p.replace(p.find("{split}"), 7, s);
      out.push_back({s, {p}});
    }
    return out;
  }
  // ALL_DEFAULT_PATTERNS in order: DEFAULT_PATTERNS_LOGS, _SPLIT_IN_DIR_NAME, _SPLIT_IN_FILENAME, DEFAULT_PATTERNS_ALL;
  // the first family with a non-empty split wins, keeping its non-empty splits.
  const std::vector<SplitFiles> families = {
      {{"logs", {"**/*.eval"}}}, keyword_patterns(true), keyword_patterns(false), {{"train", {"**"}}}};
  for (const auto& family : families) {
    SplitFiles out;
    for (const auto& [split, patterns] : family)
      for (const auto& p : patterns)
        if (!resolve_pattern(under(base, p), files, false).empty()) {
          out.push_back({split, patterns});
          break;
        }
    if (!out.empty()) return out;
  }
  return {};
}

// ---- module inference: load.py infer_module_for_data_files_list ---------------------------------------------------

// The most common extension wins; ties prefer .parquet, .lance, .arrow, .jsonl, .json, .csv, then the greater
// extension string; metadata files (metadata.csv/.jsonl/.parquet of the folder builders) count last.
std::string infer_module(const std::vector<std::string>& files) {
  std::map<std::pair<std::string, bool>, int> counts;
  for (const auto& f : files) {
    const std::string base = basename(f);
    const bool metadata = base == "metadata.csv" || base == "metadata.jsonl" || base == "metadata.parquet";
    for (auto ext : suffixes(f)) {
      std::transform(ext.begin(), ext.end(), ext.begin(), [](unsigned char ch) { return std::tolower(ch); });
      ++counts[{ext, metadata}];
    }
  }
  using Key = std::tuple<bool, int, bool, bool, bool, bool, bool, bool, std::string>;
  std::vector<std::pair<Key, std::string>> ranked;
  for (const auto& [k, n] : counts) {
    const auto& e = k.first;
    ranked.push_back({Key{!k.second, n, e == ".parquet", e == ".lance", e == ".arrow", e == ".jsonl", e == ".json",
                          e == ".csv", e},
                      e});
  }
  std::stable_sort(ranked.begin(), ranked.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
  for (const auto& [key, ext] : ranked) {
    const auto it = extension_modules().find(ext);
    if (it != extension_modules().end()) return it->second;
    if (ext == ".zip") return "zip archives";
  }
  return {};
}

// The file filter get_module applies once the module is known (load.py HubDatasetModuleFactory.get_module with
// data_files.py DataFilesList.filter): keep a path where one of the module's extensions (or .zip) ends the path
// or is followed by a further ".suffix".
bool has_module_extension(const std::string& path, const std::string& module) {
  std::vector<std::string> exts = {".zip"};
  for (const auto& [ext, m] : extension_modules())
    if (m == module) exts.push_back(ext);
  for (const auto& ext : exts)
    for (size_t at = path.find(ext); at != std::string::npos; at = path.find(ext, at + 1)) {
      const size_t end = at + ext.size();
      if (end == path.size() || (path[end] == '.' && end + 1 < path.size())) return true;
    }
  return false;
}

// ---- dataset card: utils/metadata.py MetadataConfigs.from_dataset_card_data -----------------------------------

struct CardConfig {
  std::string name;
  bool has_data_files = false;
  SplitFiles data_files;  // sanitize_patterns of the card's data_files
  std::string data_dir;
  bool is_default = false;
};

// The YAML block between "---" lines at the top of README.md, as huggingface_hub's repo card reads it
// (leading whitespace, "---", line breaks, the text, line breaks, "---" ending a line or the file).
std::string front_matter(const std::string& t) {
  const auto is_break = [&](size_t i) { return i < t.size() && (t[i] == '\n' || t[i] == '\r'); };
  size_t at = 0;
  while (at < t.size() && std::isspace(static_cast<unsigned char>(t[at]))) ++at;
  if (t.compare(at, 3, "---") != 0 || !is_break(at + 3)) return {};
  size_t start = at + 4;
  while (is_break(start)) ++start;
  for (size_t e = at + 4; e < t.size(); ++e) {
    if (!is_break(e)) continue;
    size_t j = e;
    while (is_break(j)) ++j;
    if (t.compare(j, 3, "---") == 0 &&
        (j + 3 == t.size() || t[j + 3] == '\n' || t.compare(j + 3, 2, "\r\n") == 0))
      return t.substr(std::min(start, e), e - std::min(start, e));
    e = j - 1;
  }
  return {};
}

std::vector<std::string> yaml_strings(const YAML::Node& node) {
  std::vector<std::string> out;
  if (node.IsScalar()) out.push_back(node.as<std::string>());
  else for (const auto& item : node) out.push_back(item.as<std::string>());
  return out;
}

std::vector<CardConfig> card_configs(const std::string& repo_id, const std::string& readme) {
  const std::string yaml = front_matter(readme);
  if (yaml.empty()) return {};
  YAML::Node card;
  try {
    card = YAML::Load(yaml);
  } catch (const YAML::Exception& e) {
    fail("README.md front matter of " + repo_id + " is not valid YAML: " + e.msg);
  }
  if (!card.IsMap() || !card["configs"] || card["configs"].IsNull()) return {};
  const YAML::Node configs = card["configs"];
  if (!configs.IsSequence()) fail("README.md of " + repo_id + ": `configs` must be a list");
  std::vector<CardConfig> out;
  for (const auto& node : configs) {
    if (!node.IsMap() || !node["config_name"])
      fail("README.md of " + repo_id + ": each entry of `configs` needs a `config_name`");
    CardConfig c;
    c.name = node["config_name"].as<std::string>();
    if (node["data_dir"] && node["data_dir"].IsScalar()) c.data_dir = node["data_dir"].as<std::string>();
    c.is_default = node["default"] && node["default"].IsScalar() && node["default"].as<bool>(false);
    const YAML::Node files = node["data_files"];
    const std::string bad = "README.md of " + repo_id + ": config '" + c.name +
                            "' data_files must be a string, a list of strings or a list of {split, path}";
    if (files && !files.IsNull()) {  // _raise_if_data_files_field_not_valid, then data_files.py sanitize_patterns
      c.has_data_files = true;
      if (files.IsScalar()) {
        c.data_files.push_back({"train", {files.as<std::string>()}});
      } else if (!files.IsSequence()) {
        fail(bad);
      } else if (std::any_of(files.begin(), files.end(), [](const YAML::Node& n) { return n.IsMap(); })) {
        for (const auto& item : files) {
          if (!item.IsMap() || item.size() != 2 || !item["split"] || !item["path"] || !item["split"].IsScalar() ||
              item["path"].IsMap() || !valid_split_name(item["split"].as<std::string>()))
            fail(bad);
          const std::string split = item["split"].as<std::string>();
          for (const auto& seen : c.data_files)
            if (seen.first == split)
              fail("README.md of " + repo_id + ": config '" + c.name + "' lists split '" + split + "' twice");
          c.data_files.push_back({split, yaml_strings(item["path"])});
        }
      } else {
        c.data_files.push_back({"train", yaml_strings(files)});
      }
    }
    out.push_back(std::move(c));
  }
  return out;
}

struct Layout {
  SplitFiles splits;  // split -> files
  DataFormat format = DataFormat::Parquet;
};

std::string strip_slashes(std::string s) {
  while (s.rfind("./", 0) == 0) s.erase(0, 2);
  while (!s.empty() && s.back() == '/') s.pop_back();
  return s;
}

// load.py HubDatasetModuleFactory.get_module + builder.py DatasetBuilder._create_builder_config.
Layout resolve_layout(const std::string& repo_id, const std::vector<std::string>& repo_files,
                      const std::string& readme, const std::string& config_name, const std::string& user_data_dir,
                      const std::vector<std::string>& user_data_files) {
  std::vector<std::string> files = repo_files;
  for (auto& f : files) f = strip_slashes(f);
  std::sort(files.begin(), files.end());
  const std::string data_dir = strip_slashes(user_data_dir);
  const std::string script_hint = "; its refs/convert/parquet revision holds Parquet";
  const bool any_data = !resolve_pattern("**", files, true).empty();
  // load.py dataset_module_factory: a "<name>.py" script at the root is refused ("no longer supported").
  const std::string script = basename(repo_id) + ".py";
  if (std::binary_search(files.begin(), files.end(), script))
    fail(repo_id + (any_data ? " is built by its loading script " + script + ", which datasets no longer runs"
                             : " holds only a loading script") + script_hint);
  // A script under another name and no data: a loading-script repo too, whatever config is asked for.
  const bool has_py = std::any_of(files.begin(), files.end(), [](const std::string& f) {
    return f.size() > 3 && f.compare(f.size() - 3, 3, ".py") == 0;
  });
  if (has_py && !any_data) fail(repo_id + " holds only a loading script" + script_hint);
  const auto no_data = [&](const std::string& where) -> void {
    fail(repo_id + " holds no supported data files" + where + " (files: " + join(files) + ")");
  };

  const auto configs = card_configs(repo_id, readme);
  std::vector<std::string> names;
  for (const auto& c : configs) names.push_back(c.name);
  // MetadataConfigs.get_default_config_name: the only config, the one named "default", or default: true.
  std::string default_name;
  for (const auto& c : configs)
    if (configs.size() == 1 || c.name == "default" || c.is_default) {
      if (!default_name.empty())
        fail(repo_id + " has several default configs: '" + default_name + "' and '" + c.name + "'");
      default_name = c.name;
    }
  const CardConfig* chosen = nullptr;
  const bool user_files = !user_data_files.empty() || !data_dir.empty();
  if (configs.empty()) {  // the packaged builder's single config is named "default"
    if (!config_name.empty() && config_name != "default")
      fail("config '" + config_name + "' not found in " + repo_id + " (configs: default)");
  } else {
    const std::string wanted = config_name.empty() ? default_name : config_name;
    for (const auto& c : configs)
      if (c.name == wanted) chosen = &c;
    if (!chosen && !wanted.empty())
      fail("config '" + wanted + "' not found in " + repo_id + " (configs: " + join(names) + ")");
    if (!chosen && !user_files)
      fail(repo_id + " needs a config name (configs: " + join(names) + ")");
  }

  SplitFiles patterns;
  std::string base;
  bool filter_by_module = false, allowed_only = true;
  if (!user_data_files.empty()) {  // sanitize_patterns of a list: all of it is "train"
    patterns.push_back({"train", user_data_files});
    base = data_dir;
    filter_by_module = !data_dir.empty();
    allowed_only = !data_dir.empty();  // builder.py DatasetBuilder.__init__ resolves raw data_files unfiltered
  } else if (!data_dir.empty()) {
    base = data_dir;
    patterns = default_patterns(base, files);
    filter_by_module = true;
    if (patterns.empty()) no_data(" under '" + data_dir + "'");
  } else if (chosen) {  // load.py create_builder_configs_from_metadata_configs
    base = strip_slashes(chosen->data_dir);
    patterns = chosen->has_data_files ? chosen->data_files : default_patterns(base, files);
    if (patterns.empty()) no_data(" for config '" + chosen->name + "'");
  } else {
    patterns = default_patterns("", files);
    filter_by_module = true;
    if (patterns.empty()) no_data("");
  }

  Layout layout;
  std::string module;
  std::string module_split;
  for (const auto& [split, split_patterns] : patterns) {
    auto found = resolve_patterns(repo_id, split_patterns, base, files, allowed_only);
    const std::string m = infer_module(found);
    // load.py infer_module_for_data_files: every split must infer the same module. (A split that resolves to no
    // file fails only when it is asked for, below.)
    if (!found.empty() && !module_split.empty() && m != module)
      fail(repo_id + ": splits hold different data formats ('" + module_split + "': " + module + ", '" + split +
           "': " + (m.empty() ? "none" : m) + ")");
    if (!found.empty() && module_split.empty()) module = m, module_split = split;
    layout.splits.push_back({split, std::move(found)});
  }
  if (module.empty()) no_data("");
  const std::map<std::string, DataFormat> formats = {
      {"parquet", DataFormat::Parquet}, {"json", DataFormat::Json}, {"csv", DataFormat::Csv}, {"text", DataFormat::Text}};
  if (!formats.count(module))
    fail(repo_id + " holds " + module + " data, which Tunebench does not read (Parquet, JSON, CSV/TSV, text)");
  layout.format = formats.at(module);
  for (auto& [split, found] : layout.splits) {
    if (filter_by_module) {
      found.erase(std::remove_if(found.begin(), found.end(),
                                 [&](const std::string& f) { return !has_module_extension(f, module); }),
                  found.end());
    } else {
      for (const auto& f : found)  // a config whose files mix formats would be misread by the one builder
        if (infer_module({f}) != module)
          fail(repo_id + ": split '" + split + "' mixes data formats (" + f + " is not " + module + ")");
    }
  }
  return layout;
}

}  // namespace

bool hub_glob_match(const std::string& pattern, const std::string& path) {
  return match_parts(split_path(pattern), 0, split_path(path), 0);
}

std::vector<std::string> dataset_config_names(const std::string& readme) {
  std::vector<std::string> names;
  for (const auto& c : card_configs("the dataset", readme)) names.push_back(c.name);
  return names;
}

std::vector<std::string> dataset_splits(const std::string& repo_id, const std::vector<std::string>& repo_files,
                                        const std::string& readme, const std::string& config_name,
                                        const std::string& data_dir, const std::vector<std::string>& data_files) {
  std::vector<std::string> out;
  for (const auto& s : resolve_layout(repo_id, repo_files, readme, config_name, data_dir, data_files).splits)
    out.push_back(s.first);
  return out;
}

ResolvedSplit resolve_dataset_split(const std::string& repo_id, const std::vector<std::string>& repo_files,
                                    const std::string& readme, const std::string& config_name,
                                    const std::string& split, const std::string& data_dir,
                                    const std::vector<std::string>& data_files) {
  std::string name = split;
  if (split.find_first_of("[(+") != std::string::npos) {
    const auto expr = parse_split(split);
    if (expr.parts.size() != 1) fail("split '" + split + "' joins several splits; resolve each part");
    name = expr.parts.front().split;
  }
  const auto layout = resolve_layout(repo_id, repo_files, readme, config_name, data_dir, data_files);
  std::vector<std::string> names;
  for (const auto& [s, files] : layout.splits) {
    if (s != name) {
      names.push_back(s);
      continue;
    }
    if (files.empty()) fail("split '" + name + "' of " + repo_id + " matches no data files");
    return {files, layout.format};
  }
  fail("split '" + name + "' not found in " + repo_id + " (splits: " + join(names) + ")");
}

// ---- split expressions: arrow_reader.py ReadInstruction.from_spec / _str_to_read_instruction ---------------------

SplitExpr parse_split(const std::string& text) {
  // _SUB_SPEC_RE: split name, optional [from:to] with optional '%' on either bound, optional (rounding).
  static const std::regex sub(R"(^(\w+(?:\.\w+)*)(\[(?:(-?[\d_]+)(%)?)?:(?:(-?[\d_]+)(%)?)?\])?(?:\(([^)]*)\))?$)");
  const auto bad = [&](const std::string& why) { fail("split expression '" + text + "': " + why); };
  // Python's int() of "-?[\d_]+": underscores only singly between digits.
  const auto to_int = [&](const std::string& s) -> int64_t {
    static const std::regex number(R"(^-?[0-9]+(_[0-9]+)*$)");
    if (!std::regex_match(s, number)) bad("'" + s + "' is not an integer");
    std::string digits;
    for (char ch : s)
      if (ch != '_') digits += ch;
    if (digits.size() > 18) bad("'" + s + "' is out of range");
    return std::stoll(digits);
  };
  // _ADDITION_SEP_RE splits at each '+' with the whitespace around it; empty pieces stay (and fail below).
  std::vector<std::string> pieces(1);
  for (char ch : text) {
    if (ch == '+') {
      while (!pieces.back().empty() && std::isspace(static_cast<unsigned char>(pieces.back().back())))
        pieces.back().pop_back();
      pieces.emplace_back();
    } else if (pieces.size() > 1 && pieces.back().empty() && std::isspace(static_cast<unsigned char>(ch))) {
      continue;  // whitespace right after a '+'
    } else {
      pieces.back() += ch;
    }
  }
  SplitExpr expr;
  for (const auto& part : pieces) {
    std::smatch m;
    if (!std::regex_match(part, m, sub)) bad("unrecognized part '" + part + "'");
    SplitSlice s;
    s.split = m[1].str();
    s.percent = m[4].matched || m[6].matched;  // one '%' makes both bounds percents
    if (m[3].matched) s.from = to_int(m[3].str());
    if (m[5].matched) s.to = to_int(m[5].str());
    // _RelativeInstruction.__post_init__ checks, in its order.
    if (m[7].matched && m[7].str() != "closest" && m[7].str() != "pct1_dropremainder")
      bad("rounding must be closest or pct1_dropremainder, not '" + m[7].str() + "'");
    if (!s.percent && m[7].matched) bad("rounding applies only to percent slices ('" + part + "')");
    if (s.percent && ((s.from && std::llabs(*s.from) > 100) || (s.to && std::llabs(*s.to) > 100)))
      bad("percent bounds must lie in [-100, 100] ('" + part + "')");
    if (m[7].matched) s.rounding = m[7].str();
    // ReadInstruction.__add__: percent parts joined to a percent first part must share its rounding.
    if (!expr.parts.empty() && expr.parts.front().percent && s.percent && expr.parts.front().rounding != s.rounding)
      bad("parts use different roundings");
    expr.parts.push_back(std::move(s));
  }
  return expr;
}

std::pair<int64_t, int64_t> slice_bounds(const SplitSlice& slice, int64_t rows) {
  if (rows < 0) fail("split '" + slice.split + "' has a negative row count");
  // arrow_reader.py _rel_to_abs_instr.
  const auto pct = [&](int64_t boundary) -> int64_t {
    if (slice.rounding == "pct1_dropremainder") {  // _pct_to_abs_pct1: whole 1% blocks
      if (rows < 100)
        fail("split '" + slice.split + "' has " + std::to_string(rows) +
             " rows; pct1_dropremainder rounding needs at least 100");
      return boundary * (rows / 100);
    }
    // _pct_to_abs_closest: Python round() of the float, half to even (nearbyint in the default rounding mode).
    return static_cast<int64_t>(std::nearbyint(static_cast<double>(boundary * rows) / 100.0));
  };
  int64_t from = 0, to = rows;
  if (slice.percent) {
    if (slice.from) from = pct(*slice.from);
    if (slice.to) to = pct(*slice.to);
  } else {
    if (slice.from) from = *slice.from;
    if (slice.to) to = *slice.to;
  }
  if (from < 0) from = std::max<int64_t>(rows + from, 0);
  if (to < 0) to = std::max<int64_t>(rows + to, 0);
  return {std::min(from, rows), std::min(to, rows)};
}

}  // namespace tb::data
