// The built-in vocabularies of synthetic models (synth.h). BPE: 256 byte tokens, merges learned by a
// small deterministic byte-level BPE trainer from our own text, control tokens, a chat template, and
// filler tokens up to the shape's vocabulary size. WordPiece (encoders): BERT's special tokens, the
// ASCII characters, and word pieces cut from the same text.
#include <cctype>
#include <cstdint>
#include <iterator>
#include <map>
#include <set>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "engine/text/tokenizer/bpe.h"
#include "engine/text/tokenizer/pre_tokenizer.h"
#include "engine/text/tokenizer/utf8.h"
#include "tools/synth/synth.h"

namespace engine::synth {

using gguf::OwnedValue;

namespace {

// Training text for the merges (our own words). Mostly common English so the learned merges are
// the familiar ones (" the", "ing", " and", ...).
constexpr std::string_view kTrainingText =
    "The little server runs on the machine in the corner of the room. It reads a model from a "
    "file, loads the weights into memory, and answers the questions that people send to it. "
    "When a question arrives, the server turns the text into tokens, runs the tokens through "
    "the layers of the model, and writes the answer back one token at a time. The model does "
    "not know anything about the world; it only knows which token is likely to come next. "
    "That is enough to write a story, to translate a sentence, or to explain how something "
    "works, as long as the model has seen enough text while it was being trained.\n"
    "This model, however, has never been trained at all. Its weights are random numbers, so "
    "everything it says is nonsense. It is here for testing: to check that the server starts, "
    "that the tokenizer and the kernels agree with each other, and that the answers are "
    "streamed to the client in the right order. If you want a model that makes sense, download "
    "a real one and point the server at it. Thank you for reading, and have a good day!\n"
    "Numbers such as 1, 2, 3, 10, 42, 100 and 2024 are split into digits and groups of three; "
    "punctuation like commas, periods, question marks and quotes is kept apart from the words. "
    "Hello, world! How are you today? I am fine, thanks. What is the weather like where you are? "
    "It is sunny and warm here, and the birds are singing in the trees outside the window.\n"
    "Once upon a time there was a small robot who lived in a house by the sea. Every morning "
    "the robot walked along the beach, looking for shells, stones and pieces of glass that the "
    "waves had brought in during the night. It kept the best ones in a box under its bed, and "
    "in the evening it would take them out, one by one, and think about where they had come "
    "from. Some were smooth and round, some were sharp, and some were so small that you could "
    "hardly see them. The robot liked them all, because each one had a story of its own.\n"
    "user: Can you write a short poem about the sea?\n"
    "assistant: Sure! Here is a short poem: the sea is wide, the sea is deep, it sings the "
    "shore and the sailors to sleep.\n";

constexpr std::string_view kChatTemplate =
    "{% for message in messages %}{{ '<|im_start|>' + message['role'] + '\\n' + message['content'] "
    "+ '<|im_end|>' + '\\n' }}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant"
    "\\n' }}{% endif %}";

constexpr size_t kMaxMerges = 400;

std::string byte_token(uint8_t b) {
  std::string s;
  tokenizer::append_utf8(s, tokenizer::byte_to_code_point(b));
  return s;
}

// A deterministic byte-level BPE trainer: words from the "default" pre-tokenizer; each round
// merges the most frequent adjacent pair (ties: the lexicographically smallest pair) until
// kMaxMerges merges or every word is a single symbol.
std::vector<std::pair<std::string, std::string>> learn_merges(std::string_view text) {
  const tokenizer::PreTokenizerSpec* spec = tokenizer::find_pre_tokenizer_spec("default");
  const tokenizer::PreTokenizer pre(spec->regexes);
  std::vector<std::string_view> pieces;
  pre.split(text, pieces);
  std::map<std::vector<std::string>, int> words;  // word as symbols -> count
  for (std::string_view piece : pieces) {
    std::vector<std::string> syms;
    for (char c : piece) syms.push_back(byte_token(static_cast<uint8_t>(c)));
    ++words[syms];
  }
  std::vector<std::pair<std::string, std::string>> merges;
  while (merges.size() < kMaxMerges) {
    std::map<std::pair<std::string, std::string>, int> pairs;
    for (const auto& [syms, count] : words) {
      for (size_t i = 0; i + 1 < syms.size(); ++i) pairs[{syms[i], syms[i + 1]}] += count;
    }
    auto best = pairs.end();
    for (auto it = pairs.begin(); it != pairs.end(); ++it) {
      if (best == pairs.end() || it->second > best->second) best = it;
    }
    if (best == pairs.end()) break;
    const auto [left, right] = best->first;
    merges.emplace_back(left, right);
    std::map<std::vector<std::string>, int> next;
    for (const auto& [syms, count] : words) {
      std::vector<std::string> merged;
      for (size_t i = 0; i < syms.size(); ++i) {
        if (i + 1 < syms.size() && syms[i] == left && syms[i + 1] == right) {
          merged.push_back(left + right);
          ++i;
        } else {
          merged.push_back(syms[i]);
        }
      }
      next[merged] += count;
    }
    words = std::move(next);
  }
  return merges;
}

// Common English endings and letter groups, kept as WordPiece continuations.
constexpr std::string_view kSuffixes[] = {
    "s",    "es",   "ed",  "er",   "ers",  "est",  "ing",  "ings", "ly",   "ion",  "ions", "tion",
    "tions", "sion", "ness", "ment", "ments", "able", "ible", "al",   "ial",  "ful",  "less", "ous",
    "ive",  "ity",  "ize", "ise",  "ized", "ism",  "ist",  "ists", "ical", "ally", "ance", "ence",
    "ant",  "ent",  "ary", "ory",  "ship", "hood", "ward", "wise", "like", "th",   "ry",   "y",
};

// The lower-case ASCII words of `text`, sorted and unique.
std::set<std::string> words_of(std::string_view text) {
  std::set<std::string> words;
  std::string w;
  for (const char c : text) {
    const auto u = static_cast<unsigned char>(c);
    if (std::isalpha(u) != 0) {
      w += static_cast<char>(std::tolower(u));
    } else if (!w.empty()) {
      words.insert(std::exchange(w, {}));
    }
  }
  if (!w.empty()) words.insert(w);
  return words;
}

}  // namespace

Metadata builtin_wordpiece_vocabulary(int64_t n_vocab) {
  enum : int32_t { kNormal = 1, kControl = 3, kUnused = 5 };
  const std::string word_start = "\xe2\x96\x81";  // U+2581, llama.cpp's phantom space
  std::vector<std::string> tokens;
  std::vector<int32_t> types;
  std::set<std::string> seen;
  int unused = 0;
  auto add = [&](std::string text, int32_t type) {
    if (!seen.insert(text).second) return;
    tokens.push_back(std::move(text));
    types.push_back(type);
  };
  auto add_unused = [&] { add("[unused" + std::to_string(unused++) + "]", kUnused); };
  // BERT's layout: [PAD] 0, [unused0..98], [UNK] 100, [CLS] 101, [SEP] 102, [MASK] 103.
  add("[PAD]", kControl);
  while (tokens.size() < 100) add_unused();
  for (const char* special : {"[UNK]", "[CLS]", "[SEP]", "[MASK]"}) add(special, kControl);
  // Each printable ASCII character (upper case excluded: the text is lower-cased first) as a word
  // start and as a continuation: every lower-case ASCII word tokenizes.
  std::vector<std::string> chars;
  for (int c = 0x21; c < 0x7f; ++c) {
    if (std::isupper(c) == 0) chars.emplace_back(1, static_cast<char>(c));
  }
  for (const std::string& c : chars) add(word_start + c, kNormal);
  for (const std::string& c : chars) add(c, kNormal);
  // Words and their first two and three letters as word starts; from the second letter on, their
  // groups of two to four letters and the common endings as continuations.
  const std::set<std::string> words = words_of(kTrainingText);
  std::set<std::string> starts, continuations(std::begin(kSuffixes), std::end(kSuffixes));
  for (const std::string& w : words) {
    starts.insert(w);
    for (size_t n = 2; n <= 3 && n < w.size(); ++n) starts.insert(w.substr(0, n));
    for (size_t i = 1; i < w.size(); ++i) {
      for (size_t n = 2; n <= 4 && i + n <= w.size(); ++n) continuations.insert(w.substr(i, n));
    }
  }
  for (const std::string& w : starts) add(word_start + w, kNormal);
  for (const std::string& c : continuations) add(c, kNormal);
  const auto natural = static_cast<int64_t>(tokens.size());
  if (n_vocab != 0 && n_vocab < natural) {
    throw std::runtime_error("synth: vocabulary size " + std::to_string(n_vocab) +
                             " is below the built-in WordPiece vocabulary's " + std::to_string(natural));
  }
  while (static_cast<int64_t>(tokens.size()) < n_vocab) add_unused();
  return {
      {"tokenizer.ggml.model", OwnedValue::string("bert")},
      {"tokenizer.ggml.pre", OwnedValue::string("default")},
      {"tokenizer.ggml.tokens", OwnedValue::string_array(tokens)},
      {"tokenizer.ggml.token_type", OwnedValue::i32_array(types)},
      {"tokenizer.ggml.unknown_token_id", OwnedValue::u32(100)},
      {"tokenizer.ggml.seperator_token_id", OwnedValue::u32(102)},
      {"tokenizer.ggml.padding_token_id", OwnedValue::u32(0)},
      {"tokenizer.ggml.cls_token_id", OwnedValue::u32(101)},
      {"tokenizer.ggml.mask_token_id", OwnedValue::u32(103)},
  };
}

Metadata builtin_vocabulary(int64_t n_vocab) {
  enum : int32_t { kNormal = 1, kControl = 3, kUnused = 5 };
  std::vector<std::string> tokens;
  std::vector<int32_t> types;
  std::set<std::string> seen;
  auto add = [&](std::string text, int32_t type) {
    if (!seen.insert(text).second) return;
    tokens.push_back(std::move(text));
    types.push_back(type);
  };
  for (int b = 0; b < 256; ++b) add(byte_token(static_cast<uint8_t>(b)), kNormal);
  const auto merges = learn_merges(kTrainingText);
  std::vector<std::string> merge_texts;
  for (const auto& [l, r] : merges) {
    add(l + r, kNormal);
    merge_texts.push_back(l + " " + r);
  }
  const auto bos = static_cast<uint32_t>(tokens.size());
  add("<|begin_of_text|>", kControl);
  add("<|end_of_text|>", kControl);
  add("<|im_start|>", kControl);
  add("<|im_end|>", kControl);
  const auto natural = static_cast<int64_t>(tokens.size());
  if (n_vocab != 0 && n_vocab < natural) {
    throw std::runtime_error("synth: vocabulary size " + std::to_string(n_vocab) +
                             " is below the built-in vocabulary's " + std::to_string(natural));
  }
  for (int64_t i = natural; i < n_vocab; ++i) add("<|synth_" + std::to_string(i) + "|>", kUnused);
  return {
      {"tokenizer.ggml.model", OwnedValue::string("gpt2")},
      {"tokenizer.ggml.pre", OwnedValue::string("default")},
      {"tokenizer.ggml.tokens", OwnedValue::string_array(tokens)},
      {"tokenizer.ggml.token_type", OwnedValue::i32_array(types)},
      {"tokenizer.ggml.merges", OwnedValue::string_array(merge_texts)},
      {"tokenizer.ggml.bos_token_id", OwnedValue::u32(bos)},
      {"tokenizer.ggml.eos_token_id", OwnedValue::u32(bos + 1)},
      {"tokenizer.ggml.add_bos_token", OwnedValue::boolean(true)},
      {"tokenizer.ggml.add_eos_token", OwnedValue::boolean(false)},
      {"tokenizer.chat_template", OwnedValue::string(std::string(kChatTemplate))},
  };
}

}  // namespace engine::synth
