// References in tests/data/reference made from `ggufd synth` models: the JSON, and the model it
// names rebuilt from its "synth" object (shape, seed, the ../shared vocabulary it copies) with
// ggufd synth's library, in a temporary file removed at the end of the scope, checked against the
// sha256 the reference records. Needs the test
// target to link `synth`.
#pragma once

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>

#include "tests/support/reference.h"
#include "tests/support/sha256.h"
#include "tests/support/shared.h"
#include "tools/synth/synth.h"

namespace ggufd::test {

// The model a reference describes (its "synth": {"shape", "seed", "vocab_from"}), of file type
// `type` ("F32"), written for the lifetime of the object. The vocabulary file must exist
// (GGUFD_REQUIRE_SHARED on reference["synth"]["vocab_from"] first). The rebuilt file's sha256 must
// be the one the reference records under models.<type>.sha256 (the file llama.cpp's numbers were
// made from): a different one fails the test, since `ggufd synth` then no longer writes that model.
// Not copyable.
class SynthReferenceModel {
 public:
  SynthReferenceModel(const nlohmann::json& reference, const std::string& type) {
    const nlohmann::json& spec = reference.at("synth");
    engine::synth::Options o;
    const auto shape = engine::synth::find_shape(spec.at("shape").get<std::string>());
    const auto file_type = engine::synth::find_file_type(type);
    if (!shape || !file_type) throw std::runtime_error("unknown synth shape or type in a reference: " + spec.dump());
    o.shape = *shape;
    o.type = *file_type;
    o.seed = spec.at("seed").get<uint64_t>();
    o.vocab_from = shared_path(spec.at("vocab_from").get<std::string>());
    path_ = (std::filesystem::temp_directory_path() /
             ("ggufd-ref-" + o.shape.name + "-" + type + "-" + std::to_string(::getpid()) + ".gguf"))
                .string();
    engine::synth::write_model(o, path_);
    const std::string want = reference.at("models").at(type).at("sha256").get<std::string>();
    const std::string got = sha256_file(path_);
    EXPECT_EQ(got, want) << "ggufd synth --shape " << o.shape.name << " --type " << type << " --seed " << o.seed
                         << " no longer writes the model the reference was made from";
  }
  ~SynthReferenceModel() {
    std::error_code ec;
    std::filesystem::remove(path_, ec);
  }
  SynthReferenceModel(const SynthReferenceModel&) = delete;
  SynthReferenceModel& operator=(const SynthReferenceModel&) = delete;

  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

}  // namespace ggufd::test
