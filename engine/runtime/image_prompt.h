// A prompt with images: text pieces tokenized around the images' spans, as llama.cpp's mtmd
// builds it (the projector's begin / end text beside each image, tokenized with the text).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "engine/vision/projector.h"

namespace engine {

class Tokenizer;

// A piece of prompt text and the positions in it where no control token may be taken (the
// request's own text: Tokenizer::encode's `guarded`).
struct TextPiece {
  std::string text;
  std::vector<size_t> guarded;
};

// The tokens of pieces[0] <image 0> pieces[1] ... <image n-1> pieces[n], each text tokenized on
// its own with control tokens parsed, as mtmd does (a SentencePiece vocabulary then puts its space
// prefix before each): piece k (BOS as the model adds it with the first only), image k's begin
// text, its n_tokens[k] positions holding image_ids[k], its end text, piece k + 1, ... image_at
// receives where each image's positions start. Needs pieces.size() == image_ids.size() + 1 ==
// n_tokens.size() + 1.
std::vector<int32_t> tokenize_around_images(const Tokenizer& tok, const ProjectorTraits& traits,
                                            const std::vector<TextPiece>& pieces, const std::vector<int32_t>& image_ids,
                                            const std::vector<int64_t>& n_tokens, std::vector<int64_t>& image_at);

}  // namespace engine
