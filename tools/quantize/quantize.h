// Reference weight quantizers: f32 rows -> ggml blocks (the inverse of ref::dequant_*).
//
// Used to write GGUF files (ggufd synth), not on the inference path. Scalar and simple: block
// scales come from max-abs / min-max fits refined by a short least-squares search, which keeps
// dequantize(quantize(x)) within the usual error of each type (tests/tools/quantize_test.cpp
// states the bounds) without ggml's importance-matrix machinery.
//
// Every function turns x (n,) into n / block_size blocks at `y`; `n` must be a multiple of the
// type's block size (32, or 256 for K-quants and IQ4_XS). Inputs must be finite. Outputs are
// deterministic (no randomness, no dependence on threads). Thread-safe: no shared state.
#pragma once

#include <cstddef>
#include <cstdint>

#include "gguf/types.h"

namespace engine::quantize {

// x (n,) -> y (n / block_size blocks)
void quantize_row_f32(const float* x, void* y, int64_t n);
void quantize_row_f16(const float* x, void* y, int64_t n);
void quantize_row_bf16(const float* x, void* y, int64_t n);
void quantize_row_q4_0(const float* x, void* y, int64_t n);
void quantize_row_q4_1(const float* x, void* y, int64_t n);
void quantize_row_q5_0(const float* x, void* y, int64_t n);
void quantize_row_q5_1(const float* x, void* y, int64_t n);
void quantize_row_q8_0(const float* x, void* y, int64_t n);
void quantize_row_iq4_nl(const float* x, void* y, int64_t n);
void quantize_row_q2_k(const float* x, void* y, int64_t n);
void quantize_row_q3_k(const float* x, void* y, int64_t n);
void quantize_row_q4_k(const float* x, void* y, int64_t n);
void quantize_row_q5_k(const float* x, void* y, int64_t n);
void quantize_row_q6_k(const float* x, void* y, int64_t n);
void quantize_row_iq4_xs(const float* x, void* y, int64_t n);

// True when quantize_row() can produce `type`.
bool can_quantize(gguf::TensorType type);

// Dispatches on `type`: x (n,) -> the row's bytes at `y` (n / block_size * block_bytes of them).
// Returns the number of bytes written. Throws std::invalid_argument when !can_quantize(type) or
// `n` is not a multiple of the block size.
size_t quantize_row(gguf::TensorType type, const float* x, void* y, int64_t n);

// Reference dequantization of one row for any type can_quantize() accepts: y (n,).
// Throws std::invalid_argument like quantize_row.
void dequantize_row_ref(gguf::TensorType type, const void* x, float* y, int64_t n);

}  // namespace engine::quantize
