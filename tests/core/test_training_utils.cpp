// LR schedule, loss and memory accounting against hand-computed values.
#include <QtTest>

#include "test_main.h"

#include <cmath>
#include <cstdlib>
#include <filesystem>

#include <malloc.h>

#include <torch/torch.h>

#include "models/transformer.h"
#include "training/memory.h"
#include "training/memory_budget.h"
#include "models/loss.h"
#include "training/optim.h"
#include "training/run_checkpoint.h"

class TestTrainingUtils : public QObject {
  Q_OBJECT
 private Q_SLOTS:
  // After keep_freed_memory_in_process() a block far above glibc's mmap threshold comes from the heap
  // (no mmapped chunk appears) and freeing it leaves the heap as large (nothing trimmed back), so the
  // next step's activations reuse resident pages instead of faulting them in again.
  void freedBlocksStayInTheProcess() {
    if (qEnvironmentVariable("TUNEBENCH_MALLOC") == "system") QSKIP("TUNEBENCH_MALLOC=system keeps glibc's defaults");
#if defined(__SANITIZE_ADDRESS__)
    QSKIP("under AddressSanitizer its allocator replaces glibc's malloc, whose settings this checks");
#endif
    QVERIFY(tb::training::keep_freed_memory_in_process());
    const size_t bytes = size_t(96) << 20;  // 96 MiB, above the 32 MiB the mmap threshold can grow to
    const auto before = mallinfo2();
    void* block = std::malloc(bytes);
    QVERIFY(block);
    static_cast<volatile char*>(block)[bytes - 1] = 1;
    const auto held = mallinfo2();
    QCOMPARE(held.hblkhd, before.hblkhd);  // not an mmapped chunk
    QVERIFY(held.arena >= before.arena + bytes);
    std::free(block);
    const auto after = mallinfo2();
    QCOMPARE(after.arena, held.arena);  // not trimmed
    QVERIFY(after.fordblks >= bytes);   // free in the heap, ready for the next step

    // After the training loop, glibc's defaults again: the block is its own mmap, gone when freed.
    tb::training::return_freed_memory();
    const auto released = mallinfo2();
    void* again = std::malloc(bytes);
    QVERIFY(again);
    QVERIFY(mallinfo2().hblkhd >= released.hblkhd + bytes);  // an mmapped chunk of its own
    std::free(again);
    QCOMPARE(mallinfo2().hblkhd, released.hblkhd);
  }

  void cosineScheduleMatchesFormula_data() {
    QTest::addColumn<int>("step");
    QTest::addColumn<double>("expected");
    // warm-up 4 of 14 steps: step/4 while warming up, then 0.5*(1+cos(pi*(s-4)/10)).
    QTest::newRow("start") << 0 << 0.0;
    QTest::newRow("warmup") << 1 << 0.25;
    QTest::newRow("warmup end") << 4 << 1.0;
    QTest::newRow("quarter") << 9 << 0.5;                // cos(pi/2) = 0
    QTest::newRow("decay") << 6 << 0.5 * (1 + std::cos(M_PI * 0.2));
    QTest::newRow("end") << 14 << 0.0;
  }
  void cosineScheduleMatchesFormula() {
    QFETCH(int, step);
    QFETCH(double, expected);
    auto lambda = tb::training::cosine_with_warmup(4, 14);
    QVERIFY(std::abs(lambda(step) - expected) < 1e-12);
  }

  void crossEntropySumSkipsIgnored() {
    // Two rows of logits; row 0 label 1, row 1 ignored. CE = log(e^0+e^1+e^2) - 1.
    auto logits = torch::tensor({{0.f, 1.f, 2.f}, {5.f, 5.f, 5.f}});
    auto labels = torch::tensor({1, -100}, torch::kLong);
    const double expected = std::log(1 + std::exp(1.0) + std::exp(2.0)) - 1.0;
    const double got = tb::models::cross_entropy_sum(logits, labels, -100).item<double>();
    QVERIFY(std::abs(got - expected) < 1e-6);
  }

  void learningRateIsSetOnEveryGroup() {
    auto w = torch::zeros({2}, torch::requires_grad());
    torch::optim::SGD sgd({w}, torch::optim::SGDOptions(0.1));
    tb::training::set_lr(sgd, 0.025);
    QCOMPARE(tb::training::current_lr(sgd), 0.025);
  }

