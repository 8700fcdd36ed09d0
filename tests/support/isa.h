// The whole-model references run once per kernel table: tests/CMakeLists.txt registers the golden
// and batching tests a second time per table name (`<test>@scalar`, `@avx2`, `@avxvnni`,
// `@avx512vnni`) with GGUFD_ISA set to it, so that every path a user's CPU may take is checked
// against llama.cpp, not only the best one of the CI machine. Such a test calls
// GGUFD_REQUIRE_ISA() first: it skips when this CPU cannot run the table (a legitimate skip: an
// instruction set, not missing data), or when GGUFD_ISA_SKIP_BEST is set and the table is the
// best one, which the plain entries (no GGUFD_ISA) have run already.
#pragma once

#include <gtest/gtest.h>

#include <cstdlib>
#include <optional>
#include <string>

#include "engine/kernels/dispatch.h"

namespace ggufd::test {

// Why the current GGUFD_ISA table is not to be tested here, or nothing.
inline std::optional<std::string> isa_skip_reason() {
  const char* isa = std::getenv("GGUFD_ISA");
  if (isa == nullptr || *isa == '\0') return std::nullopt;
  const auto tables = engine::kernels::available_dispatches();
  std::string runs;
  for (const auto* t : tables) {
    if (t->name == std::string(isa)) {
      if (t == tables.front() && std::getenv("GGUFD_ISA_SKIP_BEST") != nullptr) {
        return "GGUFD_ISA=" + std::string(isa) + " is this CPU's best table: the entries without GGUFD_ISA ran it";
      }
      return std::nullopt;
    }
    runs += std::string(runs.empty() ? "" : ", ") + std::string(t->name);
  }
  return "this CPU can't run GGUFD_ISA=" + std::string(isa) + " (it runs " + runs + ")";
}

}  // namespace ggufd::test

#define GGUFD_REQUIRE_ISA()                                                        \
  do {                                                                             \
    if (const auto why = ::ggufd::test::isa_skip_reason()) GTEST_SKIP() << *why;   \
  } while (0)
