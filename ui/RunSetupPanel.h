// The run-setup form: model (presets, a Hugging Face folder, a model in the Hugging Face cache or one "Get
// model…" downloads) with its parameter count and memory
// estimate, recipe (Full / LoRA / QLoRA), compile, dataset with a token preview, and the key
// hyper-parameters. Every widget edits the ConfigDocument's tree; a text edit refreshes the widgets.
#pragma once

#include <QWidget>

#include <atomic>
#include <functional>
#include <memory>

#include "ConfigDocument.h"
#include "DatasetPreview.h"

namespace tb::data {
struct Row;
}

class QCheckBox;
class QComboBox;
class QDoubleSpinBox;
class QLabel;
class QLineEdit;
class QPushButton;
class QSpinBox;
class QTextBrowser;
class QTimer;

namespace tb::ui {

class GetModelDialog;
class LocalModelsDialog;
class HubDatasetDialog;
class LocalDatasetsDialog;

class RunSetupPanel : public QWidget {
  Q_OBJECT
 public:
  explicit RunSetupPanel(ConfigDocument* document, QWidget* parent = nullptr);
  ~RunSetupPanel() override;

  // Points the model at a Hugging Face checkpoint folder (config.json + safetensors); false with the
  // reason when its config.json cannot be read. The button's dialog calls this.
  bool openModelFolder(const QString& folder, QString* error = nullptr);
  // Uses a data file (json, jsonl, csv, parquet or txt) as the dataset, picking the dataset component from
  // its first row.
  bool useDatasetFile(const QString& path, QString* error = nullptr);
  // Uses a Hub dataset (source: org/name, its config and split) likewise: `firstRow` when the caller read
  // it (the Hub dialog), else read from the cache or fetched.
  bool useHubDataset(const QString& repo, const QString& configName, const QString& split, QString* error = nullptr,
                     const tb::data::Row* firstRow = nullptr);
  // Re-reads every widget from the document (after a text edit or a load).
  void refreshFromDocument();

  QString memoryText() const;
  QString modelInfoText() const;
  QString weightsText() const;  // the weights and tokenizer Start will load, and the first that will not

  // Widgets, for tests and the window's shortcuts.
  QComboBox* recipeCombo() const { return recipe_; }
  QCheckBox* compileBox() const { return compile_; }
  // Worker processes on this machine for data parallelism (1: the run trains in the window's process).
  QSpinBox* processesBox() const { return processes_; }
  int processes() const;
  QComboBox* modelCombo() const { return model_; }
  QComboBox* dtypeCombo() const { return dtype_; }
  QSpinBox* batchSizeBox() const { return batchSize_; }
  QSpinBox* gradAccumBox() const { return gradAccum_; }
  QComboBox* datasetCombo() const { return dataset_; }
  QSpinBox* epochsBox() const { return epochs_; }
  QSpinBox* maxStepsBox() const { return maxSteps_; }
  QSpinBox* loraRankBox() const { return loraRank_; }
  QDoubleSpinBox* loraAlphaBox() const { return loraAlpha_; }
  QLineEdit* learningRateEdit() const { return lr_; }
  QLineEdit* outputDirEdit() const { return outputDir_; }
  // The next run's folder name under the output folder; empty: <recipe>-<eager|compile>-<time>.
  QLineEdit* runNameEdit() const { return runName_; }
  // The absolute folder the runs go to (MainWindow::runsFolder), shown under the output folder field.
  QString runsFolder() const;
  // Why the dataset preview could not tokenize the dataset of this (valid) setup; empty when it could, or
  // while it is being read. Start refuses a setup whose preview says this.
  QString datasetProblem() const { return datasetProblem_; }
  QLineEdit* runsPathField() const { return runsPath_; }
  QTextBrowser* previewView() const { return preview_; }
  QPushButton* getModelButton() const { return getModel_; }
  // Runs "Get model…"'s dialog instead of exec() (tests drive it); the folder it got is then opened.
  void setGetModelHook(std::function<void(GetModelDialog&)> hook) { getModelHook_ = std::move(hook); }
  QPushButton* localModelsButton() const { return localModels_; }
  // Runs "On this computer…"'s dialog instead of exec() (tests drive it); the folder it chose is opened.
  void setLocalModelsHook(std::function<void(LocalModelsDialog&)> hook) { localModelsHook_ = std::move(hook); }
  // Run the dataset box's "From the Hub…" and "Datasets on this computer…" dialogs instead of exec() (tests).
  void setHubDatasetHook(std::function<void(HubDatasetDialog&)> hook) { hubDatasetHook_ = std::move(hook); }
  void setLocalDatasetsHook(std::function<void(LocalDatasetsDialog&)> hook) { localDatasetsHook_ = std::move(hook); }

 Q_SIGNALS:
  void previewReady();

 private:
  void buildUi();
  void connectEdits();
  void updateModelInfo();
  void schedulePreview();
  void runPreview();
  void showPreview(int generation, const DatasetPreviewResult& result);
  void fillDatasetCombo();

  ConfigDocument* doc_;
  std::function<void(GetModelDialog&)> getModelHook_;
  std::function<void(LocalModelsDialog&)> localModelsHook_;
  std::function<void(HubDatasetDialog&)> hubDatasetHook_;
  std::function<void(LocalDatasetsDialog&)> localDatasetsHook_;
  bool refreshing_ = false;
  QComboBox* model_;
  QPushButton* openModel_;
  QPushButton* getModel_;
  QPushButton* localModels_;
  QLabel* modelInfo_;
  QLabel* weights_;
  QLabel* memory_;
  QComboBox* recipe_;
  QCheckBox* compile_;
  QSpinBox* processes_;
  QComboBox* dtype_;
  QComboBox* dataset_;
  QTextBrowser* preview_;
  QSpinBox* epochs_;
  QSpinBox* maxSteps_;
  QSpinBox* batchSize_;
  QSpinBox* gradAccum_;
  QLineEdit* lr_;
  QSpinBox* loraRank_;
  QDoubleSpinBox* loraAlpha_;
  QSpinBox* threads_;
  QLineEdit* outputDir_;
  QLineEdit* runsPath_;
  QString datasetProblem_;
  QLineEdit* runName_;
  QTimer* previewTimer_ = nullptr;
  QString previewKey_;  // dataset + tokenizer YAML the last preview was built for
  int previewGeneration_ = 0;
  std::shared_ptr<std::atomic<bool>> previewStop_;  // the running preview's stop
};

}  // namespace tb::ui
