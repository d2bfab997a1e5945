// Parameter counts of the presets against published figures, and the TawPipe paper's table.
#include <gtest/gtest.h>

#include <cmath>

#include "common/model/model.h"
#include "common/model/presets.h"

namespace tawpipe::model {
namespace {

ModelConfig get(std::string_view name) {
  auto cfg = preset(name);
  EXPECT_TRUE(cfg.ok()) << name;
  return *cfg;
}

double relative_error(std::int64_t ours, double published) {
  return std::abs(static_cast<double>(ours) - published) / published;
}

TEST(Presets, AllValidateAndCarryTextAndReference) {
  for (const auto& entry : model_registry().entries()) {
    const ModelConfig cfg = entry.factory();
    EXPECT_TRUE(validate(cfg).ok()) << entry.name;
    EXPECT_EQ(cfg.name, entry.name);
    EXPECT_FALSE(entry.description.empty()) << entry.name;
    EXPECT_FALSE(entry.reference.empty()) << entry.name;
    EXPECT_EQ(cfg.reference, entry.reference);
  }
  EXPECT_EQ(model_registry().names().size(), 12u);  // ... + cpu-h256 (scripts/validate-host)
}

// Published totals. Each figure is the parameter count Hugging Face shows for the official
// checkpoint (safetensors metadata), which the model cards round as stated.
struct Published {
  const char* name;
  double params;
  const char* source;
};

TEST(Presets, MatchPublishedParameterCountsWithinHalfAPercent) {
  const Published table[] = {
      // 6,738,415,616: HF meta-llama/Llama-2-7b-hf ("6.74B params"); Llama 2 paper: 7B.
      {"llama2-7b", 6.738415616e9, "HF meta-llama/Llama-2-7b-hf"},
      // 13,015,864,320: HF meta-llama/Llama-2-13b-hf ("13B params").
      {"llama2-13b", 13.015864320e9, "HF meta-llama/Llama-2-13b-hf"},
      // 68,976,648,192: HF meta-llama/Llama-2-70b-hf ("69B params", 68.98 B).
      {"llama2-70b", 68.976648192e9, "HF meta-llama/Llama-2-70b-hf"},
      // 8,030,261,248: HF meta-llama/Meta-Llama-3-8B ("8.03B params").
      {"llama3-8b", 8.030261248e9, "HF meta-llama/Meta-Llama-3-8B"},
      // 70,553,706,496: HF meta-llama/Meta-Llama-3-70B ("70.6B params").
      {"llama3-70b", 70.553706496e9, "HF meta-llama/Meta-Llama-3-70B"},
      // ~405.9 B: HF meta-llama/Llama-3.1-405B ("406B params"); Llama 3 paper Table 3: 405B.
      {"llama3-405b", 405.85e9, "HF meta-llama/Llama-3.1-405B"},
      // 175.0 B: Brown et al. 2020 (arXiv 2005.14165) Table 2.1, "GPT-3 175B".
      {"gpt3-175b", 175.0e9, "GPT-3 paper Table 2.1"},
  };
  for (const auto& row : table) {
    const ParamCounts p = param_counts(get(row.name));
    EXPECT_LT(relative_error(p.total, row.params), 0.005)
        << row.name << ": ours " << p.total << " vs " << row.params << " (" << row.source << ")";
  }
}

TEST(Presets, LlamaTwoSevenBIsExact) {
  // 32 * (4*4096^2 + 3*4096*11008 + 2*4096) + 2 * 32000*4096 + 4096 (untied, final RMSNorm).
  const ParamCounts p = param_counts(get("llama2-7b"));
  EXPECT_EQ(p.per_layer, 202'383'360);
  EXPECT_EQ(p.lm_head, 131'072'000);
  EXPECT_EQ(p.total, 6'738'415'616);
}

// algorithms.md §5, "Model sizes of the evaluated configs" (from the authors' model.py):
// per layer 4H^2 + 3HF + 2H with F = 32*ceil(floor(8H/3)/32); 48 layers; tied vocab 32000.
TEST(PaperFamily, ReproducesTheTableExactly) {
  struct Row {
    const char* name;
    std::int64_t hidden, ffn, per_layer, decoder, embedding;
  };
  const Row rows[] = {
      {"llama-h1024-l48", 1024, 2752, 12'650'496, 607'223'808, 32'768'000},
      {"llama-h2048-l48", 2048, 5472, 50'401'280, 2'419'261'440, 65'536'000},
      {"llama-h4096-l48", 4096, 10944, 201'596'928, 9'676'652'544, 131'072'000},
  };
  for (const Row& r : rows) {
    const ModelConfig cfg = get(r.name);
    EXPECT_EQ(cfg.hidden, r.hidden);
    EXPECT_EQ(cfg.layers, 48);
    EXPECT_EQ(cfg.heads, 32);
    EXPECT_EQ(cfg.vocab, 32000);
    EXPECT_TRUE(cfg.tied_embeddings);
    EXPECT_EQ(cfg.effective_ffn(), r.ffn);
    EXPECT_EQ(llama_ffn(r.hidden), r.ffn);
    const ParamCounts p = param_counts(cfg);
    EXPECT_EQ(p.per_layer, r.per_layer) << r.name;
    EXPECT_EQ(p.per_layer, 4 * r.hidden * r.hidden + 3 * r.hidden * r.ffn + 2 * r.hidden);
    EXPECT_EQ(p.decoder, r.decoder) << r.name;
    EXPECT_EQ(p.embedding, r.embedding) << r.name;
    EXPECT_EQ(p.lm_head, 0);
    EXPECT_EQ(p.total, r.decoder + r.embedding + r.hidden);
    // Shard of 2 layers (P = 24) in fp16: 50.6 MB, 201.6 MB, 806.4 MB.
    const double shard_mb = 2.0 * 2.0 * static_cast<double>(p.per_layer) / 1e6;
    EXPECT_NEAR(shard_mb, 2.0 * 2.0 * static_cast<double>(r.per_layer) / 1e6, 1e-9);
  }
  // §8: "~640M with tied embeddings" and "~9.81B".
  EXPECT_NEAR(static_cast<double>(param_counts(get("llama-h1024-l48")).total), 640e6, 0.5e6);
  EXPECT_NEAR(static_cast<double>(param_counts(get("llama-h4096-l48")).total), 9.81e9, 0.005e9);
}

TEST(Params, GqaShrinksOnlyKeyAndValueProjections) {
  // Llama 2 70B: H 8192, 64 heads of 128, 8 KV heads -> K and V are 8192 x 1024 each.
  const ModelConfig cfg = get("llama2-70b");
  EXPECT_EQ(cfg.effective_head_dim(), 128);
  EXPECT_EQ(cfg.kv_width(), 1024);
  EXPECT_EQ(param_counts(cfg).attention_per_layer, 2 * 8192 * 8192 + 2 * 8192 * 1024);
}

TEST(Params, GptStyleCountsBiasesLayerNormAndPositions) {
  // GPT-3: 12H^2 + 13H per layer (Q,K,V,O and 4x MLP with biases; two LayerNorms with bias).
  const ModelConfig cfg = get("gpt3-175b");
  const std::int64_t h = 12288;
  const ParamCounts p = param_counts(cfg);
  EXPECT_EQ(p.per_layer, 12 * h * h + 13 * h);
  EXPECT_EQ(p.position_embedding, 2048 * h);
  EXPECT_EQ(p.final_norm, 2 * h);
  EXPECT_EQ(p.lm_head, 0);
}

TEST(Params, TinyIsSmall) {
  const ModelConfig cfg = get("tiny");
  EXPECT_EQ(cfg.effective_ffn(), 192);  // 32*ceil(floor(512/3)/32) = 32*ceil(170/32)
  EXPECT_EQ(cfg.effective_head_dim(), 16);
  EXPECT_LT(param_counts(cfg).total, 300'000);
}

TEST(Validate, RejectsInconsistentDimensions) {
  ModelConfig cfg = get("tiny");
  cfg.heads = 5;
  auto s = validate(cfg);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().key_path, "heads");
  cfg.head_dim = 16;  // explicit head_dim lifts the divisibility requirement
  EXPECT_TRUE(validate(cfg).ok());

  cfg = get("tiny");
  cfg.kv_heads = 3;
  ASSERT_FALSE(validate(cfg).ok());
  EXPECT_EQ(validate(cfg).error().key_path, "kv_heads");

  cfg = get("tiny");
  cfg.layers = 0;
  EXPECT_EQ(validate(cfg).error().key_path, "layers");

  cfg = get("tiny");
  cfg.position = PositionKind::kLearned;
  cfg.max_seq_len = 0;
  EXPECT_EQ(validate(cfg).error().key_path, "max_seq_len");
}

TEST(Enums, RoundTripAndSuggest) {
  EXPECT_EQ(*parse_mlp_kind(to_string(MlpKind::kGelu)), MlpKind::kGelu);
  EXPECT_EQ(*parse_norm_kind("layernorm"), NormKind::kLayerNorm);
  EXPECT_EQ(*parse_position_kind("alibi"), PositionKind::kALiBi);
  auto bad = parse_position_kind("rop");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().message,
            "unknown position encoding 'rop' (did you mean 'rope'?); known: rope, learned, alibi");
}

}  // namespace
}  // namespace tawpipe::model
