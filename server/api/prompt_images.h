// Images in chat requests, whatever dialect they came in: the bytes a part carries (a data URI,
// base64) or the remote URL the server fetches for it (server/remote_media.h), where they stand in
// the conversation, and how a rendered chat with images becomes prompt tokens plus the images'
// pixels for the scheduler (engine::PromptImage).
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

// The bytes of a data URI (data:image/...;base64,...). Throws ApiError 400 naming `where` for
// anything else.
std::string data_uri_bytes(std::string_view uri, const std::string& where);

// The longest image URL taken (a longer one is a 400).
inline constexpr size_t kMaxImageUrl = 8192;

// The image an image URL names, for the part `where`: a data URI's bytes, or, when the server
// fetches remote images (--allow-remote-media), an http:// or https:// URL to fetch (`url` set,
// no bytes). Throws ApiError 400 naming `where`: an http(s) URL while remote images are off (code
// remote_image_not_allowed, the message names the flag), another scheme, a URL with spaces or
// control characters or over kMaxImageUrl bytes.
ImageInput image_from_url(const App& app, std::string_view url, const std::string& where);

// One remote image to fetch: its URL and the first part that named it.
struct RemoteImage {
  std::string url;
  std::string where;
};
// The distinct URLs of the conversation's remote images that have no bytes yet, in order.
std::vector<RemoteImage> remote_images(const std::vector<Message>& conversation);
// Gives every image of `conversation` whose url is `url` these bytes.
void set_remote_image(std::vector<Message>& conversation, const std::string& url, const std::string& bytes);
// Gives the remote images of `to` the bytes their URLs have in `from` (fetched there): for a
// dialect that keeps a second copy of the conversation (the Responses API's stored one).
void copy_remote_images(const std::vector<Message>& from, std::vector<Message>& to);

// Throws ApiError 400 when the request's images cannot be served: the model has no vision
// projector, or there are more than the server allows.
void check_image_count(const App& app, size_t n_images);

// The prompt tokens of a rendered chat whose text holds image_placeholder() once per image, in
// order (remote images fetched already): the text between them tokenized piece by piece (BOS with the first), each image's
// begin / end text (the projector's, e.g. <start_of_image>) beside it, and its positions holding
// engine::image_token_id of its pixels. `out` gets each image decoded, fitted and placed.
// Throws ApiError 400 naming the part of a broken or oversized image or of a remote one not
// fetched, or when the placeholders do not match the images (a template that dropped one).
std::vector<int32_t> tokenize_with_images(const App& app, RenderedChat chat, const std::vector<ImageInput>& images,
                                          std::vector<engine::PromptImage>& out);

}  // namespace server
