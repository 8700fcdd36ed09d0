// Clang's thread-safety annotations (checked by -Wthread-safety in the clang build, no-ops for
// GCC) and a mutex that carries them. std::mutex has none in libstdc++, so state guarded by a
// std::mutex cannot be checked; guard it with Mutex instead.
#pragma once

#include <mutex>

#if defined(__clang__)
#define GGUFD_THREAD_ANNOTATION(x) __attribute__((x))
#else
#define GGUFD_THREAD_ANNOTATION(x)
#endif

#define GGUFD_CAPABILITY(x) GGUFD_THREAD_ANNOTATION(capability(x))
#define GGUFD_SCOPED_CAPABILITY GGUFD_THREAD_ANNOTATION(scoped_lockable)
#define GGUFD_GUARDED_BY(x) GGUFD_THREAD_ANNOTATION(guarded_by(x))
#define GGUFD_REQUIRES(...) GGUFD_THREAD_ANNOTATION(requires_capability(__VA_ARGS__))
#define GGUFD_ACQUIRE(...) GGUFD_THREAD_ANNOTATION(acquire_capability(__VA_ARGS__))
#define GGUFD_RELEASE(...) GGUFD_THREAD_ANNOTATION(release_capability(__VA_ARGS__))
#define GGUFD_EXCLUDES(...) GGUFD_THREAD_ANNOTATION(locks_excluded(__VA_ARGS__))

namespace engine {

// A std::mutex the analysis knows. BasicLockable, so std::condition_variable_any waits on it.
class GGUFD_CAPABILITY("mutex") Mutex {
 public:
  void lock() GGUFD_ACQUIRE() { m_.lock(); }
  void unlock() GGUFD_RELEASE() { m_.unlock(); }

 private:
  std::mutex m_;
};

// Holds a Mutex for its scope.
class GGUFD_SCOPED_CAPABILITY MutexLock {
 public:
  explicit MutexLock(Mutex& m) GGUFD_ACQUIRE(m) : m_(m) { m_.lock(); }
  ~MutexLock() GGUFD_RELEASE() { m_.unlock(); }
  MutexLock(const MutexLock&) = delete;
  MutexLock& operator=(const MutexLock&) = delete;

 private:
  Mutex& m_;
};

}  // namespace engine
