#!/usr/bin/python3
"""Writes <template>.json: chat cases for the templates here, rendered by Jinja2 with the conventions of
../shared/templates/README.md (trim_blocks, lstrip_blocks, raise_exception, strftime_now at a fixed time, tojson as
json.dumps(ensure_ascii=False)), and tools/<template>.json: tool-calling cases for the templates that render tools
themselves (the `tools` variable; messages as an OpenAI client sends them, rendered as servers hand them over:
arguments parsed into an object, null content as ""). Run by hand when a template or case changes (needs
python3-jinja2); the tests (tests/text/chat_template_test.cpp, chat_template_tools_test.cpp,
tests/server/chat_tools_render_test.cpp, tests/tools/template_test.cpp) compare ggufd's rendering with the stored text
byte for byte."""
import datetime, json, os, sys
import jinja2, jinja2.ext, jinja2.nodes
from jinja2.sandbox import ImmutableSandboxedEnvironment

NOW = "2026-11-22T12:00:00"
TEMPLATES = {  # template -> (bos, eos)
    "google-gemma-3-it.jinja": ("<bos>", "<eos>"),
    "openai-gpt-oss-120b.jinja": ("<|startoftext|>", "<|return|>"),
    "mistralai-Ministral-3-14B-Reasoning-2512.jinja": ("<s>", "</s>"),
    "Qwen-Qwen3.5-4B.jinja": ("<|endoftext|>", "<|im_end|>"),
    "Qwen-Qwen3-Coder.jinja": ("<|endoftext|>", "<|im_end|>"),
    "google-gemma-4-31B-it.jinja": ("<bos>", "<eos>"),
    "google-gemma-4-31B-it-interleaved.jinja": ("<bos>", "<eos>"),
    "LiquidAI-LFM2-8B-A1B.jinja": ("<|startoftext|>", "<|im_end|>"),
    "LiquidAI-LFM2.5-8B-A1B.jinja": ("<|startoftext|>", "<|im_end|>"),
    "LiquidAI-LFM2.5-Instruct.jinja": ("<|startoftext|>", "<|im_end|>"),
}
CASES = [
    ("single_user", [{"role": "user", "content": "Hello there"}], True),
    ("system_and_user", [{"role": "system", "content": "You are terse."}, {"role": "user", "content": "Hi"}], True),
    ("multi_turn", [{"role": "system", "content": "Be kind."}, {"role": "user", "content": "2+2?"},
                    {"role": "assistant", "content": "4"}, {"role": "user", "content": "And 3+3?"}], True),
    ("no_generation_prompt", [{"role": "user", "content": "  padded  "}, {"role": "assistant", "content": "ok "}], False),
    ("unicode", [{"role": "user", "content": "naïve café — 日本語 \"quotes\""}], True),
    ("content_parts", [{"role": "user", "content": [{"type": "text", "text": "part one"}, {"type": "text", "text": "part two"}]}], True),
    ("not_alternating", [{"role": "user", "content": "a"}, {"role": "user", "content": "b"}], True),
]

