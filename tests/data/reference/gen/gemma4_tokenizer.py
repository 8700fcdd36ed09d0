#!/usr/bin/env python3
"""Makes ../gemma4-pretokenizer.json and ../gemma4-tokenizer.json from llama.cpp's own answers.

  gemma4_tokenizer.py LLAMA_SRC VOCAB_REF PRETOK_REF

LLAMA_SRC: the llama.cpp b10108 source tree (for models/ggml-vocab-gemma-4.gguf.inp);
VOCAB_REF, PRETOK_REF: vocab_ref.cpp and pretok_ref.cpp built by build_ref.sh.

1. gemma4-pretokenizer.json: the words llama.cpp's BPE session cuts each input of
   ggml-vocab-gemma-4.gguf.inp into (spaces escaped to U+2581, then unicode_regex_split with the
   gemma4 regex). The real vocabulary file is not available, so its .out ids cannot be checked.
2. gemma4-tokenizer.json: a small Gemma-4-style vocabulary (tokenizer.ggml.model "gemma4": BPE
   over U+2581-escaped UTF-8 with <0xXX> byte fallback, Gemma 4's special tokens), trained here by
   a plain BPE on a few sentences, written as a vocabulary-only GGUF and loaded by libllama;
   the JSON keeps the metadata (so a test rebuilds the same file), every token's attribute,
   pieces and end-of-generation flag, and the ids and detokenized text of each input.

gguf-py needs numpy, which this machine lacks; the GGUF writer below is the format's few lines.
"""
import json
import os
import re
import struct
import subprocess
import sys
import tempfile
from collections import Counter

HERE = os.path.dirname(os.path.abspath(__file__))
OUT_DIR = os.path.dirname(HERE)
SEP = "\n__ggml_vocab_test__\n"
GEMMA4_REGEX = "[^\\n]+|[\\n]+"  # llama-vocab.cpp, LLAMA_VOCAB_PRE_TYPE_GEMMA4
SPACE = "\u2581"

# llama.cpp token types
NORMAL, UNKNOWN, CONTROL, USER_DEFINED, UNUSED, BYTE = 1, 2, 3, 4, 5, 6

# Gemma 4's special tokens as its converter (conversion/gemma.py) types them: the tool and
# channel markers USER_DEFINED ("always render"), the rest CONTROL. "</s>" is here to check the
# rule that drops it from the end-of-generation set when "<|tool_response>" exists.
SPECIALS = [
    ("<pad>", CONTROL), ("<eos>", CONTROL), ("<bos>", CONTROL), ("<unk>", UNKNOWN),
    ("<mask>", CONTROL), ("<|turn>", CONTROL), ("<turn|>", CONTROL),
    ("<|tool_response>", USER_DEFINED), ("<tool_response|>", USER_DEFINED),
    ("<|tool_call>", USER_DEFINED), ("<tool_call|>", USER_DEFINED),
    ("<|channel>", USER_DEFINED), ("<channel|>", USER_DEFINED), ('<|"|>', USER_DEFINED),
    ("</s>", CONTROL), ("<unused0>", CONTROL), ("<unused1>", UNUSED),
]
# Byte tokens: all but 0xA6, so one byte of a fallback is dropped, as llama.cpp drops it.
MISSING_BYTES = {0xA6}

CORPUS = """The quick brown fox jumps over the lazy dog. The dog sleeps; the fox runs.
Hello world! Hello, world! This is a test of the tokenizer, and this is only a test.
In the beginning there were tokens, and the tokens were merged, pair by pair, into words.
Numbers like 1, 22, 333 and 4096 are split into digits: 0 1 2 3 4 5 6 7 8 9.
Code: def main(argv): return len(argv) + 1  # comment
    indented    with    spaces   and	tabs
нещо на Български нещо на Български
Äpfel und Birnen, Äpfel und Birnen.
中文 中文 中文
I've been 'told he's there, 'RE you sure? 'We'Ve a'lL
"""


def escape(text):
    return text.replace(" ", SPACE)


