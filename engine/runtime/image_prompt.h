// A prompt with images: text pieces tokenized around the images' parts, as llama.cpp's mtmd
// builds it (each part's texts beside its positions, tokenized with the text).
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
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

// The ids of the texts a projector's layout looks up (PartText::lookup, looked_up_texts()): the
// first token whose piece is exactly the text, as mtmd's lookup_token. Found in one scan of the
// vocabulary, once per model (mtmd scans it on every lookup); a text the vocabulary lacks is absent.
using LookedUpTokens = std::map<std::string, int32_t>;
LookedUpTokens lookup_tokens(const Tokenizer& tok, const std::vector<std::string>& texts);

// The tokens of pieces[0] <image 0> pieces[1] ... <image n-1> pieces[n], each text tokenized on
// its own with control tokens parsed, as mtmd does (a SentencePiece vocabulary then puts its space
// prefix before each): piece k (BOS as the model adds it with the first only), then each part of
// image k (its before texts, its n_tokens positions holding its id, its after texts), piece k + 1,
// ... part_at receives where each part's positions start, parts of all images in order. Needs
// pieces.size() == images.size() + 1. A looked-up text's id comes from `looked_up`; throws
// std::invalid_argument for one it lacks (the server refuses such a pairing at load).
std::vector<int32_t> tokenize_around_images(const Tokenizer& tok, const LookedUpTokens& looked_up,
                                            const std::vector<TextPiece>& pieces,
                                            const std::vector<std::vector<PromptPart>>& images,
                                            std::vector<int64_t>& part_at);

}  // namespace engine
