// libFuzzer target: arbitrary bytes as a chat template, parsed and rendered with a small fixed
// conversation (with tools). The only acceptable failure is engine::TemplateError; tighter
// resource limits than the defaults keep every input fast without changing what is reachable.
#include <cstddef>
#include <cstdint>
#include <ctime>
#include <string_view>

#include "engine/text/chat_template.h"

namespace {

using engine::jinja::Value;

engine::ChatInput make_input() {
  engine::ChatInput input;
  input.messages = Value::array({
      Value::object({{"role", "system"}, {"content", "Be brief."}}),
      Value::object({{"role", "user"}, {"content", "  Héllo <b>\n"}}),
      Value::object(
          {{"role", "assistant"},
           {"content", "<think>x</think>ok"},
           {"tool_calls",
            Value::array({Value::object(
                {{"id", "call_0001"},
                 {"type", "function"},
                 {"function",
                  Value::object({{"name", "f"}, {"arguments", Value::object({{"a", 1}})}})}})})}}),
      Value::object({{"role", "tool"}, {"tool_call_id", "call_0001"}, {"content", "{\"r\": 2}"}}),
  });
  input.tools = Value::array({Value::object(
      {{"type", "function"},
       {"function",
        Value::object({{"name", "f"}, {"parameters", Value::object({{"type", "object"}})}})}})});
  input.add_generation_prompt = true;
  input.bos_token = "<s>";
  input.eos_token = "</s>";
  input.extra_variables = Value::object({{"enable_thinking", false}});
  input.clock = [] {
    std::tm tm{};
    tm.tm_year = 126;
    tm.tm_mon = 10;
    tm.tm_mday = 22;
    tm.tm_hour = 12;
    tm.tm_wday = 0;
    tm.tm_yday = 325;
    return tm;
  };
  return input;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const engine::ChatInput input = make_input();  // immutable after first use
  engine::ChatTemplateOptions options;
  options.limits.max_steps = 50'000;
  options.limits.max_output_bytes = 256u << 10;
  try {
    const std::string_view source(reinterpret_cast<const char*>(data), size);
    const engine::ChatTemplate tmpl = engine::ChatTemplate::parse(source, options);
    (void)tmpl.render(input);
  } catch (const engine::TemplateError&) {
  }
  return 0;
}
