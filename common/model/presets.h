/// \file
/// The shipped model presets (`--model NAME`, `--list-models`) and name-or-path resolution.
///
/// Each preset is one registry row: name, one-line description, the source of its dimensions,
/// and a factory returning a validated `ModelConfig`. Adding a preset is one row in presets.cpp.
#pragma once

#include <functional>
#include <string>
#include <string_view>

#include "common/error.h"
#include "common/model/model.h"
#include "common/registry.h"

namespace tawpipe::model {

/// Builds a preset's configuration. Never fails: presets are validated by the unit tests.
using ModelFactory = std::function<ModelConfig()>;

/// The preset table (immutable, built on first use; safe to read from several threads).
/// Rows: llama-h1024-l48, llama-h2048-l48, llama-h4096-l48 (the TawPipe paper family),
/// llama2-7b, llama2-13b, llama2-70b, llama3-8b, llama3-70b, llama3-405b, gpt3-175b, tiny.
const Registry<ModelFactory>& model_registry();

/// The preset named `name`, or an error listing the known presets with a "did you mean".
Expected<ModelConfig> preset(std::string_view name);

/// One line per preset, sorted by name: `name  description  [reference]`, columns aligned, each
/// line ending in '\n'. What `--list-models` prints.
std::string list_models();

/// A preset name, or a path to a model YAML file (anything containing '/' or ending in `.yaml` /
/// `.yml`). Unknown names get the registry's "did you mean"; file errors carry file:line:column.
Expected<ModelConfig> resolve_model(std::string_view name_or_path);

}  // namespace tawpipe::model
