#include "data/dataset.h"

#include <algorithm>
#include <cstdint>

#include <yaml-cpp/yaml.h>

#include "config/registry.h"

namespace tb::data {

namespace {

void append_narrow(std::deque<int32_t>& to, const std::vector<int64_t>& from) {
  for (const int64_t v : from) {
    if (v < INT32_MIN || v > INT32_MAX) throw std::out_of_range("token id " + std::to_string(v) + " does not fit 32 bits");
    to.push_back(static_cast<int32_t>(v));
  }
}

std::vector<int64_t> widen(const std::deque<int32_t>& from, uint64_t begin, uint64_t end) {
  return std::vector<int64_t>(from.begin() + std::ptrdiff_t(begin), from.begin() + std::ptrdiff_t(end));
}

}  // namespace

void SampleStore::add(const Sample& s) {
  append_narrow(tokens_, s.tokens);
  append_narrow(labels_, s.labels);
  append_narrow(input_pos_, s.input_pos);
  append_narrow(seq_lens_, s.seq_lens);
  ends_.insert(ends_.end(), {tokens_.size(), labels_.size(), input_pos_.size(), seq_lens_.size()});
}

Sample SampleStore::get(size_t index) const {
  if (index >= size()) throw std::out_of_range("sample " + std::to_string(index) + " of " + std::to_string(size()));
  const auto end = [&](size_t k) { return ends_[4 * index + k]; };
  const auto begin = [&](size_t k) { return index == 0 ? uint64_t{0} : ends_[4 * (index - 1) + k]; };
  Sample s;
  s.tokens = widen(tokens_, begin(0), end(0));
  s.labels = widen(labels_, begin(1), end(1));
  s.input_pos = widen(input_pos_, begin(2), end(2));
  s.seq_lens = widen(seq_lens_, begin(3), end(3));
  return s;
}

void SampleStore::shrink_to_fit() {
  for (auto* v : {&tokens_, &labels_, &input_pos_, &seq_lens_}) v->shrink_to_fit();
  ends_.shrink_to_fit();
}

InMemoryDataset::InMemoryDataset(std::vector<Sample> samples, std::string description, DatasetStats stats)
    : description_(std::move(description)), stats_(std::move(stats)) {
  for (const auto& s : samples) samples_.add(s);
  samples_.shrink_to_fit();
}

ConcatDataset::ConcatDataset(std::vector<std::shared_ptr<const Dataset>> parts) : parts_(std::move(parts)) {
  for (const auto& p : parts_) {
    starts_.push_back(total_);
    total_ += p->size();
  }
}

Sample ConcatDataset::get(size_t index) const {
  if (index >= total_) throw std::out_of_range("sample " + std::to_string(index) + " of " + std::to_string(total_));
  const auto it = std::upper_bound(starts_.begin(), starts_.end(), index);
  const size_t part = static_cast<size_t>(it - starts_.begin()) - 1;
  return parts_[part]->get(index - starts_[part]);
}

std::string ConcatDataset::description() const {
  std::string out = "concatenation of " + std::to_string(parts_.size()) + " datasets (" + std::to_string(total_) +
                    " samples):";
  for (const auto& p : parts_) out += " [" + p->description() + "]";
  return out;
}

DatasetStats ConcatDataset::stats() const {
  DatasetStats total;
  for (const auto& p : parts_) total.add(p->stats());
  return total;
}

void DatasetStats::add(const DatasetStats& o) {
  rows += o.rows;
  samples += o.samples;
  tokens += o.tokens;
  trained_tokens += o.trained_tokens;
  truncated += o.truncated;
  bad_rows += o.bad_rows;
  if (first_bad_row.empty()) first_bad_row = o.first_bad_row;
  fully_masked += o.fully_masked;
  if (first_fully_masked.empty()) first_fully_masked = o.first_fully_masked;
  row_limit_reached = row_limit_reached || o.row_limit_reached;
}

void DatasetStats::count_sample(const Sample& sample) {
  ++samples;
  tokens += sample.tokens.size();
  for (const int64_t label : sample.labels) trained_tokens += label != kIgnoreIndex;
}

std::vector<std::string> DatasetStats::warnings() const {
  std::vector<std::string> out;
  if (bad_rows > 0)
    out.push_back("skipped " + std::to_string(bad_rows) + " bad row(s) (skip_bad_rows: true); the first: " +
                  first_bad_row);
  if (fully_masked > 0)
    out.push_back("dropped " + std::to_string(fully_masked) +
                  " sample(s) whose every label is masked (nothing to train on; check the masking and max_seq_len); "
                  "the first: " +
                  first_fully_masked);
  if (truncated > 0)
    out.push_back(std::to_string(truncated) + " of " + std::to_string(samples) +
                  " sample(s) were truncated to the tokenizer's max_seq_len");
  return out;
}

namespace {
std::string where(const std::string& file, int line) {
  return line > 0 ? file + ":" + std::to_string(line) : file;
}
}  // namespace

DataError::DataError(std::string file, int line, const std::string& message)
    : std::runtime_error(where(file, line) + ": " + message), file_(std::move(file)), line_(line) {}

std::vector<int64_t> shifted_labels(const std::vector<int64_t>& tokens, const std::vector<bool>& mask) {
  std::vector<int64_t> labels(tokens.size(), kIgnoreIndex);
  for (size_t i = 0; i + 1 < tokens.size(); ++i) labels[i] = mask[i + 1] ? kIgnoreIndex : tokens[i + 1];
  return labels;
}

std::vector<int64_t> shifted_labels(const std::vector<int64_t>& tokens) {
  std::vector<int64_t> labels(tokens.size(), kIgnoreIndex);
  for (size_t i = 0; i + 1 < tokens.size(); ++i) labels[i] = tokens[i + 1];
  return labels;
}

std::shared_ptr<Dataset> build_dataset(const config::Registry& registry, const YAML::Node& node,
                                       const DatasetContext& context) {
  if (node.IsSequence()) {
    std::vector<std::shared_ptr<const Dataset>> parts;
    for (const auto& child : node) parts.push_back(registry.build<DatasetFactory>(child)(context));
    return std::make_shared<ConcatDataset>(std::move(parts));
  }
  return registry.build<DatasetFactory>(node)(context);
}

}  // namespace tb::data
