// `ggufd logits --dump-layers` end to end on a synthetic model: every step of every layer for the
// chosen positions, consistent with itself and with the logits; golden-file input; clean errors;
// and scripts/drift/compare reading it (beside a llama.cpp-named copy).
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "tests/support/shared.h"
#include "tests/support/run.h"

namespace {

using ggufd::test::run_ggufd;
using nlohmann::json;

std::string temp(const std::string& name) {
  return testing::TempDir() + "/dump_" + std::to_string(::getpid()) + "_" + name;
}

json read_json(const std::string& path) {
  std::ifstream in(path);
  return json::parse(in);
}

class LogitsDump : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    model_ = new std::string(temp("model.gguf"));
    const auto r = run_ggufd("synth --demo -o " + *model_);
    ASSERT_EQ(r.status, 0) << r.err;
  }
  static void TearDownTestSuite() {
    std::remove(model_->c_str());
    delete model_;
  }
  static std::string* model_;
};
std::string* LogitsDump::model_ = nullptr;

// (name, layer, pos) -> data
std::map<std::tuple<std::string, int, int>, std::vector<float>> by_key(const json& dump) {
  std::map<std::tuple<std::string, int, int>, std::vector<float>> m;
  for (const auto& t : dump["tensors"]) {
    m[{t["name"], t["layer"], t["pos"]}] = t["data"].get<std::vector<float>>();
  }
  return m;
}

TEST_F(LogitsDump, EveryStepOfEveryLayerAddsUp) {
  const std::string out = temp("all.json");
  const auto plain = run_ggufd("logits -m " + *model_ + " --tokens 1,7,9,30,2,8 --top 3");
  const auto r = run_ggufd("logits -m " + *model_ + " --tokens 1,7,9,30,2,8 --top 3 --dump-layers " + out +
                           " --positions 0,-2");
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out, plain.out);  // the observer changes nothing
  const json d = read_json(out);
  std::remove(out.c_str());
  EXPECT_EQ(d["format"], "ggufd-layer-dump/1");
  EXPECT_EQ(d["source"], "ggufd");
  EXPECT_EQ(d["positions"], json::array({0, 4}));
  EXPECT_EQ(d["tokens"], json::array({1, 7, 9, 30, 2, 8}));
  EXPECT_EQ(d["n_prompt"], 6);
  const int n_layer = d["n_layer"];
  ASSERT_GT(n_layer, 0);
  // execution order for position 0: embeddings, then each layer's steps, then the logits
  std::vector<std::string> order;
  for (const auto& t : d["tensors"]) {
    if (t["pos"] == 0) order.push_back(t["name"].get<std::string>() + "@" + std::to_string(t["layer"].get<int>()));
  }
  std::vector<std::string> expected = {"inp_embd@-1"};
  for (int il = 0; il < n_layer; ++il) {
    for (const char* s : {"attn_norm", "q", "k", "v", "kqv_out", "attn_out", "ffn_inp", "ffn_norm", "ffn_act",
                          "ffn_out", "l_out"}) {
      expected.push_back(std::string(s) + "@" + std::to_string(il));
    }
  }
  expected.push_back("result_output@-1");
  EXPECT_EQ(order, expected);

  const auto m = by_key(d);
  for (int pos : {0, 4}) {
    for (int il = 0; il < n_layer; ++il) {
      // residuals: ffn_inp = previous l_out (or the embeddings) + attn_out; l_out = ffn_inp + ffn_out
      const auto& prev = m.at({il == 0 ? "inp_embd" : "l_out", il - 1, pos});
      const auto& attn = m.at({"attn_out", il, pos});
      const auto& mid = m.at({"ffn_inp", il, pos});
      const auto& ffn = m.at({"ffn_out", il, pos});
      const auto& out_l = m.at({"l_out", il, pos});
      ASSERT_EQ(prev.size(), mid.size());
      for (size_t i = 0; i < mid.size(); ++i) {
        ASSERT_NEAR(prev[i] + attn[i], mid[i], 1e-5 * (1 + std::abs(mid[i]))) << "layer " << il << " pos " << pos;
        ASSERT_NEAR(mid[i] + ffn[i], out_l[i], 1e-5 * (1 + std::abs(out_l[i]))) << "layer " << il << " pos " << pos;
      }
    }
  }
  // the dumped logits of position 4 are the ones printed: its top-1 pair
  const json printed = json::parse(r.out);
  const auto& top = printed["positions"][4]["top"][0];
  EXPECT_FLOAT_EQ(m.at({"result_output", -1, 4})[top[0].get<size_t>()], top[1].get<float>());
}

TEST_F(LogitsDump, OpsFilterAndGoldenInput) {
  const std::string golden = temp("golden.json"), out = temp("ops.json");
  std::ofstream(golden) << R"({"n_vocab": 1, "cases": [{"tokens": [1, 5]},
    {"prompt": "x", "tokens": [1, 7, 9], "top": [], "greedy": [3, 4, 6], "gen_top": [[], []]}]})";
  const auto r = run_ggufd("logits -m " + *model_ + " --tokens-from " + golden +
                           " --case 1 --dump-layers " + out + " --positions all --ops l_out,result_output");
  ASSERT_EQ(r.status, 0) << r.err;
  const json d = read_json(out);
  std::remove(out.c_str());
  EXPECT_EQ(d["tokens"], json::array({1, 7, 9, 3, 4}));  // the greedy tokens that have logits
  EXPECT_EQ(d["n_prompt"], 3);
  EXPECT_EQ(d["positions"], json::array({0, 1, 2, 3, 4}));
  for (const auto& t : d["tensors"]) EXPECT_TRUE(t["name"] == "l_out" || t["name"] == "result_output") << t["name"];
  EXPECT_EQ(d["tensors"].size(), 5u * (d["n_layer"].get<size_t>() + 1));

  const auto bad_case = run_ggufd("logits -m " + *model_ + " --tokens-from " + golden + " --case 2");
  EXPECT_EQ(bad_case.status, 1);
  EXPECT_NE(bad_case.err.find("--case 2: the file has 2 cases"), std::string::npos) << bad_case.err;
  std::remove(golden.c_str());
}

