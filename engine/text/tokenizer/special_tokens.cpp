#include "engine/text/tokenizer/special_tokens.h"

#include <algorithm>
#include <cctype>
#include <map>

namespace engine::tokenizer {

void SpecialTokenMatcher::Trie::build(const Vocab& vocab, const std::vector<int32_t>& ids) {
  // Build with ordered maps, then flatten into the node/edge arrays.
  struct Building {
    int32_t token = kNoToken;
    std::map<uint8_t, uint32_t> children;
  };
  std::vector<Building> tree(1);
  for (int32_t id : ids) {
    uint32_t node = 0;
    for (char c : vocab.text(id)) {
      const auto byte = static_cast<uint8_t>(c);
      auto it = tree[node].children.find(byte);
      if (it == tree[node].children.end()) {
        tree.emplace_back();
        it = tree[node].children.emplace(byte, static_cast<uint32_t>(tree.size() - 1)).first;
      }
      node = it->second;
    }
    tree[node].token = id;
    first_byte[static_cast<uint8_t>(vocab.text(id)[0])] = true;
  }
  nodes.resize(tree.size());
  for (size_t i = 0; i < tree.size(); ++i) {
    nodes[i].token = tree[i].token;
    nodes[i].first_edge = static_cast<uint32_t>(edges.size());
    nodes[i].edge_count = static_cast<uint32_t>(tree[i].children.size());
    for (const auto& [byte, child_index] : tree[i].children) edges.push_back({byte, child_index});
  }
}

int32_t SpecialTokenMatcher::Trie::child(uint32_t node, uint8_t byte) const {
  const Node& n = nodes[node];
  const Edge* begin = edges.data() + n.first_edge;
  const Edge* end = begin + n.edge_count;
  const Edge* it = std::lower_bound(begin, end, byte,
                                    [](const Edge& e, uint8_t b) { return e.byte < b; });
  return it != end && it->byte == byte ? static_cast<int32_t>(it->child) : -1;
}

SpecialTokenMatcher::SpecialTokenMatcher(const Vocab& vocab) : vocab_(vocab) {
  constexpr uint16_t kCandidate = kAttrControl | kAttrUserDefined | kAttrUnknown;
  for (int32_t id = 0; id < vocab.size(); ++id) {
    if (vocab.has_attr(id, kCandidate)) order_.push_back(id);
  }
  std::stable_sort(order_.begin(), order_.end(), [&vocab](int32_t a, int32_t b) {
    return vocab.text(a).size() > vocab.text(b).size();
  });
  rank_.assign(vocab.size(), 0);
  std::vector<int32_t> user_defined;
  std::vector<int32_t> control;
  for (size_t i = 0; i < order_.size(); ++i) {
    const int32_t id = order_[i];
    rank_[id] = static_cast<uint32_t>(i);
    if (!vocab.has_attr(id, kAttrControl | kAttrUnknown)) {
      user_defined.push_back(id);
      continue;
    }
    control.push_back(id);
    const std::string_view t = vocab.text(id);
    for (uint32_t k = 1; k < t.size(); ++k) inner_[static_cast<uint8_t>(t[k])].emplace_back(id, k);
  }
  always_.build(vocab, user_defined);
  with_special_.build(vocab, order_);
  control_.build(vocab, control);
}

std::vector<SpecialTokenMatcher::Occurrence> SpecialTokenMatcher::find_occurrences(
    std::string_view text, const Trie& trie, std::span<const size_t> guarded) const {
  std::vector<Occurrence> found;
  if (trie.nodes.size() <= 1) return found;
  size_t g = 0;  // the first guarded position at or after `start`
  for (size_t start = 0; start < text.size(); ++start) {
    if (!trie.first_byte[static_cast<uint8_t>(text[start])]) continue;
    while (g < guarded.size() && guarded[g] < start) ++g;
    const size_t end = g < guarded.size() ? std::min(guarded[g], text.size()) : text.size();
    uint32_t node = 0;
    for (size_t i = start; i < end; ++i) {
      const int32_t next = trie.child(node, static_cast<uint8_t>(text[i]));
      if (next < 0) break;
      node = static_cast<uint32_t>(next);
      if (trie.nodes[node].token != kNoToken) {
        found.push_back({rank_[trie.nodes[node].token], start});
      }
    }
  }
  std::sort(found.begin(), found.end());
  return found;
}

void SpecialTokenMatcher::split_by_token(std::string_view text, int32_t token,
                                         const size_t* positions, size_t n_positions,
                                         std::vector<Fragment>& fragments) const {
  const size_t length = vocab_.text(token).size();
  const bool lstrip = vocab_.has_attr(token, kAttrLstrip);
  const bool rstrip = vocab_.has_attr(token, kAttrRstrip);
  const auto is_space = [&text](size_t i) {
    return std::isspace(static_cast<unsigned char>(text[i])) != 0;
  };
  std::vector<Fragment> result;
  result.reserve(fragments.size() + 2 * n_positions);
  size_t p = 0;
  for (const Fragment& fragment : fragments) {
    if (!fragment.is_text()) {
      result.push_back(fragment);
      continue;
    }
    size_t cursor = fragment.offset;
    const size_t end = fragment.offset + fragment.length;
    while (p < n_positions && positions[p] < cursor) ++p;
    while (p < n_positions && positions[p] + length <= end) {
      const size_t match = positions[p];
      size_t left_end = match;
      if (lstrip) {
        while (left_end > cursor && is_space(left_end - 1)) --left_end;
      }
      if (left_end > cursor) result.push_back({cursor, left_end - cursor, kNoToken});
      result.push_back({match, length, token});
      cursor = match + length;
      if (rstrip) {
        while (cursor < end && is_space(cursor)) ++cursor;
      }
      while (p < n_positions && positions[p] < cursor) ++p;
    }
    if (cursor < end) result.push_back({cursor, end - cursor, kNoToken});
  }
  fragments.swap(result);
}

std::vector<Fragment> SpecialTokenMatcher::partition(std::string_view text, bool parse_special,
                                                     std::span<const size_t> guarded) const {
  std::vector<Fragment> fragments;
  if (text.empty()) return fragments;
  fragments.push_back({0, text.size(), kNoToken});
  const std::vector<Occurrence> found =
      find_occurrences(text, parse_special ? with_special_ : always_, guarded);
  std::vector<size_t> positions;
  for (size_t i = 0; i < found.size();) {
    const uint32_t rank = found[i].rank;
    positions.clear();
    for (; i < found.size() && found[i].rank == rank; ++i) positions.push_back(found[i].offset);
    split_by_token(text, order_[rank], positions.data(), positions.size(), fragments);
  }
  return fragments;
}

// Whether text[0, m) equals some control token's text[k, k + m) for k >= 1, m = the shorter of the
// two rests: `text` begins in the middle of such a token.
bool SpecialTokenMatcher::starts_inside_control(std::string_view text) const {
  if (text.empty()) return false;
  for (const auto& [id, k] : inner_[static_cast<uint8_t>(text[0])]) {
    const std::string_view rest = vocab_.text(id).substr(k);
    const size_t m = std::min(rest.size(), text.size());
    if (text.compare(0, m, rest, 0, m) == 0) return true;
  }
  return false;
}

std::vector<size_t> SpecialTokenMatcher::special_starts(std::string_view text) const {
  std::vector<size_t> out;
  if (starts_inside_control(text)) out.push_back(0);
  if (control_.nodes.size() <= 1) return out;
  for (size_t start = 0; start < text.size(); ++start) {
    if (!control_.first_byte[static_cast<uint8_t>(text[start])]) continue;
    uint32_t node = 0;
    bool hit = false;
    size_t i = start;
    for (; i < text.size(); ++i) {
      const int32_t next = control_.child(node, static_cast<uint8_t>(text[i]));
      if (next < 0) break;
      node = static_cast<uint32_t>(next);
      if (control_.nodes[node].token != kNoToken) {
        hit = true;
        break;
      }
    }
    // A whole token, or the text ran out while still inside one.
    if ((hit || i == text.size()) && (out.empty() || out.back() != start)) out.push_back(start);
  }
  return out;
}

}  // namespace engine::tokenizer
