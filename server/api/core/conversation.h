// The conversation of a generation request, whatever dialect it came in: messages with typed
// parts (text, earlier reasoning, tool calls, tool results), and how it becomes the messages a
// chat template reads (Hugging Face's shape: role, content, tool_calls, tool_call_id,
// reasoning_content). Dialects (openai_chat/, openai_responses/, anthropic_messages/) build it;
// core/request.cpp renders it. Coroutine-free (work pool, fuzzer).
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "server/api/tool_request.h"

namespace server {

// One call of an earlier assistant turn.
struct CallRecord {
  std::optional<std::string> id;                      // absent when the client sent none
  std::string name;
  nlohmann::ordered_json arguments = nlohmann::ordered_json::object();  // keys in the order sent
};

// One image of a request: its encoded bytes and the part that held it ("messages[1].content[0]"),
// named in errors (prompt_images.h decodes it). A remote image (an http(s) URL, with
// --allow-remote-media) comes with its `url` and no bytes; the server fetches them
// (server/remote_media.h) before the request is prepared.
struct ImageInput {
  std::string bytes;
  std::string where;
  std::string url;  // "" unless remote
};

// One message. `role` is system, developer, user, assistant or tool (the dialects map theirs).
struct Message {
  enum class Content { kNone, kText, kParts };
  std::string role;
  Content form = Content::kText;     // kNone: no content (an assistant turn of calls only)
  std::vector<std::string> texts;    // kText: one string; kParts: one per text part (rendered as parts)
  // Its image parts in order (add_image); each stands in `texts` as image_placeholder() (kParts).
  std::vector<ImageInput> images;
  std::string reasoning;             // assistant: its earlier reasoning, handed back to the template
  std::vector<CallRecord> calls;     // assistant: the calls it made
  std::optional<std::string> call_id;  // tool: the call this is the result of
  std::optional<std::string> name;     // the message's `name` (tool: the function), when given
  // Other fields the dialect hands to the template as they are (chat: a message's own extra keys).
  nlohmann::ordered_json extra = nlohmann::ordered_json::object();

  static Message text(std::string role, std::string text) {
    Message m;
    m.role = std::move(role);
    m.texts.push_back(std::move(text));
    return m;
  }
  // The content as one string (parts joined).
  std::string joined() const;
  // Appends an image part (the content becomes parts).
  void add_image(ImageInput image);
};

// For dialects whose clients send several system-like messages (Responses' instructions and
// developer messages, Anthropic's system blocks and mid-conversation system turns): the leading
// system and developer messages become one system message (texts joined by a blank line), and a
// later one a user message, since many templates accept a system message only first and know no
// developer role.
void merge_system_messages(std::vector<Message>& messages);

// The messages as a chat template expects them (template_messages() applied: tools in the
// generic syntax, system text merged for templates without a system role). Call ids that the
// syntax's templates would refuse (Mistral: 9 letters and digits) are replaced by ids of that
// form derived from them, the same for a call and its result.
nlohmann::ordered_json template_conversation(const std::vector<Message>& messages, const ToolRequest& tools,
                                             const ChatFeatures& features);

}  // namespace server
