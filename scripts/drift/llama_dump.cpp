// llama_dump: the activations of chosen positions after every step of every layer, from libllama
// (llama.cpp), in the format of `ggufd logits --dump-layers` ("ggufd-layer-dump/1"), so that
// scripts/drift/compare can place where two engines drift apart. Our own program against
// libllama's public API: the graph's named tensors ("attn_norm-3", "kqv_out-3", "l_out-3", ...) are
// read through the scheduler's eval callback (llama_context_params::cb_eval).
//
// Usage: llama_dump MODEL.gguf --tokens 1,2,3 --out OUT.json [--positions 0,5,-1|all]
//          [--n-prompt N] [--names a,b|all] [--threads 2] [--fa auto|on|off] [--ubatch 512]
// The first N tokens (default: all) are decoded in batches of --ubatch tokens, the rest one at a
// time, each with logits: what ../shared/tools/golden does for a prompt and its greedy tokens, so
// the same kernels run (llama.cpp picks its attention and matmul paths by batch size).
// Every occurrence of a wanted name is written, with "occurrence" 1, 2, ... in graph order (the
// llama graph names two tensors "ffn_out-N": the FFN's output, then the residual sum); logits
// are "result_output" from llama_get_logits_ith.
// Build: scripts/drift/build LLAMA_SRC LLAMA_BUILD OUT (see README.md).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "ggml-backend.h"
#include "ggml.h"
#include "llama.h"

