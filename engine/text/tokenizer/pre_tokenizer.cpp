#include "engine/text/tokenizer/pre_tokenizer.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include <map>
#include <stdexcept>
#include <string>

#include "engine/text/tokenizer/utf8.h"

namespace engine::tokenizer {

namespace {

// Regexes as the reference implementation (llama.cpp, src/llama-vocab.cpp) uses them for each
// pre-tokenizer type. Non-ASCII characters are written as \x{...} escapes.
constexpr std::string_view kGpt2 =
    R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S))";
constexpr std::string_view kLlama3 =
    R"((?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\r\n\p{L}\p{N}]?\p{L}+|\)"
    R"(p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
constexpr std::string_view kQwen2 =
    R"((?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\r\n\p{L}\p{N}]?\p{L}+|\)"
    R"(p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
// Qwen3.5: qwen2's, with combining marks (\p{M}) inside letter runs and out of the punctuation run.
constexpr std::string_view kQwen35 =
    R"((?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\r\n\p{L}\p{N}]?[\p{L}\p{M}]+|\)"
    R"(p{N}| ?[^\s\p{L}\p{M}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
constexpr std::string_view kCjk = R"([\x{4E00}-\x{9FA5}\x{800}-\x{4E00}\x{AC00}-\x{D7FF}]+)";
constexpr std::string_view kDeepseekLetters =
    R"(\s?[A-Za-z\x{B5}\x{C0}-\x{D6}\x{D8}-\x{F6}\x{F8}-\x{1BA}\x{1BC}-\x{1BF}\x{1C4}-\x{29)"
    R"(3}\x{295}-\x{2AF}\x{370}-\x{373}\x{376}\x{377}\x{37B}-\x{37D}\x{37F}\x{386}\x{388}-\)"
    R"(x{38A}\x{38C}\x{38E}-\x{3A1}\x{3A3}-\x{3F5}\x{3F7}-\x{481}\x{48A}-\x{52F}\x{531}-\x{)"
    R"(556}\x{10A0}-\x{10C5}\x{13A0}-\x{13F5}\x{13F8}-\x{13FD}\x{1C90}-\x{1CBA}\x{1CBD}-\x{)"
    R"(1CBF}\x{1D00}-\x{1D2B}\x{1D6B}-\x{1D77}\x{1D79}-\x{1D9A}\x{1E00}-\x{1F15}\x{1F18}-\x)"
    R"({1F1D}\x{1F20}-\x{1F45}\x{1F48}-\x{1F4D}\x{1F50}-\x{1F57}\x{1F59}\x{1F5B}\x{1F5D}\x{)"
    R"(1F5F}-\x{1F7D}\x{1F80}-\x{1FB4}\x{1FB6}-\x{1FBC}\x{1FBE}\x{1FC2}-\x{1FC4}\x{1FC6}-\x)"
    R"({1FCC}\x{1FD0}-\x{1FD3}\x{1FD6}-\x{1FDB}\x{1FE0}-\x{1FEC}\x{1FF2}-\x{1FF4}\x{1FF6}-\)"
    R"(x{1FFC}\x{2102}\x{2107}\x{210A}-\x{2113}\x{2115}\x{2119}-\x{211D}\x{2124}\x{2126}\x{)"
    R"(2128}\x{212A}-\x{212D}\x{212F}-\x{2134}\x{2139}\x{213C}-\x{213F}\x{2145}-\x{2149}\x{)"
    R"(214E}\x{2183}\x{2184}\x{2C00}-\x{2C7B}\x{2C7E}-\x{2CE4}\x{2CEB}-\x{2CEE}\x{2CF2}\x{2)"
    R"(CF3}\x{A640}-\x{A66D}\x{A680}-\x{A69B}\x{A722}-\x{A76F}\x{A771}-\x{A787}\x{A78B}-\x{)"
    R"(A78E}\x{AB70}-\x{ABBF}\x{FB00}-\x{FB06}\x{FB13}-\x{FB17}\x{FF21}-\x{FF3A}\x{FF41}-\x)"
    R"({FF5A}\x{10400}-\x{1044F}\x{104B0}-\x{104D3}\x{104D8}-\x{104FB}\x{10C80}-\x{10CB2}\x)"
    R"({10CC0}-\x{10CF2}\x{118A0}-\x{118DF}\x{1E900}-\x{1E943}]+)";
