// The hub layer's pure parts: specs, names, the Hub's file list and llama-server's file choice.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "server/hub/hub.h"
#include "server/hub/spec.h"

namespace {

using hub::HubError;
using namespace hub::detail;

std::vector<RemoteFile> files(const std::vector<std::string>& paths) {
  std::vector<RemoteFile> out;
  for (const std::string& p : paths) out.push_back({p, 100, std::string(64, 'a')});
  return out;
}

std::vector<std::string> paths(const std::vector<RemoteFile>& fs) {
  std::vector<std::string> out;
  for (const RemoteFile& f : fs) out.push_back(f.path);
  return out;
}

TEST(HubSpec, ParsesTheThreeForms) {
  Spec s = parse_spec("Qwen/Qwen3-0.6B-GGUF");
  EXPECT_EQ(s.kind, Spec::Kind::kRepo);
  EXPECT_EQ(s.repo, "Qwen/Qwen3-0.6B-GGUF");
  EXPECT_EQ(s.tag, "");
  s = parse_spec("org/repo:q8_0");
  EXPECT_EQ(s.tag, "Q8_0");
  s = parse_spec("hf://org/repo/sub/model-Q4_K_M.gguf");
  EXPECT_EQ(s.kind, Spec::Kind::kRepoFile);
  EXPECT_EQ(s.repo, "org/repo");
  EXPECT_EQ(s.file, "sub/model-Q4_K_M.gguf");
  s = parse_spec("https://example.com:8443/a/b/model.gguf?download=1");
  EXPECT_EQ(s.kind, Spec::Kind::kUrl);
  EXPECT_EQ(s.host, "example.com:8443");
  EXPECT_EQ(s.path, "a/b/model.gguf");
  EXPECT_EQ(url_id(s), "example.com:8443/a/b/model.gguf");
  EXPECT_EQ(s.query, "?download=1");
  EXPECT_EQ(s.url, "https://example.com:8443/a/b/model.gguf?download=1");
  // Ollama's names for Hub models.
  s = parse_spec("hf.co/org/repo:q4_k_m");
  EXPECT_EQ(s.kind, Spec::Kind::kRepo);
  EXPECT_EQ(s.repo, "org/repo");
  EXPECT_EQ(s.tag, "Q4_K_M");
  s = parse_spec("huggingface.co/org/repo:latest");
  EXPECT_EQ(s.repo, "org/repo");
  EXPECT_EQ(s.tag, "");
  EXPECT_EQ(parse_spec("org/latest:latest").tag, "LATEST");  // a plain spec keeps its tag
}

TEST(HubSpec, RejectsHostileSpecs) {
  for (const std::string bad :
       {"../../x", "org/../x", "/etc/passwd", "org/repo/extra", "org", ".org/repo", "org/repo:../x", "org/repo:",
        "org/repo:Q4 K", "hf://org/repo/../../etc/x.gguf", "hf://org/repo/.hidden.gguf", "hf://org/repo",
        "hf://org/repo/model.bin", "http://example.com/x.gguf", "https://example.com/../x.gguf",
        "https://exa mple.com/x.gguf", "https://example.com", "https://example.com/a//b.gguf", "",
        "hf.co/", "hf.co/org", "hf.co/org/repo/x", "hf.co/hf.co/org/repo:"}) {
    EXPECT_THROW(parse_spec(bad), HubError) << bad;
  }
  EXPECT_THROW(parse_spec("org/" + std::string(5000, 'a')), HubError);
}

TEST(HubSpec, SplitInfoAndParts) {
  SplitInfo s = split_info("dir/Model-Q4_K_M-00002-of-00003.gguf");
  EXPECT_EQ(s.prefix, "dir/Model-Q4_K_M");
  EXPECT_EQ(s.tag, "Q4_K_M");
  EXPECT_EQ(s.index, 2);
  EXPECT_EQ(s.count, 3);
  EXPECT_EQ(split_info("model.q8_0.gguf").tag, "Q8_0");
  EXPECT_EQ(split_info("model.gguf").tag, "");
  EXPECT_EQ(split_parts("a/m-00001-of-00002.gguf"),
            (std::vector<std::string>{"a/m-00001-of-00002.gguf", "a/m-00002-of-00002.gguf"}));
  EXPECT_EQ(split_parts("m.gguf"), std::vector<std::string>{"m.gguf"});
  EXPECT_EQ(file_tag("dir/tiny.gguf"), "tiny");
}

TEST(HubPlan, DefaultIsQ4KMThenQ8ThenFirst) {
  const Spec repo = parse_spec("org/repo");
  auto all = files({"README.md", "m-Q2_K.gguf", "m-Q4_K_M.gguf", "m-Q8_0.gguf", "mmproj-m-f16.gguf"});
  Plan p = plan_files(all, repo, false);
  EXPECT_EQ(paths(p.parts), std::vector<std::string>{"m-Q4_K_M.gguf"});
  EXPECT_EQ(plan_id(repo, p), "org/repo:Q4_K_M");
  EXPECT_FALSE(p.mmproj);
  p = plan_files(files({"m-Q2_K.gguf", "m-Q8_0.gguf"}), repo, false);
  EXPECT_EQ(paths(p.parts), std::vector<std::string>{"m-Q8_0.gguf"});
  p = plan_files(files({"imatrix.gguf", "mmproj-f16.gguf", "m-F16.gguf"}), repo, false);
  EXPECT_EQ(paths(p.parts), std::vector<std::string>{"m-F16.gguf"});
  EXPECT_EQ(p.tag, "F16");
}

TEST(HubPlan, ExplicitTagSplitSetsAndMmproj) {
  auto all = files({"Q8/m-Q8_0-00001-of-00002.gguf", "Q8/m-Q8_0-00002-of-00002.gguf", "m-Q4_K_M.gguf",
                    "mmproj-m-f16.gguf", "mmproj-m-Q8_0.gguf", "other/mmproj-x-Q8_0.gguf"});
  Plan p = plan_files(all, parse_spec("org/repo:q8_0"), true);
  EXPECT_EQ(paths(p.parts),
            (std::vector<std::string>{"Q8/m-Q8_0-00001-of-00002.gguf", "Q8/m-Q8_0-00002-of-00002.gguf"}));
  ASSERT_TRUE(p.mmproj);
  EXPECT_EQ(p.mmproj->path, "mmproj-m-Q8_0.gguf");  // same folder depth; closest quant bits
  p = plan_files(all, parse_spec("org/repo"), true);
  ASSERT_TRUE(p.mmproj);
  EXPECT_EQ(p.mmproj->path, "mmproj-m-Q8_0.gguf");  // 8 bits is closer to 4 than 16
  p = plan_files(all, parse_spec("hf://org/repo/Q8/m-Q8_0-00002-of-00002.gguf"), false);
  EXPECT_EQ(p.parts.size(), 2u);
  EXPECT_EQ(p.parts[0].path, "Q8/m-Q8_0-00001-of-00002.gguf");
}

TEST(HubPlan, ClearErrors) {
  auto all = files({"m-Q4_K_M.gguf", "s-Q8_0-00001-of-00003.gguf", "s-Q8_0-00002-of-00003.gguf"});
  try {
    plan_files(all, parse_spec("org/repo:Q5_K_S"), false);
    FAIL();
  } catch (const HubError& e) {
    EXPECT_NE(std::string(e.what()).find("no model file tagged Q5_K_S in repo org/repo"), std::string::npos);
    EXPECT_NE(std::string(e.what()).find("m-Q4_K_M.gguf"), std::string::npos) << "lists what the repo has";
  }
  try {
    plan_files(all, parse_spec("org/repo:Q8_0"), false);
    FAIL();
  } catch (const HubError& e) {
    EXPECT_NE(std::string(e.what()).find("s-Q8_0-00003-of-00003.gguf is missing"), std::string::npos) << e.what();
  }
  EXPECT_THROW(plan_files(all, parse_spec("hf://org/repo/none.gguf"), false), HubError);
  EXPECT_THROW(plan_files(files({"README.md"}), parse_spec("org/repo"), false), HubError);
}

TEST(HubListing, ParsesLfsEntriesAndDropsBadOnes) {
  const std::string sha(64, 'b');
  const std::string json = R"([
    {"type": "directory", "path": "sub"},
    {"type": "file", "path": "README.md", "size": 10, "oid": "abc"},
    {"type": "file", "path": "m-Q4_K_M.gguf", "size": 1, "lfs": {"oid": ")" + sha + R"(", "size": 4096}},
    {"type": "file", "path": "../../etc/x.gguf", "size": 5, "lfs": {"oid": ")" + sha + R"(", "size": 5}},
    {"type": "file", "path": "huge.gguf", "lfs": {"oid": ")" + sha + R"(", "size": 99999999999999999}},
    {"type": "file", "path": "neg.gguf", "lfs": {"oid": ")" + sha + R"(", "size": -5}},
    {"type": "file", "path": "badsha.gguf", "lfs": {"oid": "xyz", "size": 5}},
    {"type": "file", "path": 7, "size": 5},
    "garbage"
  ])";
  size_t rejected = 0;
  const auto out = parse_listing(json, "test", &rejected);
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[0].path, "README.md");
  EXPECT_EQ(out[0].sha256, "");
  EXPECT_EQ(out[1].size, 4096u);
  EXPECT_EQ(out[1].sha256, sha);
  EXPECT_EQ(rejected, 5u);
}

TEST(HubListing, MalformedJsonIsAClearError) {
  for (const std::string bad : {"[{\"type\": \"file\"", "{\"error\": \"x\"}", "", "null"}) {
    try {
      parse_listing(bad, "https://hub/api/models/o/r/tree/main", nullptr);
      FAIL() << bad;
    } catch (const HubError& e) {
      EXPECT_NE(std::string(e.what()).find("https://hub/api/models/o/r/tree/main"), std::string::npos);
    }
  }
}

}  // namespace
