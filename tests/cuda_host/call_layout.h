// The buffers one rank passes to a collective (in elements), and the API's in-place layouts, as
// the device tests lay them out: tests/cuda_host (simulated ranks) and tests/cuda (GPU ranks).
#pragma once

#include <cstddef>

#include "src/coll_call.h"

namespace colltest {

struct CallExtents {
  size_t send;
  size_t recv;
};

// What each buffer holds on `rank` (0: the rank passes no such buffer). A barrier moves one
// element through scratch buffers; send/recv pairs hold `count` each way.
inline CallExtents callExtents(coll::CollType type, int nranks, int rank, int root, size_t count) {
  const size_t all = count * static_cast<size_t>(nranks);
  const bool isRoot = rank == root;
  switch (type) {
    case coll::CollType::kBroadcast:
      return {isRoot ? count : 0, count};
    case coll::CollType::kReduce:
      return {count, isRoot ? count : 0};
    case coll::CollType::kAllGather:
      return {count, all};
    case coll::CollType::kReduceScatter:
      return {all, count};
    case coll::CollType::kGather:
      return {count, isRoot ? all : 0};
    case coll::CollType::kScatter:
      return {isRoot ? all : 0, count};
    case coll::CollType::kAllToAll:
      return {all, all};
    case coll::CollType::kBarrier:
      return {1, 1};
    default:  // all-reduce, send/recv
      return {count, count};
  }
}

// The in-place layout of validate.cc: offsets (elements) of the send and receive buffers in one
// region. False when the collective has no in-place form on this rank.
inline bool inPlaceOffsets(coll::CollType type, int rank, int root, size_t count, size_t* sendAt, size_t* recvAt) {
  *sendAt = *recvAt = 0;
  switch (type) {
    case coll::CollType::kAllReduce:
    case coll::CollType::kBroadcast:
    case coll::CollType::kReduce:
      return true;
    case coll::CollType::kAllGather:
      *sendAt = static_cast<size_t>(rank) * count;
      return true;
    case coll::CollType::kReduceScatter:
      *recvAt = static_cast<size_t>(rank) * count;
      return true;
    case coll::CollType::kGather:
      *sendAt = static_cast<size_t>(root) * count;
      return rank == root;
    case coll::CollType::kScatter:
      *recvAt = static_cast<size_t>(root) * count;
      return rank == root;
    default:
      return false;
  }
}

}  // namespace colltest
