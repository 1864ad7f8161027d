// Which elements of a direct all-reduce (direct_kernel.cuh) one block reduces. The call's
// elements are cut into nranks chunks of whole 16-byte packs, rank r reducing chunk r for every
// rank, and each chunk into `blocks` shares, again of whole packs: every share starts 16-byte
// aligned from the buffers' starts, and the shares of all ranks and blocks cover [0, count) once.
// Plain C++, so the host tests check the cut.
#pragma once

#include <cstdint>

#include "kernels/cuda/device_step.h"

namespace coll {
namespace device {

struct DirectShare {
  uint64_t begin;
  uint64_t end;
};

COLL_HOST_DEVICE DirectShare directShare(uint64_t count, uint32_t elemSize, uint32_t rank, uint32_t nranks,
                                         uint32_t block, uint32_t blocks) {
  const uint64_t grain = elemSize >= 16 ? 1 : 16 / elemSize;
  const uint64_t packs = (count + grain - 1) / grain;
  const uint64_t perRank = (packs + nranks - 1) / nranks;
  const uint64_t perBlock = (perRank + blocks - 1) / blocks;
  const uint64_t chunkEnd = (uint64_t(rank) + 1) * perRank * grain;
  uint64_t begin = (uint64_t(rank) * perRank + uint64_t(block) * perBlock) * grain;
  uint64_t end = begin + perBlock * grain;
  if (end > chunkEnd) end = chunkEnd;
  if (end > count) end = count;
  if (begin > end) begin = end;
  return {begin, end};
}

}  // namespace device
}  // namespace coll
