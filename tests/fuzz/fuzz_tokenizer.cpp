// libFuzzer target: arbitrary bytes through the tokenizers of a few shared vocabularies (byte-level
// BPE, SentencePiece and WordPiece), with and without special-token parsing, then random ids (valid and not)
// through decode and the streaming decoder. Vocabularies come from $GGUFD_SHARED_DIR (default:
// the build-time ../shared); missing ones are skipped.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "engine/text/tokenizer/tokenizer.h"
#include "engine/text/tokenizer/utf8.h"
#include "gguf/file.h"

namespace {

std::vector<engine::Tokenizer> load_vocabs() {
  const char* env = std::getenv("GGUFD_SHARED_DIR");
  const std::string dir = env != nullptr ? env : GGUFD_SHARED_DIR;
  std::vector<engine::Tokenizer> out;
  for (const char* name : {"llama3", "llama-spm", "qwen3", "gemma3", "deepseek-llm", "bert-bge"}) {
    try {
      const auto file = gguf::File::open(dir + "/tokenizer/ggml-vocab-" + name + ".gguf");
      out.push_back(engine::Tokenizer::from_gguf(file));
    } catch (const std::exception&) {
    }
  }
  return out;
}

void check(bool ok, const char* what) {
  if (!ok) {
    std::fprintf(stderr, "fuzz_tokenizer: %s\n", what);
    std::abort();
  }
}

void decode_ids(const engine::Tokenizer& tok, const uint8_t* data, size_t size) {
  std::vector<int32_t> ids;
  for (size_t i = 0; i + 3 < size && ids.size() < 64; i += 4) {
    int32_t id = static_cast<int32_t>(data[i] | data[i + 1] << 8 | data[i + 2] << 16 |
                                      static_cast<uint32_t>(data[i + 3]) << 24);
    if (data[i + 3] < 0xF0) id = static_cast<int32_t>(static_cast<uint32_t>(id) % tok.n_vocab());
    ids.push_back(id);
  }
  engine::StreamDecoder stream(tok);
  bool any_invalid = false;
  for (int32_t id : ids) {
    try {
      check(engine::tokenizer::is_valid_utf8(stream.push(id)), "stream emitted invalid UTF-8");
    } catch (const std::out_of_range&) {
      any_invalid = true;
    }
  }
  check(engine::tokenizer::is_valid_utf8(stream.flush()), "flush emitted invalid UTF-8");
  try {
    (void)tok.decode(ids, (size & 1) != 0);
    check(!any_invalid, "decode accepted an invalid id");
  } catch (const std::out_of_range&) {
    check(any_invalid, "decode rejected valid ids");
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const std::vector<engine::Tokenizer> vocabs = load_vocabs();
  if (vocabs.empty() || size == 0) return 0;
  const engine::Tokenizer& tok = vocabs[data[0] % vocabs.size()];
  const std::string_view text(reinterpret_cast<const char*>(data + 1), size - 1);
  for (bool parse_special : {false, true}) {
    const std::vector<int32_t> ids = tok.encode(text, (data[0] & 0x10) != 0, parse_special);
    for (int32_t id : ids) check(id >= 0 && id < tok.n_vocab(), "encode produced a bad id");
    const std::string back = tok.decode(ids);
    if (!parse_special && tok.model() == "gpt2" && engine::tokenizer::is_valid_utf8(text)) {
      check(back == text, "byte-level BPE round trip lost bytes");
    }
  }
  decode_ids(tok, data + 1, size - 1);
  return 0;
}
