// JSON I/O: exact round trips of the fixtures, and located errors for bad input.
#include "common/ir/json.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>

#include "common/ir/verifier.h"
#include "tests/unit/ir/fixtures.h"

namespace tawpipe::ir {
namespace {

using ::testing::HasSubstr;

Program fixture(int i) {
  switch (i) {
    case 0:
      return testing::pipeline_program();
    case 1:
      return testing::data_parallel_program();
    case 2:
      return testing::fsdp_program();
    default:
      return testing::weight_passing_program();
  }
}

// 1-based line and column of byte `offset` in `text`.
std::pair<int, int> where(const std::string& text, std::size_t offset) {
  int line = 1;
  std::size_t start = 0;
  for (std::size_t i = 0; i < offset; ++i)
    if (text[i] == '\n') {
      ++line;
      start = i + 1;
    }
  return {line, static_cast<int>(offset - start) + 1};
}

std::string replace_first(std::string text, const std::string& from, const std::string& to) {
  const auto pos = text.find(from);
  EXPECT_NE(pos, std::string::npos) << from;
  if (pos != std::string::npos) text.replace(pos, from.size(), to);
  return text;
}

Error read_error(const std::string& text) {
  auto r = read_program_json(text, "bad.json");
  EXPECT_FALSE(r.ok());
  if (r.ok()) return Error{};
  return r.error();
}

TEST(Json, ExactRoundTrip) {
  for (int i = 0; i < 4; ++i) {
    const Program p = fixture(i);
    const std::string first = program_to_json(p);
    auto back = read_program_json(first, "mem.json");
    ASSERT_TRUE(back.ok()) << back.error().to_string();
    EXPECT_TRUE(*back == p) << "fixture " << i;
    EXPECT_EQ(program_to_json(*back), first);
    EXPECT_TRUE(verify(*back).ok);
  }
}

TEST(Json, RoundTripKeepsIrregularFields) {
  Program p = testing::weight_passing_program();
  p.ranks[0].ops[0].layer_begin = 7;              // send: a field the row does not carry
  p.ranks[0].ops[0].compute = ComputeKind::head;  // ditto
  p.ranks[1].ops[3].group = 42;                   // compute op in a group
  p.ranks[1].ops[3].bytes = 9;
  p.costs[0].flops[1] = -0.0;
  p.costs[0].bytes[2] = 1.0 / 3.0;
  p.header.options["quote\"and\\slash\n"] = "tab\tvalue";
  const std::string first = program_to_json(p);
  auto back = read_program_json(first, "mem.json");
  ASSERT_TRUE(back.ok()) << back.error().to_string();
  EXPECT_TRUE(*back == p);
  EXPECT_TRUE(std::signbit(back->costs[0].flops[1]));
  EXPECT_EQ(program_to_json(*back), first);
}

TEST(Json, MultiBufferAllocAndFreeRoundTrip) {
  const Program p = testing::merge_alloc_free_runs(testing::pipeline_program());
  const std::string text = program_to_json(p);
  EXPECT_THAT(text,
              HasSubstr("\n[\"free\",0,[],[4,6,7]]"));  // act.s0.b0, actgrad.s0.b1, actgrad.s0.b0
  auto back = read_program_json(text, "mem.json");
  ASSERT_TRUE(back.ok()) << back.error().to_string();
  EXPECT_TRUE(*back == p);
  EXPECT_EQ(program_to_json(*back), text);
  // An empty list is an error at its position.
  std::string bad = text;
  bad.replace(bad.find("[4,6,7]"), 7, "[]");
  auto e = read_program_json(bad, "bad.json");
  ASSERT_FALSE(e.ok());
  EXPECT_THAT(e.error().to_string(), HasSubstr("needs at least one buffer id"));
}

TEST(Json, OneLinePerOp) {
  const Program p = testing::pipeline_program();
  const std::string text = program_to_json(p);
  EXPECT_THAT(text, HasSubstr("\n[\"send\",1,[3],1,0,100,5,-1]"));
  EXPECT_THAT(text, HasSubstr("\n[\"forward\",0,[],0,1,0,0,[1,4],[5]]"));
  EXPECT_THAT(text, HasSubstr("\n[\"all_reduce\",1,[24],0,-1,1000,2,2,-1]"));
}

TEST(Json, TruncatedInput) {
  const std::string text = program_to_json(testing::pipeline_program());
  const std::string cut = text.substr(0, text.size() / 2);
  const Error e = read_error(cut);
  EXPECT_EQ(e.file, "bad.json");
  EXPECT_THAT(e.message, HasSubstr("invalid JSON"));
  const auto [line, column] = where(cut, cut.size());
  EXPECT_EQ(e.line, line);
  EXPECT_EQ(e.column, column);
  EXPECT_THAT(e.key_path, ::testing::StartsWith("ranks["));
}

TEST(Json, WrongVersion) {
  const std::string text = replace_first(program_to_json(testing::pipeline_program()),
                                         "\"format_version\":1", "\"format_version\":2");
  const Error e = read_error(text);
  EXPECT_EQ(e.key_path, "format_version");
  EXPECT_EQ(e.line, 1);
  EXPECT_EQ(e.column, static_cast<int>(text.find(":2") + 2));
  EXPECT_THAT(e.message, HasSubstr("unsupported format_version 2"));
}

TEST(Json, UnknownOpKind) {
  const std::string text =
      replace_first(program_to_json(testing::pipeline_program()), "[\"forward\",", "[\"forwrd\",");
  const Error e = read_error(text);
  const auto [line, column] = where(text, text.find("\"forwrd\""));
  EXPECT_EQ(e.line, line);
  EXPECT_EQ(e.column, column);
  EXPECT_EQ(e.key_path, "ranks[0].ops[3].kind");
  EXPECT_EQ(e.message, "unknown op kind 'forwrd' (did you mean 'forward'?)");
  EXPECT_EQ(e.to_string(), "bad.json:" + std::to_string(line) + ":" + std::to_string(column) +
                               ": ranks[0].ops[3].kind: unknown op kind 'forwrd' (did you mean "
                               "'forward'?)");
}

TEST(Json, WrongType) {
  const std::string text = replace_first(program_to_json(testing::pipeline_program()),
                                         "\"layers\":2", "\"layers\":\"2\"");
  const Error e = read_error(text);
  EXPECT_EQ(e.key_path, "header.layers");
  const auto [line, column] = where(text, text.find("\"2\""));
  EXPECT_EQ(e.line, line);
  EXPECT_EQ(e.column, column);
  EXPECT_EQ(e.message, "expected an integer, got a string");
}

TEST(Json, OutOfRangeBufferId) {
  const std::string text =
      replace_first(program_to_json(testing::pipeline_program()), "\n[\"send\",1,[3],1,0,100,5,-1]",
                    "\n[\"send\",1,[3],1,0,100,99,-1]");
  const Error e = read_error(text);
  EXPECT_EQ(e.key_path, "ranks[0].ops[4].buffer");
  const auto [line, column] = where(text, text.find(",99,") + 1);
  EXPECT_EQ(e.line, line);
  EXPECT_EQ(e.column, column);
  EXPECT_EQ(e.message, "buffer id 99 out of range [-1, 11]");
}

TEST(Json, UnknownKeyAndMissingKey) {
  const std::string base = program_to_json(testing::pipeline_program());
  const Error e1 = read_error(replace_first(base, "\"streams\":", "\"stream\":[],\"streams\":"));
  EXPECT_EQ(e1.key_path, "stream");
  EXPECT_THAT(e1.message, HasSubstr("unknown key 'stream' (did you mean 'streams'?)"));
  const Error e2 = read_error(replace_first(base, "\"model\":\"tiny\",", ""));
  EXPECT_EQ(e2.key_path, "header");
  EXPECT_EQ(e2.message, "missing key 'model'");
  EXPECT_EQ(e2.line, 2);
  EXPECT_EQ(e2.column, 10);
}

TEST(Json, MissingFile) {
  auto r = read_program_file("/nonexistent/dir/x.json");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().file, "/nonexistent/dir/x.json");
}

TEST(Json, FileRoundTrip) {
  const Program p = testing::fsdp_program();
  const std::string path = ::testing::TempDir() + "/ir_fsdp.json";
  {
    std::ofstream out(path);
    write_program_json(p, out);
  }
  auto back = read_program_file(path);
  ASSERT_TRUE(back.ok()) << back.error().to_string();
  EXPECT_TRUE(*back == p);
}

// Garbage never crashes the reader (nor the verifier on what it accepts).
TEST(Json, MutatedInputsDoNotCrash) {
  const std::string base = program_to_json(testing::weight_passing_program());
  std::uint64_t seed = 99;
  const auto next = [&seed] {
    seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
    return seed >> 33;
  };
  static constexpr char kAlphabet[] = "{}[]\",:-0123456789e.aqtrue\n ";
  for (int trial = 0; trial < 3000; ++trial) {
    std::string text = base;
    const int edits = 1 + static_cast<int>(next() % 4);
    for (int k = 0; k < edits; ++k) {
      const std::size_t at = next() % text.size();
      switch (next() % 3) {
        case 0:
          text[at] = kAlphabet[next() % (sizeof kAlphabet - 1)];
          break;
        case 1:
          text.erase(at, 1 + next() % 8);
          break;
        default:
          text.insert(at, 1, kAlphabet[next() % (sizeof kAlphabet - 1)]);
      }
      if (text.empty()) text = "[";
    }
    auto r = read_program_json(text, "fuzz.json");
    if (r.ok()) {
      (void)verify(*r);
    } else {
      EXPECT_GT(r.error().line, 0) << r.error().to_string();
      EXPECT_GT(r.error().column, 0) << r.error().to_string();
    }
  }
  for (const char* text : {"", "[", "{", "nul", "\"", "{\"format_version\":1}", "[[[[[[[[[[",
                           "{\"format_version\":18446744073709551615}", "1e999"}) {
    auto r = read_program_json(text, "x.json");
    EXPECT_FALSE(r.ok()) << text;
  }
}

}  // namespace
}  // namespace tawpipe::ir

