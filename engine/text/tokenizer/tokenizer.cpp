#include "engine/text/tokenizer/tokenizer.h"

#include <stdexcept>

#include "engine/text/tokenizer/bpe.h"
#include "engine/text/tokenizer/special_tokens.h"
#include "engine/text/tokenizer/spm.h"
#include "engine/text/tokenizer/wordpiece.h"
#include "gguf/file.h"

namespace engine {

using tokenizer::Fragment;
using tokenizer::kNoToken;
using tokenizer::VocabKind;

struct Tokenizer::Impl {
  std::unique_ptr<tokenizer::Vocab> vocab;
  std::unique_ptr<tokenizer::SpmEncoder> spm;
  std::unique_ptr<tokenizer::BpeEncoder> bpe;
  std::unique_ptr<tokenizer::WordPieceEncoder> wordpiece;
  std::unique_ptr<tokenizer::SpecialTokenMatcher> specials;
  std::unique_ptr<tokenizer::PieceTable> pieces;

  void encode_spm(std::string_view text, const std::vector<Fragment>& fragments,
                  std::vector<int32_t>& out) const;
  void encode_bpe(std::string_view text, const std::vector<Fragment>& fragments,
                  std::vector<int32_t>& out) const;
  void encode_wordpiece(std::string_view text, const std::vector<Fragment>& fragments,
                        std::vector<int32_t>& out) const;
};

Tokenizer Tokenizer::from_gguf(const gguf::File& file) {
  auto impl = std::make_shared<Impl>();
  impl->vocab = tokenizer::Vocab::load(file);
  const tokenizer::Vocab& vocab = *impl->vocab;
  switch (vocab.kind()) {
    case VocabKind::kSentencePiece:
      impl->spm = std::make_unique<tokenizer::SpmEncoder>(vocab);
      break;
    case VocabKind::kBytePairEncoding:
      impl->bpe = std::make_unique<tokenizer::BpeEncoder>(vocab);
      break;
    case VocabKind::kWordPiece:
      impl->wordpiece = std::make_unique<tokenizer::WordPieceEncoder>(vocab);
      break;
  }
  impl->specials = std::make_unique<tokenizer::SpecialTokenMatcher>(vocab);
  impl->pieces = std::make_unique<tokenizer::PieceTable>(vocab);
  return Tokenizer(std::move(impl));
}

// Every text fragment gets a leading space when the model wants one and it follows the start of
// the text or a special token (reference behaviour), then spaces become U+2581.
void Tokenizer::Impl::encode_spm(std::string_view text, const std::vector<Fragment>& fragments,
                                 std::vector<int32_t>& out) const {
  bool after_special = true;
  std::string buffer;
  for (const Fragment& f : fragments) {
    if (!f.is_text()) {
      out.push_back(f.token);
      after_special = true;
      continue;
    }
    buffer.clear();
    if (vocab->flags().add_space_prefix && after_special) buffer = ' ';
    buffer.append(text.substr(f.offset, f.length));
    spm->encode(tokenizer::escape_spaces(buffer), out);
    after_special = false;
  }
}

void Tokenizer::Impl::encode_bpe(std::string_view text, const std::vector<Fragment>& fragments,
                                 std::vector<int32_t>& out) const {
  tokenizer::BpeScratch scratch;
  for (const Fragment& f : fragments) {
    if (f.is_text()) {
      bpe->encode(text.substr(f.offset, f.length), scratch, out);
    } else {
      out.push_back(f.token);
    }
  }
}

void Tokenizer::Impl::encode_wordpiece(std::string_view text,
                                       const std::vector<Fragment>& fragments,
                                       std::vector<int32_t>& out) const {
  for (const Fragment& f : fragments) {
    if (f.is_text()) {
      wordpiece->encode(text.substr(f.offset, f.length), out);
    } else {
      out.push_back(f.token);
    }
  }
}

std::vector<int32_t> Tokenizer::encode(std::string_view text, bool add_special,
                                       bool parse_special) const {
  return encode(text, add_special, parse_special, {});
}

std::vector<size_t> Tokenizer::special_starts(std::string_view text) const {
  return impl_->specials->special_starts(text);
}

std::vector<int32_t> Tokenizer::encode(std::string_view text, bool add_special, bool parse_special,
                                       std::span<const size_t> guarded) const {
  const tokenizer::Vocab& vocab = *impl_->vocab;
  const auto& special = vocab.special();
  std::vector<int32_t> out;
  out.reserve(text.size() / 3 + 4);
  const bool wordpiece = vocab.kind() == VocabKind::kWordPiece;
  if (add_special && (vocab.flags().add_bos || wordpiece) && special.bos != kNoToken) {
    out.push_back(special.bos);
  }
  const std::vector<Fragment> fragments = impl_->specials->partition(text, parse_special, guarded);
  switch (vocab.kind()) {
    case VocabKind::kSentencePiece: impl_->encode_spm(text, fragments, out); break;
    case VocabKind::kBytePairEncoding: impl_->encode_bpe(text, fragments, out); break;
    case VocabKind::kWordPiece: impl_->encode_wordpiece(text, fragments, out); break;
  }
  // WordPiece: [CLS] text [SEP] whatever the flags say, and never EOS (reference behaviour).
  if (add_special && !wordpiece && vocab.flags().add_eos && special.eos != kNoToken) {
    out.push_back(special.eos);
  }
  if (add_special && wordpiece && special.sep != kNoToken) out.push_back(special.sep);
  return out;
}

std::string Tokenizer::decode(std::span<const int32_t> ids, bool render_special) const {
  for (int32_t id : ids) tokenizer::check_token_id(id, n_vocab());
  std::string out;
  bool first = true;
  for (int32_t id : ids) {
    std::string_view piece = impl_->pieces->piece(id, render_special);
    if (first && !piece.empty()) {
      if (strips_leading_space(id) && piece.front() == ' ') piece.remove_prefix(1);
      first = false;
    }
    out.append(piece);
  }
  return out;
}

std::string_view Tokenizer::piece(int32_t id, bool render_special) const {
  return impl_->pieces->piece(id, render_special);
}

std::string_view Tokenizer::token_text(int32_t id) const {
  tokenizer::check_token_id(id, n_vocab());
  return impl_->vocab->text(id);
}

TokenType Tokenizer::token_type(int32_t id) const {
  tokenizer::check_token_id(id, n_vocab());
  return impl_->vocab->type(id);
}

bool Tokenizer::is_control(int32_t id) const {
  tokenizer::check_token_id(id, n_vocab());
  return impl_->vocab->has_attr(id, tokenizer::kAttrControl);
}

int32_t Tokenizer::find_token(std::string_view text) const { return impl_->vocab->find(text); }

bool Tokenizer::strips_leading_space(int32_t id) const {
  tokenizer::check_token_id(id, n_vocab());
  return impl_->pieces->strips_leading_space(id);
}

int32_t Tokenizer::n_vocab() const { return impl_->vocab->size(); }
int32_t Tokenizer::bos() const { return impl_->vocab->special().bos; }
int32_t Tokenizer::eos() const { return impl_->vocab->special().eos; }
int32_t Tokenizer::eot() const { return impl_->vocab->special().eot; }
int32_t Tokenizer::eom() const { return impl_->vocab->special().eom; }
int32_t Tokenizer::unk() const { return impl_->vocab->special().unk; }
int32_t Tokenizer::pad() const { return impl_->vocab->special().pad; }
int32_t Tokenizer::sep() const { return impl_->vocab->special().sep; }
bool Tokenizer::add_bos() const { return impl_->vocab->flags().add_bos; }
bool Tokenizer::add_eos() const { return impl_->vocab->flags().add_eos; }
bool Tokenizer::is_eog(int32_t id) const { return impl_->vocab->is_eog(id); }
const std::vector<int32_t>& Tokenizer::eog_ids() const { return impl_->vocab->eog_ids(); }
std::string_view Tokenizer::model() const { return impl_->vocab->model_name(); }
std::string_view Tokenizer::pre_tokenizer() const { return impl_->vocab->pre_name(); }
const tokenizer::Vocab& Tokenizer::vocab() const { return *impl_->vocab; }

}  // namespace engine
