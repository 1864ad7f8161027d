// collCommSplit (MPI_Comm_split semantics): every rank says its color and key over the parent's
// store, and each color's members build a communicator of their own under a prefix of it.
#include <algorithm>
#include <cstring>

#include "bootstrap/bootstrap_ops.h"
#include "common/error.h"
#include "src/comm.h"

namespace coll {

std::unique_ptr<Communicator> Communicator::split(int color, int key, const CommOptions& options) {
  throwIfFailed();
  std::string tag = "split" + std::to_string(splitCount_++);
  int32_t mine[2] = {color, key};
  bootstrap::Bytes bytes(sizeof(mine));
  memcpy(bytes.data(), mine, sizeof(mine));
  std::vector<bootstrap::Bytes> all = gatherFromRanks(tag, bytes, initDeadline());
  if (color == COLL_SPLIT_NOCOLOR) return nullptr;
  struct Member {
    int key, rank;
  };
  std::vector<Member> members;
  for (int r = 0; r < nranks_; ++r) {
    if (all[r].size() != sizeof(mine)) throwError(collRemoteError, "collCommSplit: rank %d sent a malformed entry", r);
    int32_t theirs[2];
    memcpy(theirs, all[r].data(), sizeof(theirs));
    if (theirs[0] == color) members.push_back({theirs[1], r});
  }
  std::stable_sort(members.begin(), members.end(),
                   [](const Member& a, const Member& b) { return a.key != b.key ? a.key < b.key : a.rank < b.rank; });
  int newRank = -1;
  for (size_t i = 0; i < members.size(); ++i)
    if (members[i].rank == rank_) newRank = static_cast<int>(i);
  auto childStore = std::make_shared<bootstrap::PrefixStore>(tag + "/color" + std::to_string(color), store_);
  return std::make_unique<Communicator>(childStore, static_cast<int>(members.size()), newRank, options);
}

}  // namespace coll
