// "Export…" on the Checkpoints tab, on a real LoRA checkpoint (one training step of tiny/lora_single_device
// by the CLI): the dialog exports the merged model with an Ollama Modelfile and, separately, the adapter
// alone; the command line it shows writes the very same bytes; the window stays usable meanwhile.
#include <QtTest>

#include "test_main.h"

#include <QCheckBox>
#include <QComboBox>
#include <QLabel>
#include <QLineEdit>
#include <QPushButton>
#include <QSignalSpy>
#include <QTableWidget>

#include "CheckpointsPanel.h"
#include "ExportDialog.h"
#include "gguf_reader.h"
#include "test_support.h"

class TestExportDialog : public QObject {
  Q_OBJECT

  QTemporaryDir dir_;
  QString cli_ = qEnvironmentVariable("TB_CLI");

 private Q_SLOTS:
  void initTestCase() {
    QVERIFY(dir_.isValid());
    QVERIFY2(!cli_.isEmpty(), "TB_CLI is not set (ctest sets it)");
    QDir::setCurrent(TB_SOURCE_DIR);
    const auto r = tbtest::run_process(cli_, {"run", "lora_finetune_single_device", "--config", "tiny/lora_single_device",
                                              "output_dir=" + dir_.path() + "/run", "epochs=1", "max_steps_per_epoch=1",
                                              "batch_size=2", "num_threads=1"});
    QVERIFY2(r.code == 0, qPrintable(r.err.right(2000)));
  }

  void exportsFromTheCheckpointsTab() {
    tb::ui::CheckpointsPanel panel;
    panel.setOutputDir(dir_.path() + "/run");
    QCOMPARE(panel.entries().size(), 1);
    auto* exportButton = panel.findChild<QPushButton*>("exportButton");
    QVERIFY(exportButton);
    QVERIFY(exportButton->isEnabled());  // the run's one checkpoint is selected from the start
    panel.select(0);
    QVERIFY(exportButton->isEnabled());
    panel.setRunActive(true);  // a run going on does not stop an export of a finished checkpoint
    QVERIFY(exportButton->isEnabled());

    std::unique_ptr<tb::ui::ExportDialog> dialog(panel.openExport());
    QVERIFY(dialog);
    dialog->setAttribute(Qt::WA_DeleteOnClose, false);
    QVERIFY(dialog->adapterOnly()->isEnabled());  // a LoRA checkpoint
    dialog->typeBox()->setCurrentText("q8_0");
    dialog->ollama()->setChecked(true);
    const QString file = dialog->destination()->text();
    QVERIFY2(file.endsWith("-epoch_0-q8_0.gguf"), qPrintable(file));
    QCOMPARE(dialog->destination()->cursorPosition(), int(file.size()));  // the file's name in view
    {  // the type is remembered for the next export
      std::unique_ptr<tb::ui::ExportDialog> next(panel.openExport());
      next->setAttribute(Qt::WA_DeleteOnClose, false);
      QCOMPARE(next->typeBox()->currentText(), QString("q8_0"));
    }
    const QString command = dialog->commandLine()->text();
    QVERIFY2(command.startsWith("tunebench-cli export gguf --checkpoint ") && command.contains("--type q8_0") &&
                 command.contains("--ollama") && command.contains(file),
             qPrintable(command));

    QSignalSpy done(dialog.get(), &tb::ui::ExportDialog::finished);
    dialog->startExport();
    QVERIFY(dialog->running());
    QVERIFY(!dialog->exportButton()->isEnabled());
    static_cast<QDialog*>(dialog.get())->reject();  // refused while exporting
    QVERIFY(dialog->running());
    QTRY_VERIFY_WITH_TIMEOUT(done.count() == 1, 180000);
    QVERIFY2(done.at(0).at(0).toBool(), qPrintable(done.at(0).at(1).toString()));
    QVERIFY2(dialog->status()->text().contains("bytes per parameter"), qPrintable(dialog->status()->text()));
    const auto gguf = tbtest::parse_gguf(tbtest::read_file(file.toStdString()));
    QCOMPARE(gguf.kv.at("general.file_type").u(), uint64_t(7));
    QVERIFY(QFile::exists(QFileInfo(file).dir().filePath("Modelfile")));

    // The command line it showed writes the same bytes.
    QStringList args = command.split(' ');
    args.removeFirst();
    const QString again = dir_.path() + "/again.gguf";
    args[args.indexOf("--output") + 1] = again;
    const auto r = tbtest::run_process(cli_, args);
    QVERIFY2(r.code == 0, qPrintable(r.err));
    QVERIFY(tbtest::read_file(again.toStdString()) == tbtest::read_file(file.toStdString()));

    // The adapter alone: a k-quant type gives way to f16 (llama.cpp reads adapters in f32/f16/bf16/q8_0).
    dialog->typeBox()->setCurrentText("q4_k_m");
    dialog->adapterOnly()->setChecked(true);
    QCOMPARE(dialog->typeBox()->currentText(), QString("f16"));
    QVERIFY(!dialog->ollama()->isEnabled());
    QVERIFY(dialog->commandLine()->text().contains("--adapter"));
    const QString adapterFile = dialog->destination()->text();
    QVERIFY2(adapterFile.endsWith("-epoch_0-lora-f16.gguf"), qPrintable(adapterFile));
    dialog->startExport();
    QTRY_VERIFY_WITH_TIMEOUT(done.count() == 2, 180000);
    QVERIFY2(done.at(1).at(0).toBool(), qPrintable(done.at(1).at(1).toString()));
    const auto adapter = tbtest::parse_gguf(tbtest::read_file(adapterFile.toStdString()));
    QCOMPARE(adapter.kv.at("general.type").s(), std::string("adapter"));
    QCOMPARE(adapter.tensor("blk.0.attn_q.weight.lora_a").type, 1u);

    // The same file again: asked first; No leaves it alone, Yes replaces it.
    QStringList asked;
    bool replace = false;
    dialog->setReplaceConfirmation([&](const QString& path) {
      asked << path;
      return replace;
    });
    tbtest::write_file(adapterFile.toStdString(), "the user's file");
    dialog->startExport();
    QCOMPARE(asked, QStringList{adapterFile});
    QVERIFY(!dialog->running());
    QVERIFY2(dialog->status()->text().startsWith("Not exported"), qPrintable(dialog->status()->text()));
    QCOMPARE(tbtest::read_file(adapterFile.toStdString()), std::string("the user's file"));
    replace = true;
    dialog->startExport();
    QTRY_VERIFY_WITH_TIMEOUT(done.count() == 3, 180000);
    QVERIFY2(done.at(2).at(0).toBool(), qPrintable(done.at(2).at(1).toString()));
    QVERIFY(tbtest::read_file(adapterFile.toStdString()).rfind("GGUF", 0) == 0);
  }

