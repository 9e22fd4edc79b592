// The config editor marks errors where the config system finds them: the wavy underline starts at the
// diagnostic's line and column, its tooltip is the message, and the panel lists exactly what
// `tunebench-cli validate` prints for the same file. Plus the highlighter's colours.
#include <QListWidget>
#include <QProcess>
#include <QTemporaryDir>
#include <QTextBlock>
#include <QtTest>

#include "test_main.h"

#include "ConfigDocument.h"
#include "ConfigEditorPanel.h"
#include "YamlEditor.h"
#include "YamlHighlighter.h"

namespace {
// A valid full fine-tune config for the registry's components; rows break one line of it.
const char* kValid =
    "# recipe: full_finetune_single_device\n"                     // 1
    "output_dir: out\n"                                           // 2
    "model:\n"                                                    // 3
    "  _component_: tunebench.models.llama_tiny_test\n"           // 4
    "optimizer:\n"                                                // 5
    "  _component_: torch.optim.AdamW\n"                          // 6
    "  lr: 2e-5\n"                                                // 7
    "  weight_decay: 0.01\n"                                      // 8
    "batch_size: 2\n"                                             // 9
    "epochs: 1\n";                                                // 10
}  // namespace

class TestYamlEditor : public QObject {
  Q_OBJECT

 private Q_SLOTS:
  void errorIsMarkedAtItsLineAndColumn_data() {
    QTest::addColumn<QString>("from");
    QTest::addColumn<QString>("to");
    QTest::addColumn<int>("line");
    QTest::addColumn<int>("column");
    QTest::addColumn<QString>("messagePart");
    // Positions by hand: the typo'd key starts in column 3 of line 8; the top-level one in column 1.
    QTest::newRow("nested key typo") << "  weight_decay: 0.01" << "  weight_dekay: 0.01" << 8 << 3 << "weight_dekay";
    QTest::newRow("top-level key typo") << "epochs: 1" << "epocs: 1" << 10 << 1 << "epocs";
    QTest::newRow("wrong type") << "batch_size: 2" << "batch_size: two" << 9 << 13 << "batch_size";
  }
  void errorIsMarkedAtItsLineAndColumn() {
    QFETCH(QString, from);
    QFETCH(QString, to);
    QFETCH(int, line);
    QFETCH(int, column);
    QFETCH(QString, messagePart);
    QTemporaryDir dir;
    const QString path = dir.filePath("config.yaml");
    QString text = kValid;
    QVERIFY(text.contains(from));
    text.replace(from, to);
    QFile f(path);
    QVERIFY(f.open(QIODevice::WriteOnly));
    f.write(text.toUtf8());
    f.close();

    tb::ui::ConfigDocument doc;
    QVERIFY(doc.loadFile(path));
    tb::ui::ConfigEditorPanel panel(&doc);
    panel.show();
    QVERIFY(!panel.isValid());
    const auto* editor = panel.editor();
    const auto marks = editor->marks();
    const auto it = std::find_if(marks.begin(), marks.end(), [&](const auto& m) { return m.line == line; });
    QVERIFY2(it != marks.end(), qPrintable(panel.problems().join('\n')));
    QCOMPARE(it->column, column);
    QVERIFY2(it->message.contains(messagePart), qPrintable(it->message));
    // The extra selection sits there, wavy-underlined, with the message as tooltip.
    const auto selections = editor->errorSelections();
    const int index = int(it - marks.begin());
    const QTextCursor& c = selections.at(index).cursor;
    QCOMPARE(c.block().blockNumber(), line - 1);
    QCOMPARE(c.selectionStart() - c.block().position(), column - 1);
    QVERIFY(c.selectionEnd() > c.selectionStart());
    QCOMPARE(selections.at(index).format.underlineStyle(), QTextCharFormat::WaveUnderline);
    QCOMPARE(selections.at(index).format.toolTip(), it->message);
    QCOMPARE(editor->messageAtLine(line), it->message);
    QVERIFY(editor->extraSelections().size() >= selections.size());
    // Exactly what the CLI prints for the same file.
    const QString cli = qEnvironmentVariable("TB_CLI");
    QVERIFY2(!cli.isEmpty() && QFileInfo(cli).isExecutable(), "TB_CLI must name the tunebench-cli binary");
    QProcess p;
    p.start(cli, {"validate", path, "--recipe", "full_finetune_single_device"});
    QVERIFY(p.waitForFinished(60000));
    QCOMPARE(p.exitCode(), 1);
    const QStringList cliLines = QString::fromUtf8(p.readAllStandardError()).split('\n', Qt::SkipEmptyParts);
    QCOMPARE(panel.problems(), cliLines);
    QCOMPARE(panel.problemList()->count(), int(cliLines.size()));
  }