def train(corpus, n_merges):
    """Plain BPE: words are U+2581-runs with what follows; characters seen once are barriers."""
    words = Counter()
    for line in escape(corpus).split("\n"):
        for w in re.findall(SPACE + "*[^" + SPACE + "]+|" + SPACE + "+", line):
            words[w] += 1
    chars = Counter()
    for w, n in words.items():
        for c in w:
            chars[c] += n
    alphabet = sorted((c for c, n in chars.items() if n >= 2), key=lambda c: (-chars[c], c))
    known = set(alphabet)
    segments = []  # (symbols, count)
    for w, n in sorted(words.items()):
        for seg in re.split("[^" + re.escape("".join(alphabet)) + "]", w) if alphabet else [w]:
            if seg:
                segments.append((list(seg), n))
    merges = []
    for _ in range(n_merges):
        pairs = Counter()
        for syms, n in segments:
            for a, b in zip(syms, syms[1:]):
                pairs[(a, b)] += n
        if not pairs:
            break
        best = min(pairs, key=lambda p: (-pairs[p], p))
        if pairs[best] < 2:
            break
        merges.append(best)
        for syms, _ in segments:
            i = 0
            while i + 1 < len(syms):
                if (syms[i], syms[i + 1]) == best:
                    syms[i:i + 2] = [best[0] + best[1]]
                i += 1
    assert all(c in known for c in alphabet)
    return alphabet, merges


def build_vocab():
    tokens = [t for t, _ in SPECIALS]
    types = [k for _, k in SPECIALS]
    for b in range(256):
        if b not in MISSING_BYTES:
            tokens.append("<0x%02X>" % b)
            types.append(BYTE)
    alphabet, merges = train(CORPUS, 220)
    # Newlines never reach the merges except as runs of "\n" (the pre-tokenizer cuts them out):
    # "\n\n" is a merge, "\n\n\n\n" a token without one (llama.cpp takes a newline run that is
    # a token whole, PR 21343), "\n\n\n" neither.
    merges = [("\n", "\n")] + merges
    for t in ["\n", "\n\n", "\n\n\n\n"] + alphabet + [a + b for a, b in merges]:
        if t not in tokens:
            tokens.append(t)
            types.append(NORMAL)
    scores = [-float(i) for i in range(len(tokens))]
    merge_lines = [a + " " + b for a, b in merges]
    kv = [
        ("general.architecture", "string", "gemma4"),
        ("tokenizer.ggml.model", "string", "gemma4"),
        ("tokenizer.ggml.pre", "string", "gemma4"),
        ("tokenizer.ggml.tokens", "string_array", tokens),
        ("tokenizer.ggml.scores", "f32_array", scores),
        ("tokenizer.ggml.token_type", "i32_array", types),
        ("tokenizer.ggml.merges", "string_array", merge_lines),
        ("tokenizer.ggml.bos_token_id", "u32", 2),
        ("tokenizer.ggml.eos_token_id", "u32", 1),
        ("tokenizer.ggml.unknown_token_id", "u32", 3),
        ("tokenizer.ggml.padding_token_id", "u32", 0),
        ("tokenizer.ggml.mask_token_id", "u32", 4),
        ("tokenizer.ggml.add_space_prefix", "bool", False),
        # false on purpose: llama.cpp turns it on for gemma4 whatever the file says
        ("tokenizer.ggml.add_bos_token", "bool", False),
        ("tokenizer.ggml.add_eos_token", "bool", False),
    ]
    return kv


def gguf_bytes(kv):
    def s(x):
        b = x.encode("utf-8")
        return struct.pack("<Q", len(b)) + b

    out = b"GGUF" + struct.pack("<IQQ", 3, 0, len(kv))
    for key, typ, val in kv:
        out += s(key)
        if typ == "string":
            out += struct.pack("<I", 8) + s(val)
        elif typ == "u32":
            out += struct.pack("<II", 4, val)
        elif typ == "bool":
            out += struct.pack("<IB", 7, 1 if val else 0)
        elif typ == "string_array":
            out += struct.pack("<IIQ", 9, 8, len(val)) + b"".join(s(v) for v in val)
        elif typ == "f32_array":
            out += struct.pack("<IIQ", 9, 6, len(val)) + b"".join(struct.pack("<f", v) for v in val)
        elif typ == "i32_array":
            out += struct.pack("<IIQ", 9, 5, len(val)) + b"".join(struct.pack("<i", v) for v in val)
        else:
            raise ValueError(typ)
    return out + b"\0" * (-len(out) % 32)


