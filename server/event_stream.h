// Server-sent events for a streamed generation of any dialect: the formatter's frames
// (api/core/formatter.h) from the channel's events, and keep-alives while nothing else is sent.
#pragma once

#include <memory>

#include "server/api/app.h"
#include "server/api/core/formatter.h"
#include "server/channel.h"
#include "server/http.h"

namespace server {

// A ChunkSource over `channel`'s events for `n_choices` choices (`n_per_prompt` per prompt, for
// usage). The formatter's stream_open comes first, then each choice's start, tokens and finish;
// the first failed choice becomes its stream_fail; stream_close ends it. When nothing was sent for
// ServeSettings::keep_alive_ms (a long prefill, a wait in the queue), the formatter's keep_alive()
// goes out. Ownership: shares the channel and the formatter; borrows the App. Thread-safety: the
// session's strand only.
std::shared_ptr<ChunkSource> make_event_stream(std::shared_ptr<Channel> channel, int n_choices, int n_per_prompt,
                                               std::shared_ptr<const Formatter> format, App& app,
                                               RequestContext& ctx);

// A stream of one fixed body (the events of a request that failed before it started).
std::shared_ptr<ChunkSource> make_fixed_stream(std::string body);

}  // namespace server
