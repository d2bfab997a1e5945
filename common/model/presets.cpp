// The shipped model presets: one row each, with the source of every dimension.
#include "common/model/presets.h"

#include <algorithm>

#include "common/model/loader.h"

namespace tawpipe::model {
namespace {

// LLaMA-style decoder: RMSNorm, RoPE, SwiGLU, no biases.
ModelConfig llama(std::string name, std::int64_t layers, std::int64_t hidden, std::int64_t ffn,
                  std::int64_t heads, std::int64_t kv_heads, std::int64_t vocab, bool tied,
                  std::int64_t max_seq_len) {
  ModelConfig c;
  c.name = std::move(name);
  c.layers = layers;
  c.hidden = hidden;
  c.ffn = ffn;
  c.heads = heads;
  c.kv_heads = kv_heads;
  c.vocab = vocab;
  c.tied_embeddings = tied;
  c.max_seq_len = max_seq_len;
  return c;
}

// The TawPipe paper family (algorithms.md §5, from the authors' model.py and script.py): 48
// layers, 32 heads, vocab 32000, tied embeddings, F = llama_ffn(H) (left derived, so that
// `--set model.hidden=...` keeps the paper's FFN rule). Sequences up to 16384 in the paper.
ModelConfig paper(std::int64_t hidden) {
  return llama("llama-h" + std::to_string(hidden) + "-l48", 48, hidden, 0, 32, 0, 32000, true,
               16384);
}

constexpr const char* kPaperRef =
    "TawPipe (Wu & Chen, AAAI 2026, arXiv 2511.09741); dims from github wuhouming/TawPipe "
    "model.py + script.py (algorithms.md §5)";
constexpr const char* kLlama2Ref =
    "Llama 2 (Touvron et al. 2023, arXiv 2307.09288) Table 1; HF meta-llama/Llama-2-*-hf "
    "config.json";
constexpr const char* kLlama3Ref =
    "Llama 3 herd of models (Dubey et al. 2024, arXiv 2407.21783) Table 3; HF "
    "meta-llama/Meta-Llama-3-* config.json";

template <class F>
ModelFactory with_text(F make, std::string description, std::string reference) {
  return [make, description, reference] {
    ModelConfig c = make();
    c.description = description;
    c.reference = reference;
    return c;
  };
}

Registry<ModelFactory> build_registry() {
  Registry<ModelFactory> r("model");
  auto add = [&r](std::string name, std::string description, std::string reference,
                  std::function<ModelConfig()> make) {
    r.add({name, description, reference, with_text(std::move(make), description, reference)});
  };
  add("llama-h1024-l48", "TawPipe paper model, H 1024, 48 layers, 32 heads (0.64 B)", kPaperRef,
      [] { return paper(1024); });
  add("llama-h2048-l48", "TawPipe paper model, H 2048, 48 layers, 32 heads (2.48 B)", kPaperRef,
      [] { return paper(2048); });
  add("llama-h4096-l48", "TawPipe paper model, H 4096, 48 layers, 32 heads (9.81 B)", kPaperRef,
      [] { return paper(4096); });
  add("llama2-7b", "Llama 2 7B: 32 layers, H 4096, MHA, untied (6.74 B)", kLlama2Ref,
      [] { return llama("llama2-7b", 32, 4096, 11008, 32, 0, 32000, false, 4096); });
  add("llama2-13b", "Llama 2 13B: 40 layers, H 5120, MHA, untied (13.0 B)", kLlama2Ref,
      [] { return llama("llama2-13b", 40, 5120, 13824, 40, 0, 32000, false, 4096); });
  add("llama2-70b", "Llama 2 70B: 80 layers, H 8192, GQA 8 KV heads (69.0 B)", kLlama2Ref,
      [] { return llama("llama2-70b", 80, 8192, 28672, 64, 8, 32000, false, 4096); });
  add("llama3-8b", "Llama 3 8B: 32 layers, H 4096, GQA 8, vocab 128256 (8.03 B)", kLlama3Ref,
      [] { return llama("llama3-8b", 32, 4096, 14336, 32, 8, 128256, false, 8192); });
  add("llama3-70b", "Llama 3 70B: 80 layers, H 8192, GQA 8, vocab 128256 (70.6 B)", kLlama3Ref,
      [] { return llama("llama3-70b", 80, 8192, 28672, 64, 8, 128256, false, 8192); });
  add("llama3-405b", "Llama 3.1 405B: 126 layers, H 16384, GQA 8, 128K context (406 B)", kLlama3Ref,
      [] { return llama("llama3-405b", 126, 16384, 53248, 128, 8, 128256, false, 131072); });
  add("gpt3-175b", "GPT-3 175B: 96 layers, H 12288, GELU 4x MLP, LayerNorm, biases (175 B)",
      "Brown et al. 2020 (arXiv 2005.14165) Table 2.1 (96 layers, d_model 12288, 96 heads of "
      "128, context 2048); GPT-2 vocabulary 50257, tied embeddings, learned positions",
      [] {
        ModelConfig c = llama("gpt3-175b", 96, 12288, 4 * 12288, 96, 0, 50257, true, 2048);
        c.mlp = MlpKind::kGelu;
        c.norm = NormKind::kLayerNorm;
        c.position = PositionKind::kLearned;
        c.biases = true;
        return c;
      });
  add("tiny", "CPU test model: 4 layers, H 64, 4 heads, vocab 256, SwiGLU, RoPE, tied",
      "tawpipe test fixture (host backend correctness runs); LLaMA-style like the paper family",
      [] { return llama("tiny", 4, 64, 0, 4, 0, 256, true, 256); });
  add("cpu-h256", "CPU validation model: 16 layers, H 256, 4 heads, vocab 256, SwiGLU, RoPE, tied",
      "scripts/validate-host workload (issue 13): one layer's forward at seq 256 is ~0.5 GFLOP, "
      "milliseconds on one core; 4 layers per rank on 4 ranks",
      [] { return llama("cpu-h256", 16, 256, 0, 4, 0, 256, true, 512); });
  return r;
}

}  // namespace

const Registry<ModelFactory>& model_registry() {
  static const Registry<ModelFactory> registry = build_registry();
  return registry;
}

Expected<ModelConfig> preset(std::string_view name) {
  auto entry = model_registry().lookup(name);
  if (!entry.ok()) return entry.error();
  return (*entry)->factory();
}

std::string list_models() {
  const auto& rows = model_registry().entries();
  std::size_t name_width = 0;
  std::size_t description_width = 0;
  for (const auto& e : rows) {
    name_width = std::max(name_width, e.name.size());
    description_width = std::max(description_width, e.description.size());
  }
  std::string out;
  for (const auto& e : rows) {
    out += e.name + std::string(name_width - e.name.size() + 2, ' ');
    out += e.description + std::string(description_width - e.description.size() + 2, ' ');
    out += "[" + e.reference + "]\n";
  }
  return out;
}

Expected<ModelConfig> resolve_model(std::string_view name_or_path) {
  if (const auto* entry = model_registry().find(name_or_path)) return entry->factory();
  const auto ends_with = [&](std::string_view suffix) {
    return name_or_path.size() >= suffix.size() &&
           name_or_path.substr(name_or_path.size() - suffix.size()) == suffix;
  };
  if (name_or_path.find('/') != std::string_view::npos || ends_with(".yaml") || ends_with(".yml")) {
    return load_model_file(std::string(name_or_path));
  }
  return preset(name_or_path);
}

}  // namespace tawpipe::model
