#include "engine/model/attention.h"

#include <algorithm>
#include <atomic>
#include <cstdint>

#include "engine/kernels/dispatch.h"

namespace engine {

namespace {

size_t sz(int64_t n) { return static_cast<size_t>(n); }
int pool_index(KvCache::Pool p) { return p == KvCache::Pool::kWindow ? 1 : 0; }

}  // namespace

FlashWorker::FlashWorker(const kernels::FlashParams& p)
    : raw(std::make_unique<uint8_t[]>(kernels::flash_scratch_bytes(p) + 64)),
      m(kernels::kFlashRows),
      l(kernels::kFlashRows),
      o(sz(kernels::kFlashRows * p.d_v)),
      q_rows(kernels::kFlashRows),
      out_rows(kernels::kFlashRows),
      q_pos(kernels::kFlashRows),
      q_see(kernels::kFlashRows),
      sinks(kernels::kFlashRows),
      slopes(kernels::kFlashRows) {
  const auto addr = reinterpret_cast<uintptr_t>(raw.get());
  scratch = raw.get() + (64 - addr % 64) % 64;
}

Attention::Attention(const HParams& hp) : hp_(hp), group_(hp.n_head / hp.n_head_kv) {
  params_.d_k = hp.max_head_k();  // (the workers' scratch fits every layer; run() sets the layer's)
  params_.d_v = hp.max_head_v();
  params_.softcap = hp.attn_softcap;
  params_.scale = hp.attn_softcap != 0.0f ? hp.kq_scale / hp.attn_softcap : hp.kq_scale;
}

void Attention::prepare(int64_t n, const SeqId* seq, const int32_t* pos, const KvCache& cache, const int32_t* see) {
  seqs_.clear();
  non_causal_ = false;
  for (int64_t t = 0; t < n; ++t) {
    auto it = std::find_if(seqs_.rbegin(), seqs_.rend(), [&](const Seq& s) { return s.id == seq[t]; });
    Seq* s = it != seqs_.rend() ? &*it : &seqs_.emplace_back(Seq{seq[t], {}, {}, {}, {0, 0}, {0, 0}});
    s->tokens.push_back(static_cast<int32_t>(t));
    s->tok_pos.push_back(pos[t]);
    s->tok_see.push_back(see != nullptr ? std::max(see[t], pos[t]) : pos[t]);
    non_causal_ |= s->tok_see.back() != pos[t];
  }
  for (KvCache::Pool pool : {KvCache::Pool::kFull, KvCache::Pool::kWindow}) {
    const int p = pool_index(pool);
    cells_[p].clear();
    kv_pos_[p].clear();
    if (pool == KvCache::Pool::kWindow && cache.n_window_cells() == 0) continue;
    for (Seq& s : seqs_) {
      const std::vector<KvCache::Entry>& entries = cache.entries(s.id, pool);
      s.kv_begin[p] = static_cast<int64_t>(cells_[p].size());
      s.kv_n[p] = static_cast<int64_t>(entries.size());
      for (const KvCache::Entry& e : entries) {
        cells_[p].push_back(e.cell);
        kv_pos_[p].push_back(e.pos);
      }
    }
  }
  f16_cache_ = cache.elem() == kernels::KvElem::kF16;
}

// Items of every sequence: its rows cut into tiles of whole GQA groups (or of kFlashRows rows
// when a group is larger), each against the keys its first token's window starts at up to its
// last token's position; a decode token's keys are cut into runs when the K/V heads are fewer
// than the threads.
void Attention::plan(int64_t il, const KvCache& cache, int n_threads) {
  items_.clear();
  leaders_.clear();
  int32_t n_partial = 0;
  const int p = pool_index(cache.pool(il));
  const int64_t window = hp_.swa(il) ? hp_.n_swa : 0;
  const int64_t G = group_;
  const int64_t tile = G <= kernels::kFlashRows ? kernels::kFlashRows / G * G : kernels::kFlashRows;
  for (size_t si = 0; si < seqs_.size(); ++si) {
    const Seq& s = seqs_[si];
    const int32_t* kpos = kv_pos_[p].data() + s.kv_begin[p];
    const int64_t n_kv = s.kv_n[p];
    const int64_t rows = static_cast<int64_t>(s.tokens.size()) * G;
    for (int64_t kvh = 0; kvh < hp_.n_head_kv; ++kvh) {
      for (int64_t row0 = 0, row1; row0 < rows; row0 = row1) {
        // a tile never straddles a change of accumulation (f16_accum()) between tokens
        const bool f16 = f16_accum(s.tok_pos[sz(row0 / G)]);
        // (tokens past the tile are not looked at)
        const int64_t t_end = std::min<int64_t>(static_cast<int64_t>(s.tok_pos.size()), (row0 + tile + G - 1) / G);
        int64_t t = row0 / G + 1;
        while (t < t_end && f16_accum(s.tok_pos[sz(t)]) == f16) ++t;
        row1 = std::min(t * G, row0 + tile);
        const int64_t q_min = s.tok_pos[sz(row0 / G)], q_max = s.tok_see[sz((row1 - 1) / G)];
        const int64_t k1 = std::upper_bound(kpos, kpos + n_kv, q_max) - kpos;
        const int64_t k0 =
            window == 0 ? 0 : std::lower_bound(kpos, kpos + k1, q_min - window + 1, [](int32_t a, int64_t b) { return a < b; }) - kpos;
        Item it{static_cast<int32_t>(si), static_cast<int32_t>(kvh), static_cast<int32_t>(row0),
                static_cast<int32_t>(row1), k0, k1, -1, 0, 1, (row1 - row0) * (k1 - k0 + 1), f16};
        int64_t n_split = 1;
        if (s.tokens.size() == 1 && hp_.n_head_kv < n_threads) {
          n_split = std::min<int64_t>((n_threads + hp_.n_head_kv - 1) / hp_.n_head_kv,
                                      (k1 - k0) / (4 * kernels::kFlashKeys));
        }
        if (n_split <= 1) {
          items_.push_back(it);
          continue;
        }
        leaders_.push_back(static_cast<int32_t>(items_.size()));
        for (int64_t i = 0; i < n_split; ++i) {
          Item part = it;
          part.k0 = k0 + (k1 - k0) * i / n_split;
          part.k1 = k0 + (k1 - k0) * (i + 1) / n_split;
          part.partial = n_partial + static_cast<int32_t>(i);
          part.split = static_cast<int32_t>(i);
          part.n_split = static_cast<int32_t>(n_split);
          part.cost = (row1 - row0) * (part.k1 - part.k0 + 1);
          items_.push_back(part);
        }
        n_partial += static_cast<int32_t>(n_split);
      }
    }
  }
  // The leaders of the split groups keep their indices: only the order of execution changes.
  order_.resize(items_.size());
  for (size_t i = 0; i < order_.size(); ++i) order_[i] = static_cast<int32_t>(i);
  std::stable_sort(order_.begin(), order_.end(),
                   [&](int32_t a, int32_t b) { return items_[sz(a)].cost > items_[sz(b)].cost; });
  partials_.resize(sz(n_partial) * partial_stride());
}

size_t Attention::partial_stride() const { return sz(kernels::kFlashRows * (2 + hp_.max_head_v())); }

kernels::FlashState Attention::partial_state(int32_t i) {
  float* base = partials_.data() + sz(i) * partial_stride();
  return {base, base + kernels::kFlashRows, base + 2 * kernels::kFlashRows};
}

void Attention::bind_rows(const Item& it, const kernels::FlashParams& p, const float* q, float* att,
                          const std::vector<float>& sinks, FlashWorker& w) const {
  const Seq& s = seqs_[sz(it.seq)];
  for (int32_t i = it.row0; i < it.row1; ++i) {
    const int64_t t = s.tokens[sz(i / group_)], h = it.kv_head * group_ + i % group_;
    const size_t r = sz(i - it.row0);
    w.q_rows[r] = q + (t * hp_.n_head + h) * p.d_k;    // (d_k,)
    w.out_rows[r] = att + (t * hp_.n_head + h) * p.d_v;  // (d_v,)
    w.q_pos[r] = s.tok_pos[sz(i / group_)];
    w.q_see[r] = s.tok_see[sz(i / group_)];
    w.sinks[r] = sinks.empty() ? 0.0f : sinks[sz(h)];
  }
}

void Attention::ensure_workers(int n) {
  while (static_cast<int>(workers_.size()) < n) workers_.emplace_back(params_);
}

void Attention::run(int64_t il, const std::vector<float>& sinks, const float* q, const KvCache& cache, float* att,
                    ThreadPool& pool) {
  plan(il, cache, pool.size());
  ensure_workers(pool.size());
  const kernels::FlashFn flash = kernels::dispatch().flash;
  const int p = pool_index(cache.pool(il));
  const int64_t d_v = hp_.head_v(il);
  kernels::FlashParams params = params_;
  params.d_k = hp_.head_k(il);
  params.d_v = d_v;
  params.window = hp_.swa(il) ? static_cast<int32_t>(hp_.n_swa) : 0;
  const auto* k_base = static_cast<const uint8_t*>(cache.k_row(il, 0));  // cell 0 of the layer's pool
  const auto* v_base = static_cast<const uint8_t*>(cache.v_row(il, 0));
  std::atomic<size_t> next{0};
  pool.run([&](int ith, int nth) {
    FlashWorker& w = workers_[sz(ith)];
    for (size_t n; (n = next.fetch_add(1, std::memory_order_relaxed)) < order_.size();) {
      const Item& it = items_[sz(order_[n])];
      const Seq& s = seqs_[sz(it.seq)];
      bind_rows(it, params, q, att, sinks, w);
      // K/V head kv_head of the sequence's cells, in position order
      const kernels::FlashKv kv{k_base + cache.k_head_offset(il, it.kv_head), v_base + cache.v_head_offset(il, it.kv_head),
                                cache.k_row_bytes(il), cache.v_row_bytes(il), cells_[p].data() + s.kv_begin[p],
                                kv_pos_[p].data() + s.kv_begin[p], s.kv_n[p], cache.elem()};
      const int n_rows = it.row1 - it.row0;
      kernels::FlashState st = it.partial < 0 ? w.state() : partial_state(it.partial);
      kernels::flash_init(st, n_rows, d_v);
      kernels::FlashParams item_params = params;
      item_params.f16_accum = it.f16_accum;
      kernels::FlashQuery query = w.query(n_rows);
      if (non_causal_) query.see = w.q_see.data();
      flash(item_params, query, kv, it.k0, it.k1, st, w.scratch);
      if (it.partial < 0) kernels::flash_finish(st, n_rows, d_v, sinks.empty() ? nullptr : w.sinks.data(), w.out_rows.data());
    }
    if (leaders_.empty()) return;
    pool.barrier();  // every split run is done: merge each group into its first state
    for (size_t g = sz(ith); g < leaders_.size(); g += sz(nth)) {
      const Item& lead = items_[sz(leaders_[g])];
      kernels::FlashState into = partial_state(lead.partial);
      for (int32_t i = 1; i < lead.n_split; ++i) {
        kernels::flash_merge(into, partial_state(lead.partial + i), lead.row1 - lead.row0, d_v);
      }
      bind_rows(lead, params, q, att, sinks, w);
      kernels::flash_finish(into, lead.row1 - lead.row0, d_v, sinks.empty() ? nullptr : w.sinks.data(),
                            w.out_rows.data());
    }
  });
}

}  // namespace engine
