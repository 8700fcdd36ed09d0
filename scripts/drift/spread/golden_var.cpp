// Reference outputs from libllama (llama.cpp) in the format of shared/golden/README.md: for each prompt, the prompt's
// tokens (BOS as the vocab says, specials parsed), top-K logits after every prompt token, a greedy continuation, and
// top-K logits after every generated token. Optional: mean/last-pooled embeddings (--embd).
// Build: see tools/golden/build.sh. Usage: golden MODEL.gguf PROMPTS.json N_GREEDY OUT.json [--embd]
#include <algorithm>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "llama.h"
#include "ggml.h"
#include "ggml-backend.h"
#include <cmath>
#include <cstring>

// --margins: per position, the smallest gap over the MoE layers between the softmax router probabilities of the
// last chosen expert and the best expert not chosen (ggufd's Forward::route_margin), from "ffn_moe_logits-<il>".
struct Margins { int k = 0; int pos_base = 0; int n_tokens = 0; std::vector<float> m; int bad = 0; };
static bool on_tensor(ggml_tensor* t, bool ask, void* user) {
  Margins& s = *static_cast<Margins*>(user);
  const bool want = std::strncmp(t->name, "ffn_moe_logits-", 15) == 0;
  if (ask) return want;
  if (!want) return true;
  if (t->type != GGML_TYPE_F32 || t->ne[1] != s.n_tokens || t->ne[2] != 1 || t->ne[3] != 1) { ++s.bad; return true; }
  std::vector<float> host(ggml_nelements(t));
  if (t->buffer && !ggml_backend_buffer_is_host(t->buffer)) ggml_backend_tensor_get(t, host.data(), 0, host.size() * 4);
  else for (int64_t r = 0; r < t->ne[1]; ++r) std::memcpy(host.data() + r * t->ne[0], (const char*)t->data + r * t->nb[1], t->ne[0] * 4);
  const int X = (int)t->ne[0];
  for (int r = 0; r < s.n_tokens; ++r) {
    std::vector<float> p(host.begin() + (size_t)r * X, host.begin() + (size_t)(r + 1) * X);
    float mx = *std::max_element(p.begin(), p.end()), z = 0;
    for (float& v : p) { v = std::exp(v - mx); z += v; }
    for (float& v : p) v /= z;
    std::sort(p.begin(), p.end(), [](float a, float b) { return a > b; });
    const size_t at = (size_t)(s.pos_base + r);
    if (s.m.size() <= at) s.m.resize(at + 1, 1.0f);
    if (s.k < X) s.m[at] = std::min(s.m[at], p[s.k - 1] - p[s.k]);
  }
  return true;
}

// Valid UTF-8 sequences are kept, every other byte becomes U+FFFD (as a server must send it).
static std::string valid_utf8(const std::string& s) {
  std::string o;
  for (size_t i = 0; i < s.size();) {
    unsigned char c = s[i];
    int n = c < 0x80 ? 1 : (c >= 0xC2 && c <= 0xDF) ? 2 : (c >= 0xE0 && c <= 0xEF) ? 3 : (c >= 0xF0 && c <= 0xF4) ? 4 : 0;
    bool ok = n > 0 && i + n <= s.size();
    for (int k = 1; ok && k < n; ++k) ok = (static_cast<unsigned char>(s[i + k]) >> 6) == 2;
    if (ok && n >= 3) {  // no overlong forms, no surrogates, nothing above U+10FFFF
      unsigned char d = s[i + 1];
      ok = !(c == 0xE0 && d < 0xA0) && !(c == 0xED && d >= 0xA0) && !(c == 0xF0 && d < 0x90) && !(c == 0xF4 && d >= 0x90);
    }
    if (ok) { o.append(s, i, n); i += n; } else { o += "\xEF\xBF\xBD"; i += 1; }
  }
  return o;
}

static std::string jstr(const std::string& raw) {
  const std::string s = valid_utf8(raw);
  std::string o = "\"";
  for (unsigned char c : s) {
    if (c == '"') o += "\\\"";
    else if (c == '\\') o += "\\\\";
    else if (c < 0x20) { char b[8]; snprintf(b, sizeof b, "\\u%04x", c); o += b; }
    else o += (char)c;
  }
  return o + "\"";
}

static std::vector<std::string> read_prompts(const char* path) {  // a JSON array of plain strings (\n, \", \\ escapes)
  std::ifstream f(path); std::stringstream ss; ss << f.rdbuf(); std::string s = ss.str();
  std::vector<std::string> out; size_t i = 0;
  while ((i = s.find('"', i)) != std::string::npos) {
    std::string cur; ++i;
    for (; i < s.size() && s[i] != '"'; ++i) {
      if (s[i] == '\\') { ++i; char c = s[i]; cur += c == 'n' ? '\n' : c == 't' ? '\t' : c; } else cur += s[i];
    }
    ++i; out.push_back(cur);
  }
  return out;
}