# Tool cases: (name, messages as a client sends them, tools). All with add_generation_prompt.
WEATHER = {"type": "function", "function": {"name": "get_weather", "description": "Current weather in a city",
           "parameters": {"type": "object", "properties": {
               "city": {"type": "string", "description": "City name"},
               "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]}}, "required": ["city"]}}}
SEARCH = {"type": "function", "function": {"name": "search_web", "description": "Search the web",
          "parameters": {"type": "object", "properties": {"query": {"type": "string"}, "max_results": {"type": "integer"}},
                         "required": ["query"]}}}
# Every branch of gpt-oss's TypeScript rendering of a schema: arrays of scalars and of objects, a union of types,
# oneOf, nullable, defaults (plain, enum), nested objects, no parameters at all.
ALARM = {"type": "function", "function": {"name": "set_alarm", "description": "Set an alarm",
         "parameters": {"type": "object", "properties": {
             "time": {"type": "string", "description": "HH:MM, 24 h"},
             "days": {"type": "array", "items": {"type": "string"}},
             "volume": {"type": "number", "default": 0.5},
             "repeat": {"type": "boolean", "default": False},
             "label": {"type": "string", "nullable": True},
             "tone": {"type": "string", "enum": ["beep", "chime"], "default": "beep"},
             "snooze": {"type": ["integer", "null"]},
             "when": {"oneOf": [{"type": "string", "description": "a date"}, {"type": "integer"}]},
             "steps": {"type": "array", "items": {"type": "object", "properties": {"at": {"type": "integer"}}}},
             "options": {"type": "object", "properties": {"vibrate": {"type": "boolean"}, "led": {"type": "string"}},
                         "required": ["vibrate"]}},
             "required": ["time"]}}}
NOW_TOOL = {"type": "function", "function": {"name": "get_time", "description": "The current time",
            "parameters": {"type": "object", "properties": {}}}}
TOOLS = [WEATHER, SEARCH]
CALL = {"id": "call_0001", "type": "function",
        "function": {"name": "get_weather", "arguments": "{\"city\": \"Paris\", \"unit\": \"celsius\"}"}}
CALL2 = {"id": "call_0002", "type": "function",
         "function": {"name": "search_web", "arguments": "{\"query\": \"Paris events\", \"max_results\": 3}"}}
ASK = {"role": "user", "content": "What's the weather in Paris?"}
RESULT = {"role": "tool", "tool_call_id": "call_0001", "name": "get_weather", "content": "{\"temp\": 18, \"sky\": \"clear\"}"}
TOOL_CASES = {
    "openai-gpt-oss-120b.jinja": [
        ("tool_defs", [{"role": "system", "content": "You are a helpful assistant."}, ASK], TOOLS),
        ("tool_defs_no_system", [ASK], TOOLS),
        ("tool_schema_types", [{"role": "user", "content": "Wake me at 7."}], [ALARM, NOW_TOOL]),
        ("tool_round_trip", [ASK, {"role": "assistant", "content": None, "tool_calls": [CALL]}, RESULT], TOOLS),
        # the answer after the results: the call's analysis is dropped once a final message follows
        ("tool_then_answer", [{"role": "system", "content": "Be brief."}, ASK,
                              {"role": "assistant", "content": "", "tool_calls": [CALL]}, RESULT,
                              {"role": "assistant", "content": "18 C and clear."}, {"role": "user", "content": "Thanks!"}],
         TOOLS),
        # gpt-oss renders one call per assistant turn (the first) and names results after it
        ("tool_parallel", [{"role": "user", "content": "Weather and events in Paris?"},
                           {"role": "assistant", "content": "", "tool_calls": [CALL, CALL2]},
                           {"role": "tool", "tool_call_id": "call_0001", "name": "get_weather", "content": "18 C, clear"},
                           {"role": "tool", "tool_call_id": "call_0002", "name": "search_web", "content": "A concert at 8 pm."}],
         TOOLS),
        # reasoning passed back with a call: its analysis message precedes the call until a final answer
        ("reasoning_with_call", [ASK, {"role": "assistant", "content": None, "thinking": "The user wants Paris weather.",
                                       "tool_calls": [CALL]}, RESULT], TOOLS),
        # an assistant turn's text beside a call is rendered as its analysis
        ("content_with_call", [ASK, {"role": "assistant", "content": "Let me check.", "tool_calls": [CALL]}, RESULT],
         TOOLS),
        # reasoning of an earlier answer is dropped
        ("reasoning_earlier_turn", [{"role": "user", "content": "2+2?"},
                                    {"role": "assistant", "content": "4", "thinking": "Simple sum."},
                                    {"role": "user", "content": "And 3+3?"}], TOOLS),
        ("content_and_thinking_refused", [ASK, {"role": "assistant", "content": "Let me check.", "thinking": "Weather.",
                                                "tool_calls": [CALL]}, RESULT], TOOLS),
        ("tool_result_without_call_refused", [ASK, RESULT], TOOLS),
    ],
}

# Calls whose arguments are of every JSON type (the XML syntax renders non-strings as JSON or Python text, Gemma 4
# its own notation), and the cases the 2026 templates share: definitions, calls, results, answers, reasoning.
SETTINGS = {"type": "function", "function": {"name": "apply_settings", "description": "Apply settings",
            "parameters": {"type": "object", "properties": {
                "level": {"type": "integer"}, "ratio": {"type": "number"}, "enabled": {"type": "boolean"},
                "tags": {"type": "array", "items": {"type": "string"}},
                "limits": {"type": "object", "properties": {"max": {"type": "integer"}}},
                "note": {"type": "string", "nullable": True}}, "required": ["level"]}}}
CALL3 = {"id": "call_0003", "type": "function",
         "function": {"name": "apply_settings", "arguments": json.dumps(
             {"level": 3, "ratio": 0.25, "enabled": True, "tags": ["a", "b c"], "limits": {"max": 10},
              "note": "line one\nline \"two\""})}}
REASONED = {"role": "assistant", "content": None, "reasoning_content": "The user wants Paris weather.",
            "tool_calls": [CALL]}
MODERN_CASES = [
    ("tool_defs", [{"role": "system", "content": "You are a helpful assistant."}, ASK], TOOLS),
    ("tool_defs_no_system", [ASK], TOOLS),
    ("tool_schema_types", [{"role": "user", "content": "Wake me at 7."}], [ALARM, NOW_TOOL, SETTINGS]),
    ("tool_round_trip", [ASK, {"role": "assistant", "content": None, "tool_calls": [CALL]}, RESULT], TOOLS),
    ("tool_then_answer", [{"role": "system", "content": "Be brief."}, ASK,
                          {"role": "assistant", "content": "", "tool_calls": [CALL]}, RESULT,
                          {"role": "assistant", "content": "18 C and clear."}, {"role": "user", "content": "Thanks!"}],
     TOOLS),
    ("tool_parallel", [{"role": "user", "content": "Weather and events in Paris?"},
                       {"role": "assistant", "content": "", "tool_calls": [CALL, CALL2]},
                       {"role": "tool", "tool_call_id": "call_0001", "name": "get_weather", "content": "18 C, clear"},
                       {"role": "tool", "tool_call_id": "call_0002", "name": "search_web", "content": "A concert at 8 pm."}],
     TOOLS),
    ("argument_types", [{"role": "user", "content": "Set it up."},
                        {"role": "assistant", "content": None, "tool_calls": [CALL3]},
                        {"role": "tool", "tool_call_id": "call_0003", "name": "apply_settings", "content": "done"}],
     [SETTINGS]),
    ("reasoning_with_call", [ASK, REASONED, RESULT], TOOLS),
    ("reasoning_with_call_answered", [ASK, REASONED, RESULT,
                                      {"role": "assistant", "content": "18 C.", "reasoning_content": "Report it."},
                                      {"role": "user", "content": "Thanks!"}], TOOLS),
    ("content_with_call", [ASK, {"role": "assistant", "content": "Let me check.", "tool_calls": [CALL]}, RESULT],
     TOOLS),
    ("reasoning_earlier_turn", [{"role": "user", "content": "2+2?"},
                                {"role": "assistant", "content": "4", "reasoning_content": "Simple sum."},
                                {"role": "user", "content": "And 3+3?"}], TOOLS),
    ("thinking_enabled", [ASK], TOOLS, {"enable_thinking": True}),
    ("thinking_disabled", [ASK], TOOLS, {"enable_thinking": False}),
]
for _name in ["Qwen-Qwen3.5-4B.jinja", "Qwen-Qwen3-Coder.jinja", "google-gemma-4-31B-it.jinja",
              "google-gemma-4-31B-it-interleaved.jinja", "LiquidAI-LFM2-8B-A1B.jinja", "LiquidAI-LFM2.5-8B-A1B.jinja",
              "LiquidAI-LFM2.5-Instruct.jinja"]:
    TOOL_CASES[_name] = MODERN_CASES

def as_template_message(m):
    """An OpenAI client's message as servers hand it to a template."""
    m = json.loads(json.dumps(m))
    if "content" in m and m["content"] is None: m["content"] = ""
    for key in ["reasoning_content", "thinking"]:  # earlier reasoning under both names templates read
        if key in m: m.setdefault("thinking" if key == "reasoning_content" else "reasoning_content", m[key])
    for c in m.get("tool_calls", []):
        if isinstance(c["function"].get("arguments"), str): c["function"]["arguments"] = json.loads(c["function"]["arguments"])
    return m

class Generation(jinja2.ext.Extension):
    """{% generation %}...{% endgeneration %} (LFM2.5; transformers' AssistantTracker): renders its body."""
    tags = {"generation"}
    def parse(self, parser):
        lineno = next(parser.stream).lineno
        body = parser.parse_statements(("name:endgeneration",), drop_needle=True)
        return jinja2.nodes.Scope(body, lineno=lineno)

def render(path, bos, eos, messages, agp, tools=None, variables=None):
    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True, extensions=[Generation])
    def raise_exception(msg): raise jinja2.exceptions.TemplateError(msg)
    now = datetime.datetime.fromisoformat(NOW)
    env.globals.update(raise_exception=raise_exception, strftime_now=lambda fmt: now.strftime(fmt))
    env.filters["tojson"] = lambda x, indent=None, **kw: json.dumps(x, ensure_ascii=False, indent=indent)
    tmpl = env.from_string(open(path, encoding="utf-8").read())
    extra = dict(variables or {})
    if tools is not None: extra["tools"] = tools
    return tmpl.render(messages=messages, add_generation_prompt=agp, bos_token=bos, eos_token=eos, **extra)

here = os.path.dirname(os.path.abspath(__file__))
for name, (bos, eos) in TEMPLATES.items():
    cases = []
    for cname, messages, agp in CASES:
        c = {"name": cname, "messages": messages, "add_generation_prompt": agp, "bos_token": bos, "eos_token": eos}
        try:
            c["expected"] = render(os.path.join(here, name), bos, eos, messages, agp)
        except jinja2.exceptions.TemplateError as e:
            if type(e) is not jinja2.exceptions.TemplateError: raise
            c["expected_error"] = str(e)
        except TypeError:  # the template cannot take this input at all (gpt-oss: content parts)
            continue
        cases.append(c)
    out = os.path.join(here, name.replace(".jinja", ".json"))
    json.dump({"template": name, "now": NOW, "cases": cases}, open(out, "w", encoding="utf-8"), ensure_ascii=False, indent=1)
    print(out, len(cases), "cases", sum("expected_error" in c for c in cases), "errors")

os.makedirs(os.path.join(here, "tools"), exist_ok=True)
for name, cases_in in TOOL_CASES.items():
    bos, eos = TEMPLATES[name]
    cases = []
    for cname, messages, tools, *variables in cases_in:
        c = {"name": cname, "messages": messages, "tools": tools, "add_generation_prompt": True, "bos_token": bos,
             "eos_token": eos}
        if variables: c["variables"] = variables[0]
        try:
            c["expected"] = render(os.path.join(here, name), bos, eos, [as_template_message(m) for m in messages], True,
                                   tools, variables[0] if variables else None)
        except jinja2.exceptions.TemplateError as e:
            if type(e) is not jinja2.exceptions.TemplateError: raise
            c["expected_error"] = str(e)
        cases.append(c)
    out = os.path.join(here, "tools", name.replace(".jinja", ".json"))
    json.dump({"template": "../" + name, "now": NOW, "cases": cases}, open(out, "w", encoding="utf-8"),
              ensure_ascii=False, indent=1)
    print(out, len(cases), "cases", sum("expected_error" in c for c in cases), "errors")
