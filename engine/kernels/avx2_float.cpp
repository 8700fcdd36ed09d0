// AVX2 + FMA (+ F16C) kernels for F32, F16 and BF16 weights against f32 activations.
#include "engine/kernels/avx2.h"
#include "engine/kernels/avx2_common.h"

namespace engine::kernels::avx2 {

namespace {

// Loaders: 8 weights starting at element i of a row -> 8 f32; one() converts a single element.
struct LF32 {
  static __m256 load8(const uint8_t* w, int64_t i) {
    return _mm256_loadu_ps(reinterpret_cast<const float*>(w) + i);
  }
  static float one(const uint8_t* w, int64_t i) {
    float f;
    std::memcpy(&f, w + 4 * i, 4);
    return f;
  }
};

struct LF16 {
  static __m256 load8(const uint8_t* w, int64_t i) { return _mm256_cvtph_ps(loadu128(w + 2 * i)); }
  static float one(const uint8_t* w, int64_t i) { return fp16(w + 2 * i); }
};

struct LBF16 {
  static __m256 load8(const uint8_t* w, int64_t i) {
    const __m256i v = _mm256_cvtepu16_epi32(loadu128(w + 2 * i));
    return _mm256_castsi256_ps(_mm256_slli_epi32(v, 16));
  }
  static float one(const uint8_t* w, int64_t i) {
    uint16_t h;
    std::memcpy(&h, w + 2 * i, 2);
    const uint32_t u = static_cast<uint32_t>(h) << 16;
    float f;
    std::memcpy(&f, &u, 4);
    return f;
  }
};

// W rows [r, r+RW) (cols,) . X rows [j, j+RX) (cols,) f32 -> out (RX, RW) at (j, r)
template <class L>
struct FloatDot {
  template <int RW, int RX>
  struct Kernel {
    static void run(const TileArgs& a, int64_t r, int64_t j) {
      const uint8_t* w[RW];
      const float* x[RX];
      for (int i = 0; i < RW; ++i) w[i] = a.w + static_cast<size_t>(r + i) * a.w_stride;
      for (int k = 0; k < RX; ++k) {
        x[k] = reinterpret_cast<const float*>(a.x + static_cast<size_t>(j + k) * a.x_stride);
      }
      __m256 acc[RW][RX];
      for (int i = 0; i < RW; ++i) {
        for (int k = 0; k < RX; ++k) acc[i][k] = _mm256_setzero_ps();
      }
      int64_t c = 0;
      for (; c + 8 <= a.cols; c += 8) {
        __m256 wv[RW];
        for (int i = 0; i < RW; ++i) wv[i] = L::load8(w[i], c);
        for (int k = 0; k < RX; ++k) {
          const __m256 xv = _mm256_loadu_ps(x[k] + c);
          for (int i = 0; i < RW; ++i) acc[i][k] = _mm256_fmadd_ps(wv[i], xv, acc[i][k]);
        }
      }
      for (int k = 0; k < RX; ++k) {
        for (int i = 0; i < RW; ++i) {
          float s = hsum(acc[i][k]);
          for (int64_t t = c; t < a.cols; ++t) s += L::one(w[i], t) * x[k][t];
          a.out[(j + k) * a.ldo + r + i] = s;
        }
      }
    }
  };
  static void tile(const TileArgs& a) { run_tile<Kernel, 2, 4>(a); }
};

}  // namespace

void tile_f32(const TileArgs& a) { FloatDot<LF32>::tile(a); }
void tile_f16(const TileArgs& a) { FloatDot<LF16>::tile(a); }
void tile_bf16(const TileArgs& a) { FloatDot<LBF16>::tile(a); }

}  // namespace engine::kernels::avx2