  // The disk check before training and before each save: enough space says nothing; too little names the
  // folder and both sizes, also for an output folder that does not exist yet (its parent's disk).
  void diskSpaceIsCheckedAgainstWhatASaveTakes() {
    QTemporaryDir dir;
    const std::string out = dir.filePath("not/made/yet").toStdString();
    QVERIFY(!tb::training::disk_space_warning(out, 1, "a checkpoint").has_value());
    const uint64_t free = std::filesystem::space(dir.path().toStdString()).available;
    const auto warning = tb::training::disk_space_warning(out, free + (uint64_t(1) << 40), "a checkpoint of this run");
    QVERIFY(warning.has_value());
    QVERIFY2(QString::fromStdString(*warning).startsWith("output_dir " + QString::fromStdString(out) + " has ") &&
                 warning->find("a checkpoint of this run takes about") != std::string::npos,
             warning->c_str());
  }

  // A run whose weights, gradients and optimizer states exceed the machine's memory is refused before its
  // first step (it was killed by the system minutes later), naming the parts and what would take less.
  void memoryShortfallIsRefusedBeforeTheFirstStep() {
    tb::models::ModelArgs a = tb::models::llama_tiny_test_args();
    auto model = tb::models::build_decoder(a);
    std::vector<torch::Tensor> params = model->parameters();
    torch::optim::AdamW adamw(params, torch::optim::AdamWOptions(1e-3));
    const auto budget = tb::training::memory_budget_event(*model, adamw, params);
    const auto& memory = budget.at("memory");
    const uint64_t weights = uint64_t(tb::models::count_parameters(*model)) * 4;
    const uint64_t held = 4 * weights;  // fp32: weights, gradients, AdamW's two moments
    QCOMPARE(memory.value("frozen_bytes", uint64_t{0}) + memory.value("trainable_bytes", uint64_t{0}) +
                 memory.value("gradient_bytes", uint64_t{0}) + memory.value("optimizer_bytes", uint64_t{0}),
             held);
    QVERIFY(!tb::training::memory_shortfall(memory, held).has_value());
    QVERIFY(!tb::training::memory_tight(memory, held * 2).has_value());
    const auto tight = tb::training::memory_tight(memory, held + held / 20);
    QVERIFY(tight.has_value() && tight->find("over 90% of this machine's") != std::string::npos);
    const auto error = tb::training::memory_shortfall(memory, held - 1);
    QVERIFY(error.has_value());
    for (const char* part : {"memory: this run holds at least", "before any activation", "it cannot run here",
                             "a LoRA or QLoRA recipe", "an 8-bit AdamW", "optimizer_in_bwd: True"})
      QVERIFY2(error->find(part) != std::string::npos, error->c_str());

    // Llama 3 8B's full fine-tune as torchtune configures it (bf16, 8-bit AdamW, optimizer_in_bwd) on 23.5 GiB:
    // refused, and nothing it already does is suggested.
    const uint64_t n = 8'030'261'248;
    const nlohmann::json eight_b = {{"frozen_bytes", 0},         {"trainable_bytes", 2 * n},
                                    {"gradient_bytes", 2 * 525'336'576}, {"optimizer_bytes", 2 * n + n / 32},
                                    {"trainable_params", n}};
    const auto refused = tb::training::memory_shortfall(eight_b, uint64_t(23.5 * 1024 * 1024 * 1024));
    QVERIFY(refused.has_value());
    QVERIFY2(refused->find("at least 31.1 GiB (weights 15.0, gradients 1.0, optimizer states 15.2)") != std::string::npos &&
                 refused->find("more than this machine's 23.5 GiB") != std::string::npos &&
                 refused->find("LoRA") != std::string::npos && refused->find("8-bit") == std::string::npos &&
                 refused->find("optimizer_in_bwd") == std::string::npos,
             refused->c_str());
  }

  void countsTensorStorage() {
    tb::training::install_memory_tracking();
    const int64_t before = tb::training::memory_stats().live_bytes;
    tb::training::reset_peak_memory();
    {
      auto big = torch::empty({1024, 256}, torch::kFloat32);  // exactly 1 MiB
      QCOMPARE(tb::training::memory_stats().live_bytes - before, int64_t(1 << 20));
    }
    QCOMPARE(tb::training::memory_stats().live_bytes, before);
    QVERIFY(tb::training::memory_stats().peak_bytes >= before + (1 << 20));
    tb::training::reset_peak_memory();
    QCOMPARE(tb::training::memory_stats().peak_bytes, before);
    QVERIFY(tb::training::process_peak_rss_bytes() > 0);
  }
};

TB_TEST(TestTrainingUtils)
#include "test_training_utils.moc"
