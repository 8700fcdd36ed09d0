#!/usr/bin/python3
"""Writes <template>.json: chat cases for the templates here, rendered by Jinja2 with the conventions of
../shared/templates/README.md (trim_blocks, lstrip_blocks, raise_exception, strftime_now at a fixed time, tojson as
json.dumps(ensure_ascii=False)). Run by hand when a template or case changes (needs python3-jinja2); the test
(tests/text/chat_template_test.cpp) compares ggufd's rendering with the stored text byte for byte."""
import datetime, json, os, sys
import jinja2
from jinja2.sandbox import ImmutableSandboxedEnvironment

NOW = "2026-11-22T12:00:00"
TEMPLATES = {  # template -> (bos, eos)
    "google-gemma-3-it.jinja": ("<bos>", "<eos>"),
    "openai-gpt-oss-120b.jinja": ("<|startoftext|>", "<|return|>"),
    "mistralai-Ministral-3-14B-Reasoning-2512.jinja": ("<s>", "</s>"),
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

def render(path, bos, eos, messages, agp):
    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True)
    def raise_exception(msg): raise jinja2.exceptions.TemplateError(msg)
    now = datetime.datetime.fromisoformat(NOW)
    env.globals.update(raise_exception=raise_exception, strftime_now=lambda fmt: now.strftime(fmt))
    env.filters["tojson"] = lambda x, indent=None, **kw: json.dumps(x, ensure_ascii=False, indent=indent)
    tmpl = env.from_string(open(path, encoding="utf-8").read())
    return tmpl.render(messages=messages, add_generation_prompt=agp, bos_token=bos, eos_token=eos)

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
