// `ggufd inspect` end to end: every shared file, JSON output, and clean failures.
#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>

#include "gguf/writer.h"
#include "tests/support/reference_vocab.h"
#include "tests/support/run.h"
#include "tests/support/shared.h"

namespace {

using ggufd::test::run_ggufd;
using ggufd::test::shared_path;

TEST(Inspect, EverySharedFileSucceedsInTextAndJson) {
  GGUFD_REQUIRE_SHARED("models");
  for (const char* dir : {"models", "tokenizer"}) {
    for (const auto& e : std::filesystem::recursive_directory_iterator(shared_path(dir))) {
      if (e.path().extension() != ".gguf" || e.path().string().find("legacy") != std::string::npos)
        continue;
      const auto text = run_ggufd("inspect " + e.path().string());
      EXPECT_EQ(text.status, 0) << e.path() << ": " << text.err;
      EXPECT_NE(text.out.find("tensors ("), std::string::npos);
      const auto js = run_ggufd("inspect --json " + e.path().string());
      ASSERT_EQ(js.status, 0) << e.path() << ": " << js.err;
      EXPECT_TRUE(nlohmann::json::accept(js.out)) << e.path();
    }
  }
}

TEST(Inspect, JsonReportsHeaderMetadataTensorsAndTotals) {
  GGUFD_REQUIRE_SHARED("models/stories260K.gguf");
  const auto r = run_ggufd("inspect --json " + shared_path("models/stories260K.gguf"));
  ASSERT_EQ(r.status, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["header"]["version"], 3);
  EXPECT_EQ(j["header"]["tensor_count"], 48);
  EXPECT_EQ(j["metadata"]["general.architecture"], "llama");
  EXPECT_EQ(j["metadata_types"]["llama.block_count"], "UINT32");
  EXPECT_EQ(j["metadata"]["tokenizer.ggml.tokens"]["length"], 512);  // summarized
  EXPECT_EQ(j["metadata"]["tokenizer.ggml.tokens"]["head"][1], "<s>");
  EXPECT_EQ(j["tensors"].size(), 48u);
  EXPECT_EQ(j["tensors"][0]["name"], "token_embd.weight");
  EXPECT_EQ(j["tensors"][0]["shape"], nlohmann::json::array({64, 512}));
  EXPECT_EQ(j["totals"]["architecture"], "llama");
  EXPECT_EQ(j["totals"]["by_type"][0]["type"], "F32");

  const auto full = run_ggufd("inspect --json --full " + shared_path("models/stories260K.gguf"));
  ASSERT_EQ(full.status, 0);
  EXPECT_EQ(nlohmann::json::parse(full.out)["metadata"]["tokenizer.ggml.tokens"].size(), 512u);
}

TEST(Inspect, ShowsChatTemplateAsTextAndNameParts) {
  gguf::Writer w;
  w.set("general.architecture", gguf::OwnedValue::string("llama"));
  w.set("tokenizer.chat_template", gguf::OwnedValue::string("{% for m in messages %}\n{{ m }}{% endfor %}"));
  w.add_tensor("x", gguf::TensorType::F32, {8}, std::vector<uint8_t>(32));
  const std::string path = testing::TempDir() + "/Tiny-Llama-1.1B-Chat-v1.0-F32.gguf";
  w.write(path);
  const auto r = run_ggufd("inspect " + path);
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("chat template (tokenizer.chat_template):\n{% for m in messages %}\n{{ m }}"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("size 1.1B, fine-tune Chat, version v1.0, encoding F32"), std::string::npos)
      << r.out;
}

// The tokenizer as ggufd loads it: Gemma 4's (tests/data/reference/gemma4-tokenizer.json), and
// an unknown tokenizer model, which names itself.
TEST(Inspect, ShowsTheTokenizer) {
  const nlohmann::json ref = ggufd::test::read_reference("gemma4-tokenizer.json");
  const std::vector<uint8_t> bytes = ggufd::test::reference_vocab_bytes(ref);
  const std::string path = testing::TempDir() + "/gemma4-vocab.gguf";
  if (FILE* f = std::fopen(path.c_str(), "wb")) {
    std::fwrite(bytes.data(), 1, bytes.size(), f);
    std::fclose(f);
  }
  const auto text = run_ggufd("inspect " + path);
  ASSERT_EQ(text.status, 0) << text.err;
  EXPECT_NE(text.out.find("tokenizer (as ggufd reads it):\n  model                        gemma4\n"
                          "  pre-tokenizer                gemma4\n"),
            std::string::npos)
      << text.out;
  EXPECT_NE(text.out.find("bos                          2 (added: yes)"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("end of generation            1 \"<eos>\", 6 \"<turn|>\", 7 \"<|tool_response>\""),
            std::string::npos)
      << text.out;
  const auto js = run_ggufd("inspect --json " + path);
  ASSERT_EQ(js.status, 0) << js.err;
  const auto j = nlohmann::json::parse(js.out);
  EXPECT_EQ(j["tokenizer"]["model"], "gemma4");
  EXPECT_EQ(j["tokenizer"]["eog"].size(), 3u);

  gguf::Writer w;
  w.set("tokenizer.ggml.model", gguf::OwnedValue::string("mystery-model"));
  w.set("tokenizer.ggml.tokens", gguf::OwnedValue::string_array({"a"}));
  const std::string unknown = testing::TempDir() + "/mystery-vocab.gguf";
  w.write(unknown);
  const auto u = run_ggufd("inspect " + unknown);
  ASSERT_EQ(u.status, 0) << u.err;
  EXPECT_NE(u.out.find("  not loadable: tokenizer: unsupported tokenizer model (tokenizer.ggml.model): "
                       "'mystery-model'"),
            std::string::npos)
      << u.out;
  EXPECT_EQ(nlohmann::json::parse(run_ggufd("inspect --json " + unknown).out)["tokenizer"]["error"],
            "tokenizer: unsupported tokenizer model (tokenizer.ggml.model): 'mystery-model'");
}

TEST(Inspect, BadFilesFailWithOneLineOnStderr) {
  const std::string dir = testing::TempDir();
  const std::string bad = dir + "/bad.gguf";
  if (FILE* f = std::fopen(bad.c_str(), "wb")) {
    std::fwrite("GGUF\x03\x00\x00\x00", 1, 8, f);
    std::fclose(f);
  }
  const auto r = run_ggufd("inspect " + bad);
  EXPECT_NE(r.status, 0);
  EXPECT_TRUE(r.out.empty());
  EXPECT_EQ(r.err, "ggufd inspect: " + bad + ": at byte 8: truncated file while reading tensor count: "
                   "expected 8 bytes, found 0\n");

  const auto missing = run_ggufd("inspect " + dir + "/does-not-exist.gguf");
  EXPECT_NE(missing.status, 0);
  EXPECT_NE(missing.err.find("cannot open: No such file or directory"), std::string::npos);

  const auto directory = run_ggufd("inspect " + dir);
  EXPECT_NE(directory.status, 0);
  EXPECT_NE(directory.err.find("not a regular file"), std::string::npos);
}

TEST(Inspect, LegacyFileIsRefusedClearly) {
  GGUFD_REQUIRE_SHARED("models/stories260K-legacy-q8_0.gguf");
  const auto r = run_ggufd("inspect " + shared_path("models/stories260K-legacy-q8_0.gguf"));
  EXPECT_NE(r.status, 0);
  EXPECT_NE(r.err.find("row length 172 is not a multiple of Q8_0's block size 32"), std::string::npos)
      << r.err;
}

}  // namespace
