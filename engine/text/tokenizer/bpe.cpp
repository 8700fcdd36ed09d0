#include "engine/text/tokenizer/bpe.h"

#include <algorithm>
#include <bit>
#include <stdexcept>

#include "engine/text/tokenizer/spm.h"
#include "engine/text/tokenizer/utf8.h"

namespace engine::tokenizer {

namespace {

bool maps_to_itself(uint8_t b) { return (b >= 33 && b <= 126) || (b >= 161 && b <= 172) || b >= 174; }

struct ByteMaps {
  std::array<uint32_t, 256> to_cp{};
  std::unordered_map<uint32_t, uint8_t> from_cp;
  ByteMaps() {
    uint32_t next = 256;
    for (int b = 0; b < 256; ++b) {
      to_cp[b] = maps_to_itself(static_cast<uint8_t>(b)) ? b : next++;
      from_cp[to_cp[b]] = static_cast<uint8_t>(b);
    }
  }
};

const ByteMaps& byte_maps() {
  static const ByteMaps maps;
  return maps;
}

// Min-heap order: lowest rank first, then leftmost.
bool later(const BpeScratch::Candidate& a, const BpeScratch::Candidate& b) {
  return a.rank != b.rank ? a.rank > b.rank : a.left > b.left;
}

}  // namespace

uint32_t byte_to_code_point(uint8_t byte) { return byte_maps().to_cp[byte]; }

int byte_from_code_point(uint32_t code_point) {
  const auto& map = byte_maps().from_cp;
  auto it = map.find(code_point);
  return it == map.end() ? -1 : it->second;
}

void MergeTable::build(const Vocab& vocab) {
  const auto& merges = vocab.merges();
  const size_t capacity = std::bit_ceil(std::max<size_t>(16, merges.size() * 2));
  shift_ = 64 - std::countr_zero(capacity);
  buckets_.assign(capacity, Bucket{});
  std::string joined;
  for (size_t rank = 0; rank < merges.size(); ++rank) {
    const auto& [left_text, right_text] = merges[rank];
    const int32_t left = vocab.find(left_text);
    const int32_t right = vocab.find(right_text);
    joined = left_text + right_text;
    const int32_t merged = vocab.find(joined);
    if (left == kNoToken || right == kNoToken || merged == kNoToken) continue;
    const uint64_t key = pack(left, right);
    size_t i = bucket_of(key);
    while (buckets_[i].key != kEmpty && buckets_[i].key != key) i = (i + 1) & (capacity - 1);
    if (buckets_[i].key == kEmpty) buckets_[i] = {key, {static_cast<int32_t>(rank), merged}};
  }
}

const MergeTable::Merge* MergeTable::find(int32_t left, int32_t right) const {
  const uint64_t key = pack(left, right);
  const size_t mask = buckets_.size() - 1;
  for (size_t i = bucket_of(key);; i = (i + 1) & mask) {
    if (buckets_[i].key == key) return &buckets_[i].merge;
    if (buckets_[i].key == kEmpty) return nullptr;
  }
}

BpeEncoder::BpeEncoder(const Vocab& vocab) : vocab_(vocab) {
  const PreTokenizerSpec* spec = find_pre_tokenizer_spec(vocab.pre_name());
  if (spec == nullptr) {
    throw std::runtime_error("tokenizer: unknown pre-tokenizer type: '" + vocab.pre_name() + "'");
  }
  pre_tokenizer_ = std::make_unique<PreTokenizer>(spec->regexes);
  ignore_merges_ = vocab.flags().ignore_merges;
  spm_style_ = spec->spm_style;
  merges_.build(vocab);
  std::string text;
  for (int b = 0; b < 256; ++b) {
    text.clear();
    if (spm_style_) {
      static constexpr char kHex[] = "0123456789ABCDEF";
      text = {'<', '0', 'x', kHex[b >> 4], kHex[b & 15], '>'};
    } else {
      append_utf8(text, byte_to_code_point(static_cast<uint8_t>(b)));
    }
    byte_tokens_[b] = vocab.find(text);
  }
}

void BpeEncoder::encode(std::string_view fragment, BpeScratch& scratch,
                        std::vector<int32_t>& out) const {
  if (!is_valid_utf8(fragment)) {
    scratch.sanitized.push_back(sanitize_utf8(fragment, /*keep_surrogates=*/true));
    fragment = scratch.sanitized.back();
  }
  if (spm_style_ && fragment.find(' ') != std::string_view::npos) {
    scratch.sanitized.push_back(escape_spaces(fragment));
    fragment = scratch.sanitized.back();
  }
  scratch.words.clear();
  pre_tokenizer_->split(fragment, scratch.words);
  for (std::string_view word : scratch.words) {
    auto hit = scratch.cache.find(word);
    if (hit != scratch.cache.end()) {
      const auto* ids = scratch.cached_ids.data() + hit->second.begin;
      out.insert(out.end(), ids, ids + hit->second.size);
      continue;
    }
    const size_t before = out.size();
    if (spm_style_) {
      encode_spm_word(word, scratch, out);
    } else {
      encode_word(word, scratch, out);
    }
    const auto begin = static_cast<uint32_t>(scratch.cached_ids.size());
    scratch.cached_ids.insert(scratch.cached_ids.end(), out.begin() + before, out.end());
    scratch.cache.emplace(word, BpeScratch::Span{begin, static_cast<uint32_t>(out.size() - before)});
  }
}

void BpeEncoder::encode_word(std::string_view word, BpeScratch& scratch,
                             std::vector<int32_t>& out) const {
  if (ignore_merges_) {
    scratch.encoded.clear();
    for (char c : word) append_utf8(scratch.encoded, byte_to_code_point(static_cast<uint8_t>(c)));
    const int32_t whole = vocab_.find(scratch.encoded);
    if (whole != kNoToken) {
      out.push_back(whole);
      return;
    }
  }
  auto& symbols = scratch.symbols;
  symbols.clear();
  const auto n = static_cast<int32_t>(word.size());
  for (int32_t i = 0; i < n; ++i) {
    symbols.push_back({byte_tokens_[static_cast<uint8_t>(word[i])], i - 1, i + 1 < n ? i + 1 : -1});
  }
  merge_symbols(scratch);
  for (int32_t i = 0; i != -1; i = symbols[i].next) {
    if (symbols[i].id != kNoToken) {
      out.push_back(symbols[i].id);
    } else {
      emit_unmapped_byte(static_cast<uint8_t>(word[i]), out);
    }
  }
}

// One symbol per UTF-8 character (its token, or kNoToken); after the merges, a symbol without a
// token becomes the <0xXX> tokens of its bytes, dropping bytes the vocabulary lacks. A run of
// newlines that is itself a token is taken whole (llama.cpp's Gemma 4 fix, its PR 21343).
void BpeEncoder::encode_spm_word(std::string_view word, BpeScratch& scratch,
                                 std::vector<int32_t>& out) const {
  if (word.find_first_not_of('\n') == std::string_view::npos) {
    const int32_t whole = vocab_.find(word);
    if (whole != kNoToken) {
      out.push_back(whole);
      return;
    }
  }
  auto& symbols = scratch.symbols;
  auto& starts = scratch.char_starts;
  symbols.clear();
  starts.clear();
  for (size_t offset = 0; offset < word.size();) {
    const size_t length =
        std::min(word.size() - offset, utf8_sequence_length(static_cast<uint8_t>(word[offset])));
    const auto i = static_cast<int32_t>(symbols.size());
    symbols.push_back({vocab_.find(word.substr(offset, length)), i - 1, i + 1});
    starts.push_back(static_cast<uint32_t>(offset));
    offset += length;
  }
  if (symbols.empty()) return;
  symbols.back().next = -1;
  starts.push_back(static_cast<uint32_t>(word.size()));
  merge_symbols(scratch);
  for (int32_t i = 0; i != -1; i = symbols[i].next) {
    if (symbols[i].id != kNoToken) {
      out.push_back(symbols[i].id);
      continue;
    }
    for (uint32_t b = starts[i]; b < starts[i + 1]; ++b) {
      const int32_t id = byte_tokens_[static_cast<uint8_t>(word[b])];
      if (id != kNoToken) out.push_back(id);
    }
  }
}

// Applies merges lowest rank first (leftmost on ties) with a priority queue; stale candidates
// (a side already merged into something else) are skipped when popped.
void BpeEncoder::merge_symbols(BpeScratch& scratch) const {
  auto& symbols = scratch.symbols;
  auto& heap = scratch.heap;
  heap.clear();
  auto consider = [&](int32_t left, int32_t right) {
    if (left < 0 || right < 0) return;
    const int32_t left_id = symbols[left].id, right_id = symbols[right].id;
    if (left_id == kNoToken || right_id == kNoToken) return;
    const MergeTable::Merge* merge = merges_.find(left_id, right_id);
    if (merge == nullptr) return;
    heap.push_back({merge->rank, left, right, left_id, right_id});
    std::push_heap(heap.begin(), heap.end(), later);
  };
  for (int32_t i = 0; i + 1 < static_cast<int32_t>(symbols.size()); ++i) consider(i, i + 1);
  while (!heap.empty()) {
    std::pop_heap(heap.begin(), heap.end(), later);
    const BpeScratch::Candidate top = heap.back();
    heap.pop_back();
    auto& left = symbols[top.left];
    auto& right = symbols[top.right];
    if (left.next != top.right || left.id != top.left_id || right.id != top.right_id) continue;
    left.id = merges_.find(top.left_id, top.right_id)->merged;
    left.next = right.next;
    if (right.next >= 0) symbols[right.next].prev = top.left;
    right.id = kNoToken;
    right.next = right.prev = -2;  // dead
    consider(left.prev, top.left);
    consider(top.left, left.next);
  }
}

// A byte whose code point is not a token: like the reference, try each byte of the code point's
// UTF-8 form as a one-byte token, dropping what is not found.
void BpeEncoder::emit_unmapped_byte(uint8_t byte, std::vector<int32_t>& out) const {
  std::string text;
  append_utf8(text, byte_to_code_point(byte));
  for (char c : text) {
    const int32_t id = vocab_.find(std::string_view(&c, 1));
    if (id != kNoToken) out.push_back(id);
  }
}

}  // namespace engine::tokenizer
