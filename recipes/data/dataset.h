// Tokenized samples and the datasets that hold them.
//
// Label convention (torchtune after its packed-label fix, and what recipes rely on): labels are
// already shifted. labels[i] is the token the model must predict after reading tokens[0..i], i.e.
// tokens[i+1], or kIgnoreIndex (-100) where nothing is learned (masked prompt, the last position,
// padding). A recipe computes cross_entropy(logits.view(-1, V), labels.view(-1), ignore_index=-100)
// with NO further shift.
//
// Dataset components (registry kind "dataset") build a DatasetFactory: the dataset needs the
// tokenizer (and, for `synthetic`, the model's vocabulary size), which the recipe builds first.
//   auto factory = registry.build<tb::data::DatasetFactory>(cfg.at("dataset"));
//   std::shared_ptr<tb::data::Dataset> ds = factory({tokenizer, model_vocab_size});
// A YAML list of dataset nodes is a concatenation (build_dataset below), as in torchtune.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

namespace YAML {
class Node;
}

namespace tb::config {
class Registry;
}

namespace tb::data {

class Tokenizer;
struct Message;

inline constexpr int64_t kIgnoreIndex = -100;

struct Sample {
  std::vector<int64_t> tokens;
  std::vector<int64_t> labels;     // shifted targets, kIgnoreIndex where masked (see above)
  std::vector<int64_t> input_pos;  // packed samples: position inside the original sample; else empty
  std::vector<int64_t> seq_lens;   // packed samples: lengths of the samples in the pack (padding last)
};

// What building a dataset found in its rows: the run's log and `data preview` report it.
struct DatasetStats {
  size_t rows = 0;            // rows read from the files
  size_t samples = 0;         // samples kept
  size_t tokens = 0;          // tokens in the kept samples
  size_t trained_tokens = 0;  // of those, predicted with a label (not masked)
  size_t truncated = 0;       // samples cut at the tokenizer's max_seq_len
  size_t bad_rows = 0;        // rows skipped as bad (skip_bad_rows: true)
  std::string first_bad_row;  // "file:line: message" of the first
  size_t fully_masked = 0;    // rows dropped because every label was masked
  std::string first_fully_masked;  // "file:line" of the first
  bool row_limit_reached = false;  // only the first rows were read (a preview), more may follow

  void add(const DatasetStats& other);
  void count_sample(const Sample& sample);  // samples, tokens, trained_tokens
  // One line each for what a user should know: skipped rows, dropped samples, truncation.
  std::vector<std::string> warnings() const;
};

class Dataset {
 public:
  virtual ~Dataset() = default;
  virtual size_t size() const = 0;
  virtual Sample get(size_t index) const = 0;  // index < size()
  // One line for logs and the GUI, e.g. "alpaca_dataset: 2100 samples from resources/datasets/x.json".
  virtual std::string description() const = 0;
  // Counts from building it; empty for generated datasets.
  virtual DatasetStats stats() const { return {}; }
};

// Samples kept flat with 32-bit ids: a dataset of millions of rows holds 8 bytes a token (its id and
// label), not two vectors of 64-bit ids and their heap blocks per sample. What a dataset built from a
// large file keeps in memory (the rows are streamed, never held).
class SampleStore {
 public:
  void add(const Sample& sample);  // std::out_of_range for an id beyond 32 bits
  size_t size() const { return ends_.size() / 4; }
  Sample get(size_t index) const;
  void shrink_to_fit();

 private:
  // Deques grow in blocks: a store of gigabytes never copies itself to grow, as a vector would.
  std::deque<int32_t> tokens_, labels_, input_pos_, seq_lens_;
  std::deque<uint64_t> ends_;  // each sample's end in the four arrays, four to a sample
};

class InMemoryDataset : public Dataset {
 public:
  InMemoryDataset(std::vector<Sample> samples, std::string description, DatasetStats stats = {});
  InMemoryDataset(SampleStore samples, std::string description, DatasetStats stats = {})
      : samples_(std::move(samples)), description_(std::move(description)), stats_(std::move(stats)) {}
  size_t size() const override { return samples_.size(); }
  Sample get(size_t index) const override { return samples_.get(index); }
  std::string description() const override { return description_; }
  DatasetStats stats() const override { return stats_; }

 private:
  SampleStore samples_;
  std::string description_;
  DatasetStats stats_;
};

// The samples of several datasets one after the other (torchtune's ConcatDataset).
class ConcatDataset : public Dataset {
 public:
  explicit ConcatDataset(std::vector<std::shared_ptr<const Dataset>> parts);
  size_t size() const override { return total_; }
  Sample get(size_t index) const override;
  std::string description() const override;
  DatasetStats stats() const override;

 private:
  std::vector<std::shared_ptr<const Dataset>> parts_;
  std::vector<size_t> starts_;
  size_t total_ = 0;
};

// What a dataset component needs at build time.
struct DatasetContext {
  std::shared_ptr<const Tokenizer> tokenizer;  // required by every dataset except synthetic
  int64_t vocab_size = 0;                      // the model's; 0: use the tokenizer's
  int64_t context = 0;                         // the model's max_seq_len (packs are never wider); 0: unknown
  uint64_t max_rows = 0;                       // read only the first rows of each source (a preview); 0: all
};
using DatasetFactory = std::function<std::shared_ptr<Dataset>(const DatasetContext&)>;

// A problem with the data itself: formats as "file:line: message" (line 0: "file: message").
class DataError : public std::runtime_error {
 public:
  DataError(std::string file, int line, const std::string& message);
  const std::string& file() const { return file_; }
  int line() const { return line_; }

 private:
  std::string file_;
  int line_;
};

// Shifted labels of tokenize_messages output: labels[i] = mask[i+1] ? -100 : tokens[i+1], last -100.
std::vector<int64_t> shifted_labels(const std::vector<int64_t>& tokens, const std::vector<bool>& mask);
// Every position trained: labels[i] = tokens[i+1], last -100.
std::vector<int64_t> shifted_labels(const std::vector<int64_t>& tokens);

// Builds the dataset of a config node: a component node, or a list of them (concatenated).
std::shared_ptr<Dataset> build_dataset(const config::Registry& registry, const YAML::Node& node,
                                       const DatasetContext& context);

}  // namespace tb::data
