#include "engine/text/tokenizer/wordpiece.h"

#include <stdexcept>
#include <string>

namespace engine::tokenizer {

WordPieceEncoder::WordPieceEncoder(const Vocab& vocab) {
  throw std::runtime_error("tokenizer: WordPiece ('" + vocab.model_name() +
                           "') vocabularies are not supported yet");
}

void WordPieceEncoder::encode(std::string_view /*text*/, std::vector<int32_t>& /*out*/) const {}

}  // namespace engine::tokenizer
