#include "data/row_sources.h"

#include <glob.h>

#include <algorithm>
#include <stdexcept>

#include "config/config.h"
#include "data/csv_rows.h"
#include "data/parquet_rows.h"

namespace tb::data {

std::string local_source_problem(const std::string& source, bool has_data_files) {
  if (source != "json" && source != "text" && source != "csv" && source != "parquet") {
    return "source '" + source +
           "' is a Hugging Face Hub dataset, which torchtune downloads; Tunebench reads local files only: download "
           "a copy and use source: json (JSON array or JSON Lines), csv (CSV or TSV with a header row), parquet or "
           "text (one document a line), with data_files: <path>";
  }
  if (!has_data_files) return "source: " + source + " needs data_files (a path or a list of paths)";
  return "";
}

std::vector<std::string> expand_data_files(const std::vector<std::string>& data_files) {
  std::vector<std::string> files;
  for (const auto& name : data_files) {
    if (name.find_first_of("*?[") == std::string::npos) {
      files.push_back(name);
      continue;
    }
    glob_t found{};
    const int status = ::glob(name.c_str(), GLOB_NOSORT, nullptr, &found);
    std::vector<std::string> matches(found.gl_pathv, found.gl_pathv + (status == 0 ? found.gl_pathc : 0));
    ::globfree(&found);
    if (matches.empty()) throw std::invalid_argument("data_files '" + name + "' matches no file");
    std::sort(matches.begin(), matches.end());  // shards in order: train-00000-of-00003 first
    files.insert(files.end(), matches.begin(), matches.end());
  }
  return files;
}

std::unique_ptr<RowStream> open_rows(const std::string& source, const std::vector<std::string>& data_files,
                                     std::optional<char> delimiter, const std::string& field,
                                     const std::vector<std::string>& columns) {
  if (const std::string problem = local_source_problem(source, !data_files.empty()); !problem.empty())
    throw std::invalid_argument(problem);
  if (!field.empty() && source != "json") throw std::invalid_argument("field: only source: json has records under a key");
  std::vector<std::string> paths, names = expand_data_files(data_files);
  for (const auto& name : names) paths.push_back(config::resolve_input_path(name));
  RowStream::Opener open;
  if (source == "json") {
    open = [field](const std::string& path, const std::string& name) { return open_json_rows(path, name, field); };
  } else if (source == "csv") {
    open = [delimiter](const std::string& path, const std::string& name) {
      return open_delimited_rows(path, name, delimiter.value_or(delimiter_for(name)));
    };
  } else if (source == "parquet") {
    open = [columns](const std::string& path, const std::string& name) { return open_parquet_rows(path, name, columns); };
  } else {
    open = open_text_rows;
  }
  return std::make_unique<RowStream>(std::move(paths), std::move(names), std::move(open));
}

std::vector<Row> load_rows(const std::string& source, const std::vector<std::string>& data_files,
                           const std::string& split, std::optional<char> delimiter, const std::string& field) {
  if (split != "train" && !split.empty())
    throw std::invalid_argument("split '" + split + "': local files have only the 'train' split");
  auto stream = open_rows(source, data_files, delimiter, field);
  std::vector<Row> rows;
  for (Row row; stream->next(row);) rows.push_back(std::move(row));
  return rows;
}

void for_each_row(RowReader& rows, const DatasetOrigin& origin, DatasetStats& stats,
                  const std::function<void(const Row&)>& build) {
  for (Row row; rows.next(row);) {
    if (origin.max_rows > 0 && stats.rows >= origin.max_rows) {
      stats.row_limit_reached = true;
      break;
    }
    ++stats.rows;
    try {
      require_readable(row);
      build(row);
    } catch (const std::exception& e) {
      // Every problem is reported at its row: the file and line a user can open.
      const auto* located = dynamic_cast<const DataError*>(&e);
      DataError error = located ? *located : DataError(row.file, row.line, e.what());
      if (!origin.skip_bad_rows) throw error;
      if (stats.bad_rows++ == 0) stats.first_bad_row = error.what();
    }
  }
}

}  // namespace tb::data
