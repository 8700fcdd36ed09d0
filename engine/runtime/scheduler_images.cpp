// Images in prompts: checked when a request starts, encoded one block per step from then on
// (beside the other requests' tokens), and put into batches whole once encoded (an image's tokens
// may see each other both ways).
#include <algorithm>
#include <limits>
#include <stdexcept>
#include <string>

#include "engine/runtime/scheduler_impl.h"

namespace engine {

int32_t image_token_id(uint64_t hash, int64_t n_vocab) {
  const auto room = static_cast<uint64_t>(std::numeric_limits<int32_t>::max() - n_vocab);
  return static_cast<int32_t>(n_vocab + static_cast<int64_t>(hash % room));
}

// Every image inside the prompt, in order, not overlapping, of the projector's size, fitting a
// prefill chunk, its positions holding ids past the vocabulary and the others ids inside it.
void Scheduler::Impl::check_images(const GenerationRequest& r) const {
  if (r.images.empty()) return;
  if (!opt.vision) throw std::invalid_argument("this model has no vision projector (--mmproj): it takes no images");
  if (r.prompt_logprobs) throw std::invalid_argument("a prompt with images cannot be scored (prompt_logprobs)");
  const VisionHParams& hp = opt.vision->hparams();
  const auto n = static_cast<int64_t>(r.prompt.size());
  int64_t end = 0;
  for (const PromptImage& im : r.images) {
    if (im.at < end || !im.input || !hp.accepts(im.input->width, im.input->height) ||
        im.n_tokens != hp.n_tokens(im.input->width, im.input->height) || im.at + im.n_tokens > n ||
        im.input->pixels.size() != static_cast<size_t>(3 * im.input->width * im.input->height)) {
      throw std::invalid_argument("an image of the prompt is out of place or of the wrong size");
    }
    if (im.n_tokens > opt.prefill_chunk) {
      throw std::invalid_argument("an image takes " + std::to_string(im.n_tokens) + " tokens, more than the " +
                                  std::to_string(opt.prefill_chunk) + " of a prefill chunk (--prefill-chunk)");
    }
    end = im.at + im.n_tokens;
  }
  size_t k = 0;
  for (int64_t i = 0; i < n; ++i) {
    while (k < r.images.size() && r.images[k].at + r.images[k].n_tokens <= i) ++k;
    const bool in_image = k < r.images.size() && r.images[k].at <= i;
    if (in_image != (r.prompt[static_cast<size_t>(i)] >= eval.n_vocab())) {
      throw std::invalid_argument("prompt position " + std::to_string(i) + " holds token id " +
                                  std::to_string(r.prompt[static_cast<size_t>(i)]) +
                                  (in_image ? ", expected an image's id" : ", outside the vocabulary"));
    }
  }
}

// The prompt tokens [done, done + n) cut so that no image is split nor sent before its rows are
// ready: the chunk ends before an image still being encoded; an image that starts inside goes in
// whole when the budget holds it, else the chunk ends before it; one the chunk starts in (the rest
// of an image whose first positions were cached) goes in whole or waits for a budget that holds it.
int64_t Scheduler::Impl::image_cut(const Slot& s, int64_t done, int64_t n, int64_t budget) const {
  const Sequence& seq = *s.seq;
  for (size_t k = 0; k < seq.req.images.size(); ++k) {
    const PromptImage& im = seq.req.images[k];
    const int64_t end = im.at + im.n_tokens;
    if (end <= done || im.at >= done + n) continue;
    if (seq.image_rows[k].empty()) return im.at > done ? im.at - done : 0;
    if (end <= done + n) continue;  // wholly inside
    if (im.at > done) return im.at - done;
    return end - done <= budget ? end - done : 0;
  }
  return n;
}

// One block of image encoding per step (a layer's attention or FFN: about a second for gemma3's
// 27-layer SigLIP on two cores), inside the step's turn, so the other requests' tokens keep coming
// while an image is encoded. Images are taken in slot order, the first a request has not cached;
// a request that ends drops its image (vacate).
void Scheduler::Impl::advance_images() {
  if (!opt.vision) return;
  if (!opt.compute) throw std::logic_error("the scheduler has no compute threads for its vision encoder");
  ThreadPool& pool = opt.compute->pool();
  if (encoding.slot < 0) {
    for (Slot& s : slots) {
      if (!s.active() || s.seq->generating) continue;
      const Sequence& seq = *s.seq;
      for (size_t k = 0; k < seq.req.images.size() && encoding.slot < 0; ++k) {
        const PromptImage& im = seq.req.images[k];
        if (!seq.image_rows[k].empty() || im.at + im.n_tokens <= static_cast<int64_t>(s.cached.size())) continue;
        if (!vision_encoder) vision_encoder = std::make_unique<VisionEncoder>(*opt.vision);
        encoding = {s.index, k};
        try {
          vision_encoder->begin(*im.input, pool);
        } catch (const std::exception& e) {
          encoding = {};
          fail(s, std::string("encoding an image failed: ") + e.what());
        }
        return;  // (embedding the patches was this step's part)
      }
    }
    return;
  }
  Slot& s = slots[static_cast<size_t>(encoding.slot)];
  try {
    vision_encoder->advance(pool);
    if (vision_encoder->done()) {
      s.seq->image_rows[encoding.image] = vision_encoder->finish(pool);
      encoding = {};
    }
  } catch (const std::exception& e) {
    encoding = {};
    fail(s, std::string("encoding an image failed: ") + e.what());
  }
}

// Prompt position i of slot s into the batch: its token, or its image's row seeing the image's
// last position when the projector's images are non-causal.
void Scheduler::Impl::add_prompt_entry(Slot& s, int64_t i, bool logits, bool pooled) {
  const Sequence& seq = *s.seq;
  const auto pos = static_cast<int32_t>(i);
  for (size_t k = 0; k < seq.req.images.size(); ++k) {
    const PromptImage& im = seq.req.images[k];
    if (i < im.at || i >= im.at + im.n_tokens) continue;
    const int64_t E = opt.vision->hparams().row_width();
    const auto see = static_cast<int32_t>(opt.vision->traits().non_causal ? im.at + im.n_tokens - 1 : i);
    batch.add_row(seq.image_rows[k].data() + (i - im.at) * E, s.id(), pos, see, logits);
    place_mrope(s, i);
    return;
  }
  batch.add(seq.req.prompt[static_cast<size_t>(i)], s.id(), pos, logits, pooled);
  place_mrope(s, i);
}

// M-RoPE (qwen-vl): positions from the prompt's image spans (Sequence::mrope_spans).
void Scheduler::Impl::place_mrope(const Slot& s, int64_t i) {
  const Sequence& seq = *s.seq;
  if (seq.mrope_spans.empty() || i < seq.mrope_spans.front().at) return;
  batch.set_mrope(batch.size() - 1, mrope_positions(seq.mrope_spans, i));
}

}  // namespace engine