namespace {

struct Record {
  std::string name;
  int occurrence;
  int layer;
  int pos;
  std::vector<float> data;
};

struct State {
  std::set<std::string> names;  // empty: every named tensor
  std::set<int> positions;
  int first_pos = 0;             // position of the running decode's first token
  int n_tokens = 0;              // tokens of the running decode
  std::map<std::string, int> seen;  // "name-il" -> occurrences in the running decode
  std::vector<Record> records;
  int skipped_types = 0;
};

// "attn_norm-3" -> ("attn_norm", 3); "inp_embd" -> ("inp_embd", -1).
void split_name(const char* full, std::string& base, int& layer) {
  base = full;
  layer = -1;
  const size_t dash = base.rfind('-');
  if (dash == std::string::npos || dash + 1 == base.size()) return;
  for (size_t i = dash + 1; i < base.size(); ++i) {
    if (base[i] < '0' || base[i] > '9') return;
  }
  layer = std::atoi(base.c_str() + dash + 1);
  base.resize(dash);
}

bool wanted(const State& s, const ggml_tensor* t) {
  if (t->name[0] == '\0' || std::strchr(t->name, ' ') != nullptr) return false;  // unnamed, "(view)", "(copy)"
  std::string base;
  int layer;
  split_name(t->name, base, layer);
  return s.names.empty() || s.names.count(base) > 0;
}

float element(const ggml_tensor* t, const uint8_t* p) {
  switch (t->type) {
    case GGML_TYPE_F32: { float v; std::memcpy(&v, p, 4); return v; }
    case GGML_TYPE_F16: { ggml_fp16_t v; std::memcpy(&v, p, 2); return ggml_fp16_to_fp32(v); }
    case GGML_TYPE_BF16: { ggml_bf16_t v; std::memcpy(&v, p, 2); return ggml_bf16_to_fp32(v); }
    default: return NAN;
  }
}

// The token dimension of t: the highest dimension whose extent is the decode's token count with
// only 1s above it; -1 when there is none (the tensor holds no row per token). One token: the
// whole tensor is its row (dimension 3).
int token_dim(const ggml_tensor* t, int n_tokens) {
  if (n_tokens == 1) return 3;
  for (int d = 3; d >= 1; --d) {
    if (t->ne[d] == n_tokens) return d;
    if (t->ne[d] != 1) return -1;
  }
  return -1;
}

bool on_tensor(ggml_tensor* t, bool ask, void* user) {
  State& s = *static_cast<State*>(user);
  if (ask) return wanted(s, t);
  if (t->type != GGML_TYPE_F32 && t->type != GGML_TYPE_F16 && t->type != GGML_TYPE_BF16) {
    ++s.skipped_types;
    return true;
  }
  const int d = token_dim(t, s.n_tokens);
  if (d < 0) return true;
  std::string base;
  int layer;
  split_name(t->name, base, layer);
  const int occurrence = ++s.seen[t->name];
  // the bytes of t, wherever its buffer lives; indexed with t's own strides
  std::vector<uint8_t> host;
  const uint8_t* data = static_cast<const uint8_t*>(t->data);
  if (t->buffer != nullptr && !ggml_backend_buffer_is_host(t->buffer)) {
    host.resize(ggml_nbytes(t));
    ggml_backend_tensor_get(t, host.data(), 0, host.size());
    data = host.data();
  }
  const int64_t n_rows = d == 3 && s.n_tokens == 1 ? 1 : t->ne[d];
  for (int64_t r = 0; r < n_rows; ++r) {
    const int pos = s.first_pos + static_cast<int>(r);
    if (s.positions.count(pos) == 0) continue;
    Record rec{base, occurrence, layer, pos, {}};
    int64_t lo[4] = {0, 0, 0, 0}, hi[4] = {t->ne[0], t->ne[1], t->ne[2], t->ne[3]};
    if (s.n_tokens > 1) { lo[d] = r; hi[d] = r + 1; }
    for (int64_t i3 = lo[3]; i3 < hi[3]; ++i3)
      for (int64_t i2 = lo[2]; i2 < hi[2]; ++i2)
        for (int64_t i1 = lo[1]; i1 < hi[1]; ++i1)
          for (int64_t i0 = lo[0]; i0 < hi[0]; ++i0)
            rec.data.push_back(element(t, data + i0 * t->nb[0] + i1 * t->nb[1] + i2 * t->nb[2] + i3 * t->nb[3]));
    s.records.push_back(std::move(rec));
  }
  return true;
}

std::vector<long> parse_list(const std::string& s, const char* what) {
  std::vector<long> out;
  const char* p = s.c_str();
  while (*p) {
    if (*p == ',' || *p == ' ') { ++p; continue; }
    char* end = nullptr;
    const long v = std::strtol(p, &end, 10);
    if (end == p) { std::fprintf(stderr, "%s: not a number at '%s'\n", what, p); std::exit(2); }
    out.push_back(v);
    p = end;
  }
  return out;
}

std::set<std::string> parse_names(const std::string& s) {
  std::set<std::string> out;
  if (s == "all") return out;
  for (size_t b = 0; b < s.size();) {
    size_t e = s.find(',', b);
    if (e == std::string::npos) e = s.size();
    if (e > b) out.insert(s.substr(b, e - b));
    b = e + 1;
  }
  return out;
}

void put_float(std::FILE* f, float x) {
  if (std::isfinite(x)) std::fprintf(f, "%.9g", static_cast<double>(x)); else std::fputs("null", f);
}

void write_json(const char* path, const char* model, const std::vector<llama_token>& tokens, int n_prompt,
                const State& s) {
  std::FILE* f = std::fopen(path, "w");
  if (!f) { std::perror(path); std::exit(1); }
  std::string m = model;
  for (size_t i = 0; i < m.size(); ++i) if (m[i] == '"' || m[i] == '\\') m.insert(i++, 1, '\\');
  std::fprintf(f, "{\"format\":\"ggufd-layer-dump/1\",\"source\":\"llama.cpp\",\"model\":\"%s\",\"n_prompt\":%d,\"tokens\":[",
               m.c_str(), n_prompt);
  for (size_t i = 0; i < tokens.size(); ++i) std::fprintf(f, "%s%d", i ? "," : "", tokens[i]);
  std::fputs("],\"positions\":[", f);
  bool first = true;
  for (int p : s.positions) { std::fprintf(f, "%s%d", first ? "" : ",", p); first = false; }
  std::fputs("],\"tensors\":[", f);
  for (size_t i = 0; i < s.records.size(); ++i) {
    const Record& r = s.records[i];
    std::fprintf(f, "%s\n{\"name\":\"%s\",\"occurrence\":%d,\"layer\":%d,\"pos\":%d,\"data\":[", i ? "," : "",
                 r.name.c_str(), r.occurrence, r.layer, r.pos);
    for (size_t j = 0; j < r.data.size(); ++j) { if (j) std::fputc(',', f); put_float(f, r.data[j]); }
    std::fputs("]}", f);
  }
  std::fputs("\n]}\n", f);
  std::fclose(f);
}

const char* kDefaultNames =
    "inp_embd,inp_scaled,attn_norm,Qcur,Kcur,Vcur,kqv_out,attn_out,attn_post_norm,ffn_inp,sa_out,ffn_norm,"
    "ffn_swiglu,ffn_geglu,ffn_gelu,ffn_silu,ffn_out,ffn_post_norm,ffn_moe_out,l_out,result_norm";

[[noreturn]] void usage() {
  std::fprintf(stderr,
               "usage: llama_dump MODEL.gguf --tokens 1,2,3 --out OUT.json [--positions 0,5,-1|all] [--n-prompt N]\n"
               "                  [--names a,b|all] [--threads 2] [--fa auto|on|off] [--ubatch 512]\n");
  std::exit(2);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) usage();
  const char* model_path = argv[1];
  std::string tokens_arg, out, positions_arg = "-1", names_arg = kDefaultNames, fa = "auto";
  long n_prompt = -1, threads = 2, ubatch = 512;
  for (int i = 2; i < argc; ++i) {
    const std::string a = argv[i];
    if (i + 1 >= argc) usage();
    const char* v = argv[++i];
    if (a == "--tokens") tokens_arg = v;
    else if (a == "--out") out = v;
    else if (a == "--positions") positions_arg = v;
    else if (a == "--names") names_arg = v;
    else if (a == "--n-prompt") n_prompt = std::atol(v);
    else if (a == "--threads") threads = std::atol(v);
    else if (a == "--fa") fa = v;
    else if (a == "--ubatch") ubatch = std::atol(v);
    else usage();
  }
  if (tokens_arg.empty() || out.empty() || ubatch < 1 || threads < 1) usage();
  std::vector<llama_token> tokens;
  for (long t : parse_list(tokens_arg, "--tokens")) tokens.push_back(static_cast<llama_token>(t));
  const int n = static_cast<int>(tokens.size());
  if (n == 0) usage();
  if (n_prompt < 0 || n_prompt > n) n_prompt = n;

