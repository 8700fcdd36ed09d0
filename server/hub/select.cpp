// Which files of a repo a spec means: llama-server's choice (common/download.cpp) rewritten:
// the file whose name carries the tag followed by '.' or '-' (default Q4_K_M, then Q8_0, then the
// first model file), all parts of its split set, and the mmproj file nearest to it.
#include <algorithm>
#include <cctype>
#include <cstdlib>

#include "server/hub/hub.h"
#include "server/hub/spec.h"

namespace hub::detail {

namespace {

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

std::string basename(const std::string& path) {
  const size_t slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

bool is_gguf(const std::string& path) { return path.size() > 5 && path.compare(path.size() - 5, 5, ".gguf") == 0; }

// A model file, not a projector, importance matrix or draft head.
bool is_model_file(const std::string& path) {
  if (!is_gguf(path)) return false;
  const std::string name = basename(path);
  for (const char* skip : {"mmproj", "imatrix", "mtp-", "eagle3-", "dflash-"}) {
    if (name.find(skip) != std::string::npos) return false;
  }
  return true;
}

// The tag followed by '.' or '-', anywhere in the path, ignoring case.
bool has_tag(const std::string& path, const std::string& tag) {
  const std::string p = lower(path), t = lower(tag);
  for (size_t at = p.find(t); at != std::string::npos; at = p.find(t, at + 1)) {
    const size_t after = at + t.size();
    if (after < p.size() && (p[after] == '.' || p[after] == '-')) return true;
  }
  return false;
}

const RemoteFile* first_model(const std::vector<RemoteFile>& files, const std::string& tag) {
  for (const RemoteFile& f : files) {
    if (!is_model_file(f.path) || (!tag.empty() && !has_tag(f.path, tag))) continue;
    const SplitInfo s = split_info(f.path);
    if (s.count > 1 && s.index != 1) continue;
    return &f;
  }
  return nullptr;
}

int quant_bits(const std::string& path) {
  const std::string tag = split_info(path).tag;
  const size_t at = tag.find_first_of("0123456789");
  return at == std::string::npos ? 0 : std::atoi(tag.c_str() + at);
}

std::vector<std::string> components(const std::string& path) {
  std::vector<std::string> out;
  size_t start = 0;
  for (size_t slash; (slash = path.find('/', start)) != std::string::npos; start = slash + 1) {
    out.push_back(path.substr(start, slash - start));
  }
  return out;  // the folders only; the file name is left out
}

// The mmproj file whose folder contains the model's (deepest first), then closest in quant bits.
std::optional<RemoteFile> nearest_mmproj(const std::vector<RemoteFile>& files, const std::string& model) {
  const std::vector<std::string> model_dirs = components(model);
  const int model_bits = quant_bits(model);
  std::optional<RemoteFile> best;
  size_t best_depth = 0;
  int best_diff = 0;
  for (const RemoteFile& f : files) {
    if (!is_gguf(f.path) || basename(f.path).find("mmproj") == std::string::npos) continue;
    const std::vector<std::string> dirs = components(f.path);
    if (dirs.size() > model_dirs.size() || !std::equal(dirs.begin(), dirs.end(), model_dirs.begin())) continue;
    const int diff = std::abs(quant_bits(f.path) - model_bits);
    if (!best || dirs.size() > best_depth || (dirs.size() == best_depth && diff < best_diff)) {
      best = f;
      best_depth = dirs.size();
      best_diff = diff;
    }
  }
  return best;
}

std::string available(const std::vector<RemoteFile>& files) {
  std::string list;
  size_t shown = 0;
  for (const RemoteFile& f : files) {
    if (!is_gguf(f.path)) continue;
    if (++shown > 20) {
      list += ", ...";
      break;
    }
    list += (list.empty() ? "" : ", ") + f.path;
  }
  return list.empty() ? "(no .gguf files)" : list;
}

std::vector<RemoteFile> all_parts(const std::vector<RemoteFile>& files, const RemoteFile& first,
                                  const std::string& repo) {
  std::vector<RemoteFile> parts;
  for (const std::string& name : split_parts(first.path)) {
    const auto it = std::find_if(files.begin(), files.end(), [&](const RemoteFile& f) { return f.path == name; });
    if (it == files.end()) throw HubError("split file incomplete in " + repo + ": " + name + " is missing");
    parts.push_back(*it);
  }
  return parts;
}

}  // namespace

Plan plan_files(const std::vector<RemoteFile>& files, const Spec& spec, bool with_mmproj) {
  const RemoteFile* model = nullptr;
  if (spec.kind == Spec::Kind::kRepoFile) {
    const auto it = std::find_if(files.begin(), files.end(), [&](const RemoteFile& f) { return f.path == spec.file; });
    if (it == files.end()) {
      throw HubError("file '" + spec.file + "' not found in repo " + spec.repo + "; it has: " + available(files));
    }
    model = &*it;
  } else if (!spec.tag.empty()) {
    model = first_model(files, spec.tag);
  } else {
    for (const char* tag : {"Q4_K_M", "Q8_0", ""}) {
      if ((model = first_model(files, tag)) != nullptr) break;
    }
  }
  if (model == nullptr) {
    throw HubError("no model file" + (spec.tag.empty() ? std::string() : " tagged " + spec.tag) + " in repo " +
                   spec.repo + "; it has: " + available(files));
  }
  Plan plan;
  plan.parts = all_parts(files, *model, spec.repo);
  if (with_mmproj) plan.mmproj = nearest_mmproj(files, model->path);
  plan.tag = spec.tag.empty() ? file_tag(model->path) : spec.tag;
  return plan;
}

std::string file_tag(const std::string& path) {
  const SplitInfo s = split_info(path);
  return s.tag.empty() ? basename(s.prefix) : s.tag;
}

std::string plan_id(const Spec& spec, const Plan& plan) { return spec.repo + ":" + plan.tag; }

std::string url_id(const Spec& spec) { return spec.host + "/" + spec.path; }

}  // namespace hub::detail
