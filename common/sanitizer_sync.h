// Telling ThreadSanitizer about hand-offs it cannot see.
//
// Ranks hand buffers to each other through flags in shared-memory segments, and each rank maps a
// segment at its own address, even when the ranks are threads of one process: TSan relates
// accesses by address, so it never pairs one rank's release store with another's acquire load.
// Where a rank then touches another rank's user buffer directly (direct reads between threads
// are a plain memcpy), TSan would report the copy as racing with the owner's writes. Both ranks
// know the buffer's address, so they name the hand-off on it: the side that hands over calls
// sanitizerRelease(address) before its flag store, the side that takes over calls
// sanitizerAcquire(address) after its flag load. Outside a TSan build both are empty.
#pragma once

#include <cstdint>

#if defined(__SANITIZE_THREAD__)
#define COLL_SANITIZER_SYNC 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define COLL_SANITIZER_SYNC 1
#endif
#endif

#ifdef COLL_SANITIZER_SYNC
extern "C" void __tsan_acquire(void* address);
extern "C" void __tsan_release(void* address);
#endif

namespace coll {

#ifdef COLL_SANITIZER_SYNC
constexpr bool kSanitizerSync = true;
inline void sanitizerRelease(uint64_t address) { __tsan_release(reinterpret_cast<void*>(address)); }
inline void sanitizerAcquire(uint64_t address) { __tsan_acquire(reinterpret_cast<void*>(address)); }
#else
constexpr bool kSanitizerSync = false;
inline void sanitizerRelease(uint64_t) {}
inline void sanitizerAcquire(uint64_t) {}
#endif

}  // namespace coll