constexpr std::string_view kDeepseekPunct =
    R"(\s?[!-/:-~\x{FF01}-\x{FF0F}\x{FF1A}-\x{FF5E}\x{2018}-\x{201F}\x{3000}-\x{3002}]+)";
constexpr std::string_view kDeepseek3Main =
    R"([!"#$%&'()*+,\-./:;<=>?@\[\\\]^_`{|}~][A-Za-z]+|[^\r\n\p{L}\p{P}\p{S}]?[\p{L}\p{M}]+)"
    R"(| ?[\p{P}\p{S}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
constexpr std::string_view kPoro =
    R"( ?[^(\s|.,!?\x{2026}\x{3002}\x{FF0C}\x{3001}\x{964}\x{6D4}\x{60C})]+)";
constexpr std::string_view kTekken =
    R"([^\r\n\p{L}\p{N}]?((?=[\p{L}])([^a-z]))*((?=[\p{L}])([^A-Z]))+|[^\r\n\p{L}\p{N}]?((?)"
    R"(=[\p{L}])([^a-z]))+((?=[\p{L}])([^A-Z]))*|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n])"
    R"(+|\s+(?!\S)|\s+)";
constexpr std::string_view kGpt4o =
    R"([^\r\n\p{L}\p{N}]?((?=[\p{L}])([^a-z]))*((?=[\p{L}])([^A-Z]))+(?:'[sS]|'[tT]|'[rR][e)"
    R"(E]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])?|[^\r\n\p{L}\p{N}]?((?=[\p{L}])([^a-z]))+((?=[\p)"
    R"({L}])([^A-Z]))*(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])?|\p{N}{1,3})"
    R"(| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
constexpr std::string_view kBailing =
    R"('(?:[sSdDmMtT]|[lL][lL]|[vV][eE]|[rR][eE])|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L)"
    R"(}\p{N}]+[\r\n]*|\s*[\r\n]|\s+(?!\S)|\s+)";
constexpr std::string_view kSeedCoder =
    R"((?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\r\n\p{L}\p{N}]?\p{L}+|\)"
    R"(p{N}{1}| ?[^\s\p{L}\p{N}\r\n]+|\s*[\r\n]+|\s+(?!\S)|\s+)";

struct Family {
  std::vector<std::string_view> regexes;
};

const std::map<std::string_view, Family>& families() {
  static const std::map<std::string_view, Family> table = {
      {"default", {{R"([\p{P}\$\+<=>\^~\|]+)", kGpt2, R"(\p{N}+)", "[0-9][0-9][0-9]"}}},
      {"gpt2", {{kGpt2}}},
      {"llama3", {{kLlama3}}},
      {"qwen2", {{kQwen2}}},
      {"qwen35", {{kQwen35}}},
      {"deepseek-llm", {{"[\r\n]", kDeepseekLetters, kDeepseekPunct, R"(\s+$)", kCjk, R"(\p{N}+)"}}},
      {"deepseek-coder", {{"[\r\n]", R"(\s?\p{L}+)", R"(\s?\p{P}+)", kCjk, R"(\p{N})"}}},
      {"deepseek3",
       {{R"(\p{N}{1,3})", R"([\x{4E00}-\x{9FA5}\x{3040}-\x{309F}\x{30A0}-\x{30FF}]+)", kDeepseek3Main}}},
      {"falcon", {{R"([\p{P}\$\+<=>\^~\|`]+)", kGpt2, "[0-9][0-9][0-9]"}}},
      {"starcoder", {{R"(\p{N})", kGpt2}}},
      {"poro", {{kPoro}}},
      {"viking", {{kPoro, R"(\p{N})"}}},
      {"tekken", {{kTekken}}},
      {"gpt4o", {{kGpt4o}}},
      {"bailingmoe", {{kBailing}}},
      {"seed-coder", {{kSeedCoder}}},
      // Gemma 4: no word split, only newline runs apart from the rest (merges never span them).
      {"gemma4", {{R"([^\n]+|[\n]+)"}}},
  };
  return table;
}

struct NameRule {
  std::string_view family;
  bool clean_spaces;
  bool ignore_merges;
  bool add_bos;
  bool spm_style = false;
};