static std::string topk(const float* l, int n_vocab, int k) {
  std::vector<int> idx(n_vocab);
  for (int i = 0; i < n_vocab; ++i) idx[i] = i;
  std::partial_sort(idx.begin(), idx.begin() + k, idx.end(), [&](int a, int b) { return l[a] > l[b]; });
  std::string o = "[";
  for (int i = 0; i < k; ++i) { char b[64]; snprintf(b, sizeof b, "%s[%d,%.6g]", i ? "," : "", idx[i], l[idx[i]]); o += b; }
  return o + "]";
}

int main(int argc, char** argv) {
  if (argc < 5) { fprintf(stderr, "usage: golden MODEL PROMPTS.json N_GREEDY OUT.json [--embd]\n"); return 2; }
  // Variant options (measurement copy, scripts/drift/spread): --ubatch U (llama's n_ubatch), --chunk C (the
  // prompt decoded in llama_decode calls of C tokens), --topk K (0: the whole vocabulary), --force FILE (one line per
  // case of token ids fed after the prompt instead of the own argmax: teacher-forced on the reference's greedy).
  const bool embd = false;
  int n_ubatch = 512, chunk = 1 << 30, K = 20; bool want_margins = false; int fa = -1, threads = 2; static Margins mg; const char* force_path = nullptr;
  for (int a = 5; a + 1 < argc; a += 2) {
    std::string o = argv[a];
    if (o == "--ubatch") n_ubatch = atoi(argv[a + 1]);
    else if (o == "--chunk") chunk = atoi(argv[a + 1]);
    else if (o == "--topk") K = atoi(argv[a + 1]);
    else if (o == "--force") force_path = argv[a + 1];
    else if (o == "--fa") fa = atoi(argv[a + 1]);
    else if (o == "--threads") threads = atoi(argv[a + 1]);
    else if (o == "--margins") want_margins = atoi(argv[a + 1]) != 0;
    else { fprintf(stderr, "unknown option %s\n", o.c_str()); return 2; }
  }
  std::vector<std::vector<llama_token>> forced;
  if (force_path) {
    std::ifstream ff(force_path); std::string line;
    while (std::getline(ff, line)) { std::istringstream ls(line); std::vector<llama_token> v; int t; while (ls >> t) v.push_back(t); forced.push_back(v); }
  }
  const int n_greedy = atoi(argv[3]);
  llama_backend_init();
  llama_model_params mp = llama_model_default_params();
  llama_model* model = llama_model_load_from_file(argv[1], mp);
  if (!model) { fprintf(stderr, "load failed\n"); return 1; }
  const llama_vocab* vocab = llama_model_get_vocab(model);
  const int n_vocab = llama_vocab_n_tokens(vocab);
  if (K <= 0 || K > n_vocab) K = n_vocab;
  llama_context_params cp = llama_context_default_params();
  cp.n_ctx = 2048; cp.n_batch = 2048; cp.n_ubatch = n_ubatch; cp.n_threads = threads; cp.n_threads_batch = threads;
  cp.type_k = GGML_TYPE_F16; cp.type_v = GGML_TYPE_F16; cp.embeddings = embd;
  if (fa >= 0) cp.flash_attn_type = fa ? LLAMA_FLASH_ATTN_TYPE_ENABLED : LLAMA_FLASH_ATTN_TYPE_DISABLED;
  if (want_margins) {
    char v[64];
    for (int i = 0; i < llama_model_meta_count(model); ++i) {
      char key[256]; llama_model_meta_key_by_index(model, i, key, sizeof key);
      const std::string ks = key;
      if (ks.size() > 18 && ks.compare(ks.size() - 18, 18, ".expert_used_count") == 0) { llama_model_meta_val_str_by_index(model, i, v, sizeof v); mg.k = atoi(v); }
    }
    fprintf(stderr, "margins: expert_used_count %d\n", mg.k);
    cp.cb_eval = on_tensor; cp.cb_eval_user_data = &mg;
  }
  llama_context* ctx = llama_init_from_model(model, cp);
  if (!ctx) { fprintf(stderr, "context failed\n"); return 1; }
  std::string out = "{\"model\":" + jstr(std::string(argv[1]).substr(std::string(argv[1]).rfind('/') + 1)) +
                    ",\"n_vocab\":" + std::to_string(n_vocab) + ",\"topk\":" + std::to_string(K) + ",\"n_ubatch\":" + std::to_string(n_ubatch) + ",\"chunk\":" + std::to_string(chunk) + ",\"cases\":[";
  bool first = true; size_t case_no = 0;
  for (const std::string& prompt : read_prompts(argv[2])) {
    llama_memory_clear(llama_get_memory(ctx), true);
    mg.m.clear();
    std::vector<llama_token> toks(prompt.size() + 16);
    int n = llama_tokenize(vocab, prompt.c_str(), (int)prompt.size(), toks.data(), (int)toks.size(), true, true);
    if (n < 0) { toks.resize(-n); n = llama_tokenize(vocab, prompt.c_str(), (int)prompt.size(), toks.data(), -n, true, true); }
    toks.resize(n);
    std::vector<std::string> tops; std::vector<float> last_logits(n_vocab);
    for (int s0 = 0; s0 < n; s0 += chunk) {
      const int m = std::min(chunk, n - s0);
      llama_batch b = llama_batch_init(m, 0, 1);
      for (int i = 0; i < m; ++i) { b.token[i] = toks[s0 + i]; b.pos[i] = s0 + i; b.n_seq_id[i] = 1; b.seq_id[i][0] = 0; b.logits[i] = 1; }
      b.n_tokens = m; mg.pos_base = s0; mg.n_tokens = m;
      if (llama_decode(ctx, b)) { fprintf(stderr, "decode failed\n"); return 1; }
      for (int i = 0; i < m; ++i) tops.push_back(topk(llama_get_logits_ith(ctx, i), n_vocab, K));
      std::copy(llama_get_logits_ith(ctx, m - 1), llama_get_logits_ith(ctx, m - 1) + n_vocab, last_logits.begin());
      llama_batch_free(b);
    }
    std::string c = std::string(first ? "" : ",") + "{\"prompt\":" + jstr(prompt) + ",\"tokens\":[";
    first = false;
    for (int i = 0; i < n; ++i) c += (i ? "," : "") + std::to_string(toks[i]);
    c += "]";
    c += ",\"top\":[";
    for (int i = 0; i < n; ++i) c += (i ? "," : "") + tops[i];
    c += "]";
    std::vector<llama_token> greedy, own; std::string gen_top = "[", text;
    const float* last = last_logits.data();
    const std::vector<llama_token>* fc = case_no < forced.size() ? &forced[case_no] : nullptr;
    ++case_no;
    for (int g = 0; g < n_greedy; ++g) {
      llama_token t = (llama_token)(std::max_element(last, last + n_vocab) - last);
      own.push_back(t);
      if (fc) { if ((size_t)g >= fc->size()) break; t = (*fc)[g]; }
      greedy.push_back(t);
      char piece[256]; int pl = llama_token_to_piece(vocab, t, piece, sizeof piece, 0, false);
      if (pl > 0) text.append(piece, pl);
      llama_batch one = llama_batch_init(1, 0, 1);
      one.token[0] = t; one.pos[0] = n + g; one.n_seq_id[0] = 1; one.seq_id[0][0] = 0; one.logits[0] = 1; one.n_tokens = 1; mg.pos_base = n + g; mg.n_tokens = 1;
      if (llama_decode(ctx, one)) { fprintf(stderr, "decode failed\n"); return 1; }
      last = llama_get_logits_ith(ctx, 0);
      gen_top += (g ? "," : "") + topk(last, n_vocab, K);
      llama_batch_free(one);
    }
    c += ",\"greedy\":[";
    for (size_t i = 0; i < greedy.size(); ++i) c += (i ? "," : "") + std::to_string(greedy[i]);
    if (want_margins) {
      c += "],\"route_margin\":[";
      for (size_t i = 0; i < mg.m.size(); ++i) { char x[32]; snprintf(x, sizeof x, "%s%.6g", i ? "," : "", mg.m[i]); c += x; }
    }
    c += "],\"own_argmax\":[";
    for (size_t i = 0; i < own.size(); ++i) c += (i ? "," : "") + std::to_string(own[i]);
    c += "],\"gen_top\":" + gen_top + "],\"greedy_text\":" + jstr(text) + "}";
    out += c;
  }
  out += "]}\n";
  if (mg.bad) fprintf(stderr, "margins: %d tensors of an unexpected shape skipped\n", mg.bad);
  FILE* f = fopen(argv[4], "w"); fputs(out.c_str(), f); fclose(f);
  llama_free(ctx); llama_model_free(model);
  return 0;
}
