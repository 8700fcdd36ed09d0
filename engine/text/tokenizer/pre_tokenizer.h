// Regex pre-tokenizers for byte-level BPE vocabularies, chosen by tokenizer.ggml.pre.
//
// The text is split by a list of regexes applied in turn: each regex cuts every piece left by the
// previous one into its matches and the gaps between them (gaps are kept as pieces). This is how
// the reference implementation applies the Hugging Face pre-tokenizer "Split" rules.
#pragma once

#include <memory>
#include <string_view>
#include <vector>

namespace engine::tokenizer {

// What one tokenizer.ggml.pre value stands for.
struct PreTokenizerSpec {
  std::vector<std::string_view> regexes;  // PCRE2 syntax, applied in order
  bool clean_spaces = true;               // reference detokenizer clean-up
  bool ignore_merges = false;             // whole-word vocabulary hits skip the merges
  bool add_bos = false;                   // default for tokenizer.ggml.add_bos_token
  // SentencePiece-style BPE (llama.cpp's gemma4 type): spaces become U+2581 before the split,
  // merges run over UTF-8 characters (no byte-level mapping), characters that are no token fall
  // back to <0xXX> byte tokens, a newline run that is itself a token is taken whole, and BOS is
  // always added whatever tokenizer.ggml.add_bos_token says.
  bool spm_style = false;
};

// The spec for a tokenizer.ggml.pre value ("" means "default"), or null when unknown.
const PreTokenizerSpec* find_pre_tokenizer_spec(std::string_view pre_name);

// Compiled regexes (PCRE2, UTF + UCP, JIT-compiled where the platform allows).
// Thread-safety: immutable after construction; split() may run concurrently.
class PreTokenizer {
 public:
  // Throws std::runtime_error when a regex does not compile.
  explicit PreTokenizer(const std::vector<std::string_view>& regexes);
  ~PreTokenizer();
  PreTokenizer(const PreTokenizer&) = delete;
  PreTokenizer& operator=(const PreTokenizer&) = delete;

  // Appends the pieces of `text` (which must be valid UTF-8, but for surrogates in their
  // three-byte form, which split as a character of no category, as in the reference) to
  // `pieces`, in order; together they cover `text` exactly. Never fails: if the regex engine
  // gives up on some input (resource limits), the rest of that piece is kept whole.
  void split(std::string_view text, std::vector<std::string_view>& pieces) const;

 private:
  struct Compiled;
  void split_one(const Compiled& regex, std::string_view piece,
                 std::vector<std::string_view>& out) const;
  std::vector<std::unique_ptr<Compiled>> regexes_;
};

}  // namespace engine::tokenizer
