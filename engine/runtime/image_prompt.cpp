#include "engine/runtime/image_prompt.h"

#include <stdexcept>

#include "engine/text/tokenizer/tokenizer.h"

namespace engine {

int32_t lookup_token(const Tokenizer& tok, const std::string& text) {
  for (int32_t id = 0; id < tok.n_vocab(); ++id) {
    if (tok.piece(id, true) == text) return id;
  }
  return -1;
}

std::vector<int32_t> tokenize_around_images(const Tokenizer& tok, const std::vector<TextPiece>& pieces,
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
      const int32_t id = lookup_token(tok, t.text);
      if (id < 0) throw std::invalid_argument("the vocabulary has no token '" + t.text + "' for the image layout");
      tokens.push_back(id);
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
