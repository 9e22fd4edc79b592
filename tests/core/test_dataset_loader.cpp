// The data loader: epoch permutations against PyTorch's DistributedSampler order (python3-torch run as a
// subprocess), drop_last, resuming from a saved cursor, and padded collation.
#include <QtTest>

#include "test_main.h"
#include "test_support.h"

#include <algorithm>
#include <tuple>

#include <nlohmann/json.hpp>

#include "data/batch_tensors.h"
#include "data/dataloader.h"

using tb::data::Batch;
using tb::data::DataCursor;
using tb::data::DataLoader;
using tb::data::DataLoaderOptions;
using tb::data::InMemoryDataset;
using tb::data::kIgnoreIndex;
using tb::data::Sample;
using Ids = std::vector<int64_t>;

namespace {

// Sample i holds (i+1) tokens of value 100+i, trained everywhere.
std::shared_ptr<InMemoryDataset> numbered(size_t n) {
  std::vector<Sample> samples;
  for (size_t i = 0; i < n; ++i) {
    Sample s;
    s.tokens.assign(i % 5 + 1, 100 + int64_t(i));
    s.labels.assign(s.tokens.size(), 100 + int64_t(i));
    s.labels.back() = kIgnoreIndex;
    samples.push_back(std::move(s));
  }
  return std::make_shared<InMemoryDataset>(std::move(samples), "numbered");
}

std::vector<size_t> all_indices(DataLoader& loader) {
  std::vector<size_t> out;
  while (auto b = loader.next()) out.insert(out.end(), b->indices.begin(), b->indices.end());
  return out;
}

}  // namespace

class TestDatasetLoader : public QObject {
  Q_OBJECT
 private Q_SLOTS:
  void epochOrderMatchesPyTorch() {
    const QString py = tbtest::reference_python();
    QVERIFY2(!py.isEmpty(), "python3 with torch (python3-torch) is needed");
    // DistributedSampler(shuffle=True, seed=s).set_epoch(e) uses randperm(n) under manual_seed(s + e).
    QProcess p;
    p.start(py, {"-c",
                 "import torch, json\n"
                 "out = {}\n"
                 "for seed, n in [(0, 10), (1234, 37), (7, 1000)]:\n"
                 "    for e in range(3):\n"
                 "        g = torch.Generator(); g.manual_seed(seed + e)\n"
                 "        out[f'{seed},{n},{e}'] = torch.randperm(n, generator=g).tolist()\n"
                 "print(json.dumps(out))\n"});
    QVERIFY(p.waitForFinished(120000));
    QCOMPARE(p.exitCode(), 0);
    const auto ref = nlohmann::json::parse(p.readAllStandardOutput().toStdString());
    for (const auto& [seed, n] : std::vector<std::pair<uint64_t, size_t>>{{0, 10}, {1234, 37}, {7, 1000}}) {
      DataLoaderOptions o;
      o.seed = seed;
      DataLoader loader(numbered(n), o);
      for (int64_t e = 0; e < 3; ++e) {
        const auto key = std::to_string(seed) + "," + std::to_string(n) + "," + std::to_string(e);
        QCOMPARE(loader.epoch_order(e), ref[key].get<Ids>());
      }
      QVERIFY(loader.epoch_order(0) != loader.epoch_order(1));
    }
    DataLoaderOptions in_order;
    in_order.shuffle = false;
    QCOMPARE(DataLoader(numbered(4), in_order).epoch_order(3), (Ids{0, 1, 2, 3}));
  }

  void ranksReadTheShardsOfDistributedSampler() {
    const QString py = tbtest::reference_python();
    QVERIFY2(!py.isEmpty(), "python3 with torch (python3-torch) is needed");
    // PyTorch's own sampler, per rank: padded with the epoch's start, every num_replicas-th index.
    QProcess p;
    p.start(py, {"-c",
                 "import torch, json\n"
                 "from torch.utils.data import DistributedSampler\n"
                 "out = {}\n"
                 "for n, world, shuffle in [(10, 3, True), (37, 2, True), (5, 4, False), (2, 3, True)]:\n"
                 "    for rank in range(world):\n"
                 "        for e in range(2):\n"
                 "            s = DistributedSampler(range(n), num_replicas=world, rank=rank, shuffle=shuffle, seed=11)\n"
                 "            s.set_epoch(e)\n"
                 "            out[f'{n},{world},{rank},{e}'] = list(s)\n"
                 "print(json.dumps(out))\n"});
    QVERIFY(p.waitForFinished(120000));
    QVERIFY2(p.exitCode() == 0, p.readAllStandardError().constData());
    const auto ref = nlohmann::json::parse(p.readAllStandardOutput().toStdString());
    for (const auto& [n, world, shuffle] : std::vector<std::tuple<size_t, int64_t, bool>>{
             {10, 3, true}, {37, 2, true}, {5, 4, false}, {2, 3, true}}) {
      for (int64_t rank = 0; rank < world; ++rank) {
        DataLoaderOptions o;
        o.seed = 11;
        o.shuffle = shuffle;
        o.rank = rank;
        o.world_size = world;
        o.drop_last = false;
        DataLoader loader(numbered(n), o);
        for (int64_t e = 0; e < 2; ++e) {
          const auto key = std::to_string(n) + "," + std::to_string(world) + "," + std::to_string(rank) + "," + std::to_string(e);
          QCOMPARE(loader.epoch_order(e), ref[key].get<Ids>());
        }
      }
    }
    // Batch k of every rank together is batch k of one process at world_size times the batch.
    DataLoaderOptions one;
    one.seed = 3;
    one.batch_size = 6;
    const auto whole = DataLoader(numbered(24), one).batch(1, 2).indices;
    std::vector<size_t> ranks;
    for (int64_t rank = 0; rank < 3; ++rank) {
      DataLoaderOptions o = one;
      o.batch_size = 2, o.rank = rank, o.world_size = 3;
      const auto part = DataLoader(numbered(24), o).batch(1, 2).indices;
      ranks.insert(ranks.end(), part.begin(), part.end());
    }
    std::sort(ranks.begin(), ranks.end());
    auto sorted = whole;
    std::sort(sorted.begin(), sorted.end());
    QCOMPARE(ranks, sorted);
  }

