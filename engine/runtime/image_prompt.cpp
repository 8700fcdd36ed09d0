#include "engine/runtime/image_prompt.h"

#include <stdexcept>

#include "engine/text/tokenizer/tokenizer.h"

namespace engine {

std::vector<int32_t> tokenize_around_images(const Tokenizer& tok, const ProjectorTraits& traits,
                                            const std::vector<TextPiece>& pieces, const std::vector<int32_t>& image_ids,
                                            const std::vector<int64_t>& n_tokens, std::vector<int64_t>& image_at) {
  if (pieces.size() != image_ids.size() + 1 || n_tokens.size() != image_ids.size()) {
    throw std::invalid_argument("tokenize_around_images: one more piece than images, one count per image");
  }
  std::vector<int32_t> tokens;
  const auto append = [&](const std::string& text, bool add_special, const std::vector<size_t>& guarded) {
    if (text.empty() && !add_special) return;
    const std::vector<int32_t> t = tok.encode(text, add_special, true, guarded);
    tokens.insert(tokens.end(), t.begin(), t.end());
  };
  for (size_t k = 0; k < pieces.size(); ++k) {
    append(pieces[k].text, k == 0, pieces[k].guarded);
    if (k == image_ids.size()) break;
    append(traits.image_begin, false, {});  // (the server's texts: never guarded)
    image_at.push_back(static_cast<int64_t>(tokens.size()));
    tokens.insert(tokens.end(), static_cast<size_t>(n_tokens[k]), image_ids[k]);
    append(traits.image_end, false, {});
  }
  return tokens;
}

}  // namespace engine