  State s;
  s.names = parse_names(names_arg);
  if (positions_arg == "all") {
    for (int p = 0; p < n; ++p) s.positions.insert(p);
  } else {
    for (long p : parse_list(positions_arg, "--positions")) {
      if (p < -n || p >= n) { std::fprintf(stderr, "--positions: %ld is outside the %d tokens\n", p, n); return 2; }
      s.positions.insert(static_cast<int>(p < 0 ? n + p : p));
    }
  }

  llama_backend_init();
  llama_model_params mp = llama_model_default_params();
  llama_model* model = llama_model_load_from_file(model_path, mp);
  if (!model) { std::fprintf(stderr, "%s: load failed\n", model_path); return 1; }
  const int n_vocab = llama_vocab_n_tokens(llama_model_get_vocab(model));
  for (llama_token t : tokens) {
    if (t < 0 || t >= n_vocab) { std::fprintf(stderr, "token %d is outside the vocabulary\n", t); return 2; }
  }
  llama_context_params cp = llama_context_default_params();  // as ../shared/tools/golden, plus the callback
  cp.n_ctx = static_cast<uint32_t>(std::max(2048, n));
  cp.n_batch = cp.n_ctx;
  cp.n_ubatch = static_cast<uint32_t>(ubatch);
  cp.n_threads = cp.n_threads_batch = static_cast<int32_t>(threads);
  cp.type_k = GGML_TYPE_F16;
  cp.type_v = GGML_TYPE_F16;
  cp.flash_attn_type = fa == "on" ? LLAMA_FLASH_ATTN_TYPE_ENABLED
                       : fa == "off" ? LLAMA_FLASH_ATTN_TYPE_DISABLED : LLAMA_FLASH_ATTN_TYPE_AUTO;
  cp.cb_eval = on_tensor;
  cp.cb_eval_user_data = &s;
  llama_context* ctx = llama_init_from_model(model, cp);
  if (!ctx) { std::fprintf(stderr, "context failed\n"); return 1; }

  // Decodes of at most --ubatch prompt tokens (one ubatch each), then one token at a time.
  std::vector<std::vector<float>> logits;  // of the chosen positions, in order
  for (int begin = 0; begin < n;) {
    const int len = begin < n_prompt ? std::min<int>(static_cast<int>(ubatch), static_cast<int>(n_prompt) - begin) : 1;
    llama_batch b = llama_batch_init(len, 0, 1);
    for (int i = 0; i < len; ++i) {
      b.token[i] = tokens[static_cast<size_t>(begin + i)];
      b.pos[i] = begin + i;
      b.n_seq_id[i] = 1;
      b.seq_id[i][0] = 0;
      b.logits[i] = 1;
    }
    b.n_tokens = len;
    s.first_pos = begin;
    s.n_tokens = len;
    s.seen.clear();
    if (llama_decode(ctx, b) != 0) { std::fprintf(stderr, "decode failed at position %d\n", begin); return 1; }
    for (int i = 0; i < len; ++i) {
      if (s.positions.count(begin + i) == 0) continue;
      const float* l = llama_get_logits_ith(ctx, i);
      s.records.push_back({"result_output", 1, -1, begin + i, std::vector<float>(l, l + n_vocab)});
    }
    llama_batch_free(b);
    begin += len;
  }
  if (s.skipped_types > 0) std::fprintf(stderr, "note: %d tensors of other types than f32/f16/bf16 skipped\n", s.skipped_types);
  write_json(out.c_str(), model_path, tokens, static_cast<int>(n_prompt), s);
  llama_free(ctx);
  llama_model_free(model);
  llama_backend_free();
  return 0;
}
