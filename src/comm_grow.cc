// collCommGrow: new ranks join the ranks of an existing communicator in a new one (NCCL 2.29's
// ncclCommGrow shape). The existing ranks keep their ranks; the new ones take the ranks after
// them. Rank 0 of the existing communicator brings a fresh unique id (collGetUniqueId), which it
// hands to the new ranks itself (a file, a launcher, torch's store) and to the existing ranks
// through this communicator; then every rank inits on it as collCommInitRank does, and the new
// communicator checks that the existing ranks came first.
#include <cstring>

#include "common/error.h"
#include "src/comm.h"

namespace coll {

collUniqueId Communicator::shareGrowId(const collUniqueId* id) {
  if (rank_ == 0 && id == nullptr)
    throwError(collInvalidArgument,
               "collCommGrow: uniqueId is NULL on rank 0: expected the id the new ranks were given (collGetUniqueId)");
  collUniqueId shared;
  if (rank_ == 0)
    shared = *id;
  else
    memset(&shared, 0, sizeof(shared));
  CollCall call;
  call.type = CollType::kBroadcast;
  call.sendbuff = &shared;
  call.recvbuff = &shared;
  call.count = sizeof(shared);
  call.datatype = collUint8;
  call.elemSize = 1;
  call.root = 0;
  run(call, nullptr);
  if (id != nullptr && memcmp(id, &shared, sizeof(shared)) != 0)
    throwError(collInvalidArgument,
               "collCommGrow: rank %d passed a uniqueId that differs from rank 0's: expected NULL or the same id",
               rank_);
  return shared;
}

void Communicator::checkGrowth(bool existing, int oldSize) {
  const int32_t mine[2] = {existing ? 1 : 0, existing ? oldSize : 0};
  bootstrap::Bytes bytes(sizeof(mine));
  memcpy(bytes.data(), mine, sizeof(mine));
  const std::vector<bootstrap::Bytes> all = gatherFromRanks("grow", bytes, initDeadline());
  int expectedOld = -1;
  for (int r = 0; r < nranks_; ++r) {
    int32_t theirs[2];
    if (all[r].size() != sizeof(theirs)) throwError(collRemoteError, "collCommGrow: rank %d sent a malformed entry", r);
    memcpy(theirs, all[r].data(), sizeof(theirs));
    if (theirs[0] == 1 && expectedOld < 0) expectedOld = theirs[1];
    if (theirs[0] == 1 && theirs[1] != expectedOld)
      throwError(collInvalidUsage, "collCommGrow: existing ranks disagree on the old size (%d and %d)", expectedOld,
                 theirs[1]);
  }
  if (expectedOld < 0) throwError(collInvalidUsage, "collCommGrow: no rank of an existing communicator took part");
  for (int r = 0; r < nranks_; ++r) {
    int32_t theirs[2];
    memcpy(theirs, all[r].data(), sizeof(theirs));
    const bool shouldBeExisting = r < expectedOld;
    if ((theirs[0] == 1) != shouldBeExisting)
      throwError(collInvalidUsage,
                 "collCommGrow: rank %d is %s, but the existing communicator had %d ranks: new ranks take ranks %d to "
                 "%d",
                 r, theirs[0] == 1 ? "an existing rank" : "a new rank", expectedOld, expectedOld, nranks_ - 1);
  }
}

}  // namespace coll
