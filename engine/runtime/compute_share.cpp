#include "engine/runtime/compute_share.h"

namespace engine {

ComputeShare::ComputeShare(int n_threads) : pool_(thread_count(n_threads)) {}

ComputeShare::Turn::Turn(ComputeShare& share) : share_(share) {
  MutexLock lock(share_.mu_);
  const uint64_t ticket = share_.next_ticket_++;
  if (share_.serving_ != ticket) ++share_.waited_;
  while (share_.serving_ != ticket) share_.cv_.wait(share_.mu_);
}

ComputeShare::Turn::~Turn() {
  {
    MutexLock lock(share_.mu_);
    ++share_.serving_;
  }
  share_.cv_.notify_all();
}

uint64_t ComputeShare::turns() const {
  MutexLock lock(mu_);
  return serving_;
}

uint64_t ComputeShare::waited() const {
  MutexLock lock(mu_);
  return waited_;
}

}  // namespace engine