  // --checkpoint on a folder whose name YAML would misread unquoted (": ", " #", a quote).
  void exportsACheckpointWithAnOddName() {
    const QString odd = dir_.path() + "/run's: copy #2";
    QVERIFY(QDir().mkpath(odd));
    const auto copy = tbtest::run_process("cp", {"-r", dir_.path() + "/run/epoch_0", odd + "/epoch_0"});
    QVERIFY2(copy.code == 0, qPrintable(copy.err));
    const auto r = tbtest::run_process(cli_, {"export", "gguf", "--checkpoint", odd + "/epoch_0", "--output",
                                              dir_.path() + "/odd.gguf", "--type", "f16"});
    QVERIFY2(r.code == 0, qPrintable(r.err));
    QVERIFY2(r.err.contains("loaded") && r.err.contains("copy #2"), qPrintable(r.err));
  }

  // A failure reaches the dialog as a message, and the dialog stays usable.
  void reportsAFailure() {
    tb::ui::ExportDialog dialog(dir_.path() + "/run/epoch_0", true);
    dialog.destination()->setText(dir_.path() + "/no/such/folder/x.gguf");
    QSignalSpy done(&dialog, &tb::ui::ExportDialog::finished);
    dialog.startExport();
    QTRY_VERIFY_WITH_TIMEOUT(done.count() == 1, 180000);
    QVERIFY(!done.at(0).at(0).toBool());
    QVERIFY2(dialog.status()->text().startsWith("Export failed:"), qPrintable(dialog.status()->text()));
    QVERIFY(dialog.exportButton()->isEnabled());
  }
};

TB_TEST(TestExportDialog)
#include "test_export_dialog.moc"
