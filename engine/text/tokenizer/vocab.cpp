#include "engine/text/tokenizer/vocab.h"

#include <algorithm>
#include <stdexcept>
#include <string>

#include "engine/text/tokenizer/pre_tokenizer.h"
#include "gguf/file.h"

namespace engine::tokenizer {

namespace {

constexpr std::string_view kPrefix = "tokenizer.ggml.";

std::string key(std::string_view name) { return std::string(kPrefix) + std::string(name); }

[[noreturn]] void fail(const std::string& message) {
  throw std::runtime_error("tokenizer: " + message);
}

// Reads an optional id key. Like the reference loader, an id outside the vocabulary (e.g. the
// 0xFFFFFFFF that some converters write for "none") leaves the default in place.
void read_id(const gguf::File& file, std::string_view name, int32_t vocab_size, int32_t& id) {
  if (id >= vocab_size) id = kNoToken;
  const gguf::Value* value = file.find(key(name));
  if (value == nullptr || value->is_array()) return;
  int64_t raw = -1;
  try {
    if (value->type() == gguf::ValueType::kU64) {
      const uint64_t u = value->as_u64();
      raw = u < static_cast<uint64_t>(vocab_size) ? static_cast<int64_t>(u) : -1;
    } else {
      raw = value->as_i64();
    }
  } catch (const std::exception&) {
    return;  // not an integer: ignore like an out-of-range id
  }
  if (raw >= 0 && raw < vocab_size) id = static_cast<int32_t>(raw);
}

void read_bool(const gguf::File& file, std::string_view name, bool& flag) {
  const gguf::Value* value = file.find(key(name));
  if (value != nullptr && value->type() == gguf::ValueType::kBool) flag = value->as_bool();
}

uint16_t attr_from_type(TokenType type) {
  switch (type) {
    case TokenType::kNormal: return kAttrNormal;
    case TokenType::kUnknown: return kAttrUnknown;
    case TokenType::kControl: return kAttrControl;
    case TokenType::kUserDefined: return kAttrUserDefined;
    case TokenType::kUnused: return kAttrUnused;
    case TokenType::kByte: return kAttrByte;
    default: return 0;
  }
}

// Token texts that end generation whatever their declared type (reference EOG rules).
constexpr std::string_view kEogTexts[] = {
    "<|eot_id|>", "<|im_end|>", "<|end|>", "<|return|>", "<|call|>", "<|flush|>", "<|calls|>",
    "<end_of_turn>", "<|endoftext|>", "</s>", "<|eom_id|>", "<EOT>", "_<EOT>", "[EOT]", "[EOS]",
    "<|end_of_text|>", "<end_of_utterance>", "<eos>", "<turn|>", "<|tool_response>",
    "<\xEF\xBD\x9C" "end\xE2\x96\x81of\xE2\x96\x81sentence\xEF\xBD\x9C>", "[e~["};

constexpr std::string_view kEotTexts[] = {
    "<|eot_id|>", "<|im_end|>", "<|end|>", "<end_of_turn>", "<|endoftext|>", "<|end_of_text|>",
    "<EOT>", "_<EOT>", "[EOT]",
    "<\xEF\xBD\x9C" "end\xE2\x96\x81of\xE2\x96\x81sentence\xEF\xBD\x9C>", "<end_of_utterance>"};

template <size_t N>
bool one_of(std::string_view text, const std::string_view (&list)[N]) {
  return std::find(std::begin(list), std::end(list), text) != std::end(list);
}

}  // namespace

std::unique_ptr<Vocab> Vocab::load(const gguf::File& file) {
  std::unique_ptr<Vocab> vocab(new Vocab());
  vocab->read_kind(file);
  vocab->read_tokens(file);
  if (vocab->kind_ == VocabKind::kBytePairEncoding) vocab->read_merges(file);
  vocab->read_special_ids(file);
  vocab->read_flags(file);
  vocab->detect_special_by_text();
  vocab->collect_eog();
  return vocab;
}

void Vocab::read_kind(const gguf::File& file) {
  const auto model = file.find_string(key("model"));
  if (!model) fail("missing " + key("model"));
  model_name_ = std::string(*model);
  const std::string pre = std::string(file.find_string(key("pre")).value_or(""));
  if (model_name_ == "llama") {
    kind_ = VocabKind::kSentencePiece;
    special_.bos = 1;
    special_.eos = 2;
    special_.unk = 0;
    flags_.add_space_prefix = true;
    flags_.add_bos = true;
  } else if (model_name_ == "gpt2" || model_name_ == "gemma4") {
    kind_ = VocabKind::kBytePairEncoding;
    // gemma4: no default special ids, and the pre-tokenizer is gemma4's whatever the file says
    // (llama.cpp's loader sets it so).
    const std::string pre_type = model_name_ == "gemma4" ? "gemma4" : pre;
    const PreTokenizerSpec* spec = find_pre_tokenizer_spec(pre_type);
    if (spec == nullptr) fail("unknown pre-tokenizer type (" + key("pre") + "): '" + pre + "'");
    pre_name_ = pre_type.empty() ? "default" : pre_type;
    if (model_name_ == "gpt2") special_.bos = special_.eos = 11;
    flags_.clean_spaces = spec->clean_spaces;
    flags_.ignore_merges = spec->ignore_merges;
    flags_.add_bos = spec->add_bos;
    flags_.spm_style = spec->spm_style;
  } else if (model_name_ == "bert") {
    kind_ = VocabKind::kWordPiece;
    special_.bos = 101;
    special_.unk = 100;
    special_.sep = 102;
    special_.pad = 0;
    special_.mask = 103;
    flags_.add_bos = true;
    flags_.add_sep = true;
    flags_.clean_spaces = true;
  } else {
    fail("unsupported tokenizer model (" + key("model") + "): '" + model_name_ + "'");
  }
}

void Vocab::read_tokens(const gguf::File& file) {
  const gguf::Value* tokens = file.find_array(key("tokens"));
  if (tokens == nullptr) fail("missing " + key("tokens"));
  if (tokens->element_type() != gguf::ValueType::kString) fail(key("tokens") + " is not strings");
  const uint64_t n = tokens->size();
  if (n == 0 || n > static_cast<uint64_t>(INT32_MAX - 1)) fail("bad vocabulary size");

  const gguf::Value* scores = file.find_array(key("scores"));
  if (scores != nullptr && scores->size() < n) fail(key("scores") + " is shorter than the vocab");
  const gguf::Value* types = file.find_array(key("token_type"));
  if (types != nullptr && types->size() < n) fail(key("token_type") + " is shorter than the vocab");

  std::vector<std::string> texts(n);
  size_t total = 0;
  for (uint64_t i = 0; i < n; ++i) {
    texts[i] = std::string(tokens->string_at(i));
    if (texts[i].empty()) texts[i] = "[EMPTY_" + std::to_string(i) + "]";
    total += texts[i].size();
  }
  arena_.reserve(total);
  offsets_.reserve(n + 1);
  offsets_.push_back(0);
  for (const std::string& t : texts) {
    arena_.insert(arena_.end(), t.begin(), t.end());
    offsets_.push_back(arena_.size());
    max_token_length_ = std::max(max_token_length_, t.size());
  }
  ids_.reserve(n);
  types_.resize(n, TokenType::kNormal);
  attrs_.resize(n, kAttrNormal);
  if (scores != nullptr) scores_.resize(n);
  for (int32_t id = 0; id < static_cast<int32_t>(n); ++id) {
    auto [it, inserted] = ids_.emplace(text(id), id);
    if (!inserted) {
      fail("duplicate token in vocabulary: '" + std::string(text(id)) + "' has ids " +
           std::to_string(it->second) + " and " + std::to_string(id));
    }
    if (scores != nullptr) scores_[id] = static_cast<float>(scores->f64_at(id));
    if (types != nullptr) {
      types_[id] = static_cast<TokenType>(types->i64_at(id));
      attrs_[id] = attr_from_type(types_[id]);
    }
  }
}

void Vocab::read_merges(const gguf::File& file) {
  const gguf::Value* merges = file.find_array(key("merges"));
  if (merges == nullptr) fail("missing " + key("merges") + " for a BPE vocabulary");
  if (merges->element_type() != gguf::ValueType::kString) fail(key("merges") + " is not strings");
  merges_.reserve(merges->size());
  for (uint64_t i = 0; i < merges->size(); ++i) {
    const std::string_view line = merges->string_at(i);
    const size_t space = line.size() > 1 ? line.find(' ', 1) : std::string_view::npos;
    if (space == std::string_view::npos) {
      merges_.emplace_back();  // keeps ranks aligned with the file
    } else {
      merges_.emplace_back(std::string(line.substr(0, space)), std::string(line.substr(space + 1)));
    }
  }
}

void Vocab::read_special_ids(const gguf::File& file) {
  const int32_t n = size();
  read_id(file, "bos_token_id", n, special_.bos);
  read_id(file, "eos_token_id", n, special_.eos);
  read_id(file, "eot_token_id", n, special_.eot);
  read_id(file, "eom_token_id", n, special_.eom);
  read_id(file, "unknown_token_id", n, special_.unk);
  read_id(file, "seperator_token_id", n, special_.sep);
  read_id(file, "padding_token_id", n, special_.pad);
  read_id(file, "mask_token_id", n, special_.mask);
  read_id(file, "fim_pre_token_id", n, special_.fim_pre);
  read_id(file, "fim_suf_token_id", n, special_.fim_suf);
  read_id(file, "fim_mid_token_id", n, special_.fim_mid);
  read_id(file, "fim_pad_token_id", n, special_.fim_pad);
  read_id(file, "fim_rep_token_id", n, special_.fim_rep);
  read_id(file, "fim_sep_token_id", n, special_.fim_sep);
  read_id(file, "prefix_token_id", n, special_.fim_pre);  // deprecated spellings
  read_id(file, "suffix_token_id", n, special_.fim_suf);
  read_id(file, "middle_token_id", n, special_.fim_mid);
}

void Vocab::read_flags(const gguf::File& file) {
  read_bool(file, "add_space_prefix", flags_.add_space_prefix);
  read_bool(file, "remove_extra_whitespaces", flags_.remove_extra_whitespaces);
  read_bool(file, "add_bos_token", flags_.add_bos);
  read_bool(file, "add_eos_token", flags_.add_eos);
  read_bool(file, "add_sep_token", flags_.add_sep);
  if (flags_.spm_style) flags_.add_bos = true;  // llama.cpp overrides a false add_bos_token for Gemma 4
  if (flags_.add_bos && special_.bos == kNoToken) {
    fail(flags_.spm_style ? "no bos_token_id, and a " + pre_name_ + " vocabulary always adds BOS"
                          : "add_bos_token is true but bos_token_id is not set");
  }
  if (flags_.add_eos && special_.eos == kNoToken) fail("add_eos_token is true but eos_token_id is not set");
  if (flags_.add_sep && special_.sep == kNoToken) fail("add_sep_token is true but seperator_token_id is not set");
  read_bool(file, "normalizer.lowercase", flags_.lowercase);
  flags_.strip_accents = flags_.lowercase;
  read_bool(file, "normalizer.strip_accents", flags_.strip_accents);
  if (kind_ == VocabKind::kWordPiece && !file.find(key("normalizer.lowercase"))) {
    flags_.lowercase = flags_.strip_accents = true;  // BERT uncased, as the reference assumes
  }
}

// Fills eot/eom/fim ids that the metadata left unset from well-known token texts, marking those
// tokens as control tokens (lowest id wins when several texts match).
void Vocab::detect_special_by_text() {
  struct Rule {
    int32_t* id;
    std::vector<std::string_view> texts;
  };
  const std::string_view deepseek_fim_begin = "<\xEF\xBD\x9C" "fim\xE2\x96\x81" "begin\xEF\xBD\x9C>";
  const std::string_view deepseek_fim_hole = "<\xEF\xBD\x9C" "fim\xE2\x96\x81" "hole\xEF\xBD\x9C>";
  const std::string_view deepseek_fim_end = "<\xEF\xBD\x9C" "fim\xE2\x96\x81" "end\xEF\xBD\x9C>";
  std::vector<Rule> rules = {
      {&special_.eot, {std::begin(kEotTexts), std::end(kEotTexts)}},
      {&special_.eom, {"<|eom_id|>"}},
      {&special_.fim_pre, {"<|fim_prefix|>", "<fim-prefix>", "<fim_prefix>", deepseek_fim_begin,
                           "<PRE>", "\xE2\x96\x81<PRE>", "<|code_prefix|>", "<|prefix|>"}},
      {&special_.fim_suf, {"<|fim_suffix|>", "<fim-suffix>", "<fim_suffix>", deepseek_fim_hole,
                           "<SUF>", "\xE2\x96\x81<SUF>", "<|code_suffix|>", "<|suffix|>"}},
      {&special_.fim_mid, {"<|fim_middle|>", "<fim-middle>", "<fim_middle>", deepseek_fim_end,
                           "<MID>", "\xE2\x96\x81<MID>", "<|code_middle|>", "<|middle|>"}},
      {&special_.fim_pad, {"<|fim_pad|>", "<fim-pad>", "<fim_pad>", "<PAD>", "[PAD]"}},
      {&special_.fim_rep, {"<|fim_repo|>", "<|repo_name|>", "<fim-repo>", "<REPO>", "<reponame>"}},
      {&special_.fim_sep, {"<|file_sep|>"}},
  };
  for (Rule& rule : rules) {
    if (*rule.id != kNoToken) continue;
    int32_t best = kNoToken;
    for (std::string_view t : rule.texts) {
      const int32_t id = find(t);
      if (id != kNoToken && (best == kNoToken || id < best)) best = id;
    }
    if (best != kNoToken) {
      *rule.id = best;
      attrs_[best] |= kAttrControl;
    }
  }
  for (int32_t id = 0; id < size(); ++id) {
    if ((attrs_[id] & kAttrControl) && text(id).find("unused") != std::string_view::npos) {
      attrs_[id] |= kAttrUnused;
    }
    const std::string_view t = text(id);
    if (t == "<|channel|>" || t == "<|message|>" || t == "<|start|>" || t == "<|constrain|>") {
      attrs_[id] = kAttrUserDefined;  // gpt-oss: always rendered
    }
  }
}

void Vocab::collect_eog() {
  std::vector<int32_t> eog;
  for (int32_t id : {special_.fim_pad, special_.fim_rep, special_.fim_sep, special_.eos,
                     special_.eot, special_.eom}) {
    if (id != kNoToken) eog.push_back(id);
  }
  int32_t end_id = kNoToken, s_id = kNoToken;
  bool has_return = false, has_call = false, has_flush = false, has_tool_response = false;
  for (int32_t id = 0; id < size(); ++id) {
    const std::string_view t = text(id);
    if (!one_of(t, kEogTexts)) continue;
    eog.push_back(id);
    attrs_[id] |= kAttrControl;
    has_return |= t == "<|return|>";
    has_call |= t == "<|call|>" || t == "<|calls|>";
    has_flush |= t == "<|flush|>";
    has_tool_response |= t == "<|tool_response>";
    if (t == "<|end|>") end_id = id;
    if (t == "</s>") s_id = id;
  }
  std::sort(eog.begin(), eog.end());
  eog.erase(std::unique(eog.begin(), eog.end()), eog.end());
  auto drop = [&eog](int32_t id) { eog.erase(std::remove(eog.begin(), eog.end(), id), eog.end()); };
  // o200k_harmony / solar-open: "<|end|>" separates messages there; it does not end generation.
  if (end_id != kNoToken && has_call && (has_return || has_flush)) {
    drop(end_id);
    attrs_[end_id] = kAttrUserDefined;
  }
  // Gemma 4 / PaddleOCR: "</s>" is ordinary text there.
  if (s_id != kNoToken && has_tool_response) {
    drop(s_id);
    attrs_[s_id] = kAttrNormal;
  }
  eog_ids_ = std::move(eog);
}

bool Vocab::is_eog(int32_t id) const {
  return std::binary_search(eog_ids_.begin(), eog_ids_.end(), id);
}

}  // namespace engine::tokenizer
