#include "server/api/embedding_request.h"

#include <set>

#include "engine/text/tokenizer/tokenizer.h"
#include "gguf/file.h"
#include "server/api/api_error.h"
#include "server/api/request_fields.h"
#include "server/api/request_json.h"

namespace server {

using nlohmann::json;

namespace {

// OpenAI's fields, and what other servers take (truncate: TEI, vLLM's truncate_prompt_tokens is
// not; normalize: TEI; embd_normalize: llama-server, 2 = L2 or -1 = none).
const std::set<std::string> kEmbeddingFields = {"model", "input", "encoding_format", "dimensions", "user",
                                                "truncate", "normalize", "embd_normalize"};
const std::set<std::string> kRerankFields = {"model", "query", "documents", "top_n", "return_documents",
                                             "truncate", "user"};

// Tokens of one input, at most the context; longer ones are cut when the request says
// "truncate": true (keeping the end token the tokenizer added), else a 400.
std::vector<int32_t> fit_context(std::vector<int32_t> ids, const App& app, bool truncate, const std::string& field,
                                 size_t index) {
  const auto n_ctx = static_cast<size_t>(app.settings.n_ctx);
  if (ids.size() <= n_ctx) return ids;
  if (!truncate) {
    throw invalid_field(field, field + "[" + std::to_string(index) + "] has " + std::to_string(ids.size()) +
                                   " tokens, more than the context of " + std::to_string(n_ctx) +
                                   " (send \"truncate\": true to cut it)");
  }
  const int32_t last = ids.back();
  const bool ends_special = app.tokenizer->is_control(last);
  ids.resize(n_ctx);
  if (ends_special) ids.back() = last;
  return ids;
}

void require_pooling(const App& app, bool rerank) {
  const bool is_ranker = app.pooling == engine::PoolingType::kRank;
  if (app.pooling == engine::PoolingType::kNone) {
    throw ApiError(400, "model " + app.model_id + " gives no " + (rerank ? "relevance scores" : "embeddings") +
                            ": it has no pooling type (serve it with --pooling " +
                            (rerank ? "rank, if it has a classification head" : "mean|cls|last") + ")");
  }
  if (rerank && !is_ranker) {
    throw ApiError(400, "model " + app.model_id + " is an embedding model (pooling " +
                            engine::pooling_name(app.pooling) + "), not a reranker: use /v1/embeddings");
  }
  if (!rerank && is_ranker) {
    throw ApiError(400, "model " + app.model_id + " is a reranker (pooling rank): use /v1/rerank");
  }
}

// "input": a string, an array of strings, an array of token ids, or an array of such arrays.
std::vector<std::vector<int32_t>> parse_inputs(const json& body, const App& app, bool truncate) {
  const auto it = body.find("input");
  if (it == body.end() || it->is_null()) throw invalid_field("input", "'input' is required");
  const json& in = *it;
  const int32_t n_vocab = app.tokenizer->n_vocab();
  std::vector<std::vector<int32_t>> inputs;
  auto add = [&](std::vector<int32_t> ids) {
    if (ids.empty()) throw invalid_field("input", "input[" + std::to_string(inputs.size()) + "] is empty");
    inputs.push_back(fit_context(std::move(ids), app, truncate, "input", inputs.size()));
  };
  auto text = [&](const std::string& s) {
    if (s.empty()) throw invalid_field("input", "input[" + std::to_string(inputs.size()) + "] is an empty string");
    add(app.tokenizer->encode(s, true, false));
  };
  if (in.is_string()) {
    text(in.get_ref<const std::string&>());
  } else if (in.is_array() && !in.empty() && in[0].is_number()) {
    add(to_token_ids(in, "input", n_vocab));
  } else if (in.is_array() && !in.empty()) {
    if (in.size() > kMaxEmbeddingInputs) {
      throw invalid_field("input", "at most " + std::to_string(kMaxEmbeddingInputs) + " inputs per request, found " +
                                       std::to_string(in.size()));
    }
    for (const json& e : in) {
      if (e.is_string()) {
        text(e.get_ref<const std::string&>());
      } else if (e.is_array()) {
        add(to_token_ids(e, "input", n_vocab));
      } else {
        throw invalid_field("input", "'input' array items must be strings or token arrays, found " + json_type_name(e));
      }
    }
  } else {
    throw invalid_field("input", "'input' must be a non-empty string, array of strings, array of token ids or "
                                 "array of token arrays");
  }
  return inputs;
}

}  // namespace

EmbeddingRequest prepare_embeddings(const App& app, std::string_view text) {
  const json body = parse_object(text, app.settings.max_json_depth);
  EmbeddingRequest r;
  r.ignored_fields = check_fields(body, kEmbeddingFields, {}, app.settings.strict_api);
  check_request_model(body, app);
  require_pooling(app, false);
  if (const auto f = get_string(body, "encoding_format")) {
    if (*f != "float" && *f != "base64") {
      throw invalid_field("encoding_format", "'encoding_format' must be \"float\" or \"base64\", found \"" + excerpt(*f) + "\"");
    }
    r.base64 = *f == "base64";
  }
  r.dimensions = get_int(body, "dimensions", 1, app.n_embd);
  r.normalize = get_bool(body, "normalize").value_or(true);
  if (const auto n = get_int(body, "embd_normalize", -1, 2)) {
    if (*n != -1 && *n != 2) throw invalid_field("embd_normalize", "'embd_normalize' must be 2 (L2) or -1 (none)");
    r.normalize = *n == 2;
  }
  r.inputs = parse_inputs(body, app, get_bool(body, "truncate").value_or(false));
  return r;
}

namespace {

// The query and a document as the model pairs them: its rerank template ({query}, {document})
// when it has one, else [BOS] query [EOS] [SEP] document [EOS] with the tokens it adds (BERT:
// [CLS] query [SEP] document), as llama.cpp does.
std::vector<int32_t> pair_tokens(const App& app, const std::string& rerank_template, const std::string& query,
                                 const std::string& doc) {
  const engine::Tokenizer& tok = *app.tokenizer;
  if (!rerank_template.empty()) {
    // control tokens of the template parsed, none of the client's text (see Tokenizer::special_starts)
    std::string prompt;
    std::vector<size_t> guarded;
    auto insert = [&](const std::string& client_text) {
      for (size_t p : tok.special_starts(client_text)) guarded.push_back(prompt.size() + p);
      prompt += client_text;
    };
    for (size_t i = 0; i < rerank_template.size();) {
      if (rerank_template.compare(i, 7, "{query}") == 0) {
        insert(query);
        i += 7;
      } else if (rerank_template.compare(i, 10, "{document}") == 0) {
        insert(doc);
        i += 10;
      } else {
        prompt += rerank_template[i++];
      }
    }
    return tok.encode(prompt, false, true, guarded);
  }
  const bool wordpiece = tok.model() == "bert";
  const int32_t eos = tok.eos() >= 0 ? tok.eos() : tok.sep();
  std::vector<int32_t> ids;
  if ((tok.add_bos() || wordpiece) && tok.bos() >= 0) ids.push_back(tok.bos());
  const std::vector<int32_t> q = tok.encode(query, false, false);
  ids.insert(ids.end(), q.begin(), q.end());
  if (tok.add_eos() && !wordpiece && eos >= 0) ids.push_back(eos);
  if ((tok.vocab().flags().add_sep || wordpiece) && tok.sep() >= 0) ids.push_back(tok.sep());
  const std::vector<int32_t> d = tok.encode(doc, false, false);
  ids.insert(ids.end(), d.begin(), d.end());
  if (tok.add_eos() && !wordpiece && eos >= 0) ids.push_back(eos);
  return ids;
}

}  // namespace

RerankRequest prepare_rerank(const App& app, std::string_view text) {
  const json body = parse_object(text, app.settings.max_json_depth);
  RerankRequest r;
  r.ignored_fields = check_fields(body, kRerankFields, {}, app.settings.strict_api);
  check_request_model(body, app);
  require_pooling(app, true);
  const std::optional<std::string> query = get_string(body, "query");
  if (!query) throw invalid_field("query", "'query' is required (a string)");
  const auto docs = body.find("documents");
  if (docs == body.end() || !docs->is_array() || docs->empty()) {
    throw invalid_field("documents", "'documents' must be a non-empty array of strings");
  }
  if (docs->size() > kMaxEmbeddingInputs) {
    throw invalid_field("documents", "at most " + std::to_string(kMaxEmbeddingInputs) + " documents per request, found " +
                                         std::to_string(docs->size()));
  }
  for (const json& d : *docs) {
    if (d.is_string()) {
      r.documents.push_back(d.get<std::string>());
    } else if (d.is_object() && d.contains("text") && d["text"].is_string()) {  // Cohere/Jina's {"text": ...}
      r.documents.push_back(d["text"].get<std::string>());
    } else {
      throw invalid_field("documents", "documents[" + std::to_string(r.documents.size()) +
                                           "] must be a string or an object with a \"text\" string, found " + json_type_name(d));
    }
  }
  r.top_n = static_cast<size_t>(get_int(body, "top_n", 1, INT64_MAX).value_or(static_cast<int64_t>(r.documents.size())));
  r.return_documents = get_bool(body, "return_documents").value_or(false);
  const bool truncate = get_bool(body, "truncate").value_or(false);
  const std::string rerank_template(app.file ? app.file->find_string("tokenizer.chat_template.rerank").value_or("") : "");
  for (size_t i = 0; i < r.documents.size(); ++i) {
    r.inputs.push_back(fit_context(pair_tokens(app, rerank_template, *query, r.documents[i]), app, truncate, "documents", i));
  }
  return r;
}

}  // namespace server
