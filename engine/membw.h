// A memory read-bandwidth probe: the roofline that decode speed is measured against.
#pragma once

#include <cstddef>

#include "engine/thread_pool.h"

namespace engine {

// Best GB/s (1e9 bytes/s) of `reps` timed passes in which every pool thread sums its share of a
// `bytes`-long buffer (touched once beforehand, so no page faults are timed). Choose bytes far
// above the last-level cache so DRAM, not cache, is measured. The buffer asks for transparent
// huge pages, as the packed weights do (engine/repack.cpp), so both pay the same TLB cost; the
// best pass, not the median, because the roofline is what the machine can reach.
// Thread-safety: uses `pool` like a forward pass; call from the pool's owning thread.
double read_bandwidth_gbs(ThreadPool& pool, size_t bytes = size_t{1} << 30, int reps = 5);

}  // namespace engine