namespace tawpipe::ir {
namespace {

// A cost carrying its kernels (common/model/kernels.h): 2 x a GEMM of 1e9 FLOPs / 1e6 bytes,
// one causal attention, one fused bias add flagged recompute.
Program program_with_kernels() {
  Program p = testing::pipeline_program();
  Cost& c = p.costs.at(0);
  model::Kernel g{
      "qkv_gemm", model::KernelClass::gemm, 2, {64, 192, 64, 1}, false, false, false, 1e9, 1e6};
  model::Kernel a{
      "attention", model::KernelClass::attention_fwd, 1, {1, 4, 64, 16}, true, false, false, 5e8,
      2e6};
  model::Kernel b{
      "qkv_bias", model::KernelClass::residual, 1, {64, 192, 0, 0}, false, true, true, 1e4, 384};
  c.kernels = {g, a, b};
  c.flops = {2e9, 5e8, 1e4};
  c.bytes = {2e6, 2e6, 384};
  c.recompute_flops = 1e4;
  return p;
}

TEST(Json, KernelsRoundTripAndVerify) {
  const Program p = program_with_kernels();
  ASSERT_TRUE(verify(p).ok) << verify(p).message;
  const std::string text = program_to_json(p);
  EXPECT_NE(text.find("[\"attention\",\"attention_fwd\",1,[1,4,64,16],1,"), std::string::npos);
  auto back = read_program_json(text, "k.json");
  ASSERT_TRUE(back.ok()) << back.error().to_string();
  EXPECT_TRUE(*back == p);
  EXPECT_EQ(program_to_json(*back), text);
  // Unknown kernel class: did-you-mean with the key path.
  const Error e = read_error(replace_first(text, "\"attention_fwd\"", "\"attention_fw\""));
  EXPECT_NE(e.message.find("did you mean 'attention_fwd'"), std::string::npos) << e.to_string();
  EXPECT_NE(e.key_path.find("costs[0].kernels[1].class"), std::string::npos) << e.to_string();
}

TEST(Json, VerifierChecksKernelSums) {
  Program p = program_with_kernels();
  p.costs[0].kernels[0].count = 3;  // 3e9 GEMM FLOPs, the cost says 2e9
  VerifyResult v = verify(p);
  ASSERT_FALSE(v.ok);
  EXPECT_NE(v.message.find("its kernels sum to gemm"), std::string::npos) << v.message;
  p = program_with_kernels();
  p.costs[0].recompute_flops = 0.0;
  v = verify(p);
  ASSERT_FALSE(v.ok);
  EXPECT_NE(v.message.find("recompute kernels"), std::string::npos) << v.message;
}

}  // namespace
}  // namespace tawpipe::ir