TEST_F(LogitsDump, BadArgumentsFailClearly) {
  const std::string m = "logits -m " + *model_;
  const auto far = run_ggufd(m + " --tokens 1,2,3 --dump-layers " + temp("x.json") + " --positions 3");
  EXPECT_EQ(far.status, 1);
  EXPECT_NE(far.err.find("--positions: 3 is outside the 3 positions"), std::string::npos) << far.err;
  const auto junk = run_ggufd(m + " --tokens 1,2,3 --dump-layers " + temp("x.json") + " --positions 1,x");
  EXPECT_NE(junk.err.find("--positions: not a position at 'x'"), std::string::npos) << junk.err;
  const auto both = run_ggufd(m + " --tokens 1 --tokens-from " + temp("none.json"));
  EXPECT_NE(both.err.find("give --tokens or --tokens-from"), std::string::npos) << both.err;
  const auto missing = run_ggufd(m + " --tokens-from " + temp("none.json"));
  EXPECT_NE(missing.err.find("cannot open"), std::string::npos) << missing.err;
  const std::string not_golden = temp("notgolden.json");
  std::ofstream(not_golden) << R"({"cases": 3})";
  const auto bad = run_ggufd(m + " --tokens-from " + not_golden);
  EXPECT_NE(bad.err.find("not a golden file"), std::string::npos) << bad.err;
  std::remove(not_golden.c_str());
  const auto unwritable = run_ggufd(m + " --tokens 1,2 --dump-layers /nonexistent-dir/x.json");
  EXPECT_EQ(unwritable.status, 1);
  EXPECT_NE(unwritable.err.find("cannot write"), std::string::npos) << unwritable.err;
}

// scripts/drift/compare on our dump against a copy renamed as llama.cpp names its tensors (Qcur
// twice, the llama graph's two "ffn_out"s, ffn_swiglu, ...) with one value of layer 1's l_out
// moved: it maps the names, sees no drift before, and places the first drift there.
TEST_F(LogitsDump, CompareMapsLlamaNamesAndPlacesTheDrift) {
  if (std::system("python3 -c '' 2>/dev/null") != 0) GGUFD_MISSING_TEST_DATA("python3 (scripts/install-deps --test installs it)");
  const std::string ours = temp("ours.json"), ref = temp("ref.json");
  const auto r = run_ggufd("logits -m " + *model_ + " --tokens 1,7,9,30 --dump-layers " + ours + " --positions 1,3");
  ASSERT_EQ(r.status, 0) << r.err;
  json d = read_json(ours);
  const std::map<std::string, std::string> names = {
      {"inp_embd", "inp_embd"}, {"attn_norm", "attn_norm"}, {"q", "Qcur"},          {"k", "Kcur"},
      {"v", "Vcur"},            {"kqv_out", "kqv_out"},     {"attn_out", "attn_out"}, {"ffn_inp", "ffn_inp"},
      {"ffn_norm", "ffn_norm"}, {"ffn_act", "ffn_swiglu"},  {"ffn_out", "ffn_out"},   {"l_out", "l_out"},
      {"result_output", "result_output"}};
  json tensors = json::array();
  for (json t : d["tensors"]) {
    const std::string name = t["name"];
    t["name"] = names.at(name);
    t["occurrence"] = 1;
    if (name == "q" || name == "k") {  // a pre-RoPE occurrence first: compare takes the last
      json pre = t;
      for (auto& x : pre["data"]) x = 100.0;
      tensors.push_back(pre);
      t["occurrence"] = 2;
    }
    if (name == "l_out" && t["layer"] == 1 && t["pos"] == 3) t["data"][0] = t["data"][0].get<double>() + 10.0;
    tensors.push_back(t);
    if (name == "l_out") {  // llama's residual sum after the FFN is "ffn_out" too, after the FFN's own
      json sum = t;
      sum["name"] = "ffn_out";
      sum["occurrence"] = 2;
      tensors.push_back(sum);
    }
  }
  d["tensors"] = tensors;
  d["source"] = "llama.cpp";
  std::ofstream(ref) << d.dump();
  const std::string script = std::filesystem::path(GGUFD_TEST_DATA_DIR).parent_path().parent_path() / "scripts/drift/compare";
  const std::string cmd = "python3 " + script + " " + ours + " " + ref + " --summary 2>&1";
  std::string out;
  if (FILE* p = popen(cmd.c_str(), "r")) {
    char buf[4096];
    size_t n;
    while ((n = std::fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
    pclose(p);
  }
  std::remove(ours.c_str());
  std::remove(ref.c_str());
  EXPECT_NE(out.find("position 1 (prompt, token 7): never over the threshold"), std::string::npos) << out;
  EXPECT_NE(out.find("position 3 (prompt, token 30): first over the threshold: layer 1 l_out"), std::string::npos)
      << out;
}

}  // namespace
