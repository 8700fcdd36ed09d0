#include "engine/runtime/image_prompt.h"

#include <algorithm>
#include <stdexcept>

#include "engine/text/tokenizer/tokenizer.h"

namespace engine {

LookedUpTokens lookup_tokens(const Tokenizer& tok, const std::vector<std::string>& texts) {
  LookedUpTokens ids;
  if (texts.empty()) return ids;
  for (int32_t id = 0; id < tok.n_vocab() && ids.size() < texts.size(); ++id) {
    const std::string piece(tok.piece(id, true));
    if (std::find(texts.begin(), texts.end(), piece) != texts.end()) ids.emplace(piece, id);  // keeps the first
  }
  return ids;
}

std::vector<int32_t> tokenize_around_images(const Tokenizer& tok, const LookedUpTokens& looked_up,
                                            const std::vector<TextPiece>& pieces,
                                            const std::vector<std::vector<PromptPart>>& images,
                                            std::vector<int64_t>& part_at) {
  if (pieces.size() != images.size() + 1) {
    throw std::invalid_argument("tokenize_around_images: one more piece than images");
  }
  std::vector<int32_t> tokens;
  const auto append = [&](const std::string& text, bool add_special, const std::vector<size_t>& guarded) {
    if (text.empty() && !add_special) return;
    const std::vector<int32_t> t = tok.encode(text, add_special, true, guarded);
    tokens.insert(tokens.end(), t.begin(), t.end());
  };
  const auto append_texts = [&](const std::vector<PartText>& texts) {  // (the server's texts: never guarded)
    for (const PartText& t : texts) {
      if (!t.lookup) {
        append(t.text, false, {});
        continue;
      }
      const auto id = looked_up.find(t.text);
      if (id == looked_up.end()) {
        throw std::invalid_argument("the vocabulary has no token '" + t.text + "' for the image layout");
      }
      tokens.push_back(id->second);
    }
  };
  for (size_t k = 0; k < pieces.size(); ++k) {
    append(pieces[k].text, k == 0, pieces[k].guarded);
    if (k == images.size()) break;
    for (const PromptPart& part : images[k]) {
      append_texts(part.before);
      part_at.push_back(static_cast<int64_t>(tokens.size()));
      tokens.insert(tokens.end(), static_cast<size_t>(part.n_tokens), part.id);
      append_texts(part.after);
    }
  }
  return tokens;
}

}  // namespace engine
