#include "any_source.h"

#include <c10/util/Exception.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <thread>

namespace torch_collective {
namespace {

bool countingWanted() {
  const char* value = std::getenv("TORCH_COLLECTIVE_ANY_SOURCE");
  return value == nullptr || std::strcmp(value, "0") != 0;
}

}  // namespace

AnySourceMatcher::AnySourceMatcher(c10::intrusive_ptr<c10d::Store> store, int rank, int size, bool libraryReceives)
    : store_(std::move(store)),
      rank_(rank),
      size_(size),
      libraryReceives_(libraryReceives),
      storeCounts_(store_ && countingWanted()),
      taken_(size, 0) {}

std::string AnySourceMatcher::counterKey(int receiver, int sender) const {
  return "torch_collective/sent/" + std::to_string(receiver) + "/" + std::to_string(sender);
}

void AnySourceMatcher::noteSend(int peer, bool onDevice) {
  if (countsInStore(onDevice)) store_->add(counterKey(peer, rank_), 1);
}

void AnySourceMatcher::noteRecv(int peer, bool onDevice) {
  if (!countsInStore(onDevice)) return;
  std::lock_guard<std::mutex> lock(mutex_);
  ++taken_[peer];
}

int AnySourceMatcher::claimSender(std::chrono::milliseconds timeout) {
  TORCH_CHECK(storeCounts_, "collective backend: recv from any source is off: ",
              store_ ? "TORCH_COLLECTIVE_ANY_SOURCE=0" : "this group has no store", " (sends are not counted)");
  std::lock_guard<std::mutex> lock(mutex_);
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  auto poll = std::chrono::microseconds(100);
  for (;;) {
    TORCH_CHECK(!cancelled_.load(), "collective backend: recv from any source: the process group was aborted");
    for (int step = 0; step < size_; ++step) {
      const int sender = (nextCandidate_ + step) % size_;
      if (sender == rank_) continue;
      // add(key, 0) reads a counter that may not exist yet (it then reads 0) without waiting.
      if (store_->add(counterKey(rank_, sender), 0) > taken_[sender]) {
        ++taken_[sender];
        nextCandidate_ = (sender + 1) % size_;
        return sender;
      }
    }
    TORCH_CHECK(std::chrono::steady_clock::now() < deadline,
                "collective backend: recv from any source: Timed out after ", timeout.count(),
                " ms: no rank sent rank ", rank_, " a message it has not received yet");
    std::this_thread::sleep_for(poll);
    poll = std::min(poll * 2, std::chrono::microseconds(5000));
  }
}

}  // namespace torch_collective
