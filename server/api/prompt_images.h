// Images in chat requests, whatever dialect they came in: the bytes a part carries (a data URI,
// base64), where they stand in the conversation, and how a rendered chat with images becomes
// prompt tokens plus the images' pixels for the scheduler (engine::PromptImage).
// Coroutine-free (work pool, fuzzer).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "engine/runtime/scheduler.h"
#include "server/api/app.h"
#include "server/api/chat_prompt.h"
#include "server/api/core/conversation.h"

namespace server {

// The text an image part becomes in the conversation the template renders: a U+FDD1 noncharacter
// around a random per-process nonce, which no client can forge; tokenize_with_images() finds it
// in the rendered text.
const std::string& image_placeholder();

// The bytes of standard or URL-safe base64 (padding optional, whitespace skipped). Throws
// ApiError 400 naming `where` for anything else.
std::string decode_base64(std::string_view b64, const std::string& where);

// The bytes of an image URL: a data URI (data:image/...;base64,...). Other URLs are refused with
// a 400 naming `where` (remote images are not fetched).
std::string image_url_bytes(std::string_view url, const std::string& where);

// Throws ApiError 400 when the request's images cannot be served: the model has no vision
// projector, or there are more than the server allows.
void check_image_count(const App& app, size_t n_images);

// The prompt tokens of a rendered chat whose text holds image_placeholder() once per image, in
// order: the text between them tokenized piece by piece (BOS with the first), each image's
// begin / end text (the projector's, e.g. <start_of_image>) beside it, and its positions holding
// engine::image_token_id of its pixels. `out` gets each image decoded, fitted and placed.
// Throws ApiError 400 naming the part of a broken or oversized image, or when the placeholders
// do not match the images (a template that dropped one).
std::vector<int32_t> tokenize_with_images(const App& app, RenderedChat chat, const std::vector<ImageInput>& images,
                                          std::vector<engine::PromptImage>& out);

}  // namespace server
