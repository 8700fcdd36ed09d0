// The lattice, ternary and MXFP4 kernels against llama.cpp's own outputs for the same bytes
// (tests/data/quant/*.json, see the README there): dequantization bit for bit, the dot
// products to float rounding, and the AVX2 tiles against our reference.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/kernels/dispatch.h"
#include "engine/kernels/fp16.h"
#include "engine/kernels/traits.h"
#include "gguf/types.h"

namespace engine {
namespace {

using kernels::ActFormat;

struct Vectors {
  gguf::TensorType type;
  std::vector<uint8_t> bytes;   // one row of n elements as ggml quantized it
  std::vector<float> dequant;   // (n,) ggml's to_float of those bytes
  std::vector<float> act;       // (n,) activations
  std::string vec_dot_type;     // "q8_0" or "q8_K"
  float vec_dot;                // ggml's CPU vec_dot of bytes . act quantized to vec_dot_type
};

Vectors load(const std::string& file) {
  std::ifstream in(std::string(GGUFD_TEST_DATA_DIR) + "/quant/" + file + ".json");
  EXPECT_TRUE(in) << file;
  const nlohmann::json j = nlohmann::json::parse(in);
  Vectors v;
  v.type = gguf::type_from_name(j.at("type").get<std::string>()).value();
  const std::string hex = j.at("bytes_hex");
  for (size_t i = 0; i + 1 < hex.size(); i += 2) v.bytes.push_back(static_cast<uint8_t>(std::stoi(hex.substr(i, 2), nullptr, 16)));
  v.dequant = j.at("dequant").get<std::vector<float>>();
  v.act = j.at("act").get<std::vector<float>>();
  v.vec_dot_type = j.at("vec_dot_type");
  v.vec_dot = j.at("vec_dot");
  const gguf::TypeInfo& info = gguf::type_info(v.type);
  EXPECT_EQ(j.at("block_elems").get<uint32_t>(), info.block_size) << file;
  EXPECT_EQ(j.at("block_bytes").get<uint32_t>(), info.block_bytes) << file;
  EXPECT_EQ(v.bytes.size(), v.act.size() / info.block_size * info.block_bytes) << file;
  return v;
}

// ggml's activation quantizers as its x86 build runs them (ggml-quants.c quantize_row_q8_K_ref;
// arch/x86/quants.c quantize_row_q8_0), emulated in our layouts so a test can feed our kernels
// exactly ggml's integers and scales: q8_K scales by -127/x_amax (x_amax the signed value of
// largest magnitude, so its quants come out negated) with d = 1/that; q8_0 scales by 127/amax
// and stores d = amax/127 rounded to fp16 (ours too, held as f32).
std::vector<uint8_t> ggml_act(ActFormat fmt, const std::vector<float>& x) {
  const int64_t n = static_cast<int64_t>(x.size());
  std::vector<uint8_t> out(static_cast<size_t>(kernels::act_row_bytes(fmt, n)));
  if (fmt == ActFormat::kQ8A) {
    auto* y = reinterpret_cast<kernels::ActQ8A*>(out.data());
    for (int64_t b = 0; b < n / 32; ++b) {
      float amax = 0;
      for (int j = 0; j < 32; ++j) amax = std::max(amax, std::fabs(x[32 * b + j]));
      const float id = amax != 0 ? 127.0f / amax : 0.0f;
      int sum = 0;
      for (int j = 0; j < 32; ++j) sum += y[b].qs[j] = static_cast<int8_t>(std::nearbyint(x[32 * b + j] * id));
      y[b].d = kernels::round_fp16(amax / 127.0f);
      y[b].s = y[b].d * static_cast<float>(sum);
    }
    return out;
  }
  auto* y = reinterpret_cast<kernels::ActQ8K*>(out.data());
  for (int64_t b = 0; b < n / 256; ++b) {
    const float* xb = x.data() + 256 * b;
    float amax = 0, max = 0;
    for (int j = 0; j < 256; ++j) {
      if (std::fabs(xb[j]) > amax) amax = std::fabs(xb[j]), max = xb[j];
    }
    const float iscale = amax != 0 ? -127.0f / max : 0.0f;
    for (int j = 0; j < 256; ++j) y[b].qs[j] = static_cast<int8_t>(std::min(127.0f, std::nearbyint(iscale * xb[j])));
    for (int g = 0; g < 16; ++g) {
      int s = 0;
      for (int j = 0; j < 16; ++j) s += y[b].qs[16 * g + j];
      y[b].bsums[g] = static_cast<int16_t>(s);
    }
    y[b].d = amax != 0 ? 1.0f / iscale : 0.0f;
  }
  return out;
}

// sum_i |w_i * x_i|: the scale against which a dot product's rounding is measured (the dots
// here cancel to a fraction of it, so a tolerance relative to the result itself would be unfair
// to some files and lax for others).
double magnitude(const Vectors& v) {
  double m = 0;
  for (size_t i = 0; i < v.act.size(); ++i) m += std::fabs(double(v.dequant[i]) * v.act[i]);
  return m;
}

// The same dot through a dispatch table's tile (one row, one activation row).
float tile_dot(const kernels::Dispatch& d, const Vectors& v, const std::vector<uint8_t>& xq) {
  const kernels::KernelTraits* t = kernels::kernel_traits(v.type);
  const auto cols = static_cast<int64_t>(v.act.size());
  float out = NAN;
  d.tile_for(v.type)({v.bytes.data(), v.bytes.size(), 1, cols, xq.data(), xq.size(), 1, &out, 1, t});
  return out;
}

class QuantVectors : public ::testing::TestWithParam<const char*> {};

TEST_P(QuantVectors, DequantizationIsBitExact) {
  const Vectors v = load(GetParam());
  const kernels::KernelTraits* t = kernels::kernel_traits(v.type);
  ASSERT_NE(t, nullptr);
  std::vector<float> y(v.act.size());
  t->dequant(v.bytes.data(), y.data(), static_cast<int64_t>(y.size()));
  int nonzero = 0;
  for (size_t i = 0; i < y.size(); ++i) {
    ASSERT_EQ(kernels::f32_to_bits(y[i]), kernels::f32_to_bits(v.dequant[i])) << "element " << i << ": " << y[i] << " vs " << v.dequant[i];
    nonzero += y[i] != 0;
  }
  EXPECT_GT(nonzero, static_cast<int>(y.size()) / 10);  // the file exercises real values
}

TEST_P(QuantVectors, DotProductsMatchGgml) {
  const Vectors v = load(GetParam());
  const kernels::KernelTraits* t = kernels::kernel_traits(v.type);
  ASSERT_NE(t, nullptr);
  EXPECT_EQ(v.vec_dot_type, t->act == ActFormat::kQ8A ? "q8_0" : "q8_K");  // we quantize as ggml does
  const auto n = static_cast<int64_t>(v.act.size());
  const double mag = magnitude(v);
  // f32 re-association: each of the row's block terms is added once, rounding by at most 2^-24
  // of a partial sum, and no partial sum exceeds `mag`. (Measured: 1e-8 of mag at most.)
  const double reorder = static_cast<double>(n / t->block_size()) * std::ldexp(mag, -24);

  // 1. ggml's own activation integers and scales: only the order of the f32 additions differs
  //    (ggml's x86 kernels sum in vector lanes).
  const std::vector<uint8_t> gx = ggml_act(t->act, v.act);
  EXPECT_NEAR(t->vec_dot(v.bytes.data(), gx.data(), n), v.vec_dot, reorder);

  // 2. Our activation quantizer: ggml's integers and scales exactly. Q8K: scale 127 / amax, d its
  //    reciprocal (ggml's may both be negated: the same products); Q8A (MXFP4): d rounded to fp16.
  std::vector<uint8_t> ox(static_cast<size_t>(kernels::act_row_bytes(t->act, n)));
  kernels::quantize_act_ref(t->act, v.act.data(), ox.data(), n);
  if (t->act == ActFormat::kQ8K) {
    const auto* o = reinterpret_cast<const kernels::ActQ8K*>(ox.data());
    const auto* g = reinterpret_cast<const kernels::ActQ8K*>(gx.data());
    for (int64_t b = 0; b < n / kernels::kQKK; ++b) {
      const float sign = g[b].d < 0 ? -1.0f : 1.0f;
      ASSERT_EQ(o[b].d, sign * g[b].d) << "block " << b;
      for (int j = 0; j < kernels::kQKK; ++j) ASSERT_EQ(o[b].qs[j], static_cast<int>(sign) * g[b].qs[j]) << "block " << b << " element " << j;
    }
  } else {
    ASSERT_EQ(std::memcmp(ox.data(), gx.data(), ox.size()), 0);
  }
  const float ours = t->vec_dot(v.bytes.data(), ox.data(), n);
  EXPECT_NEAR(ours, v.vec_dot, reorder);

  // 3. The SIMD tiles: the reference's integers, f32 sums in another order.
  for (const kernels::Dispatch* d : {kernels::avx2_dispatch(), kernels::avx512_dispatch(), kernels::avxvnni_dispatch()}) {
    if (d == nullptr) continue;
    EXPECT_NEAR(tile_dot(*d, v, ox), ours, 2 * reorder) << d->name;
    EXPECT_NEAR(tile_dot(*d, v, gx), v.vec_dot, 2 * reorder) << d->name;
  }
  EXPECT_EQ(tile_dot(kernels::scalar_dispatch(), v, ox), ours);
}

// One file per type; the "-ternary" TQ files have ~60% non-zero digits (the plain ones ~12%).
INSTANTIATE_TEST_SUITE_P(Llama, QuantVectors,
                         ::testing::Values("MXFP4", "IQ1_S", "IQ1_M", "IQ2_XXS", "IQ2_XS", "IQ2_S", "IQ3_XXS",
                                           "IQ3_S", "TQ1_0", "TQ2_0", "TQ1_0-ternary", "TQ2_0-ternary"),
                         [](const auto& p) {
                           std::string s = p.param;
                           for (char& c : s) c = c == '-' ? '_' : c;
                           return s;
                         });

}  // namespace
}  // namespace engine