EXTRA_CASES = [
    "<|turn>user\nWhat is 2+2?<turn|>\n<|turn>model\n",
    "<bos>Hello</s>world <eos> <unk><mask><pad>",
    '<|tool_call>call:f{x:<|"|>y<|"|>}<tool_call|><|tool_response>',
    "<tool_response|>\n<unused0> and <unused1> and <|channel>thought<channel|>",
    "<|turn incomplete <turn| markers",
    "\n\n\n\n",
    "a\n\n\nb\n\n\n\nc\n\n\n\n\n",
    "  spaced   out  \t\n  ",
    SPACE + " literal " + SPACE * 2 + " marks",
    "\U0001F999\U0001F999 llama \u03a9mega \u2211 \u4e2d\u6587",
    "The the THE tHe, the fox's dog's tokens.",
    "a\r\nb\r\n\r\nc",
]
# Not UTF-8: stray bytes, a cut character, a surrogate, an overlong NUL.
INVALID_CASES = [b"ab\xffcd\xc3", b"\xe4\xb8 \x80x", b"x\xed\xa0\x80y", b"\xc0\x80z"]


def inputs_of(path):
    raw = open(path, "rb").read().decode("utf-8")
    cases = []
    pos = 0
    while pos < len(raw):
        at = raw.find(SEP, pos)
        cases.append(raw[pos:] if at < 0 else raw[pos:at])
        if at < 0:
            break
        pos = at + len(SEP)
    return cases


def write_cases(path, cases):
    with open(path, "wb") as f:
        f.write(b"".join(c + SEP.encode() for c in cases))


def case_json(raw):
    try:
        return {"input": raw.decode("utf-8")}
    except UnicodeDecodeError:
        return {"input_hex": raw.hex()}


def unhex(h):
    return "" if h == "-" else h


def pretokenizer_json(llama_src, pretok_ref, tmp):
    inputs = inputs_of(os.path.join(llama_src, "models", "ggml-vocab-gemma-4.gguf.inp"))
    path = os.path.join(tmp, "pretok.inp")
    write_cases(path, [c.encode() for c in inputs])
    out = subprocess.run([pretok_ref, path, "1", GEMMA4_REGEX], check=True, capture_output=True).stdout.decode()
    cases = []
    for line in out.splitlines():
        parts = line.split(" ")
        assert parts[0] == "case" and int(parts[1]) == len(cases)
        pieces = [bytes.fromhex(p).decode("utf-8") for p in parts[2:]]
        cases.append({"input": inputs[len(cases)], "pieces": pieces})
    assert len(cases) == len(inputs)
    return {
        "what": "llama.cpp b10108's words for the gemma4 BPE session (spaces escaped to U+2581, then "
                "unicode_regex_split with llama-vocab.cpp's gemma4 regex, no byte encoding) of the inputs "
                "of its models/ggml-vocab-gemma-4.gguf.inp; made by gen/gemma4_tokenizer.py",
        "regex": GEMMA4_REGEX,
        "cases": cases,
    }


