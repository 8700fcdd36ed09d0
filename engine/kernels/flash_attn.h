// Tiled attention ("flash" attention): a tile of query rows that share one K/V head against a run
// of cached K/V rows, in blocks of kFlashKeys positions, with an online softmax per query row.
// Per block: scores S (rows, keys) = scale * Q . K^T (each K row read once for all the tile's
// rows), soft-cap, causal / sliding-window mask, then P = exp(S - max) and O += P . V. No score
// matrix over the whole context is ever stored, and a run of keys can be split across threads and
// the partial results merged (flash_merge).
//
// Two accumulations, chosen by the caller (FlashParams::f16_accum):
//  - f32 (llama.cpp's tiled CPU path, used there from 64 query rows on): block-wise softmax, O in
//    f32, queries in f32 (F32 / F16 caches) or quantized to Q8_0 blocks (Q8_0 cache: K . q as
//    integer dots, as ggml's vec_dot_type).
//  - f16 (llama.cpp's one-row CPU path with an F16 cache, used there for decode and short
//    prompts): queries rounded to f16, and key by key, in position order, the running maximum
//    and an O that is rounded to f16 after every update. The reference logits (../shared/golden)
//    come from that path, and small random models amplify any rounding difference.
// Either way each query row's result depends only on its own row and keys: blocks are aligned to
// key positions (multiples of kFlashKeys), not to where the run starts, so a sliding-window ring
// and a full cache give the same bits, and grouping rows into tiles changes nothing.
#pragma once

#include <cstddef>
#include <cstdint>

namespace engine::kernels {

// Element type of the cached K/V rows.
enum class KvElem : uint8_t { kF32, kF16, kQ8_0 };

// Bytes of n elements of `elem` (n a multiple of 32 for kQ8_0: whole BlockQ8_0s).
size_t kv_bytes(KvElem elem, int64_t n);
// x (n,) f32 -> n elements of `elem` at dst. Q8_0 as ggml's CPU backend quantizes it
// (quantize_q8_block, d stored f16).
void kv_store(KvElem elem, const float* x, void* dst, int64_t n);
// 32 floats -> 32 int8 q and their scale d (x ~ d q), bit for bit as ggml's quantize_row_q8_0 on
// x86: d = max|x| / 127, q = x * (127 / max|x|) rounded to nearest even.
void quantize_q8_block(const float* x, int8_t* q, float& d);
// n elements of `elem` -> y (n,) f32.
void kv_load(KvElem elem, const void* src, float* y, int64_t n);

inline constexpr int kFlashKeys = 32;  // keys per block (aligned to positions: see above)
inline constexpr int kFlashRows = 64;  // at most this many query rows per tile

// The tile's query rows: rows[r] (d_k,) f32 at position pos[r].
struct FlashQuery {
  const float* const* rows;  // (n,)
  const int32_t* pos;        // (n,); unused when the keys have no positions and no alibi
  int n;                     // 1..kFlashRows
  // (n,) or null: ALiBi slopes (jina-bert-v2): row r's score of a key at position k_pos (its
  // index when the keys have no positions) is lowered by alibi[r] * |pos[r] - k_pos|, after the
  // soft-cap.
  const float* alibi = nullptr;
  // (n,) or null: the last key position row r sees, when not pos[r] (an image's tokens in gemma3
  // see the whole image: their span's last position). The window still counts from pos[r].
  const int32_t* see = nullptr;
  int32_t see_at(int r) const { return see != nullptr ? see[r] : pos[r]; }
};

// The cached keys/values of one K/V head, in position order: key j's K row (d_k elements) is at
// k + cell(j) * k_stride, its V row (d_v) at v + cell(j) * v_stride, cell(j) = cells[j] (or j
// when cells is null).
struct FlashKv {
  const uint8_t* k;
  const uint8_t* v;
  size_t k_stride, v_stride;  // bytes from one cell to the next
  const int32_t* cells;       // (n,) or null
  const int32_t* pos;         // (n,) strictly increasing; null: no mask (every row sees every key)
  int64_t n;
  KvElem elem;
};

struct FlashParams {
  int64_t d_k, d_v;  // head sizes, d_k and d_v multiples of 32 for Q8_0 (any size otherwise)
  float scale;       // score = scale * q . k (when soft-capped, already divided by the cap)
  float softcap;     // 0: none; else score = softcap * tanh(score)
  int32_t window;    // 0: causal only; else also masked when q_pos - k_pos >= window
  bool f16_accum;    // the f16 accumulation (kF16 keys only), see above
};

// The online-softmax state of a tile's n rows over the keys accumulated so far: m (n,) the
// largest score, l (n,) the sum of exp(score - m), o (n, d_v) the sum of exp(score - m) * v.
// Empty: m = -inf, l = 0, o = 0 (flash_init).
struct FlashState {
  float* m;
  float* l;
  float* o;
};

// Accumulates keys [k0, k1) of kv into st for the query rows q. `scratch` holds at least
// flash_scratch_bytes(p) bytes, 64-byte aligned. Every kernel follows ref::flash_block exactly
// up to float rounding (SIMD kernels sum in another order and use a polynomial exp).
using FlashFn = void (*)(const FlashParams& p, const FlashQuery& q, const FlashKv& kv, int64_t k0, int64_t k1,
                         FlashState& st, void* scratch);
size_t flash_scratch_bytes(const FlashParams& p);

// Portable state helpers (flash_attn.cpp).
void flash_init(FlashState& st, int n, int64_t d_v);
// into = the state over both key sets (disjoint runs of the same rows' keys).
void flash_merge(FlashState& into, const FlashState& from, int n, int64_t d_v);
// out[r] (d_v,) = o[r] / l[r]. sinks (n,) or null: row r's attention sink (gpt-oss: a score that
// joins the softmax with no value row). A row that saw no key (and has no sink) gives zeros.
void flash_finish(const FlashState& st, int n, int64_t d_v, const float* sinks, float* const* out);

namespace ref {
void flash_block(const FlashParams& p, const FlashQuery& q, const FlashKv& kv, int64_t k0, int64_t k1,
                 FlashState& st, void* scratch);
}
namespace avx2 {
void flash_block(const FlashParams& p, const FlashQuery& q, const FlashKv& kv, int64_t k0, int64_t k1,
                 FlashState& st, void* scratch);
}
// avx2::flash_block with the Q8_0 byte dots on vpdpbusd (EVEX / VEX encoded).
namespace avx512vnni {
void flash_block(const FlashParams& p, const FlashQuery& q, const FlashKv& kv, int64_t k0, int64_t k1,
                 FlashState& st, void* scratch);
}
namespace avxvnni {
void flash_block(const FlashParams& p, const FlashQuery& q, const FlashKv& kv, int64_t k0, int64_t k1,
                 FlashState& st, void* scratch);
}

}  // namespace engine::kernels
