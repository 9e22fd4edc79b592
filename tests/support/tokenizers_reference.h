// Hugging Face tokenizers, run live through its Node binding (tests/reference/tokenizers): the
// independent implementation the tokenizer tests compare with.
#pragma once

#include <QFile>
#include <QStandardPaths>
#include <QTemporaryDir>

#include <fstream>
#include <stdexcept>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "node_reference.h"
#include "test_support.h"

namespace tbtest {

// One result per text: ids (add_special_tokens=False), offsets (byte ranges), ids_special, offsets_special,
// decoded (skip_special_tokens), decoded_keep, decoded_plain. Null with `error` set when the reference
// cannot run.
inline nlohmann::json run_tokenizers_reference(const std::string& tokenizer_path, const std::vector<std::string>& texts,
                                               QString* error) {
  const QString dir = QStringLiteral(TB_SOURCE_DIR "/tests/reference/tokenizers");
  const QString node = node_for_reference(dir, "tokenizers", error);
  if (node.isEmpty()) return nullptr;
  QTemporaryDir tmp;
  const std::string texts_path = tmp.filePath("texts.json").toStdString();
  std::ofstream(texts_path, std::ios::binary) << nlohmann::json(texts).dump();
  const auto r = run_process(
      node,
      {dir + "/tokenizers_reference.mjs", QString::fromStdString(tokenizer_path), QString::fromStdString(texts_path)},
      120000);
  if (r.code != 0 || r.crashed) {
    *error = "the tokenizers reference failed: " + r.err.right(2000);
    return nullptr;
  }
  return nlohmann::json::parse(last_line(r.out).toStdString())["results"];
}

// The ids of one text (add_special_tokens=False); throws std::runtime_error when the reference cannot run.
inline std::vector<int64_t> tokenizers_reference_ids(const std::string& tokenizer_path, const std::string& text) {
  QString error;
  const nlohmann::json r = run_tokenizers_reference(tokenizer_path, {text}, &error);
  if (!error.isEmpty()) throw std::runtime_error(error.toStdString());
  return r[0]["ids"].get<std::vector<int64_t>>();
}

}  // namespace tbtest
