// `ggufd logits -m FILE --tokens ID,ID,... [--top K] [-t THREADS] [--kv-type f16]`: evaluates the
// tokens as one sequence and prints JSON: for every position, the top-K (id, logit) pairs, best first.
// `--tokens-from GOLDEN.json --case I` takes a reference case's tokens + greedy continuation (the
// golden tests' teacher-forced sequence). `--dump-layers OUT.json --positions 0,5,-1 [--ops a,b]`
// also writes those positions' activations after every step of every layer (layer_dump.h), for
// scripts/drift/compare.
// `--mmproj PROJ --image IMG --prompt TEXT [--greedy N]` evaluates a prompt holding the marker
// <__media__> where the image goes and prints what ../shared/tools/golden/golden_mtmd.cpp prints
// for libmtmd (../shared/golden/README.md: chunks, the image's rows, last_top, greedy, gen_top),
// so any model and image can be checked against llama.cpp from the command line.
#include <algorithm>
#include <charconv>
#include <chrono>
#include <memory>
#include <set>
#include <span>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>
#include <vector>

#include "engine/kernels/thread_pool.h"
#include "engine/model/forward.h"
#include "engine/model/model.h"
#include "engine/runtime/image_prompt.h"
#include "engine/runtime/scheduler.h"
#include "engine/text/tokenizer/tokenizer.h"
#include "engine/vision/image.h"
#include "engine/vision/vit.h"
#include "tools/ggufd/commands.h"
#include "tools/ggufd/files.h"
#include "tools/ggufd/layer_dump.h"

