// Reading a model file's tensors with their shapes and types checked: the one place where a GGUF
// tensor becomes a Matrix or a vector of floats (the decoder's and the vision projector's loads).
#pragma once

#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

#include "engine/kernels/matmul.h"
#include "gguf/file.h"
#include "gguf/file_set.h"

namespace engine {

// Throws std::runtime_error("<file name>: <what>").
[[noreturn]] inline void fail(const gguf::File& file, const std::string& what) {
  throw std::runtime_error(file.name() + ": " + what);
}

// "[ne0, ne1, ...]"
inline std::string shape_string(const gguf::TensorInfo& t) {
  std::string s = "[";
  for (int i = 0; i < t.n_dims; ++i) s += (i ? ", " : "") + std::to_string(t.ne[i]);
  return s + "]";
}

// Reads the tensors of `files` (one file or a split set's parts), checking each one's presence,
// shape and type as it goes. Errors name the (first) file.
// Ownership: borrows the FileSet, which must outlive it and every Matrix it returns (views into
// the mapped file). Thread-safety: const methods only; safe to share.
class Loader {
 public:
  explicit Loader(const gguf::FileSet& files) : files_(files), file_(files.first()) {}

  // A 2-D weight W (rows, cols): GGUF shape [cols, rows].
  Matrix matrix(const std::string& name, int64_t rows, int64_t cols) const {
    const gguf::TensorInfo& t = get(name);
    if (t.n_dims != 2 || static_cast<int64_t>(t.ne[0]) != cols ||
        static_cast<int64_t>(t.ne[1]) != rows) {
      fail(file_, "tensor '" + name + "' has shape " + shape_string(t) + ", expected [" +
                      std::to_string(cols) + ", " + std::to_string(rows) + "]");
    }
    check_type(t);
    return view(t);
  }

  // A 1-D vector (n,) as f32; empty when absent and !required.
  std::vector<float> vector(const std::string& name, int64_t n, bool required) const {
    const gguf::TensorInfo* t = files_.find_tensor(name);
    if (!t) {
      if (required) get(name);  // throws "missing"
      return {};
    }
    if (t->n_dims != 1 || static_cast<int64_t>(t->ne[0]) != n) {
      fail(file_, "tensor '" + name + "' has shape " + shape_string(*t) + ", expected [" +
                      std::to_string(n) + "]");
    }
    std::vector<float> out(static_cast<size_t>(n));
    if (t->type == gguf::TensorType::F32) {
      std::memcpy(out.data(), t->data.data(), out.size() * sizeof(float));
    } else {
      check_type(*t);
      dequantize_row(view(*t), 0, out.data());
    }
    return out;
  }

  // A 2-D f32 tensor of `count` vectors (n,), GGUF shape [n, count], as (count, n); empty when
  // absent and !required.
  std::vector<float> vectors(const std::string& name, int64_t n, int64_t count, bool required) const {
    const gguf::TensorInfo* t = files_.find_tensor(name);
    if (!t) {
      if (required) get(name);  // throws "missing"
      return {};
    }
    if (t->n_dims != 2 || static_cast<int64_t>(t->ne[0]) != n || static_cast<int64_t>(t->ne[1]) != count) {
      fail(file_, "tensor '" + name + "' has shape " + shape_string(*t) + ", expected [" + std::to_string(n) +
                      ", " + std::to_string(count) + "]");
    }
    check_type(*t);
    const Matrix m = view(*t);
    std::vector<float> out(static_cast<size_t>(n * count));
    for (int64_t r = 0; r < count; ++r) dequantize_row(m, r, out.data() + r * n);
    return out;
  }

  // The 3-D tensor of n_expert matrices W_e (rows, cols), GGUF shape [cols, rows, n_expert]: one
  // view per expert.
  std::vector<Matrix> experts(const std::string& name, int64_t n_expert, int64_t rows, int64_t cols) const {
    const gguf::TensorInfo& t = get(name);
    if (t.n_dims != 3 || static_cast<int64_t>(t.ne[0]) != cols || static_cast<int64_t>(t.ne[1]) != rows ||
        static_cast<int64_t>(t.ne[2]) != n_expert) {
      fail(file_, "tensor '" + name + "' has shape " + shape_string(t) + ", expected [" + std::to_string(cols) +
                      ", " + std::to_string(rows) + ", " + std::to_string(n_expert) + "]");
    }
    check_type(t);
    const Matrix all = view(t);  // (n_expert * rows, cols)
    std::vector<Matrix> out;
    for (int64_t e = 0; e < n_expert; ++e) out.push_back(row_slice(all, e * rows, rows));
    return out;
  }

  // Rows [first, first + n) of m as a matrix of its own (a part of a fused tensor, one expert).
  static Matrix row_slice(const Matrix& m, int64_t first, int64_t n) {
    Matrix s = m;
    s.rows = n;
    s.data = static_cast<const uint8_t*>(m.data) + static_cast<size_t>(first) * m.row_bytes;
    return s;
  }

  bool has(const std::string& name) const { return files_.find_tensor(name) != nullptr; }
  const gguf::TensorInfo* find(const std::string& name) const { return files_.find_tensor(name); }

  const gguf::TensorInfo& get(const std::string& name) const {
    const gguf::TensorInfo* t = files_.find_tensor(name);
    if (!t) fail(file_, "tensor '" + name + "' is missing (architecture " + arch() + ")");
    return *t;
  }

  static Matrix view(const gguf::TensorInfo& t) {
    return Matrix{t.type, static_cast<int64_t>(t.n_rows()), static_cast<int64_t>(t.ne[0]),
                  static_cast<size_t>(t.row_bytes()), t.data.data()};
  }

 private:
  void check_type(const gguf::TensorInfo& t) const {
    if (!supports(t.type)) {
      fail(file_, "tensor '" + std::string(t.name) + "' has type " +
                      std::string(gguf::type_info(t.type).name) + ", which is not supported");
    }
  }
  std::string arch() const { return std::string(file_.find_string("general.architecture").value_or("?")); }

  const gguf::FileSet& files_;
  const gguf::File& file_;  // the metadata
};

}  // namespace engine
