// libFuzzer target: arbitrary bytes through the GGUF parser and everything that reads its result.
#include <cstddef>
#include <cstdint>

#include <exception>

#include "engine/vision/projector.h"
#include "gguf/file.h"
#include "gguf/file_set.h"
#include "gguf/summary.h"
#include "gguf/writer.h"
#include "server/api/gguf_json.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    const gguf::File f = gguf::File::parse({data, size}, "fuzz.gguf");
    // Every accessor over every value and tensor, then a rewrite: what inspect and the server do.
    gguf::Writer w(f.version(), f.big_endian());
    for (const gguf::KeyValue& kv : f.metadata()) {
      w.set(std::string(kv.key), gguf::OwnedValue::from(kv.value));
    }
    for (const gguf::TensorInfo& t : f.tensors()) {
      volatile uint8_t sink = t.n_bytes ? t.data[t.n_bytes - 1] : 0;
      (void)sink;
    }
    (void)server::dump(server::file_to_json(f, false));
    (void)gguf::summarize(f);
    (void)w.to_bytes();
    // as a vision projector (--mmproj): its keys, tensors and shapes checked, or a clear refusal
    try {
      (void)engine::VisionModel::from_files(gguf::FileSet::single(f));
    } catch (const std::runtime_error&) {
    }
  } catch (const gguf::Error&) {
  }
  return 0;
}