namespace ggufd {

namespace {

struct LogitsOptions {
  std::string model;
  std::string tokens;
  std::string tokens_from;  // a golden JSON file (../shared/golden/README.md's format)
  int64_t case_index = 0;
  int top = 20;
  int threads = 0;
  std::string kv_type = "f16";
  std::string dump_layers;  // output file of the layer dump; empty: no dump
  std::string positions = "-1";
  std::string ops;          // comma-separated step names; empty: all
  std::string mmproj;       // with image and prompt: an image chat's references
  std::string image;
  std::string prompt;
  int greedy = 16;
};

// The teacher-forced sequence of case `index` of a golden file: its tokens, then the greedy tokens
// that have logits (gen_top); n_prompt receives the prompt's length.
std::vector<int32_t> golden_tokens(const std::string& path, int64_t index, int64_t& n_prompt) {
  try {
    const nlohmann::json g = nlohmann::json::parse(read_text_file(path));
    const nlohmann::json& cases = g.at("cases");
    if (index < 0 || index >= static_cast<int64_t>(cases.size())) {
      throw std::invalid_argument("--case " + std::to_string(index) + ": the file has " +
                                  std::to_string(cases.size()) + " cases");
    }
    const nlohmann::json& c = cases[static_cast<size_t>(index)];
    std::vector<int32_t> tokens = c.at("tokens").get<std::vector<int32_t>>();
    n_prompt = static_cast<int64_t>(tokens.size());
    const size_t n_gen = c.contains("gen_top") ? c["gen_top"].size() : 0;
    const nlohmann::json& greedy = c.contains("greedy") ? c["greedy"] : nlohmann::json::array();
    for (size_t i = 0; i < n_gen && i < greedy.size(); ++i) tokens.push_back(greedy[i].get<int32_t>());
    return tokens;
  } catch (const nlohmann::json::exception& e) {
    throw std::invalid_argument(path + ": not a golden file: " + e.what());
  }
}

std::set<std::string> parse_names(const std::string& s) {
  std::set<std::string> names;
  for (size_t b = 0; b < s.size();) {
    const size_t e = std::min(s.find(',', b), s.size());
    if (e > b) names.insert(s.substr(b, e - b));
    b = e + 1;
  }
  return names;
}

std::vector<int32_t> parse_token_list(const std::string& s) {
  std::vector<int32_t> ids;
  const char* p = s.data();
  const char* end = p + s.size();
  while (p < end) {
    if (*p == ',' || *p == ' ') {
      ++p;
      continue;
    }
    int32_t id = 0;
    const auto [next, ec] = std::from_chars(p, end, id);
    if (ec != std::errc()) throw std::invalid_argument("--tokens: not a token id at '" + std::string(p, end) + "'");
    ids.push_back(id);
    p = next;
  }
  if (ids.empty()) throw std::invalid_argument("--tokens: no token ids");
  return ids;
}

// [[id, logit] x k], best first.
nlohmann::json top_k(const float* row, int64_t n_vocab, int64_t k) {
  std::vector<int32_t> ids(static_cast<size_t>(n_vocab));
  for (int32_t v = 0; v < n_vocab; ++v) ids[static_cast<size_t>(v)] = v;
  std::partial_sort(ids.begin(), ids.begin() + k, ids.end(),
                    [&](int32_t a, int32_t b) { return row[a] > row[b] || (row[a] == row[b] && a < b); });
  nlohmann::json top = nlohmann::json::array();
  for (int64_t j = 0; j < k; ++j) top.push_back({ids[static_cast<size_t>(j)], row[ids[static_cast<size_t>(j)]]});
  return top;
}

std::string base_name(const std::string& p) { return p.substr(p.find_last_of('/') + 1); }

// --mmproj / --image / --prompt: the image chat's references, in golden_mtmd's format.
int run_image_logits(const LogitsOptions& o) {
  const engine::Model model = engine::Model::load(o.model);
  const engine::Tokenizer tok = engine::Tokenizer::from_gguf(model.file());
  const engine::VisionModel vision = engine::VisionModel::load(o.mmproj);
  const int64_t n_vocab = model.hparams().n_vocab, E = model.hparams().n_embd, k = std::clamp<int64_t>(o.top, 1, n_vocab);
  if (const std::string why = engine::pairing_error(vision, model.hparams()); !why.empty()) {
    throw std::invalid_argument("--mmproj: " + why);
  }
  const std::string bytes = read_text_file(o.image);
  const engine::RgbImage img = engine::decode_image(
      std::span(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size()), engine::ImageLimits{});
  const std::string marker = "<__media__>";
  std::vector<engine::TextPiece> pieces;
  for (size_t from = 0;;) {
    const size_t at = o.prompt.find(marker, from);
    pieces.push_back({o.prompt.substr(from, at == std::string::npos ? std::string::npos : at - from), {}});
    if (at == std::string::npos) break;
    from = at + marker.size();
  }
  if (pieces.size() != 2) throw std::invalid_argument("--prompt: put the marker <__media__> in it once");
  const auto start = std::chrono::steady_clock::now();
  // the image's parts (one, or idefics3's tiles and overview), each encoded on its own
  const std::vector<engine::ImagePart> parts = engine::image_parts(img, vision.traits(), vision.hparams());
  const engine::VisionHParams& vh = vision.hparams();
  std::vector<engine::PromptPart> prompt_parts;
  for (size_t p = 0; p < parts.size(); ++p) {
    prompt_parts.push_back({parts[p].before, parts[p].after, engine::image_token_id(p, n_vocab),
                            vh.n_tokens(parts[p].input.width, parts[p].input.height)});
  }
  std::vector<int64_t> part_at;
  std::vector<int32_t> tokens = engine::tokenize_around_images(
      tok, engine::lookup_tokens(tok, engine::looked_up_texts(vision.traits())), pieces, {prompt_parts}, part_at);
  engine::ThreadPool pool(engine::thread_count(o.threads));
  engine::VisionEncoder encoder(vision);
  std::vector<std::vector<float>> rows;  // per part (n_tokens, W)
  int64_t n_img = 0;
  for (size_t p = 0; p < parts.size(); ++p) {
    rows.push_back(encoder.encode(parts[p].input, pool));
    n_img += prompt_parts[p].n_tokens;
  }
  std::fprintf(stderr, "image %lld x %lld: %zu parts, %lld tokens, fitted and encoded in %.0f ms\n",
               static_cast<long long>(img.width), static_cast<long long>(img.height), parts.size(),
               static_cast<long long>(n_img),
               std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count());

  const auto n = static_cast<int64_t>(tokens.size());
  engine::KvCache cache(model.hparams(), n + o.greedy, engine::kv_type_from_name(o.kv_type));
  engine::Forward fwd(model, n);
  engine::Batch batch;
  const int64_t W = vh.row_width();  // (E, or with deepstack slices)
  const bool mrope = vision.traits().image_positions == engine::ImagePositions::kMrope2d;
  std::vector<engine::ImageSpan> spans;
  for (size_t p = 0; p < parts.size(); ++p) spans.push_back(vh.span(part_at[p], parts[p].input.width, parts[p].input.height));
  const auto place = [&](int64_t i) {  // M-RoPE positions (qwen-vl)
    if (mrope) batch.set_mrope(batch.size() - 1, engine::mrope_positions(spans, i));
  };
  for (size_t i = 0, p = 0; i < tokens.size(); ++i) {
    const bool out = i + 1 == tokens.size();
    while (p < spans.size() && static_cast<int64_t>(i) >= spans[p].at + spans[p].n_tokens) ++p;
    if (p < spans.size() && static_cast<int64_t>(i) >= spans[p].at) {
      const engine::ImageSpan& sp = spans[p];
      const auto last = static_cast<int32_t>(sp.at + sp.n_tokens - 1);
      batch.add_row(rows[p].data() + (static_cast<int64_t>(i) - sp.at) * W, 0, static_cast<int32_t>(i),
                    vision.traits().non_causal ? last : static_cast<int32_t>(i), out);
    } else {
      batch.add(tokens[i], 0, static_cast<int32_t>(i), out);
    }
    place(static_cast<int64_t>(i));
  }
  fwd.eval(batch, cache, pool);
  const nlohmann::json last_top = top_k(fwd.logits(0), n_vocab, k);
  nlohmann::json greedy = nlohmann::json::array(), gen_top = nlohmann::json::array();
  const float* row = fwd.logits(0);
  for (int g = 0; g < o.greedy; ++g) {
    const auto t = static_cast<int32_t>(std::max_element(row, row + n_vocab) - row);
    greedy.push_back(t);
    batch.clear();
    batch.add(t, 0, static_cast<int32_t>(n + g), true);
    place(n + g);
    fwd.eval(batch, cache, pool);
    row = fwd.logits(0);
    gen_top.push_back(top_k(row, n_vocab, k));
  }
  // chunks: text, then each part's image chunk and the text after it. The positions a part takes:
  // M-RoPE's max(rows, cols), else one per token. Rows in E values as golden_mtmd writes mtmd's
  // buffer (with deepstack rows of E x (1 + d): those are the first tokens' whole rows).
  nlohmann::json chunks = nlohmann::json::array();
  int64_t from = 0;
  for (size_t p = 0; p < spans.size(); ++p) {
    const engine::ImageSpan& sp = spans[p];
    if (sp.at > from) {
      chunks.push_back({{"type", "text"}, {"tokens", std::vector<int32_t>(tokens.begin() + from, tokens.begin() + sp.at)}});
    }
    nlohmann::json embd = nlohmann::json::array();
    for (int64_t i = 0; i < sp.n_tokens; ++i) {
      embd.push_back(std::vector<float>(rows[p].begin() + i * E, rows[p].begin() + (i + 1) * E));
    }
    chunks.push_back({{"type", "image"}, {"n_tokens", sp.n_tokens},
                      {"n_pos", mrope ? std::max(sp.rows, sp.cols) : sp.n_tokens}, {"embd", embd}});
    from = sp.at + sp.n_tokens;
  }
  chunks.push_back({{"type", "text"}, {"tokens", std::vector<int32_t>(tokens.begin() + from, tokens.end())}});
  int64_t n_past = n;  // (M-RoPE: a part's tokens take fewer positions)
  for (const engine::ImageSpan& sp : spans) n_past -= sp.n_tokens - (mrope ? std::max(sp.rows, sp.cols) : sp.n_tokens);
  const nlohmann::json out = {{"model", base_name(o.model)}, {"mmproj", base_name(o.mmproj)}, {"image", base_name(o.image)},
                              {"image_nx", img.width},       {"image_ny", img.height},        {"n_vocab", n_vocab},
                              {"topk", k},                   {"non_causal_image", vision.traits().non_causal},
                              {"chunks", chunks},            {"last_top", last_top},          {"n_past", n_past},
                              {"greedy", greedy},            {"gen_top", gen_top}};
  std::printf("%s\n", out.dump().c_str());
  return 0;
}

int run_logits(const LogitsOptions& o) {
  if (!o.mmproj.empty() || !o.image.empty() || !o.prompt.empty()) {
    if (o.mmproj.empty() || o.image.empty() || o.prompt.empty()) throw std::invalid_argument("give --mmproj, --image and --prompt together");
    return run_image_logits(o);
  }
  if (o.tokens.empty() == o.tokens_from.empty()) throw std::invalid_argument("give --tokens or --tokens-from");
  int64_t n_prompt = 0;
  const std::vector<int32_t> tokens =
      o.tokens.empty() ? golden_tokens(o.tokens_from, o.case_index, n_prompt) : parse_token_list(o.tokens);
  if (n_prompt == 0) n_prompt = static_cast<int64_t>(tokens.size());
  if (tokens.empty()) throw std::invalid_argument("no tokens to evaluate");
  std::unique_ptr<LayerDump> dump;
  if (!o.dump_layers.empty()) {
    dump = std::make_unique<LayerDump>(parse_positions(o.positions, static_cast<int64_t>(tokens.size())),
                                       parse_names(o.ops));
  }
  const engine::Model model = engine::Model::load(o.model);
  const int64_t n_vocab = model.hparams().n_vocab;
  const auto n = static_cast<int64_t>(tokens.size());
  engine::ThreadPool pool(engine::thread_count(o.threads));
  engine::KvCache cache(model.hparams(), n, engine::kv_type_from_name(o.kv_type));
  engine::Forward fwd(model, std::min<int64_t>(n, 512));
  fwd.set_observer(dump.get());
  engine::Batch batch;
  for (int64_t i = 0; i < n; ++i) batch.add(tokens[static_cast<size_t>(i)], 0, static_cast<int32_t>(i), true);
  fwd.eval(batch, cache, pool);

  const int64_t k = std::clamp<int64_t>(o.top, 1, n_vocab);
  nlohmann::json positions = nlohmann::json::array();
  for (int64_t i = 0; i < n; ++i) {
    const float* row = fwd.logits(i);
    positions.push_back({{"position", i}, {"token", tokens[static_cast<size_t>(i)]}, {"top", top_k(row, n_vocab, k)}});
    if (dump && dump->wants("result_output")) dump->add("result_output", -1, i, row, n_vocab);
  }
  if (dump) {
    dump->write(o.dump_layers, {{"model", o.model}, {"tokens", tokens}, {"n_prompt", n_prompt},
                                {"n_layer", model.hparams().n_layer}, {"q_scale", model.hparams().q_scale}});
  }
  const nlohmann::json out = {{"model", o.model}, {"n_vocab", n_vocab}, {"positions", positions}};
  std::printf("%s\n", out.dump().c_str());
  return 0;
}

}  // namespace

Command add_logits(CLI::App& app) {
  auto o = std::make_shared<LogitsOptions>();
  app.add_option("-m,--model", o->model, "GGUF model file")->required();
  app.add_option("--tokens", o->tokens, "comma-separated token ids, evaluated as one sequence");
  app.add_option("--tokens-from", o->tokens_from,
                 "a golden JSON file: evaluate a case's tokens + greedy continuation (teacher-forced)");
  app.add_option("--case", o->case_index, "the case of --tokens-from (default 0)");
  app.add_option("--dump-layers", o->dump_layers,
                 "write the activations of --positions after every step of every layer to this JSON file");
  app.add_option("--positions", o->positions, "positions to dump: 0,5,-1 (negative: from the end) or all (default -1)");
  app.add_option("--ops", o->ops,
                 "steps to dump, comma-separated (default all): inp_embd attn_norm q k v kqv_out attn_out "
                 "ffn_inp ffn_norm ffn_act ffn_out l_out result_output");
  app.add_option("--mmproj", o->mmproj, "vision projector GGUF: with --image and --prompt, an image chat's references");
  app.add_option("--image", o->image, "image file (PNG, JPEG, WebP, GIF) for --mmproj");
  app.add_option("--prompt", o->prompt, "prompt text holding the marker <__media__> where the image goes");
  app.add_option("--greedy", o->greedy, "greedy tokens after an image prompt (default 16)");
  app.add_option("--top", o->top, "pairs shown per position (default 20)");
  app.add_option("-t,--threads", o->threads, "compute threads (default: physical cores)");
  app.add_option("--kv-type", o->kv_type, "KV cache element type (default f16)")
      ->check(CLI::IsMember(engine::kv_type_names()));
  return [o] { return run_logits(*o); };
}

}  // namespace ggufd
