// Server-sent events for a streamed generation: "data: {...}\n\n" chunks from the channel in the
// endpoint's format, then "data: [DONE]".
#pragma once

#include <memory>

#include "server/api/app.h"
#include "server/api/response_format.h"
#include "server/channel.h"
#include "server/http.h"

namespace server {

// A ChunkSource over `channel`'s events for `n_choices` choices (`n_per_prompt` per prompt, for
// usage); with `include_usage`, a usage chunk before [DONE]. A failed choice becomes one error
// event (api_error's error_json). Ownership: shares the channel and the formatter; borrows the
// App. Thread-safety: the session's strand only.
std::shared_ptr<ChunkSource> make_event_stream(std::shared_ptr<Channel> channel, int n_choices, int n_per_prompt,
                                               bool include_usage, std::shared_ptr<const ResponseFormatter> format,
                                               App& app, RequestContext& ctx);

}  // namespace server
