#include "kernels/cpu/streaming.h"

#include <algorithm>
#include <cstdint>
#include <cstring>

#include "kernels/cpu/reduce.h"

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace coll {
namespace kernels {
namespace {

// The bounce block: results land here with ordinary stores (it stays in L1) and then stream out.
constexpr size_t kBounceBytes = 16384;

}  // namespace

void streamingCopy(void* dst, const void* src, size_t bytes) {
#if defined(__SSE2__)
  auto* d = static_cast<unsigned char*>(dst);
  const auto* s = static_cast<const unsigned char*>(src);
  size_t head = std::min(bytes, static_cast<size_t>((16 - reinterpret_cast<uintptr_t>(d) % 16) % 16));
  memcpy(d, s, head);
  size_t i = head;
  for (; i + 64 <= bytes; i += 64) {
    __m128i a = _mm_loadu_si128(reinterpret_cast<const __m128i*>(s + i));
    __m128i b = _mm_loadu_si128(reinterpret_cast<const __m128i*>(s + i + 16));
    __m128i c = _mm_loadu_si128(reinterpret_cast<const __m128i*>(s + i + 32));
    __m128i e = _mm_loadu_si128(reinterpret_cast<const __m128i*>(s + i + 48));
    _mm_stream_si128(reinterpret_cast<__m128i*>(d + i), a);
    _mm_stream_si128(reinterpret_cast<__m128i*>(d + i + 16), b);
    _mm_stream_si128(reinterpret_cast<__m128i*>(d + i + 32), c);
    _mm_stream_si128(reinterpret_cast<__m128i*>(d + i + 48), e);
  }
  memcpy(d + i, s + i, bytes - i);
  // Streaming stores are weakly ordered: fence before anyone is told the data is there.
  _mm_sfence();
#else
  memcpy(dst, src, bytes);
#endif
}

void reduceCopyStreamingLast(collDataType_t type, collRedOp_t op, const void* const* srcs, int nsrcs,
                             void* const* dsts, int ndsts, size_t count, int avgDivisor) {
  size_t elemSize = dataTypeSize(type);
  if (elemSize == 0 || count == 0 || ndsts < 1 || ndsts > kMaxCopyDestinations) return;
  alignas(64) unsigned char bounce[kBounceBytes];
  size_t blockElems = kBounceBytes / elemSize;
  const void* blockSrcs[kMaxReduceSources];
  void* blockDsts[kMaxCopyDestinations];
  for (size_t first = 0; first < count; first += blockElems) {
    size_t n = std::min(blockElems, count - first);
    size_t offset = first * elemSize;
    for (int i = 0; i < nsrcs; ++i) blockSrcs[i] = static_cast<const unsigned char*>(srcs[i]) + offset;
    for (int j = 0; j + 1 < ndsts; ++j) blockDsts[j] = static_cast<unsigned char*>(dsts[j]) + offset;
    blockDsts[ndsts - 1] = bounce;
    // Each block reads all its sources before its destination is written, so a destination that
    // is also a source (in place) stays correct.
    reduceCopy(type, op, blockSrcs, nsrcs, blockDsts, ndsts, n, avgDivisor);
    streamingCopy(static_cast<unsigned char*>(dsts[ndsts - 1]) + offset, bounce, n * elemSize);
  }
}

}  // namespace kernels
}  // namespace coll