// tokenizer.ggml.pre value -> family and flags, as the reference implementation maps them.
// "gpt-neox" is our alias for the GPT-2 rules that GPT-NeoX-style tokenizers (MPT, OLMo) use.
const std::map<std::string_view, NameRule>& name_rules() {
  static const std::map<std::string_view, NameRule> table = [] {
    std::map<std::string_view, NameRule> t;
    auto add = [&t](std::initializer_list<std::string_view> names, NameRule rule) {
      for (std::string_view n : names) t[n] = rule;
    };
    add({"default"}, {"default", true, false, false});
    add({"llama3", "llama-v3", "llama-bpe", "falcon3", "falcon-h1", "pixtral", "midm-2.0", "lfm2"},
        {"llama3", true, true, true});
    add({"dbrx", "smaug-bpe"}, {"llama3", true, false, false});
    add({"deepseek-llm"}, {"deepseek-llm", false, false, false});
    add({"deepseek-coder"}, {"deepseek-coder", false, false, false});
    add({"deepseek-v3", "hunyuan-dense"}, {"deepseek3", false, false, false});
    add({"falcon"}, {"falcon", true, false, false});
    add({"gpt-2", "phi-2", "mpt", "gpt-neox", "olmo", "jais", "jina-es", "jina-de", "gigachat",
         "jina-v2-es", "jina-v2-de", "jina-v1-en", "jina-v2-code", "roberta-bpe", "a.x-4.0",
         "mellum", "modern-bert", "exaone4"},
        {"gpt2", true, false, false});
    add({"trillion", "granite-docling"}, {"gpt2", false, false, false});
    add({"starcoder", "refact", "codeshell", "exaone", "minerva-7b", "mellum2"},
        {"starcoder", true, false, false});
    add({"command-r", "smollm"}, {"starcoder", false, false, false});
    add({"qwen2", "deepseek-r1-qwen", "kormo", "f2llmv2", "hunyuan", "grok-2", "solar-open"},
        {"qwen2", false, false, false});
    add({"stablelm2", "megrez"}, {"qwen2", true, false, false});
    add({"qwen35"}, {"qwen35", false, false, false});
    add({"poro-chat"}, {"poro", false, false, false});
    add({"bloom", "gpt3-finnish"}, {"poro", true, false, false});
    add({"viking"}, {"viking", false, false, false});
    add({"tekken"}, {"tekken", false, true, true});
    add({"gpt-4o", "llama4", "kanana2", "talkie", "minimax-m2"}, {"gpt4o", false, false, false});
    add({"bailingmoe", "bailingmoe2", "llada-moe"}, {"bailingmoe", false, false, false});
    add({"seed-coder"}, {"seed-coder", false, false, false});
    add({"gemma4", "granite-embed-multi-311m"}, {"gemma4", true, false, true, true});
    return t;
  }();
  return table;
}

}  // namespace

const PreTokenizerSpec* find_pre_tokenizer_spec(std::string_view pre_name) {
  static const std::map<std::string_view, PreTokenizerSpec> specs = [] {
    std::map<std::string_view, PreTokenizerSpec> out;
    for (const auto& [name, rule] : name_rules()) {
      out[name] = {families().at(rule.family).regexes, rule.clean_spaces, rule.ignore_merges,
                   rule.add_bos, rule.spm_style};
    }
    return out;
  }();
  auto it = specs.find(pre_name.empty() ? std::string_view("default") : pre_name);
  return it == specs.end() ? nullptr : &it->second;
}


// One compiled regex. PCRE2 code is read-only during matching and may be shared across threads.
struct PreTokenizer::Compiled {
  pcre2_code* code = nullptr;
  ~Compiled() { pcre2_code_free(code); }
};

namespace {

// Per-thread match state: match data with room for the whole-match pair, and a JIT stack grown
// on demand for patterns that backtrack deeply on long inputs.
class MatchScratch {
 public:
  MatchScratch()
      : data_(pcre2_match_data_create(1, nullptr)), context_(pcre2_match_context_create(nullptr)) {}
  ~MatchScratch() {
    if (jit_stack_) pcre2_jit_stack_free(jit_stack_);
    pcre2_match_context_free(context_);
    pcre2_match_data_free(data_);
  }
  MatchScratch(const MatchScratch&) = delete;
  MatchScratch& operator=(const MatchScratch&) = delete;

