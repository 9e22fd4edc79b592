// llama.cpp itself, run through tests/reference/llama_cpp (node-llama-cpp's prebuilt CPU build): what it
// reads from a GGUF file, how it tokenizes, the loss it gives texts and its greedy continuation.
#pragma once

#include <QTemporaryDir>

#include <fstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "node_reference.h"
#include "test_support.h"

namespace tbtest {

// The reference's JSON line (see llama_cpp_reference.mjs); null with `error` set when it cannot run.
// `lora`: a LoRA adapter GGUF applied on the model (empty: none); `sequences`: ids to score as they are
// (empty: BOS + each text's ids + EOS).
inline nlohmann::json run_llama_cpp_reference(const std::string& model, const std::vector<std::string>& texts,
                                              const std::string& prompt, int max_new_tokens, QString* error,
                                              const std::string& lora = {},
                                              const std::vector<std::vector<int64_t>>& sequences = {}) {
  const QString dir = QStringLiteral(TB_SOURCE_DIR "/tests/reference/llama_cpp");
  const QString node = node_for_reference(dir, "node-llama-cpp", error);
  if (node.isEmpty()) return nullptr;
  QTemporaryDir tmp;
  const std::string request_path = tmp.filePath("request.json").toStdString();
  nlohmann::json request = {{"model", model}, {"texts", texts}};
  if (!prompt.empty()) request.update({{"prompt", prompt}, {"max_new_tokens", max_new_tokens}});
  if (!lora.empty()) request["lora"] = lora;
  if (!sequences.empty()) request["sequences"] = sequences;
  std::ofstream(request_path) << request.dump();
  const auto r = run_process(node, {dir + "/llama_cpp_reference.mjs", QString::fromStdString(request_path)}, 300000);
  if (r.code != 0 || r.crashed) {
    *error = "the llama.cpp reference failed: " + r.err.right(2000);
    return nullptr;
  }
  return nlohmann::json::parse(last_line(r.out).toStdString());
}

}  // namespace tbtest
