// tunebench: the desktop window. Opens on the embedded default (or the remembered setup), ready to
// press Start. The --autostart/--quit-after-steps/--screenshot options drive it unattended
// (scripts/screenshots.sh).
#include <QApplication>
#include <QCommandLineParser>

#include <csignal>
#include <memory>
#include <string>
#include <iostream>

#include "MainWindow.h"

namespace {
// --help and --version answer without a display (on a server, over ssh): no window system is opened for them.
bool onlyAsksForText(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "-h" || a == "--help" || a == "--help-all" || a == "-v" || a == "--version") return true;
  }
  return false;
}
}  // namespace

int main(int argc, char** argv) {
  std::signal(SIGXFSZ, SIG_IGN);  // a file size limit (ulimit -f) becomes EFBIG, reported, not a death
  std::unique_ptr<QCoreApplication> textOnly;
  if (onlyAsksForText(argc, argv)) textOnly = std::make_unique<QCoreApplication>(argc, argv);
  std::unique_ptr<QApplication> windowed;
  if (!textOnly) windowed = std::make_unique<QApplication>(argc, argv);
  QCoreApplication& app = textOnly ? *textOnly : *windowed;
  QCoreApplication::setOrganizationName("tunebench");  // settings in ~/.config/tunebench/
  QCoreApplication::setApplicationName("tunebench");
  QCoreApplication::setApplicationVersion(TUNEBENCH_VERSION);
  if (windowed) QGuiApplication::setDesktopFileName("io.github.tunebench.Tunebench");

  QCommandLineParser parser;
  parser.setApplicationDescription("Tunebench: fine-tune LLMs with torchtune-style recipes, live.");
  parser.addHelpOption();
  parser.addVersionOption();
  const QCommandLineOption config("config", "Open this bundled config name or YAML file.", "config");
  const QCommandLineOption useDefault("default", "Open the embedded default, not the remembered setup.");
  const QCommandLineOption autostart("autostart", "Press Start once the window is up.");
  const QCommandLineOption quitAfter("quit-after-steps", "With --autostart: stop (saving) after N steps, then quit.", "N");
  const QCommandLineOption screenshot("screenshot", "Save PNGs of the window (and each tab) when quitting.", "file.png");
  const QCommandLineOption chatPrompt("chat-prompt",
                                      "With --screenshot: ask the run's last checkpoint (beside its base model) this "
                                      "in the Chat tab before its screenshot.",
                                      "text");
  parser.addOptions({config, useDefault, autostart, quitAfter, screenshot, chatPrompt});
  parser.addPositionalArgument("overrides", "Config overrides as tunebench-cli takes them: key=value, ~key.",
                               "[key=value...]");
  parser.process(app);

  tb::ui::StartupOptions options;
  options.config = parser.value(config);
  options.useDefault = parser.isSet(useDefault);
  options.autostart = parser.isSet(autostart);
  options.screenshot = parser.value(screenshot);
  options.chatPrompt = parser.value(chatPrompt);
  options.overrides = parser.positionalArguments();
  if (parser.isSet(quitAfter)) {
    bool ok = false;
    options.quitAfterSteps = parser.value(quitAfter).toInt(&ok);
    if (!ok || options.quitAfterSteps < 1) {
      std::cerr << "tunebench: --quit-after-steps needs a positive number\n";
      return 1;
    }
  }

  tb::ui::MainWindow window(options);
  window.show();
  return app.exec();
}
