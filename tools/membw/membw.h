// A memory read-bandwidth probe: the roofline that decode speed is measured against.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

#include "engine/kernels/thread_pool.h"

namespace engine {

// Best GB/s (1e9 bytes/s) of `reps` timed passes in which every pool thread sums its share of a
// `bytes`-long buffer (touched once beforehand, so no page faults are timed). Choose bytes far
// above the last-level cache so DRAM, not cache, is measured. The buffer asks for transparent
// huge pages, as the packed weights do (engine/model/repack.cpp), so both pay the same TLB cost; the
// best pass, not the median, because the roofline is what the machine can reach.
// Thread-safety: uses `pool` like a forward pass; call from the pool's owning thread.
double read_bandwidth_gbs(ThreadPool& pool, size_t bytes = size_t{1} << 30, int reps = 5);

// GB/s of one pass in which the pool threads read every byte of `ranges`, each range split
// evenly among them as matmul splits a matrix: how fast the machine streams exactly the memory
// a decode step reads (a model's weights, with their pages), at this moment. `ggufd bench` runs
// one right after each tg repetition, so the ratio of the two cancels the drift of a shared
// machine's bandwidth. A pass over the model adds nothing to the resident set, unlike a buffer.
// Thread-safety: as read_bandwidth_gbs.
double read_ranges_gbs(ThreadPool& pool, std::span<const std::span<const uint8_t>> ranges);

}  // namespace engine