  void syntaxErrorIsMarkedWhereYamlCppSaysSo() {
    QTemporaryDir dir;
    const QString path = dir.filePath("broken.yaml");
    QString text = kValid;
    text.replace("batch_size: 2", "batch_size: [2, 3");
    QFile f(path);
    QVERIFY(f.open(QIODevice::WriteOnly));
    f.write(text.toUtf8());
    f.close();
    tb::ui::ConfigDocument doc;
    QVERIFY(doc.loadFile(path));
    tb::ui::ConfigEditorPanel panel(&doc);
    QCOMPARE(panel.problems().size(), 1);
    QVERIFY2(panel.problems().first().startsWith(path + ":"), qPrintable(panel.problems().first()));
    QVERIFY2(panel.problems().first().contains("YAML syntax error"), qPrintable(panel.problems().first()));
    // The position yaml-cpp gives, independently of the config system.
    int line = 0, column = 0;
    try {
      YAML::Load(text.toStdString());
    } catch (const YAML::Exception& e) {
      line = e.mark.line + 1;
      column = e.mark.column + 1;
    }
    QVERIFY(line > 0);
    QCOMPARE(panel.editor()->marks().size(), 1);
    QCOMPARE(panel.editor()->marks().first().line, line);
    QCOMPARE(panel.editor()->marks().first().column, column);
  }

  void validatesWhileTypingAfterAPause() {
    tb::ui::ConfigDocument doc;
    doc.loadText(kValid, {}, {});
    tb::ui::ConfigEditorPanel panel(&doc);
    panel.show();
    const int before = int(panel.problems().size());
    QSignalSpy validated(&panel, &tb::ui::ConfigEditorPanel::validated);
    auto* editor = panel.editor();
    QTextCursor c(editor->document());
    c.movePosition(QTextCursor::End);
    editor->setTextCursor(c);
    QTest::keyClicks(editor, "bogus_key: 1");
    QTest::keyClick(editor, Qt::Key_Return);
    QCOMPARE(validated.count(), 0);  // not on every key
    QVERIFY(validated.wait(2000));
    QCOMPARE(validated.count(), 1);
    QCOMPARE(int(panel.problems().size()), before + 1);
    QVERIFY(!editor->messageAtLine(11).isEmpty());
  }

  // The problems panel opening takes height from the editor: the line being typed stays in view.
  void theEditedLineStaysInViewWhenProblemsOpen() {
    QString text = kValid;
    for (int i = 0; i < 60; ++i) text += QString("# filler %1\n").arg(i);  // taller than the editor
    tb::ui::ConfigDocument doc;
    doc.loadText(text, {}, {});
    tb::ui::ConfigEditorPanel panel(&doc);
    panel.resize(700, 420);
    panel.show();
    QVERIFY(QTest::qWaitForWindowExposed(&panel));
    auto* editor = panel.editor();
    QTextCursor c(editor->document());
    c.movePosition(QTextCursor::End);
    editor->setTextCursor(c);
    editor->ensureCursorVisible();
    QSignalSpy validated(&panel, &tb::ui::ConfigEditorPanel::validated);
    QTest::keyClicks(editor, "bogus_key: 1");
    QVERIFY(validated.wait(2000));
    QTRY_VERIFY(!panel.problems().isEmpty());
    QCoreApplication::processEvents();
    QTRY_VERIFY2(editor->viewport()->rect().contains(editor->cursorRect()),
                 qPrintable(QString("cursor at y %1, viewport %2 high").arg(editor->cursorRect().y()).arg(editor->viewport()->height())));
  }

  void highlighterColoursTheParts() {
    QTextDocument document;
    tb::ui::YamlHighlighter highlighter(&document);
    document.setPlainText("model:  # the model\n  _component_: torch.optim.AdamW\n  lr: 2e-5\n  name: \"x\"\n  on: true\n");
    highlighter.rehighlight();  // a document without a view may be highlighted lazily; force it now
    auto formatAt = [&](int blockNumber, int column) {
      const QTextBlock block = document.findBlockByNumber(blockNumber);
      for (const auto& range : block.layout()->formats())
        if (column >= range.start && column < range.start + range.length) return range.format;
      return QTextCharFormat();
    };
    using Role = tb::ui::YamlHighlighter::Role;
    QCOMPARE(formatAt(0, 0).foreground(), highlighter.format(Role::Key).foreground());
    QCOMPARE(formatAt(0, 10).foreground(), highlighter.format(Role::Comment).foreground());
    QVERIFY(formatAt(0, 10).fontItalic());
    QCOMPARE(formatAt(1, 3).foreground(), highlighter.format(Role::ComponentKey).foreground());
    QCOMPARE(formatAt(1, 20).foreground(), highlighter.format(Role::ComponentValue).foreground());
    QCOMPARE(formatAt(2, 7).foreground(), highlighter.format(Role::Number).foreground());
    QCOMPARE(formatAt(3, 9).foreground(), highlighter.format(Role::String).foreground());
    QCOMPARE(formatAt(4, 7).foreground(), highlighter.format(Role::Keyword).foreground());
  }
};

TB_TEST(TestYamlEditor)
#include "test_yaml_editor.moc"