def tokenizer_json(vocab_ref, tmp, llama_src):
    kv = build_vocab()
    gguf_path = os.path.join(tmp, "gemma4-vocab.gguf")
    with open(gguf_path, "wb") as f:
        f.write(gguf_bytes(kv))
    raw_cases = [c.encode() for c in inputs_of(os.path.join(llama_src, "models", "ggml-vocab-gemma-4.gguf.inp"))]
    raw_cases += [c.encode() for c in EXTRA_CASES] + INVALID_CASES
    cases_path = os.path.join(tmp, "tok.inp")
    write_cases(cases_path, raw_cases)
    out = subprocess.run([vocab_ref, gguf_path, cases_path], check=True, capture_output=True).stdout.decode()
    # llama.cpp gives tokenizer.ggml.pre "granite-embed-multi-311m" (model "gpt2") the same
    # pre-tokenizer type as gemma4: everything must come out the same for that variant.
    alias = [(k, t, {"tokenizer.ggml.model": "gpt2", "tokenizer.ggml.pre": "granite-embed-multi-311m"}.get(k, v))
             for k, t, v in kv]
    with open(gguf_path, "wb") as f:
        f.write(gguf_bytes(alias))
    alias_out = subprocess.run([vocab_ref, gguf_path, cases_path], check=True, capture_output=True).stdout.decode()
    assert alias_out == out, "granite-embed-multi-311m differs from gemma4"
    result = {"tokens": [], "cases": [case_json(c) for c in raw_cases]}
    for line in out.splitlines():
        p = line.split(" ")
        if p[0] == "vocab":
            n, bos, eos, eot, add_bos, add_eos = map(int, p[1:])
            result["vocab"] = {"n_vocab": n, "bos": bos, "eos": eos, "eot": eot,
                               "add_bos": bool(add_bos), "add_eos": bool(add_eos)}
        elif p[0] == "token":
            assert int(p[1]) == len(result["tokens"])
            result["tokens"].append({"attr": int(p[2]), "eog": p[3] == "1",
                                     "piece_hex": unhex(p[4]), "special_piece_hex": unhex(p[5])})
        elif p[0] == "case":
            c = result["cases"][int(p[1])]
            key = "ids" + ("_add" if p[2] == "1" else "") + ("_parse" if p[3] == "1" else "")
            c[key] = [int(x) for x in p[4:]]
        elif p[0] == "detok":
            c = result["cases"][int(p[1])]
            key = "detok" + ("_remove" if p[2] == "1" else "") + ("_unparse" if p[3] == "1" else "") + "_hex"
            c[key] = unhex(p[4])
    assert all("ids" in c for c in result["cases"])
    return {
        "what": "llama.cpp b10108 (libllama, vocab_only) on a small Gemma-4-style vocabulary made by "
                "gen/gemma4_tokenizer.py: per token llama_vocab_get_attr, llama_vocab_is_eog and "
                "llama_token_to_piece (special false/true, no lstrip) as hex; per input the ids of "
                "llama_tokenize for add_special x parse_special (ids, ids_parse, ids_add, ids_add_parse) "
                "and llama_detokenize of ids_add_parse, remove_special off, unparse_special off/on (detok_hex, "
                "detok_unparse_hex). The "
                "inputs are ggml-vocab-gemma-4.gguf.inp's, then some of our own. The same vocabulary with "
                "tokenizer.ggml.model gpt2 and pre granite-embed-multi-311m gives llama.cpp the same output.",
        "gguf": [{"key": k, "type": t, "value": v} for k, t, v in kv],
        **result,
    }


def main():
    if len(sys.argv) != 4:
        sys.exit(__doc__)
    llama_src, vocab_ref, pretok_ref = sys.argv[1:]
    with tempfile.TemporaryDirectory() as tmp:
        docs = {
            "gemma4-pretokenizer.json": pretokenizer_json(llama_src, pretok_ref, tmp),
            "gemma4-tokenizer.json": tokenizer_json(vocab_ref, tmp, llama_src),
        }
    for name, doc in docs.items():
        with open(os.path.join(OUT_DIR, name), "w", encoding="utf-8") as f:
            f.write(dump(doc))


def dump(doc):
    """JSON with one line per list item at the top level (reviewable diffs)."""
    parts = []
    for key, value in doc.items():
        if isinstance(value, list):
            items = ",\n  ".join(json.dumps(v, ensure_ascii=False) for v in value)
            parts.append(json.dumps(key) + ": [\n  " + items + "\n ]")
        else:
            parts.append(json.dumps(key) + ": " + json.dumps(value, ensure_ascii=False))
    return "{" + ",\n ".join(parts) + "\n}\n"


if __name__ == "__main__":
    main()
