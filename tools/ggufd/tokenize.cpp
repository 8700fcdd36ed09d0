// `ggufd tokenize -m FILE [--add-special] [--parse-special] [--pieces]`: UTF-8 text on stdin ->
// token ids on stdout (one line, space separated; with --pieces one "id<TAB>piece" per line).
// `ggufd detokenize -m FILE [--render-special]`: ids on stdin (whitespace separated) -> text.
#include <charconv>
#include <cstdio>
#include <iostream>
#include <iterator>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "engine/text/tokenizer/tokenizer.h"
#include "gguf/file.h"
#include "tools/ggufd/commands.h"

namespace ggufd {

namespace {

std::string read_stdin() {
  return std::string(std::istreambuf_iterator<char>(std::cin), std::istreambuf_iterator<char>());
}

// A piece shown on one line: control characters escaped, the rest as is.
std::string shown(std::string_view piece) {
  std::string out;
  for (char c : piece) {
    const auto byte = static_cast<unsigned char>(c);
    if (c == '\n') {
      out += "\\n";
    } else if (c == '\t') {
      out += "\\t";
    } else if (c == '\\') {
      out += "\\\\";
    } else if (byte < 0x20 || byte == 0x7F) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02x", byte);
      out += buf;
    } else {
      out += c;
    }
  }
  return out;
}

std::vector<int32_t> parse_ids(const std::string& text) {
  std::vector<int32_t> ids;
  const char* p = text.data();
  const char* end = p + text.size();
  while (p < end) {
    if (*p == ' ' || *p == '\n' || *p == '\t' || *p == '\r' || *p == ',') {
      ++p;
      continue;
    }
    int32_t id = 0;
    auto [next, error] = std::from_chars(p, end, id);
    if (error != std::errc()) {
      throw std::invalid_argument("not a token id: '" + std::string(p, std::min<size_t>(16, end - p)) + "'");
    }
    ids.push_back(id);
    p = next;
  }
  return ids;
}

}  // namespace

Command add_tokenize(CLI::App& app) {
  struct Options {
    std::string model;
    bool add_special = false;
    bool parse_special = false;
    bool pieces = false;
  };
  auto o = std::make_shared<Options>();
  app.add_option("-m,--model", o->model, "GGUF file holding the tokenizer")->required();
  app.add_flag("--add-special", o->add_special, "Add BOS/EOS as the model asks");
  app.add_flag("--parse-special", o->parse_special, "Recognize control tokens in the text");
  app.add_flag("--pieces", o->pieces, "Print each id with the text it stands for");
  return [o] {
    const auto tok = engine::Tokenizer::from_gguf(gguf::File::open(o->model));
    const std::vector<int32_t> ids = tok.encode(read_stdin(), o->add_special, o->parse_special);
    std::string out;
    for (size_t i = 0; i < ids.size(); ++i) {
      if (o->pieces) {
        out += std::to_string(ids[i]) + "\t" + shown(tok.piece(ids[i], true)) + "\n";
      } else {
        out += (i == 0 ? "" : " ") + std::to_string(ids[i]);
      }
    }
    if (!o->pieces) out += "\n";
    std::fwrite(out.data(), 1, out.size(), stdout);
    return 0;
  };
}

Command add_detokenize(CLI::App& app) {
  struct Options {
    std::string model;
    bool render_special = false;
  };
  auto o = std::make_shared<Options>();
  app.add_option("-m,--model", o->model, "GGUF file holding the tokenizer")->required();
  app.add_flag("--render-special", o->render_special, "Write control tokens as their text");
  return [o] {
    const auto tok = engine::Tokenizer::from_gguf(gguf::File::open(o->model));
    const std::string text = tok.decode(parse_ids(read_stdin()), o->render_special);
    std::fwrite(text.data(), 1, text.size(), stdout);
    return 0;
  };
}

}  // namespace ggufd
