#include "bench/tokenize_bench.h"

#include <algorithm>
#include <chrono>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <thread>
#include <vector>

#include "config/regular_file.h"
#include "data/bpe_tokenizer.h"
#include "text/pipeline.h"

namespace tb::bench {
namespace {

using Clock = std::chrono::steady_clock;

// The text to encode, whole: a device or FIFO (/dev/zero never ends) and a file over 1 GiB are refused.
std::string read_all(const std::string& path) { return config::read_input_file(path, uint64_t(1) << 30); }

// `text` cut after line ends into about `n` parts of similar size.
std::vector<std::string_view> parts_of(const std::string& text, int n) {
  std::vector<std::string_view> out;
  size_t start = 0;
  for (int i = 1; i < n && start < text.size(); ++i) {
    size_t cut = std::max(start, text.size() * static_cast<size_t>(i) / static_cast<size_t>(n));
    cut = text.find('\n', cut);
    if (cut == std::string::npos) break;
    out.emplace_back(text.data() + start, cut + 1 - start);
    start = cut + 1;
  }
  if (start < text.size()) out.emplace_back(text.data() + start, text.size() - start);
  return out;
}

}  // namespace

nlohmann::json bench_tokenize(const TokenizeBenchOptions& options) {
  const auto load_start = Clock::now();
  const auto tokenizer = data::BpeTokenizer::from_file(options.tokenizer_path);
  const double load_s = std::chrono::duration<double>(Clock::now() - load_start).count();
  const std::string text = read_all(options.text_path);
  const auto& pipeline = tokenizer->pipeline();
  const int threads = std::max(1, options.threads);
  const auto parts = parts_of(text, threads);

  size_t tokens = 0;
  auto run_once = [&]() {
    std::vector<size_t> counts(parts.size(), 0);
    if (parts.size() == 1) {
      counts[0] = pipeline.encode(parts[0], false).ids.size();
    } else {
      std::vector<std::thread> workers;
      for (size_t i = 0; i < parts.size(); ++i)
        workers.emplace_back([&, i] { counts[i] = pipeline.encode(parts[i], false).ids.size(); });
      for (auto& w : workers) w.join();
    }
    tokens = 0;
    for (const size_t c : counts) tokens += c;
  };

  run_once();  // warm-up: the word caches fill, pages are touched
  std::vector<double> seconds;
  for (int r = 0; r < std::max(1, options.runs); ++r) {
    const auto start = Clock::now();
    run_once();
    seconds.push_back(std::chrono::duration<double>(Clock::now() - start).count());
  }
  std::sort(seconds.begin(), seconds.end());
  const double median = seconds[seconds.size() / 2];
  return {{"bench", "tokenize"},
          {"tokenizer", options.tokenizer_path},
          {"bytes", text.size()},
          {"tokens", tokens},
          {"threads", threads},
          {"runs", seconds.size()},
          {"median_s", median},
          {"mb_per_s", static_cast<double>(text.size()) / 1e6 / median},
          {"tokens_per_s", static_cast<double>(tokens) / median},
          {"load_s", load_s},
          {"fast_path", pipeline.fast_path()}};
}

}  // namespace tb::bench
