#include "tests/staged/staged_cases.h"

#include <sstream>

#include "reference.h"
#include "tests/cuda_host/call_layout.h"

namespace coll {
namespace staging_test {
namespace {

// The value element `i` of `rank`'s send buffer holds.
double input(const StagedCase& c, int rank, size_t i) { return colltest::inputValue(rank, i, c.datatype, c.op); }

// What element i of the rank's output must be; false when the rank has no output there.
bool expected(const StagedCase& c, int rank, size_t i, double* value) {
  const int n = c.nranks;
  const size_t block = c.count == 0 ? 1 : c.count;
  switch (c.type) {
    case CollType::kAllReduce:
      *value = colltest::reducedValue(n, i, c.datatype, c.op);
      return true;
    case CollType::kReduce:
      *value = colltest::reducedValue(n, i, c.datatype, c.op);
      return rank == c.root;
    case CollType::kReduceScatter:
      *value = colltest::reducedValue(n, rank * c.count + i, c.datatype, c.op);
      return true;
    case CollType::kBroadcast:
      *value = input(c, c.root, i);
      return true;
    case CollType::kAllGather:
      *value = input(c, static_cast<int>(i / block), i % block);
      return true;
    case CollType::kGather:
      *value = input(c, static_cast<int>(i / block), i % block);
      return rank == c.root;
    case CollType::kScatter:
      *value = input(c, c.root, rank * c.count + i);
      return true;
    case CollType::kAllToAll:
      *value = input(c, static_cast<int>(i / block), rank * c.count + i % block);
      return true;
    default:
      return false;
  }
}

bool reduces(CollType t) {
  return t == CollType::kAllReduce || t == CollType::kReduce || t == CollType::kReduceScatter;
}

}  // namespace

std::string StagedCase::describe() const {
  std::ostringstream o;
  o << collTypeName(type) << " nranks=" << nranks << " count=" << count << " " << colltest::typeName(datatype)
    << (reduces(type) ? std::string(" ") + colltest::opName(op) : "") << " root=" << root
    << " COLL_ALGO=" << algoName(algo);
  return o.str();
}

device::ChannelGeometry smallGeometry(device::Protocol protocol) {
  if (protocol == device::Protocol::kLL) return {device::Protocol::kLL, 1, 64, 4, 512};
  return {device::Protocol::kSimple, 3, 64, 4, 512};
}

RankBuffers buffersFor(const StagedCase& c, int rank) {
  const colltest::CallExtents e = colltest::callExtents(c.type, c.nranks, rank, c.root, c.count);
  const size_t size = colltest::typeSize(c.datatype);
  RankBuffers b;
  b.send.resize(e.send * size + 1);  // never empty: a buffer's address is always valid
  b.recv.resize(e.recv * size + 1);
  colltest::poison(b.recv.data(), b.recv.size());
  for (size_t i = 0; i < e.send; ++i) colltest::storeValue(b.send.data(), i, c.datatype, input(c, rank, i));
  return b;
}

CollCall callFor(const StagedCase& c, RankBuffers& buffers) {
  CollCall call;
  call.type = c.type;
  call.sendbuff = buffers.send.data();
  call.recvbuff = buffers.recv.data();
  call.count = c.type == CollType::kBarrier ? 0 : c.count;
  call.datatype = c.datatype;
  call.op = c.op;
  call.root = c.root;
  call.elemSize = colltest::typeSize(c.datatype);
  return call;
}

DeviceProgram programFor(const StagedCase& c, const CollCall& call, int rank, const Algo* overrides,
                         const DeviceLayout* layout) {
  DeviceCallContext context;
  if (layout != nullptr) context.layout = *layout;
  context.rank = rank;
  context.nranks = c.nranks;
  context.staged = true;
  context.overrides = overrides;
  context.geometryOf = &smallGeometry;
  return planDeviceCall(call, context);
}

std::string checkOutput(const StagedCase& c, const RankBuffers& buffers, int rank) {
  const colltest::CallExtents e = colltest::callExtents(c.type, c.nranks, rank, c.root, c.count);
  for (size_t i = 0; i < e.recv; ++i) {
    double value = 0;
    if (!expected(c, rank, i, &value)) break;
    if (!colltest::valueMatches(buffers.recv.data(), i, c.datatype, c.op, value)) {
      std::ostringstream o;
      o << c.describe() << ": rank " << rank << " element " << i << " is "
        << colltest::loadValue(buffers.recv.data(), i, c.datatype) << ", expected " << value;
      return o.str();
    }
  }
  return "";
}

std::vector<StagedCase> everyCollective(int nranks) {
  std::vector<StagedCase> cases;
  const CollType types[] = {CollType::kAllReduce, CollType::kBroadcast,     CollType::kReduce,
                            CollType::kAllGather, CollType::kReduceScatter, CollType::kGather,
                            CollType::kScatter,   CollType::kAllToAll,      CollType::kBarrier};
  // 0, 1, odd, and many slices of the small geometry (48 floats each) with a ragged end.
  const size_t counts[] = {0, 1, 37, 1001};
  for (CollType type : types) {
    for (size_t count : counts) {
      if (type == CollType::kBarrier && count > 0) continue;
      for (collDataType_t dt : {collFloat32, collInt32, collBfloat16}) {
        for (collRedOp_t op : {collSum, collMax, collAvg}) {
          if (!reduces(type) && op != collSum) continue;
          if (dt != collFloat32 && (count == 0 || count == 1001)) continue;
          StagedCase c;
          c.type = type;
          c.nranks = nranks;
          c.count = count;
          c.datatype = dt;
          c.op = op;
          c.root = nranks - 1;
          cases.push_back(c);
        }
      }
    }
  }
  return cases;
}

}  // namespace staging_test
}  // namespace coll
