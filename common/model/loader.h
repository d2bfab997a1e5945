/// \file
/// Model description files (YAML) in and out, and single-field overrides for the command line.
///
/// Format: one flat map, keys as the `ModelConfig` fields; optional keys may be left out:
/// ```yaml
/// name: my-llama            # required
/// layers: 32                # required, > 0
/// hidden: 4096              # required, > 0
/// heads: 32                 # required, > 0
/// vocab: 32000              # required, > 0
/// ffn: 11008                # default: llama_ffn(hidden) for swiglu, 4*hidden for gelu
/// kv_heads: 8               # default: heads
/// head_dim: 128             # default: hidden / heads
/// tied_embeddings: false    # default false
/// mlp: swiglu               # swiglu | gelu (default swiglu)
/// norm: rmsnorm             # rmsnorm | layernorm (default rmsnorm)
/// position: rope            # rope | learned | alibi (default rope)
/// biases: false             # default false
/// max_seq_len: 4096         # default 0 (unknown); required for learned positions
/// description: "..."        # optional, one line
/// reference: "..."          # optional: paper or model card the numbers come from
/// ```
/// Every error carries the file (or display name), 1-based line and column, and the key path.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "common/error.h"
#include "common/model/model.h"

namespace tawpipe::model {

/// Reads and validates a model file. Errors: unreadable file, not YAML, not a map, unknown key
/// (with "did you mean"), duplicate key, wrong type (map/sequence where a scalar is expected,
/// text where an integer or boolean is expected), out-of-range values, missing required keys,
/// and everything `validate` rejects.
Expected<ModelConfig> load_model_file(const std::string& path);

/// As `load_model_file`, from text; `display_name` stands in for the file name in errors.
Expected<ModelConfig> load_model_string(std::string_view text, std::string_view display_name);

/// Sets one field from its text form, as the CLI's `--set model.KEY=VALUE` does (the caller
/// strips the `model.` prefix). Keys are the YAML keys; values are parsed as in a file. The result
/// is validated; on any error `cfg` is left unchanged. Errors carry the key as key path.
Status apply_override(ModelConfig& cfg, std::string_view key, std::string_view value);

/// The YAML keys accepted by the loader and `apply_override`, in canonical order.
const std::vector<std::string>& model_keys();

/// Canonical YAML text of `cfg` (fields at their defaults are left out). For any valid cfg,
/// load_model_string(to_yaml(cfg), ...) returns a config equal to cfg.
std::string to_yaml(const ModelConfig& cfg);

}  // namespace tawpipe::model
