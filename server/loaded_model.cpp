#include "server/loaded_model.h"

#include "engine/vision/projector.h"

#include <spdlog/spdlog.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>

#include <chrono>
#include <filesystem>
#include <future>

#include "engine/kernels/cpu_features.h"
#include "engine/kernels/dispatch.h"
#include "engine/model/arch.h"
#include "engine/runtime/image_prompt.h"
#include "engine/vision/image.h"
#include "engine/vision/vit.h"
#include "gguf/file_set.h"
#include "server/api/chat_prompt.h"

namespace server {

namespace {

using Clock = std::chrono::steady_clock;

// Renders run on the work pool, one per request: a tenth of the engine's default step budget
// (about 2 s of one core here) is far above what real templates spend on long conversations
// with many tools (tens of thousands of steps) and keeps a hostile template from holding a
// pool thread for long.
engine::ChatTemplateOptions template_options() {
  engine::ChatTemplateOptions o;
  o.limits.max_steps = 2'000'000;
  return o;
}

// The template the model is served with: the override, the file's, or ChatML; `source` says which.
std::string pick_template(const ModelOptions& o, const gguf::File& file, std::string& source) {
  if (!o.chat_template.empty()) {
    source = o.chat_template_origin.empty() ? "override" : o.chat_template_origin;
    return o.chat_template;
  }
  if (auto t = file.find_string("tokenizer.chat_template")) {
    if (holds_prompt_mark(*t)) {
      spdlog::warn("the model's chat template contains U+FDD0, which ggufd reserves for marking request text; "
                   "using ChatML");
      source = "chatml (fallback)";
      return std::string(engine::kChatMLTemplate);
    }
    try {
      engine::ChatTemplate::parse(*t);
      source = "model";
      return std::string(*t);
    } catch (const engine::TemplateError& e) {
      spdlog::warn("the model's chat template does not parse ({}); using ChatML", e.what());
    }
  }
  source = "chatml (fallback)";
  return std::string(engine::kChatMLTemplate);
}

// An encoder's slots hold no cache; many let one pass embed many inputs.
constexpr int kEncoderSlots = 64;

// What the model serves: its pooling type (or --pooling's), and whether it generates. Throws
// std::runtime_error for a pooling the model cannot do.
void set_pooling(const engine::Model& model, const std::string& option, App& app) {
  const engine::HParams& hp = model.hparams();
  app.generates = !engine::arch_traits(hp.arch).encoder;
  app.n_embd = hp.n_embd;
  app.n_vocab = hp.n_vocab;
  app.architecture = hp.arch_name;
  app.pooling = hp.pooling;
  if (!option.empty()) {
    const std::optional<engine::PoolingType> p = engine::find_pooling(option);
    if (!p) throw std::runtime_error("--pooling " + option + ": expected mean, cls, last, rank or none");
    app.pooling = *p;
  }
  if (app.pooling == engine::PoolingType::kNone && !app.generates) {
    app.pooling = engine::PoolingType::kCls;  // an encoder file without pooling_type: BERT's default
    spdlog::warn("the model has no pooling type: embeddings use cls pooling (--pooling chooses another)");
  }
  if (app.pooling == engine::PoolingType::kRank && engine::arch_traits(hp.arch).rank == engine::RankHead::kNone) {
    throw std::runtime_error("pooling rank: architecture " + hp.arch_name +
                             " has no classification head (rerankers: bert, jina-bert-v2, qwen3)");
  }
  if (app.pooling == engine::PoolingType::kRank && hp.n_cls_out == 0) {
    throw std::runtime_error("pooling rank needs a classification head (tensor cls.output.weight, or cls.weight for "
                             "jina-bert-v2), which the model lacks");
  }
}

// The scheduler's options for this model: context capped by the model, encoder slots, and what
// --spec auto and the default --draft-max become.
engine::SchedulerOptions scheduler_options(const ModelOptions& o, const engine::Model& model, const App& app,
                                           const SharedParts& shared) {
  engine::SchedulerOptions so = o.engine;
  so.compute = shared.compute;
  so.n_ctx = std::min<int64_t>(so.n_ctx, model.hparams().n_ctx_train);
  if (!app.generates) so.n_slots = std::max(so.n_slots, kEncoderSlots);  // no cache: slots are free
  if (o.spec_auto && so.spec == engine::SpecMode::kNone && model.hparams().n_layer_nextn > 0) {
    so.spec = engine::SpecMode::kMtp;  // the model's own draft head, where its drafts pay
    so.spec_auto = true;
  }
  if (so.spec == engine::SpecMode::kMtp && o.draft_max_default) {
    so.draft_max = std::max(ModelOptions::kMtpDraftMax, so.draft_min);
  }
  if (!app.generates) so.spec = engine::SpecMode::kNone;  // nothing to draft
  return so;
}

void log_speculation(const LoadedModel& m, const ModelOptions& o, const engine::SchedulerOptions& so) {
  if (so.spec == engine::SpecMode::kNone) {
    if (m.app.generates) spdlog::info("{}: speculative decoding: off", m.app.model_id);
    return;
  }
  std::string source = "n-gram prompt lookup";
  if (so.spec == engine::SpecMode::kMtp) {
    source = fmt::format("the model's NextN / MTP block ({} of {} NextN layers{})", 1, m.model->hparams().n_layer_nextn,
                         o.spec_auto ? ", chosen by --spec auto" : "");
  } else if (so.spec == engine::SpecMode::kDraft) {
    const engine::HParams& hp = m.draft_model->hparams();
    source = fmt::format("draft model {} ({} layers, embedding {}, weights {:.1f} MiB)", o.draft_model_path, hp.n_layer,
                         hp.n_embd, static_cast<double>(m.draft_model->weight_bytes()) / (1 << 20));
  }
  spdlog::info("{}: speculative decoding: {}, up to {} drafts per slot and step verified with its next token{}",
               m.app.model_id, source, so.draft_max,
               so.draft_min > 1 ? fmt::format(" (proposals under {} dropped)", so.draft_min) : "");
  if (so.spec_auto) {
    const engine::DraftGateParams& g = so.draft_gate;
    spdlog::info("speculative decoding, --spec auto: a slot stops drafting while fewer than {:.2f} of its drafts are "
                 "accepted (the break-even: a draft costs about that much of a plain step), judged after {} drafted "
                 "steps; it drafts again after {} plain steps (up to {} after failed tries) and resumes when those "
                 "drafts are accepted; --spec mtp drafts always",
                 g.break_even, g.warmup, g.probe_after, g.probe_after_max);
  }
}

double mib(size_t bytes) { return static_cast<double>(bytes) / (1 << 20); }

void log_memory(const LoadedModel& m, const ModelOptions& o) {
  const engine::SchedulerStats kv = m.scheduler->stats();
  std::string ring;
  if (kv.kv_window_cells > 0) {
    ring = fmt::format("; sliding-window layers in a ring of {} cells, {:.1f} MiB without it", kv.kv_window_cells,
                       mib(kv.kv_bytes_without_window));
  }
  const std::string packed = m.model->packed_bytes() > 0
                                 ? fmt::format("; {:.1f} MiB of them copied into the kernels' packed layout",
                                               mib(m.model->packed_bytes()))
                                 : o.repack ? "" : "; not repacked: --no-repack";
  spdlog::info("{}: memory: weights {:.1f} MiB (mapped from the file{}), KV cache {:.1f} MiB ({}, {} cells{})",
               m.app.model_id, mib(m.model->weight_bytes()), packed, mib(kv.kv_bytes), m.app.settings.kv_type,
               kv.kv_cells_total, ring);
  if (kv.recurrent_slot_bytes > 0) {
    spdlog::info("recurrent state (Gated DeltaNet layers): {:.2f} MiB per slot, {:.1f} MiB for {} slots",
                 mib(kv.recurrent_slot_bytes), mib(kv.recurrent_bytes), m.app.settings.n_slots);
  }
  if (kv.prefix_cache.block_tokens > 0) {
    const int64_t cells = kv.prefix_cache.reserved_cells;
    spdlog::info("prefix cache: blocks of {} tokens shared by all slots; {} of the KV cells ({:.1f} MiB) are "
                 "for cached blocks beyond the slots' own (--cache-ram)",
                 kv.prefix_cache.block_tokens, cells,
                 kv.kv_cells_total > 0 ? mib(kv.kv_bytes) * static_cast<double>(cells) / static_cast<double>(kv.kv_cells_total) : 0.0);
    if (kv.prefix_cache.snapshot_slots > 0) {
      spdlog::info("prefix cache: {} snapshots of the recurrent state at block ends ({:.1f} MiB), so a hybrid "
                   "model resumes a cached prefix",
                   kv.prefix_cache.snapshot_slots, mib(kv.prefix_cache.snapshot_bytes));
    }
    if (kv.prefix_cache.on_disk) {
      spdlog::info("prefix cache on disk: {} ({} blocks of this model, {:.1f} MiB; at most {:.0f} MiB, least "
                   "recently used removed first)",
                   o.engine.prefix_store.dir, kv.prefix_cache.disk.files, mib(kv.prefix_cache.disk.bytes),
                   mib(o.engine.prefix_store.max_bytes));
    }
  } else if (m.app.generates) {
    spdlog::info("prefix cache: off ({}); each slot reuses its own prompt prefix only",
                 o.engine.prefix_cache_bytes <= 0 ? "--cache-ram 0" : "the sliding-window layers keep a ring");
  }
}

// The model's text side, from its file's metadata alone: tokenizer, chat template (and where it
// came from), what the template does, and the vocabulary constrained decoding masks.
struct TextParts {
  engine::Tokenizer tokenizer;
  std::string template_text;
  std::string template_source;
  engine::ChatTemplate chat_template;
  ChatFeatures features;
  std::unique_ptr<engine::grammar::GrammarCache> grammars;
  double build_ms = 0;
};

TextParts build_text_parts(const ModelOptions& o) {
  const auto start = Clock::now();
  const gguf::FileSet files = gguf::FileSet::open(o.path);  // the header again: cheap, pages shared
  engine::Tokenizer tokenizer = engine::Tokenizer::from_gguf(files.first());
  std::string source;
  std::string text = pick_template(o, files.first(), source);
  engine::ChatTemplate tmpl = engine::ChatTemplate::parse(text, template_options());
  const ChatFeatures features = detect_chat_features(tmpl, &tokenizer);
  auto grammars = std::make_unique<engine::grammar::GrammarCache>(
      engine::grammar::TokenVocab::from_tokenizer(tokenizer, features.marker_tokens));
  const double ms = std::chrono::duration<double, std::milli>(Clock::now() - start).count();
  return {std::move(tokenizer), std::move(text), std::move(source), std::move(tmpl), features, std::move(grammars), ms};
}

void fill_settings(ServeSettings& s, const ModelOptions& o, const engine::SchedulerOptions& so) {
  s.n_ctx = so.n_ctx;
  s.n_slots = so.n_slots;
  s.n_threads = so.compute ? so.compute->pool().size() : engine::thread_count(so.n_threads);
  s.prefill_chunk = so.prefill_chunk;
  s.max_queue = so.max_queue;
  s.kv_type = engine::kv_type_name(so.kv_type);
  s.max_tokens = o.max_tokens;
  s.default_sampling = o.sampling_defaults;
  s.reasoning_effort = o.reasoning_effort;
  s.model_settings = o.settings;
  s.cpu_features = engine::cpu_features().to_string();
  s.kernels = engine::kernels::dispatch().name;
  s.build_info = "ggufd " GGUFD_VERSION;
}

// The one mmproj*.gguf in the model's folder, or "" (none, or several: which one is then unclear).
std::string mmproj_beside(const std::string& model_path) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::path dir = fs::path(model_path).parent_path();
  std::vector<std::string> found;
  for (fs::directory_iterator it(dir.empty() ? fs::path(".") : dir, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (name.find("mmproj") != std::string::npos && name.ends_with(".gguf") && it->is_regular_file(ec)) {
      found.push_back(it->path().string());
    }
  }
  if (found.size() > 1) {
    spdlog::warn("{} mmproj files beside {}: none is used; name one with --mmproj", found.size(), model_path);
    return "";
  }
  return found.empty() ? "" : found.front();
}

// The vision projector: --mmproj, or one found beside the model (--mmproj-auto) whose projection
// fits the model's width. An explicit one that does not load or fit fails the load; a found one
// is then left out with a warning.
std::shared_ptr<const engine::VisionModel> load_vision(const ModelOptions& o, const engine::HParams& hp,
                                                       const engine::Tokenizer& tok, bool generates,
                                                       engine::LookedUpTokens& layout_tokens) {
  const bool named = !o.mmproj_path.empty();
  const std::string path = named ? o.mmproj_path : o.mmproj_auto && generates ? mmproj_beside(o.path) : "";
  if (path.empty()) return nullptr;
  try {
    if (!generates) throw std::runtime_error("an encoder model takes no images");
    auto v = std::make_shared<const engine::VisionModel>(engine::VisionModel::load(path));
    if (const std::string why = engine::pairing_error(*v, hp); !why.empty()) throw std::runtime_error(path + ": " + why);
    const std::vector<std::string> texts = engine::looked_up_texts(v->traits());  // (idefics3's layout tokens)
    layout_tokens = engine::lookup_tokens(tok, texts);
    for (const std::string& text : texts) {
      if (!layout_tokens.contains(text)) {
        throw std::runtime_error(path + ": its images (" + v->traits().name + ") are laid out with a token '" +
                                 (text == "\n" ? "\\n" : text == "\n\n" ? "\\n\\n" : text) + "' the model's vocabulary lacks");
      }
    }
    const engine::VisionHParams& vh = v->hparams();
    const std::string tokens = vh.fit == engine::ImageFit::kLetterbox
                                   ? std::to_string(vh.n_tokens(vh.image_size, vh.image_size)) + " tokens per image"
                               : vh.fit == engine::ImageFit::kTiles
                                   ? std::to_string(vh.n_tokens(vh.image_size, vh.image_size)) + " tokens per tile, up to " +
                                         std::to_string(vh.longest_edge) + " pixels a side in tiles, and an overview"
                                   : std::to_string(vh.min_tokens) + " to " + std::to_string(vh.max_tokens) +
                                         " tokens per image, as its aspect";
    spdlog::info("vision projector {}: {}, ViT {} layers x {}, {}", path, v->traits().name, vh.n_layer, vh.n_embd, tokens);
    return v;
  } catch (const std::exception& e) {
    if (named) throw std::runtime_error(std::string("the vision projector (--mmproj): ") + e.what());
    spdlog::warn("not using {} found beside the model: {}", path, e.what());
    return nullptr;
  }
}

}  // namespace

void show_load_progress(uint64_t done, uint64_t total) {
  static const bool tty = ::isatty(STDERR_FILENO) == 1;
  if (!tty || total < (uint64_t{256} << 20)) return;
  std::fprintf(stderr, "\rloading weights: %3d%% (%llu / %llu MiB)%s", static_cast<int>(100 * done / total),
               static_cast<unsigned long long>(done >> 20), static_cast<unsigned long long>(total >> 20),
               done == total ? "\n" : "");
  std::fflush(stderr);
}

std::string default_model_id(const std::string& path) { return path.substr(path.find_last_of('/') + 1); }

LoadedModel::~LoadedModel() { scheduler.reset(); }

std::unique_ptr<LoadedModel> load_model(const ModelOptions& o, const std::string& id, const SharedParts& shared,
                                        const std::function<void(uint64_t done, uint64_t total)>& progress) {
  const auto start = Clock::now();
  auto m = std::make_unique<LoadedModel>();
  App& app = m->app;
  app.work = shared.work;
  app.media = shared.media;
  app.responses = shared.responses;
  app.settings = shared.settings;
  // The text side needs the file's metadata only: it is built on a second thread while this one
  // reads (and repacks) the weights, which mostly waits on the disk.
  std::future<TextParts> text = std::async(std::launch::async, [&o] { return build_text_parts(o); });
  m->model.emplace(engine::Model::load(o.path, o.repack));
  if (progress) m->model->page_in(progress);
  const double weights_ms = std::chrono::duration<double, std::milli>(Clock::now() - start).count();
  TextParts t = text.get();
  m->tokenizer.emplace(std::move(t.tokenizer));
  m->chat_template.emplace(std::move(t.chat_template));
  const std::string& tmpl = t.template_text;
  app.settings.chat_template_source = t.template_source;
  set_pooling(*m->model, o.pooling, app);
  app.vision = load_vision(o, m->model->hparams(), *m->tokenizer, app.generates, app.layout_tokens);
  engine::SchedulerOptions so = scheduler_options(o, *m->model, app, shared);
  so.vision = app.vision;
  if (so.spec == engine::SpecMode::kDraft) {
    if (o.draft_model_path.empty()) throw std::runtime_error("speculative decoding by a draft model needs --model-draft");
    try {
      m->draft_model.emplace(engine::Model::load(o.draft_model_path, o.repack));
      if (progress) m->draft_model->page_in(progress);
    } catch (const std::exception& e) {
      throw std::runtime_error(std::string("the draft model (--model-draft): ") + e.what());
    }
  }
  m->scheduler = std::make_unique<engine::Scheduler>(*m->model, *m->tokenizer, so,
                                                     m->draft_model ? &*m->draft_model : nullptr);
  app.model_path = o.path;
  app.model_id = id;
  struct stat st {};
  if (::stat(o.path.c_str(), &st) == 0) app.model_created = st.st_mtime;
  app.file = std::make_shared<gguf::File>(m->model->file());
  app.tokenizer = &*m->tokenizer;
  app.chat_template = &*m->chat_template;
  app.scheduler = m->scheduler.get();
  app.chat_features = t.features;
  m->grammars = std::move(t.grammars);
  app.grammars = m->grammars.get();
  fill_settings(app.settings, o, so);
  app.settings.chat_template = tmpl;
  const engine::SchedulerStats kv = m->scheduler->stats();
  m->memory_bytes = m->model->weight_bytes() + (m->draft_model ? m->draft_model->weight_bytes() : 0) +
                    (app.vision ? app.vision->files().data_bytes() : 0) + kv.kv_bytes +
                    kv.recurrent_bytes + kv.prefix_cache.snapshot_bytes;
  const auto& hp = m->model->hparams();
  spdlog::info("model {}: {} layers, embedding {}, vocab {}, context {} x {} slots, loaded in {:.0f} ms", id,
               hp.n_layer, hp.n_embd, hp.n_vocab, so.n_ctx, so.n_slots,
               std::chrono::duration<double, std::milli>(Clock::now() - start).count());
  spdlog::debug("model {}: weights {:.0f} ms; tokenizer, template and grammar vocabulary {:.0f} ms beside them", id,
                weights_ms, t.build_ms);
  std::string arch;
  for (const engine::HParamField& f : engine::describe_hparams(hp)) {
    if (f.name != "n_layer" && f.name != "n_embd") arch += (arch.empty() ? "" : ", ") + f.name + " " + f.value;
  }
  spdlog::info("architecture: {}", arch);
  log_memory(*m, o);
  log_speculation(*m, o, so);
  app.ready = true;
  return m;
}

}  // namespace server
