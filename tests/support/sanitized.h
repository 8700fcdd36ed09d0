// Whether this build is instrumented by AddressSanitizer (.ci/run's sanitizer stage). The few
// randomized property tests whose cost is computation, not coverage, run fewer cases there: the
// sanitizers look for memory and UB errors on every path those cases take, and the first stage
// (no sanitizers) runs all of them.
#pragma once

namespace ggufd::test {

#if defined(__SANITIZE_ADDRESS__)
inline constexpr bool kSanitized = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
inline constexpr bool kSanitized = true;
#else
inline constexpr bool kSanitized = false;
#endif
#else
inline constexpr bool kSanitized = false;
#endif

}  // namespace ggufd::test
