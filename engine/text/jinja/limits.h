// Resource limits of one template render.
#pragma once

#include <cstddef>
#include <cstdint>

namespace engine::jinja {

// Exceeding any limit aborts the render with engine::TemplateError. They exist so that a hostile
// or broken template (from an untrusted model file) cannot hang the server, exhaust memory or
// overflow the stack. The defaults leave real chat templates far below every limit.
struct Limits {
  uint64_t max_steps = 20'000'000;      // evaluation steps (one per node, plus one per 64 bytes)
  size_t max_output_bytes = 16u << 20;  // rendered text, and any single string or JSON dump
  int max_eval_depth = 400;             // nested evaluation (expression height, blocks, calls)
  int max_call_depth = 48;              // nested macro calls (recursion)
  int64_t max_range = 100'000;          // items one range() may produce (as Jinja's sandbox)
};

}  // namespace engine::jinja
