// llama.cpp's pre-tokenizer pieces: unicode_regex_split (src/unicode.cpp, linked from libllama)
// with the given regexes and no byte encoding, on each input text; with ESCAPE=1 the spaces are
// first replaced with U+2581, as llama-vocab.cpp does for SPM-style BPE (gemma4). Built like
// vocab_ref.cpp (build_ref.sh with this file's name), run by gemma4_tokenizer.py.
//
// Usage: pretok_ref CASES ESCAPE REGEX...
// Output: "case I HEX HEX ..." (one hex string per piece) for each input text.
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

// From llama.cpp's src/unicode.h (not an installed header).
std::vector<std::string> unicode_regex_split(const std::string& text, const std::vector<std::string>& regex_exprs,
                                             bool byte_encode);

int main(int argc, char** argv) {
  if (argc < 4) {
    std::fprintf(stderr, "usage: %s CASES ESCAPE REGEX...\n", argv[0]);
    return 2;
  }
  std::ifstream in(argv[1], std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  const std::string all = ss.str(), sep = "\n__ggml_vocab_test__\n";
  const bool escape = std::string(argv[2]) == "1";
  const std::vector<std::string> regexes(argv + 3, argv + argc);
  std::vector<std::string> cases;
  for (size_t pos = 0; pos < all.size();) {  // as llama.cpp's tests/test-tokenizer-0.cpp reads them
    const size_t at = all.find(sep, pos);
    cases.push_back(all.substr(pos, at == std::string::npos ? std::string::npos : at - pos));
    if (at == std::string::npos) break;
    pos = at + sep.size();
  }
  for (size_t i = 0; i < cases.size(); ++i) {
    std::string text = cases[i];
    if (escape) {
      std::string out;
      for (char c : text) out += c == ' ' ? std::string("\xE2\x96\x81") : std::string(1, c);
      text = out;
    }
    std::printf("case %zu", i);
    for (const std::string& piece : unicode_regex_split(text, regexes, false)) {
      std::printf(" ");
      for (unsigned char c : piece) std::printf("%02x", c);
    }
    std::printf("\n");
  }
  return 0;
}