  // Runs one match; returns the PCRE2 result code.
  int match(const pcre2_code* code, std::string_view subject, size_t start) {
    const auto* bytes = reinterpret_cast<PCRE2_SPTR>(subject.data());
    int rc = pcre2_match(code, bytes, subject.size(), start, PCRE2_NO_UTF_CHECK, data_, context_);
    if (rc == PCRE2_ERROR_JIT_STACKLIMIT && jit_stack_ == nullptr) {
      jit_stack_ = pcre2_jit_stack_create(64 * 1024, 8 * 1024 * 1024, nullptr);
      pcre2_jit_stack_assign(context_, nullptr, jit_stack_);
      rc = pcre2_match(code, bytes, subject.size(), start, PCRE2_NO_UTF_CHECK, data_, context_);
    }
    return rc;
  }
  const PCRE2_SIZE* ovector() const { return pcre2_get_ovector_pointer(data_); }

 private:
  pcre2_match_data* data_;
  pcre2_match_context* context_;
  pcre2_jit_stack* jit_stack_ = nullptr;
};

MatchScratch& scratch() {
  thread_local MatchScratch instance;
  return instance;
}

// Steps over one UTF-8 character (the text is valid UTF-8 here).
size_t next_char(std::string_view text, size_t pos) {
  ++pos;
  while (pos < text.size() && (static_cast<uint8_t>(text[pos]) & 0xC0) == 0x80) ++pos;
  return pos;
}

}  // namespace

PreTokenizer::PreTokenizer(const std::vector<std::string_view>& regexes) {
  for (std::string_view pattern : regexes) {
    int error = 0;
    PCRE2_SIZE error_offset = 0;
    auto compiled = std::make_unique<Compiled>();
    compiled->code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(pattern.data()), pattern.size(),
                                   PCRE2_UTF | PCRE2_UCP | PCRE2_DOLLAR_ENDONLY, &error,
                                   &error_offset, nullptr);
    if (compiled->code == nullptr) {
      PCRE2_UCHAR message[256];
      pcre2_get_error_message(error, message, sizeof message);
      throw std::runtime_error("pre-tokenizer regex does not compile at offset " +
                               std::to_string(error_offset) + ": " +
                               reinterpret_cast<const char*>(message));
    }
    pcre2_jit_compile(compiled->code, PCRE2_JIT_COMPLETE);  // falls back to the interpreter
    regexes_.push_back(std::move(compiled));
  }
}

PreTokenizer::~PreTokenizer() = default;

void PreTokenizer::split_one(const Compiled& regex, std::string_view piece,
                             std::vector<std::string_view>& out) const {
  MatchScratch& state = scratch();
  size_t emitted = 0;  // end of what has been pushed so far
  size_t start = 0;
  while (start < piece.size()) {
    const int rc = state.match(regex.code, piece, start);
    if (rc < 0) break;  // no more matches, or the engine gave up: keep the rest whole
    const size_t begin = state.ovector()[0];
    const size_t end = state.ovector()[1];
    if (end <= begin) {  // empty match: move on by one character
      start = next_char(piece, begin);
      continue;
    }
    if (begin > emitted) out.push_back(piece.substr(emitted, begin - emitted));
    out.push_back(piece.substr(begin, end - begin));
    emitted = start = end;
  }
  if (emitted < piece.size()) out.push_back(piece.substr(emitted));
}

void PreTokenizer::split(std::string_view text, std::vector<std::string_view>& pieces) const {
  if (text.empty()) return;
  if (has_surrogate(text)) {
    // PCRE2 refuses surrogates: split a copy where each is U+E000 (private use, no category
    // either; also three bytes), and cut `text` where the copy was cut.
    std::string copy(text);
    for (size_t i = 0; i + 2 < copy.size(); ++i) {
      if (surrogate_at(copy, i)) {
        copy.replace(i, 3, "\xEE\x80\x80");
        i += 2;
      }
    }
    const size_t first = pieces.size();
    split(copy, pieces);
    for (size_t i = first; i < pieces.size(); ++i) {
      pieces[i] = text.substr(static_cast<size_t>(pieces[i].data() - copy.data()), pieces[i].size());
    }
    return;
  }
  std::vector<std::string_view> current{text};
  std::vector<std::string_view> next;
  for (const auto& regex : regexes_) {
    next.clear();
    for (std::string_view piece : current) split_one(*regex, piece, next);
    current.swap(next);
  }
  pieces.insert(pieces.end(), current.begin(), current.end());
}

}  // namespace engine::tokenizer
