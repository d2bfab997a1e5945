// Model YAML files: valid ones load, malformed ones fail with file:line:column and key path.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>

#include "common/model/loader.h"
#include "common/model/presets.h"

namespace tawpipe::model {
namespace {

std::string data(const std::string& name) {
  return std::string(TAWPIPE_SOURCE_DIR) + "/tests/data/models/" + name;
}

TEST(Loader, LoadsAValidFile) {
  auto cfg = load_model_file(data("llama2-7b.yaml"));
  ASSERT_TRUE(cfg.ok()) << cfg.error().to_string();
  EXPECT_EQ(cfg->name, "my-llama2-7b");
  EXPECT_EQ(cfg->reference, "HF meta-llama/Llama-2-7b-hf config.json");
  ModelConfig expected = *preset("llama2-7b");
  EXPECT_EQ(param_counts(*cfg).total, param_counts(expected).total);
  expected.name = cfg->name;
  expected.description = cfg->description;
  expected.reference = cfg->reference;
  EXPECT_EQ(*cfg, expected);
}

// GPT-2 small (HF openai-community/gpt2): 124,439,808 parameters, exercising GELU, LayerNorm
// with biases, learned positions and tied embeddings.
TEST(Loader, GptStyleFileMatchesPublishedCount) {
  auto cfg = resolve_model(data("gpt-small.yaml"));
  ASSERT_TRUE(cfg.ok()) << cfg.error().to_string();
  EXPECT_EQ(cfg->mlp, MlpKind::kGelu);
  EXPECT_EQ(cfg->effective_ffn(), 4 * 768);
  EXPECT_EQ(param_counts(*cfg).total, 124'439'808);
}

struct Malformed {
  const char* file;
  int line;
  int column;
  const char* key_path;
  const char* message_part;
};

class MalformedModel : public testing::TestWithParam<Malformed> {};

TEST_P(MalformedModel, FailsWithLocationAndKey) {
  const Malformed& m = GetParam();
  const std::string path = data(std::string("malformed/") + m.file);
  auto cfg = load_model_file(path);
  ASSERT_FALSE(cfg.ok()) << m.file;
  const Error& e = cfg.error();
  EXPECT_EQ(e.file, path);
  EXPECT_EQ(e.line, m.line) << e.to_string();
  EXPECT_EQ(e.column, m.column) << e.to_string();
  EXPECT_EQ(e.key_path, m.key_path) << e.to_string();
  EXPECT_NE(e.message.find(m.message_part), std::string::npos) << e.to_string();
}

INSTANTIATE_TEST_SUITE_P(
    Files, MalformedModel,
    testing::Values(
        Malformed{"unknown-key.yaml", 3, 1, "hiden", "(did you mean 'hidden'?)"},
        Malformed{"negative-layers.yaml", 2, 9, "layers", "must not be negative"},
        Malformed{"zero-layers.yaml", 2, 9, "layers", "must be between 1 and"},
        Malformed{"heads-not-dividing-hidden.yaml", 4, 8, "heads", "must divide hidden (64)"},
        Malformed{"kv-heads-not-dividing.yaml", 5, 11, "kv_heads", "must divide heads (4)"},
        Malformed{"wrong-type-sequence.yaml", 3, 9, "hidden",
                  "expected an integer, got a sequence"},
        Malformed{"wrong-type-map.yaml", 3, 3, "layers", "expected an integer, got a map"},
        Malformed{"wrong-type-text.yaml", 2, 9, "layers", "expected an integer, got 'many'"},
        Malformed{"quoted-integer.yaml", 5, 8, "vocab", "quoted string"},
        Malformed{"fractional-layers.yaml", 2, 9, "layers", "expected an integer, got '1.5'"},
        Malformed{"duplicate-key.yaml", 5, 1, "layers", "duplicate key (first given on line 2"},
        Malformed{"missing-heads.yaml", 1, 1, "heads", "missing required key 'heads'"},
        Malformed{"missing-value.yaml", 2, 1, "layers", "expected an integer, got nothing"},
        Malformed{"unknown-mlp.yaml", 6, 6, "mlp", "(did you mean 'swiglu'?)"},
        Malformed{"bad-bool.yaml", 6, 18, "tied_embeddings", "expected true or false"},
        Malformed{"learned-without-max-seq-len.yaml", 6, 11, "max_seq_len", "required"},
        Malformed{"absurd-hidden.yaml", 3, 9, "hidden", "must be between 1 and 1048576"},
        Malformed{"not-yaml.yaml", 4, 6, "", "not valid YAML"},
        Malformed{"empty.yaml", 1, 1, "", "empty model file"},
        Malformed{"not-a-map.yaml", 1, 1, "", "expected a map of model fields, got a sequence"}),
    [](const testing::TestParamInfo<Malformed>& param_info) {
      std::string name = param_info.param.file;
      name = name.substr(0, name.find('.'));
      for (char& c : name) {
        if (c == '-') c = '_';
      }
      return name;
    });

TEST(Loader, MissingFileIsAnError) {
  auto cfg = load_model_file(data("does-not-exist.yaml"));
  ASSERT_FALSE(cfg.ok());
  EXPECT_NE(cfg.error().to_string().find("does-not-exist.yaml"), std::string::npos);
}

TEST(Loader, EveryPresetRoundTripsThroughYaml) {
  for (const auto& entry : model_registry().entries()) {
    const ModelConfig cfg = entry.factory();
    const std::string text = to_yaml(cfg);
    auto back = load_model_string(text, entry.name + ".yaml");
    ASSERT_TRUE(back.ok()) << back.error().to_string() << "\n" << text;
    EXPECT_EQ(*back, cfg) << text;
    EXPECT_EQ(to_yaml(*back), text);
  }
}

TEST(Loader, RoundTripKeepsDerivedFieldsDerivedAndExplicitOnesExplicit) {
  ModelConfig cfg = *preset("tiny");
  cfg.head_dim = 32;  // explicit, not hidden / heads
  cfg.kv_heads = 2;
  cfg.name = "odd: name # with \"quotes\"";
  auto back = load_model_string(to_yaml(cfg), "mem");
  ASSERT_TRUE(back.ok()) << back.error().to_string();
  EXPECT_EQ(*back, cfg);
  EXPECT_EQ(back->ffn, 0);  // still derived
}

TEST(Override, SetsValidatesAndSuggests) {
  ModelConfig cfg = *preset("llama-h1024-l48");
  ASSERT_TRUE(apply_override(cfg, "hidden", "2048").ok());
  EXPECT_EQ(cfg.effective_ffn(), 5472);  // the paper's FFN rule follows the new width
  EXPECT_EQ(param_counts(cfg).per_layer, 50'401'280);

  const ModelConfig before = cfg;
  auto s = apply_override(cfg, "hiden", "4096");
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.error().message.find("(did you mean 'hidden'?)"), std::string::npos);
  s = apply_override(cfg, "heads", "30");
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().key_path, "heads");
  s = apply_override(cfg, "layers", "-1");
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().to_string(), "layers: must not be negative, got -1");
  s = apply_override(cfg, "mlp", "relu");
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(cfg, before);  // unchanged after every failure

  ASSERT_TRUE(apply_override(cfg, "tied_embeddings", "false").ok());
  EXPECT_FALSE(cfg.tied_embeddings);
}

TEST(Resolve, NamesPathsAndSuggestions) {
  auto by_name = resolve_model("llama3-8b");
  ASSERT_TRUE(by_name.ok());
  EXPECT_EQ(by_name->kv_heads, 8);
  auto by_path = resolve_model(data("llama2-7b.yaml"));
  ASSERT_TRUE(by_path.ok()) << by_path.error().to_string();
  auto unknown = resolve_model("llama2-7");
  ASSERT_FALSE(unknown.ok());
  EXPECT_NE(unknown.error().message.find("unknown model 'llama2-7' (did you mean 'llama2-7b'?)"),
            std::string::npos);
}

TEST(ListModels, OneLinePerPresetWithReference) {
  const std::string text = list_models();
  for (const auto& name : model_registry().names()) {
    EXPECT_NE(text.find(name + " "), std::string::npos) << name;
  }
  EXPECT_NE(text.find("[TawPipe (Wu & Chen, AAAI 2026"), std::string::npos);
  EXPECT_EQ(static_cast<std::size_t>(std::count(text.begin(), text.end(), '\n')),
            model_registry().names().size());
}

}  // namespace
}  // namespace tawpipe::model
