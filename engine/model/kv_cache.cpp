#include "engine/model/kv_cache.h"

#include <algorithm>
#include <stdexcept>
#include <string>

namespace engine {

namespace {

size_t sz(int64_t n) { return static_cast<size_t>(n); }

kernels::KvElem elem_of(KvType type) {
  switch (type) {
    case KvType::kF16: return kernels::KvElem::kF16;
    case KvType::kF32: return kernels::KvElem::kF32;
    case KvType::kQ8_0: return kernels::KvElem::kQ8_0;
  }
  throw std::invalid_argument("unknown KV cache type");
}

// Q8_0 rows are whole 32-element blocks per head (a head's slice must start on a block).
void check_head_sizes(KvType type, const HParams& hp) {
  for (const int64_t d : {hp.head_dim_k, hp.head_dim_v, hp.head_dim_k_swa, hp.head_dim_v_swa}) {
    if (type != KvType::kQ8_0 || d % 32 == 0) continue;
    throw std::invalid_argument("KV cache type q8_0 needs head sizes that are multiples of 32 (Q8_0 blocks); this model's are " +
                                std::to_string(hp.head_dim_k) + " (K) and " + std::to_string(hp.head_dim_v) + " (V)" +
                                (hp.head_dim_k_swa != hp.head_dim_k ? ", " + std::to_string(hp.head_dim_k_swa) + " (sliding layers)" : "") +
                                ": use f16 or f32");
  }
}

// Whether layer il keeps K/V rows of its own (not a Gated DeltaNet layer, nor one reusing another's).
bool has_rows(const HParams& hp, int64_t il) { return !hp.recurrent(il) && hp.own_kv(il); }

bool has_window_layers(const HParams& hp) {
  return hp.n_swa > 0 && std::find(hp.swa_layer.begin(), hp.swa_layer.end(), 1) != hp.swa_layer.end();
}

void check_cells(int64_t n, int64_t min, const char* what) {
  if (n < min || n > INT32_MAX) {
    throw std::invalid_argument(std::string(what) + " must be in [" + std::to_string(min) + ", 2^31), got " +
                                std::to_string(n));
  }
}

}  // namespace

const std::vector<std::string>& kv_type_names() {
  static const std::vector<std::string> names = {"f16", "f32", "q8_0"};
  return names;
}

const std::string& kv_type_name(KvType type) { return kv_type_names()[static_cast<size_t>(type)]; }

KvType kv_type_from_name(const std::string& name) {
  const std::vector<std::string>& names = kv_type_names();
  for (size_t i = 0; i < names.size(); ++i) {
    if (names[i] == name) return static_cast<KvType>(i);
  }
  std::string known;
  for (const std::string& n : names) known += (known.empty() ? "" : ", ") + n;
  throw std::invalid_argument("KV cache type '" + name + "' is not one of " + known);
}

KvCache::KvCache(const HParams& hp, int64_t n_cells, KvType type, int64_t n_window_cells, bool nextn)
    : type_(type),
      elem_(elem_of(type)),
      n_swa_(hp.n_swa),
      cell_bytes_(cell_bytes_for(hp, type, nextn)),
      n_embd_(nextn ? hp.n_embd : 0),
      hp_(&hp) {
  if (nextn && hp.n_layer_nextn == 0) {
    throw std::invalid_argument("KV cache: NextN rows for a model without NextN / MTP layers (nextn_predict_layers)");
  }
  check_head_sizes(type, hp);
  check_cells(n_cells, 1, "KV cache size");
  check_cells(n_window_cells, 0, "KV cache window size");
  full_.n_cells = n_cells;
  window_.n_cells = has_window_layers(hp) ? n_window_cells : 0;
  // Each layer's rows: (cells of its pool, k_dim(il) / v_dim(il)), one layer after another; a
  // reusing layer points at the rows of the (earlier) layer it reuses.
  const int64_t n_layers = hp.n_layer + (nextn ? 1 : 0);  // (the NextN block: a global attention layer)
  layers_.resize(sz(n_layers));
  size_t k_end = 0, v_end = 0;
  for (int64_t il = 0; il < n_layers; ++il) {
    LayerRows& r = layers_[sz(il)];
    if (!hp.own_kv(il)) {
      r = layers_[sz(hp.kv_layer[sz(il)])];
      r.owned = false;
      continue;
    }
    const bool window = window_.n_cells > 0 && hp.swa(il);
    r = {window ? Pool::kWindow : Pool::kFull, kernels::kv_bytes(elem_, hp.k_dim(il)), kernels::kv_bytes(elem_, hp.v_dim(il)),
         k_end, v_end, hp.head_k(il), hp.head_v(il), has_rows(hp, il)};
    if (!r.owned) continue;  // (Gated DeltaNet: no K/V)
    const int64_t cells = window ? window_.n_cells : full_.n_cells;
    k_end += sz(cells) * r.k_bytes;
    v_end += sz(cells) * r.v_bytes;
  }
  if (hp.ssm.enabled() && hp.n_recurrent() > 0) recurrent_ = std::make_unique<RecurrentCache>(hp, n_cells, 0);
  bytes_ = k_end + v_end;
  k_ = std::make_unique_for_overwrite<uint8_t[]>(k_end);
  v_ = std::make_unique_for_overwrite<uint8_t[]>(v_end);
  clear();
}

int64_t KvCache::window_cells(const HParams& hp, int64_t n_cells, int64_t n_seq, int64_t max_batch) {
  if (!has_window_layers(hp)) return 0;
  const int64_t n = n_seq * (hp.n_swa - 1 + kWindowSlack) + max_batch;
  return n < n_cells ? n : 0;
}

size_t KvCache::cell_bytes_for(const HParams& hp, KvType type, bool nextn) {
  const kernels::KvElem elem = elem_of(type);
  size_t bytes = 0;
  for (int64_t il = 0; il < hp.n_layer + (nextn ? 1 : 0); ++il) {
    if (has_rows(hp, il)) bytes += kernels::kv_bytes(elem, hp.k_dim(il)) + kernels::kv_bytes(elem, hp.v_dim(il));
  }
  return bytes;
}

size_t KvCache::bytes_without_window() const {
  return sz(full_.n_cells) * cell_bytes_;
}

void KvCache::reserve_recurrent(int64_t n_seqs, int64_t n_snapshots) {
  if (!recurrent_) return;
  if (!full_.seqs.empty()) throw std::logic_error("KvCache::reserve_recurrent: sequences hold positions");
  recurrent_ = std::make_unique<RecurrentCache>(*hp_, full_.n_cells, n_snapshots);
  recurrent_->reserve(n_seqs);
}

int32_t KvCache::CellPool::cell_for(SeqId seq, int32_t pos, const char* name) {
  std::vector<Entry>& s = seqs[seq];
  auto it = std::lower_bound(s.begin(), s.end(), pos, [](const Entry& a, int32_t p) { return a.pos < p; });
  if (it != s.end() && it->pos == pos) {
    if (refs[sz(it->cell)] > 1) {
      throw std::logic_error(std::string(name) + ": position " + std::to_string(pos) + " of sequence " +
                             std::to_string(seq) + " is a shared cell, which must not be written");
    }
    return it->cell;
  }
  if (free.empty()) {
    if (s.empty()) seqs.erase(seq);
    throw std::runtime_error(std::string(name) + " is full (" + std::to_string(n_cells) + " cells)");
  }
  const int32_t cell = free.back();
  free.pop_back();
  refs[sz(cell)] = 1;
  s.insert(it, Entry{pos, cell});
  return cell;
}

void KvCache::CellPool::release(int32_t cell) {
  if (--refs[sz(cell)] == 0) free.push_back(cell);
}

void KvCache::CellPool::drop_from(SeqId seq, int32_t p) {
  const auto it = seqs.find(seq);
  if (it == seqs.end()) return;
  std::vector<Entry>& s = it->second;
  while (!s.empty() && s.back().pos >= p) {
    release(s.back().cell);
    s.pop_back();
  }
  if (s.empty()) seqs.erase(it);
}

void KvCache::CellPool::drop_before(SeqId seq, int32_t p) {
  const auto it = seqs.find(seq);
  if (it == seqs.end()) return;
  std::vector<Entry>& s = it->second;
  const auto end = std::partition_point(s.begin(), s.end(), [&](const Entry& e) { return e.pos < p; });
  for (auto e = s.begin(); e != end; ++e) release(e->cell);
  s.erase(s.begin(), end);
  if (s.empty()) seqs.erase(it);
}

void KvCache::CellPool::clear() {
  seqs.clear();
  refs.assign(sz(n_cells), 0);
  free.resize(sz(n_cells));
  // Pop order 0, 1, 2...: a fresh sequence gets consecutive cells.
  for (int64_t i = 0; i < n_cells; ++i) free[sz(i)] = static_cast<int32_t>(n_cells - 1 - i);
}

int32_t KvCache::cell_for(SeqId seq, int32_t pos, Pool pool) {
  return pool == Pool::kWindow ? window_.cell_for(seq, pos, "KV cache window")
                                  : full_.cell_for(seq, pos, "KV cache");
}

void KvCache::check_shareable(int32_t cell, const char* what) const {
  if (window_.n_cells > 0) {
    throw std::logic_error(std::string(what) + ": a KV cache with a window pool shares no cells");
  }
  if (cell < 0 || cell >= full_.n_cells || full_.refs[sz(cell)] == 0) {
    throw std::logic_error(std::string(what) + ": cell " + std::to_string(cell) + " is not held");
  }
}

void KvCache::attach(SeqId seq, std::span<const int32_t> cells) {
  for (int32_t c : cells) check_shareable(c, "KvCache::attach");
  if (cells.empty()) return;
  std::vector<Entry>& s = full_.seqs[seq];
  const int32_t pos0 = s.empty() ? 0 : s.back().pos + 1;
  for (size_t i = 0; i < cells.size(); ++i) {
    ++full_.refs[sz(cells[i])];
    s.push_back(Entry{pos0 + static_cast<int32_t>(i), cells[i]});
  }
}

void KvCache::adopt(SeqId seq, int32_t pos0, std::span<const int32_t> cells) {
  for (int32_t c : cells) check_shareable(c, "KvCache::adopt");
  const auto found = full_.seqs.find(seq);
  if (cells.empty()) return;
  if (found == full_.seqs.end()) throw std::logic_error("KvCache::adopt: no sequence " + std::to_string(seq));
  std::vector<Entry>& s = found->second;
  auto it = std::lower_bound(s.begin(), s.end(), pos0, [](const Entry& a, int32_t p) { return a.pos < p; });
  const auto n = static_cast<std::ptrdiff_t>(cells.size());
  if (s.end() - it < n || it->pos != pos0 || (it + n - 1)->pos != pos0 + static_cast<int32_t>(n - 1)) {
    throw std::logic_error("KvCache::adopt: sequence " + std::to_string(seq) + " lacks positions " +
                           std::to_string(pos0) + ".." + std::to_string(pos0 + n - 1));
  }
  for (size_t i = 0; i < cells.size(); ++i, ++it) {
    ++full_.refs[sz(cells[i])];  // before the release: adopting a cell it already has keeps it
    full_.release(it->cell);
    it->cell = cells[i];
  }
}

void KvCache::retain(int32_t cell) {
  if (cell < 0 || cell >= full_.n_cells || full_.refs[sz(cell)] == 0) {
    throw std::logic_error("KvCache::retain: cell " + std::to_string(cell) + " is not held");
  }
  ++full_.refs[sz(cell)];
}

void KvCache::release(int32_t cell) {
  if (cell < 0 || cell >= full_.n_cells || full_.refs[sz(cell)] == 0) {
    throw std::logic_error("KvCache::release: cell " + std::to_string(cell) + " is not held");
  }
  full_.release(cell);
}

int32_t KvCache::seq_length(SeqId seq) const {
  const std::vector<Entry>& s = entries(seq);
  return s.empty() ? 0 : s.back().pos + 1;
}

const std::vector<KvCache::Entry>& KvCache::entries(SeqId seq, Pool pool) const {
  const CellPool& p = pool_ref(pool);
  const auto it = p.seqs.find(seq);
  return it == p.seqs.end() ? no_entries_ : it->second;
}

void KvCache::slide_window(SeqId seq, int32_t next_pos) {
  if (window_.n_cells == 0) return;
  // a query at next_pos sees (next_pos - n_swa, next_pos]
  const int64_t keep_from = next_pos - (n_swa_ - 1) - kWindowSlack;
  if (keep_from > 0) window_.drop_before(seq, static_cast<int32_t>(keep_from));
}

void KvCache::keep_hidden(SeqId seq, int32_t pos0, const float* rows, int64_t n) {
  if (n_embd_ == 0 || n <= 0) return;
  KeptHidden& k = hidden_[seq];
  const auto have = static_cast<int32_t>(k.rows.size() / sz(n_embd_));
  if (k.rows.empty() || k.pos0 + have != pos0) {  // not a continuation: start over
    k.rows.clear();
    k.pos0 = pos0;
  }
  k.rows.insert(k.rows.end(), rows, rows + n * n_embd_);
  const auto rows_kept = static_cast<int64_t>(k.rows.size()) / n_embd_;
  if (rows_kept > kKeptHidden) {
    k.rows.erase(k.rows.begin(), k.rows.begin() + (rows_kept - kKeptHidden) * n_embd_);
    k.pos0 += static_cast<int32_t>(rows_kept - kKeptHidden);
  }
}

const float* KvCache::hidden(SeqId seq, int32_t pos) const {
  const auto it = hidden_.find(seq);
  if (it == hidden_.end() || pos < it->second.pos0) return nullptr;
  const size_t off = sz(pos - it->second.pos0) * sz(n_embd_);
  return off < it->second.rows.size() ? it->second.rows.data() + off : nullptr;
}

int32_t KvCache::truncate(SeqId seq, int32_t p) {
  if (const auto it = hidden_.find(seq); it != hidden_.end()) {  // (NextN) the states of dropped positions
    KeptHidden& k = it->second;
    k.rows.resize(std::min(k.rows.size(), sz(std::max(p - k.pos0, 0)) * sz(n_embd_)));
  }
  full_.drop_from(seq, p);
  window_.drop_from(seq, p);
  if (recurrent_ && recurrent_->truncate(seq, std::min(p, seq_length(seq))) < 0) {  // (it went back too far)
    free_sequence(seq);
    return 0;
  }
  const int32_t kept = seq_length(seq);
  if (window_.n_cells == 0 || kept == 0) return kept;
  // A token at `kept` attends to [kept - n_swa + 1, kept - 1]: all still in the ring?
  const std::vector<Entry>& w = entries(seq, Pool::kWindow);
  const int64_t needed_from = std::max<int64_t>(0, kept - n_swa_ + 1);
  if (!w.empty() && w.front().pos <= needed_from && w.back().pos == kept - 1) return kept;
  free_sequence(seq);
  return 0;
}

void KvCache::free_sequence(SeqId seq) {
  full_.drop_from(seq, INT32_MIN);
  window_.drop_from(seq, INT32_MIN);
  hidden_.erase(seq);
  if (recurrent_) recurrent_->free_sequence(seq);
}

void KvCache::read_cells(std::span<const int32_t> cells, std::span<uint8_t> out) const {
  if (out.size() != cells.size() * cell_bytes_ || window_.n_cells > 0) {
    throw std::logic_error("KvCache::read_cells: buffer size, or a cache with a window pool");
  }
  uint8_t* o = out.data();
  for (int64_t il = 0; il < static_cast<int64_t>(layers_.size()); ++il) {
    if (!layers_[sz(il)].owned) continue;
    for (int32_t c : cells) o = std::copy_n(static_cast<const uint8_t*>(k_row(il, c)), k_row_bytes(il), o);
    for (int32_t c : cells) o = std::copy_n(static_cast<const uint8_t*>(v_row(il, c)), v_row_bytes(il), o);
  }
}

void KvCache::write_cells(std::span<const int32_t> cells, std::span<const uint8_t> in) {
  if (in.size() != cells.size() * cell_bytes_ || window_.n_cells > 0) {
    throw std::logic_error("KvCache::write_cells: buffer size, or a cache with a window pool");
  }
  for (int32_t c : cells) {
    if (c < 0 || c >= full_.n_cells || full_.refs[sz(c)] != 1) {
      throw std::logic_error("KvCache::write_cells: cell " + std::to_string(c) + " is free or shared");
    }
  }
  const uint8_t* i = in.data();
  for (int64_t il = 0; il < static_cast<int64_t>(layers_.size()); ++il) {
    if (!layers_[sz(il)].owned) continue;
    for (int32_t c : cells) {
      std::copy_n(i, k_row_bytes(il), static_cast<uint8_t*>(k_row(il, c)));
      i += k_row_bytes(il);
    }
    for (int32_t c : cells) {
      std::copy_n(i, v_row_bytes(il), static_cast<uint8_t*>(v_row(il, c)));
      i += v_row_bytes(il);
    }
  }
}

void KvCache::clear() {
  full_.clear();
  window_.clear();
  hidden_.clear();
  if (recurrent_) recurrent_->clear();
}

}  // namespace engine
