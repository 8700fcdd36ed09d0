// A tokenizer vocabulary read from GGUF metadata (tokenizer.ggml.*): token texts, scores, types,
// merges, special token ids and the flags that steer encoding and decoding.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace gguf {
class File;
}

namespace engine::tokenizer {

inline constexpr int32_t kNoToken = -1;

// tokenizer.ggml.token_type values.
enum class TokenType : int32_t {
  kUndefined = 0,
  kNormal = 1,
  kUnknown = 2,
  kControl = 3,
  kUserDefined = 4,
  kUnused = 5,
  kByte = 6,
};

// Attribute bits derived from the token type, adjusted by the same text-based rules the reference
// implementation applies (e.g. "<|im_end|>" is always treated as a control token).
enum TokenAttr : uint16_t {
  kAttrUnknown = 1 << 0,
  kAttrUnused = 1 << 1,
  kAttrNormal = 1 << 2,
  kAttrControl = 1 << 3,
  kAttrUserDefined = 1 << 4,
  kAttrByte = 1 << 5,
  kAttrLstrip = 1 << 6,  // swallow whitespace before the token when partitioning
  kAttrRstrip = 1 << 7,  // swallow whitespace after it
};

enum class VocabKind { kSentencePiece, kBytePairEncoding, kWordPiece };

struct SpecialIds {
  int32_t bos = kNoToken, eos = kNoToken, eot = kNoToken, eom = kNoToken;
  int32_t unk = kNoToken, sep = kNoToken, pad = kNoToken, mask = kNoToken;
  int32_t fim_pre = kNoToken, fim_suf = kNoToken, fim_mid = kNoToken;
  int32_t fim_pad = kNoToken, fim_rep = kNoToken, fim_sep = kNoToken;
};

struct VocabFlags {
  bool add_bos = false;
  bool add_eos = false;
  bool add_sep = false;
  bool add_space_prefix = false;      // SPM: prefix raw text with a space (Gemma: off)
  bool remove_extra_whitespaces = false;
  bool clean_spaces = false;          // reference detokenizer's " ," -> "," clean-up (not applied)
  bool ignore_merges = false;         // BPE: a word that is itself a token skips the merges
  bool spm_style = false;             // BPE over U+2581-escaped UTF-8 (gemma4), PreTokenizerSpec
  bool lowercase = false;             // WordPiece normalizer
  bool strip_accents = false;         // WordPiece normalizer
};

// Immutable vocabulary. Token texts live in one buffer; all string_views point into it.
// Thread-safety: immutable after load(); safe to share.
class Vocab {
 public:
  // Reads tokenizer.ggml.* from `file`. Throws std::runtime_error naming the problem: unknown
  // tokenizer.ggml.model or tokenizer.ggml.pre, missing or malformed arrays, duplicate tokens,
  // add_bos/add_eos set without the matching id.
  static std::unique_ptr<Vocab> load(const gguf::File& file);

  VocabKind kind() const { return kind_; }
  const std::string& model_name() const { return model_name_; }
  const std::string& pre_name() const { return pre_name_; }  // "" for SPM / WordPiece
  int32_t size() const { return static_cast<int32_t>(offsets_.size()) - 1; }
  bool contains(int32_t id) const { return id >= 0 && id < size(); }

  std::string_view text(int32_t id) const {
    return {arena_.data() + offsets_[id], offsets_[id + 1] - offsets_[id]};
  }
  float score(int32_t id) const { return scores_.empty() ? 0.0f : scores_[id]; }
  TokenType type(int32_t id) const { return types_[id]; }
  uint16_t attr(int32_t id) const { return attrs_[id]; }
  bool has_attr(int32_t id, uint16_t mask) const { return (attrs_[id] & mask) != 0; }

  // Token id of an exact text, or kNoToken.
  int32_t find(std::string_view text) const {
    auto it = ids_.find(text);
    return it == ids_.end() ? kNoToken : it->second;
  }
  size_t max_token_length() const { return max_token_length_; }

  const SpecialIds& special() const { return special_; }
  const VocabFlags& flags() const { return flags_; }
  bool is_eog(int32_t id) const;
  const std::vector<int32_t>& eog_ids() const { return eog_ids_; }

  // BPE merges in rank order as (left, right) texts; empty for other kinds.
  const std::vector<std::pair<std::string, std::string>>& merges() const { return merges_; }

 private:
  Vocab() = default;
  void read_kind(const gguf::File& file);
  void read_tokens(const gguf::File& file);
  void read_merges(const gguf::File& file);
  void read_special_ids(const gguf::File& file);
  void read_flags(const gguf::File& file);
  void detect_special_by_text();
  void collect_eog();

  VocabKind kind_ = VocabKind::kSentencePiece;
  std::string model_name_;
  std::string pre_name_;
  std::vector<char> arena_;       // all token texts, back to back
  std::vector<size_t> offsets_;   // token i is arena_[offsets_[i], offsets_[i+1])
  std::vector<float> scores_;
  std::vector<TokenType> types_;
  std::vector<uint16_t> attrs_;
  std::unordered_map<std::string_view, int32_t> ids_;
  size_t max_token_length_ = 0;
  std::vector<std::pair<std::string, std::string>> merges_;
  SpecialIds special_;
  VocabFlags flags_;
  std::vector<int32_t> eog_ids_;  // sorted
};

}  // namespace engine::tokenizer
