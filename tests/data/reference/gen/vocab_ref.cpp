// What libllama (llama.cpp) makes of a vocabulary-only GGUF: every token's attributes, pieces and
// end-of-generation flag, and the ids of each input text. Built against a llama.cpp build tree by
// build_ref.sh; run by gemma4_tokenizer.py, which turns the output into JSON.
//
// Usage: vocab_ref VOCAB.gguf CASES
//   CASES: the input texts, separated by "\n__ggml_vocab_test__\n" (as llama.cpp's .inp files).
// Output, one fact a line (HEX: the bytes in hex, "-" when empty):
//   vocab N_VOCAB BOS EOS EOT ADD_BOS ADD_EOS
//   token ID ATTR IS_EOG HEX(piece, special=false) HEX(piece, special=true)
//   case I ADD_SPECIAL PARSE_SPECIAL ID...
//   detok I 0 UNPARSE_SPECIAL HEX   (llama_detokenize of the ids of add and parse special, remove_special off)
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "llama.h"

namespace {

std::string hex(const std::string& bytes) {
  if (bytes.empty()) return "-";
  std::string out;
  char buf[3];
  for (unsigned char c : bytes) {
    std::snprintf(buf, sizeof buf, "%02x", c);
    out += buf;
  }
  return out;
}

std::string piece(const llama_vocab* vocab, llama_token id, bool special) {
  std::vector<char> buf(256);
  int n = llama_token_to_piece(vocab, id, buf.data(), (int)buf.size(), 0, special);
  if (n < 0) {
    buf.resize(-n);
    n = llama_token_to_piece(vocab, id, buf.data(), (int)buf.size(), 0, special);
  }
  return std::string(buf.data(), n);
}

std::vector<llama_token> tokenize(const llama_vocab* vocab, const std::string& text, bool add, bool parse) {
  std::vector<llama_token> ids(text.size() + 8);
  int n = llama_tokenize(vocab, text.data(), (int)text.size(), ids.data(), (int)ids.size(), add, parse);
  if (n < 0) {
    ids.resize(-n);
    n = llama_tokenize(vocab, text.data(), (int)text.size(), ids.data(), (int)ids.size(), add, parse);
  }
  ids.resize(n);
  return ids;
}

std::string detokenize(const llama_vocab* vocab, const std::vector<llama_token>& ids, bool remove, bool unparse) {
  std::vector<char> buf(ids.size() * 16 + 16);
  int n = llama_detokenize(vocab, ids.data(), (int)ids.size(), buf.data(), (int)buf.size(), remove, unparse);
  if (n < 0) {
    buf.resize(-n);
    n = llama_detokenize(vocab, ids.data(), (int)ids.size(), buf.data(), (int)buf.size(), remove, unparse);
  }
  return std::string(buf.data(), n);
}

std::vector<std::string> read_cases(const char* path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  const std::string all = ss.str(), sep = "\n__ggml_vocab_test__\n";
  std::vector<std::string> cases;
  size_t pos = 0;
  while (pos < all.size()) {  // as llama.cpp's tests/test-tokenizer-0.cpp reads them
    const size_t at = all.find(sep, pos);
    cases.push_back(all.substr(pos, at == std::string::npos ? std::string::npos : at - pos));
    if (at == std::string::npos) break;
    pos = at + sep.size();
  }
  return cases;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: %s VOCAB.gguf CASES\n", argv[0]);
    return 2;
  }
  llama_backend_init();
  llama_model_params params = llama_model_default_params();
  params.vocab_only = true;
  llama_model* model = llama_model_load_from_file(argv[1], params);
  if (model == nullptr) return 1;
  const llama_vocab* vocab = llama_model_get_vocab(model);
  const int n_vocab = llama_vocab_n_tokens(vocab);
  std::printf("vocab %d %d %d %d %d %d\n", n_vocab, llama_vocab_bos(vocab), llama_vocab_eos(vocab),
              llama_vocab_eot(vocab), (int)llama_vocab_get_add_bos(vocab), (int)llama_vocab_get_add_eos(vocab));
  for (llama_token id = 0; id < n_vocab; ++id) {
    std::printf("token %d %d %d %s %s\n", id, (int)llama_vocab_get_attr(vocab, id), (int)llama_vocab_is_eog(vocab, id),
                hex(piece(vocab, id, false)).c_str(), hex(piece(vocab, id, true)).c_str());
  }
  const std::vector<std::string> cases = read_cases(argv[2]);
  for (size_t i = 0; i < cases.size(); ++i) {
    for (int add = 0; add < 2; ++add) {
      for (int parse = 0; parse < 2; ++parse) {
        std::printf("case %zu %d %d", i, add, parse);
        for (llama_token t : tokenize(vocab, cases[i], add, parse)) std::printf(" %d", t);
        std::printf("\n");
      }
    }
    const std::vector<llama_token> ids = tokenize(vocab, cases[i], true, true);
    for (int unparse = 0; unparse < 2; ++unparse) {
      std::printf("detok %zu 0 %d %s\n", i, unparse, hex(detokenize(vocab, ids, false, unparse)).c_str());
    }
  }
  llama_model_free(model);
  llama_backend_free();
  return 0;
}