  void dropLastAndBatchCounts() {
    DataLoaderOptions o;
    o.batch_size = 4;
    o.shuffle = false;
    DataLoader dropping(numbered(10), o);
    QCOMPARE(dropping.batches_per_epoch(), int64_t{2});
    QCOMPARE(all_indices(dropping), (std::vector<size_t>{0, 1, 2, 3, 4, 5, 6, 7}));
    QCOMPARE(dropping.cursor(), (DataCursor{0, 2}));
    QVERIFY(!dropping.next().has_value());
    o.drop_last = false;
    DataLoader keeping(numbered(10), o);
    QCOMPARE(keeping.batches_per_epoch(), int64_t{3});
    QCOMPARE(keeping.batch(0, 2).batch_size, int64_t{2});
    o.batch_size = 11;
    o.drop_last = true;
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, DataLoader(numbered(10), o));
    o.batch_size = 0;
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, DataLoader(numbered(10), o));
  }

  void resumesExactlyFromACursor() {
    DataLoaderOptions o;
    o.batch_size = 3;
    o.seed = 42;
    const auto ds = numbered(20);
    // An uninterrupted run over three epochs.
    DataLoader full(ds, o);
    std::vector<Batch> reference;
    DataCursor saved;
    for (int64_t e = 0; e < 3; ++e) {
      full.start_epoch(e);
      while (auto b = full.next()) {
        reference.push_back(*b);
        if (reference.size() == 8) saved = full.cursor();  // as a checkpoint after the 8th batch would
      }
    }
    QCOMPARE(reference.size(), size_t{18});  // 6 batches an epoch
    QCOMPARE(saved, (DataCursor{1, 2}));
    // A fresh loader (a new process after a restart) continues from the saved cursor.
    DataLoader resumed(ds, o);
    resumed.seek(saved);
    std::vector<Batch> rest;
    for (int64_t e = saved.epoch; e < 3; ++e) {
      if (e != saved.epoch) resumed.start_epoch(e);
      while (auto b = resumed.next()) rest.push_back(*b);
    }
    QCOMPARE(rest.size(), reference.size() - 8);
    for (size_t i = 0; i < rest.size(); ++i) {
      QCOMPARE(rest[i].indices, reference[8 + i].indices);
      QCOMPARE(rest[i].tokens, reference[8 + i].tokens);
      QCOMPARE(rest[i].labels, reference[8 + i].labels);
    }
    QVERIFY_THROWS_EXCEPTION(std::out_of_range, resumed.seek({-1, 0}));
  }

  void collationPadsRight() {
    Sample a, b;
    a.tokens = {5, 6};
    a.labels = {6, kIgnoreIndex};
    b.tokens = {7, 8, 9, 10, 11};
    b.labels = {kIgnoreIndex, 9, 10, 11, kIgnoreIndex};
    const Batch batch = tb::data::collate({a, b}, 3);
    QCOMPARE(batch.batch_size, int64_t{2});
    QCOMPARE(batch.seq_len, int64_t{5});
    QCOMPARE(batch.tokens, (Ids{5, 6, 3, 3, 3, 7, 8, 9, 10, 11}));
    QCOMPARE(batch.labels, (Ids{6, kIgnoreIndex, kIgnoreIndex, kIgnoreIndex, kIgnoreIndex,
                                kIgnoreIndex, 9, 10, 11, kIgnoreIndex}));
    QCOMPARE(batch.num_label_tokens(), int64_t{4});
    QVERIFY(batch.input_pos.empty());
    // Rounded up to a multiple of 4: 8 columns.
    const Batch rounded = tb::data::collate({a, b}, 3, 4);
    QCOMPARE(rounded.seq_len, int64_t{8});
    QCOMPARE(rounded.tokens[7], int64_t{3});
    QCOMPARE(rounded.labels[15], kIgnoreIndex);

    const auto t = tb::data::to_tensors(batch);
    QCOMPARE(t.tokens.scalar_type(), torch::kLong);
    QCOMPARE(t.tokens.sizes().vec(), (std::vector<int64_t>{2, 5}));
    QCOMPARE(t.tokens[1][4].item<int64_t>(), int64_t{11});
    QCOMPARE(t.labels[0][1].item<int64_t>(), kIgnoreIndex);
    QVERIFY(!t.input_pos.defined());
  }

  void packedBatchesCarryPositions() {
    Sample s;
    s.tokens = {1, 2, 3, 4};
    s.labels = {2, kIgnoreIndex, 4, kIgnoreIndex};
    s.input_pos = {0, 1, 0, 1};
    s.seq_lens = {2, 2};
    const Batch b = tb::data::collate({s, s}, 0);
    QCOMPARE(b.input_pos, (Ids{0, 1, 0, 1, 0, 1, 0, 1}));
    QCOMPARE(tb::data::to_tensors(b).input_pos.sizes().vec(), (std::vector<int64_t>{2, 4}));
  }
};

TB_TEST(TestDatasetLoader)
#include "test_dataset_loader.moc"
