#include "src/coll_call.h"

namespace coll {

const char* collTypeName(CollType type) {
  switch (type) {
    case CollType::kAllReduce:
      return "AllReduce";
    case CollType::kBroadcast:
      return "Broadcast";
    case CollType::kReduce:
      return "Reduce";
    case CollType::kAllGather:
      return "AllGather";
    case CollType::kReduceScatter:
      return "ReduceScatter";
    case CollType::kGather:
      return "Gather";
    case CollType::kScatter:
      return "Scatter";
    case CollType::kAllToAll:
      return "AllToAll";
    case CollType::kBarrier:
      return "Barrier";
    case CollType::kSend:
      return "Send";
    case CollType::kRecv:
      return "Recv";
    default:
      return "Unknown";
  }
}

}  // namespace coll
