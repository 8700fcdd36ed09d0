// Per-sequence Gated DeltaNet state and its snapshots. See recurrent_cache.h.
#include "engine/model/recurrent_cache.h"

#include <algorithm>
#include <cstring>
#include <stdexcept>
#include <string>

namespace engine {

namespace {

constexpr int32_t C = RecurrentCache::kChunk;

size_t sz(int64_t n) { return static_cast<size_t>(n); }

// Floats of one layer's part of a sequence's slab (the LayerState arrays, in that order).
size_t layer_floats(const DeltaNetParams& s) {
  const int64_t rows = 2 * C;
  return sz(2 * s.state_floats() + rows * s.key_dim() + rows * s.d_inner + rows * s.n_v_heads +
            (rows + s.d_conv - 1) * s.conv_channels());
}

size_t snap_layer_floats(const DeltaNetParams& s) { return sz(s.state_floats() + s.conv_floats()); }

}  // namespace

RecurrentCache::RecurrentCache(const HParams& hp, int64_t max_seqs, int64_t n_snapshots)
    : ssm_(hp.ssm),
      n_rec_(hp.n_recurrent()),
      max_seqs_(max_seqs),
      layer_floats_(layer_floats(hp.ssm)),
      snap_layer_floats_(snap_layer_floats(hp.ssm)) {
  if (!ssm_.enabled() || n_rec_ == 0) throw std::invalid_argument("recurrent cache: the model has no recurrent layers");
  if (max_seqs < 1 || n_snapshots < 0 || n_snapshots > INT32_MAX) {
    throw std::invalid_argument("recurrent cache: bad size (" + std::to_string(max_seqs) + " sequences, " +
                                std::to_string(n_snapshots) + " snapshots)");
  }
  if (n_snapshots > 0) {
    snap_data_ = std::make_unique_for_overwrite<float[]>(sz(n_snapshots) * sz(n_rec_) * snap_layer_floats_);
    snaps_.resize(sz(n_snapshots));
  }
}

size_t RecurrentCache::seq_bytes(const HParams& hp) {
  return hp.ssm.enabled() ? sz(hp.n_recurrent()) * layer_floats(hp.ssm) * sizeof(float) : 0;
}

size_t RecurrentCache::snapshot_bytes(const HParams& hp) {
  return hp.ssm.enabled() ? sz(hp.n_recurrent()) * snap_layer_floats(hp.ssm) * sizeof(float) : 0;
}

size_t RecurrentCache::bytes() const {
  return (slabs_.size() * sz(n_rec_) * layer_floats_ + snaps_.size() * sz(n_rec_) * snap_layer_floats_) * sizeof(float);
}

void RecurrentCache::reserve(int64_t n) {
  n = std::min(n, max_seqs_);
  while (static_cast<int64_t>(slabs_.size()) < n) {
    slabs_.push_back(std::make_unique_for_overwrite<float[]>(sz(n_rec_) * layer_floats_));
    free_slabs_.push_back(static_cast<int32_t>(slabs_.size() - 1));
  }
}

int32_t RecurrentCache::length(SeqId seq) const {
  const auto it = seqs_.find(seq);
  return it == seqs_.end() ? 0 : it->second.length;
}

int32_t RecurrentCache::truncate(SeqId seq, int32_t p) {
  const auto it = seqs_.find(seq);
  if (it == seqs_.end()) return p;  // nothing held: any length is "kept" (the KV cache says how much)
  Seq& s = it->second;
  if (p >= s.length) return p;
  const int32_t c0 = s.length / C * C;
  if (p >= c0 || (s.prev_valid && p >= c0 - C)) {
    if (p < c0) s.prev_valid = false;  // the chunk before c0 - C was overwritten by c0's start
    s.length = std::max(p, 0);
    drop_snapshots(seq, s.length);
    if (s.length == 0) free_sequence(seq);
    return p;
  }
  free_sequence(seq);
  return -1;
}

void RecurrentCache::free_sequence(SeqId seq) {
  const auto it = seqs_.find(seq);
  if (it == seqs_.end()) return;
  drop_snapshots(seq, -1);
  free_slabs_.push_back(it->second.slab);
  seqs_.erase(it);
}

void RecurrentCache::clear() {
  free_slabs_.clear();
  for (size_t i = 0; i < slabs_.size(); ++i) free_slabs_.push_back(static_cast<int32_t>(i));
  seqs_.clear();
  for (Snap& s : snaps_) free_snapshot(s);
}

void RecurrentCache::prepare(SeqId seq) {
  if (seqs_.count(seq)) return;
  if (free_slabs_.empty()) {
    if (static_cast<int64_t>(slabs_.size()) >= max_seqs_) {
      throw std::runtime_error("recurrent state: all " + std::to_string(max_seqs_) + " sequences are in use");
    }
    reserve(static_cast<int64_t>(slabs_.size()) + 1);
  }
  Seq s;
  s.slab = free_slabs_.back();
  free_slabs_.pop_back();
  seqs_.emplace(seq, s);
  // A new sequence starts from zero matrices (chunk 0's buffer). Everything else is written before
  // it is read: log rows before the rows after them, conv inputs before their position (the pass
  // reads positions < 0 as zeros), the other buffer at chunk 0's end.
  for (int64_t r = 0; r < n_rec_; ++r) std::fill_n(layer(seq, r).s[0], ssm_.state_floats(), 0.0f);
}

RecurrentCache::LayerState RecurrentCache::layer(SeqId seq, int64_t r) {
  float* p = slabs_[sz(seqs_.at(seq).slab)].get() + sz(r) * layer_floats_;
  const int64_t rows = 2 * C;
  LayerState st;
  st.s[0] = p;
  st.s[1] = p + ssm_.state_floats();
  st.log_k = st.s[1] + ssm_.state_floats();
  st.log_d = st.log_k + rows * ssm_.key_dim();
  st.log_G = st.log_d + rows * ssm_.d_inner;
  st.raw = st.log_G + rows * ssm_.n_v_heads;
  return st;
}

void RecurrentCache::advance(SeqId seq, int32_t length) {
  Seq& s = seqs_.at(seq);
  if (length / C > s.length / C) s.prev_valid = true;  // a chunk completed: the one before is held
  s.length = length;
}

int32_t RecurrentCache::capture(SeqId seq, int32_t pos) {
  if (snaps_.empty()) return -1;
  // a free slot, else the least recently used one not being written in this pass
  Snap* best = nullptr;
  for (Snap& s : snaps_) {
    if (!s.in_use()) {
      best = &s;
      break;
    }
    if (s.committed && (best == nullptr || s.used < best->used)) best = &s;
  }
  if (best == nullptr) return -1;
  free_snapshot(*best);
  best->seq = seq;
  best->pos = pos;
  best->used = ++tick_;
  return static_cast<int32_t>(best - snaps_.data());
}

RecurrentCache::LayerState RecurrentCache::snapshot_layer(int32_t slot, int64_t r) {
  float* p = snap_data_.get() + (sz(slot) * sz(n_rec_) + sz(r)) * snap_layer_floats_;
  LayerState st{};
  st.s[0] = p;
  st.raw = p + ssm_.state_floats();
  return st;
}

void RecurrentCache::commit(int32_t slot) { snaps_[sz(slot)].committed = true; }

void RecurrentCache::drop_uncommitted() {
  for (Snap& s : snaps_) {
    if (s.in_use() && !s.committed) free_snapshot(s);
  }
}

RecurrentCache::SnapshotRef RecurrentCache::claim(SeqId seq, int32_t pos) {
  for (size_t i = 0; i < snaps_.size(); ++i) {
    Snap& s = snaps_[i];
    if (s.committed && !s.claimed && s.seq == seq && s.pos == pos) {
      s.claimed = true;
      s.seq = -1;
      s.used = ++tick_;
      return {static_cast<int32_t>(i), s.gen};
    }
  }
  return {};
}

bool RecurrentCache::valid(SnapshotRef ref) const {
  return ref.slot >= 0 && static_cast<size_t>(ref.slot) < snaps_.size() && snaps_[sz(ref.slot)].gen == ref.gen &&
         snaps_[sz(ref.slot)].committed;
}

void RecurrentCache::release(SnapshotRef ref) {
  if (valid(ref)) free_snapshot(snaps_[sz(ref.slot)]);
}

bool RecurrentCache::restore(SeqId seq, SnapshotRef ref) {
  if (!valid(ref)) return false;
  if (length(seq) != 0) throw std::logic_error("recurrent state: restore into a sequence that holds positions");
  Snap& snap = snaps_[sz(ref.slot)];
  snap.used = ++tick_;
  prepare(seq);
  const int32_t pos = snap.pos;
  const int64_t R = raw_rows(), ch = ssm_.conv_channels();
  for (int64_t r = 0; r < n_rec_; ++r) {
    const LayerState from = snapshot_layer(ref.slot, r);
    const LayerState to = layer(seq, r);
    std::copy_n(from.s[0], ssm_.state_floats(), to.s[(pos / C) % 2]);
    for (int64_t i = 0; i < ssm_.d_conv - 1; ++i) {  // the conv's inputs at pos - d_conv + 1 .. pos - 1
      const int64_t p = pos - (ssm_.d_conv - 1) + i;
      if (p >= 0) std::copy_n(from.raw + i * ch, ch, to.raw + (p % R) * ch);
    }
  }
  Seq& s = seqs_.at(seq);
  s.length = pos;
  s.prev_valid = false;
  return true;
}

std::span<const uint8_t> RecurrentCache::snapshot_memory(SnapshotRef ref) const {
  if (!valid(ref)) return {};
  const float* p = snap_data_.get() + sz(ref.slot) * sz(n_rec_) * snap_layer_floats_;
  return {reinterpret_cast<const uint8_t*>(p), snapshot_size()};
}

RecurrentCache::SnapshotRef RecurrentCache::adopt(int32_t pos, std::span<const uint8_t> bytes) {
  if (bytes.size() != snapshot_size()) throw std::invalid_argument("recurrent state: snapshot of the wrong size");
  const int32_t slot = capture(-1, pos);
  if (slot < 0) return {};
  float* p = snap_data_.get() + sz(slot) * sz(n_rec_) * snap_layer_floats_;
  std::memcpy(p, bytes.data(), bytes.size());
  Snap& s = snaps_[sz(slot)];
  s.committed = true;
  s.claimed = true;
  return {slot, s.gen};
}

void RecurrentCache::drop_snapshots(SeqId seq, int32_t from) {
  for (Snap& s : snaps_) {
    if (s.in_use() && !s.claimed && s.seq == seq && s.pos > from) free_snapshot(s);
  }
}

void RecurrentCache::free_snapshot(Snap& s) {
  if (s.in_use()) ++s.gen;
  s.seq = -1;
  s.pos = -1;
  s.committed = false;
  s.claimed = false;
}

}  // namespace engine
