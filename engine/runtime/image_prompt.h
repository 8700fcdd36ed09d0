// A prompt with images: text pieces tokenized around the images' parts, as llama.cpp's mtmd
// builds it (each part's texts beside its positions, tokenized with the text).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "engine/vision/image.h"

namespace engine {

class Tokenizer;

// A piece of prompt text and the positions in it where no control token may be taken (the
// request's own text: Tokenizer::encode's `guarded`).
struct TextPiece {
  std::string text;
  std::vector<size_t> guarded;
};

// One part of an image in a prompt (engine::image_parts): the texts before and after it and its
// n_tokens positions, which hold `id`.
struct PromptPart {
  std::vector<PartText> before, after;
  int32_t id = 0;
  int64_t n_tokens = 0;
};

// The token of a text looked up (PartText::lookup): the first whose piece is exactly `text`, as
// mtmd's lookup_token; -1 when the vocabulary has none.
int32_t lookup_token(const Tokenizer& tok, const std::string& text);

// The tokens of pieces[0] <image 0> pieces[1] ... <image n-1> pieces[n], each text tokenized on
// its own with control tokens parsed, as mtmd does (a SentencePiece vocabulary then puts its space
// prefix before each): piece k (BOS as the model adds it with the first only), then each part of
// image k (its before texts, its n_tokens positions holding its id, its after texts), piece k + 1,
// ... part_at receives where each part's positions start, parts of all images in order. Needs
// pieces.size() == images.size() + 1. Throws std::invalid_argument for a looked-up text the
// vocabulary lacks (the server checks looked_up_texts() at load).
std::vector<int32_t> tokenize_around_images(const Tokenizer& tok, const std::vector<TextPiece>& pieces,
                                            const std::vector<std::vector<PromptPart>>& images,
                                            std::vector<int64_t>& part_at);

}  // namespace engine
