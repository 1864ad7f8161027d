// One collective call as the layers below the C API see it: which collective, the buffers and
// the arguments, already validated.
#pragma once

#include <cstddef>
#include <cstdint>

#include "collective.h"

namespace coll {

enum class CollType : uint8_t {
  kAllReduce,
  kBroadcast,
  kReduce,
  kAllGather,
  kReduceScatter,
  kGather,
  kScatter,
  kAllToAll,
  kBarrier,
  kSend,
  kRecv,
  kCount
};

const char* collTypeName(CollType type);  // "AllReduce", ... as in the C function names

struct CollCall {
  CollType type = CollType::kBarrier;
  const void* sendbuff = nullptr;
  void* recvbuff = nullptr;
  size_t count = 0;  // the count argument of the C call (per-rank count for gather-like calls)
  collDataType_t datatype = collUint8;
  collRedOp_t op = collSum;
  int root = 0;  // rooted collectives: the root
  int peer = 0;  // send and receive: the other rank
  size_t elemSize = 1;
};

}  // namespace coll
