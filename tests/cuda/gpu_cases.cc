#include "tests/cuda/gpu_cases.h"

#include <algorithm>
#include <cstring>
#include <sstream>

#include "kernels/cpu/reduce.h"
#include "tests/cuda_host/call_layout.h"
#include "tests/multirank/reference.h"

namespace colltest {
namespace {

using coll::CollType;

constexpr size_t kGuardBytes = 256;

bool isReduction(CollType t) {
  return t == CollType::kAllReduce || t == CollType::kReduce || t == CollType::kReduceScatter;
}

// Inputs of data-moving collectives: distinct small integers, exact in every type.
double movedValue(int rank, size_t i, collDataType_t type) {
  const double v = static_cast<double>((rank * 37 + i * 11) % 201);
  const bool isUnsigned = type == collUint8 || type == collUint32 || type == collUint64;
  return isUnsigned ? v : v - 100;
}

double inputOf(const GpuCase& c, int rank, size_t i) {
  return isReduction(c.type) ? inputValue(rank, i, c.datatype, c.op) : movedValue(rank, i, c.datatype);
}

// What output element i of this rank must be.
double expectedOutput(const GpuCase& c, int rank, int n, size_t i) {
  const size_t k = c.count;
  switch (c.type) {
    case CollType::kAllReduce:
    case CollType::kReduce:
      return reducedValue(n, i, c.datatype, c.op);
    case CollType::kReduceScatter:
      return reducedValue(n, rank * k + i, c.datatype, c.op);
    case CollType::kBroadcast:
      return movedValue(c.root, i, c.datatype);
    case CollType::kAllGather:
    case CollType::kGather:
      return movedValue(static_cast<int>(i / k), i % k, c.datatype);
    case CollType::kScatter:
      return movedValue(c.root, rank * k + i, c.datatype);
    case CollType::kAllToAll:
      return movedValue(static_cast<int>(i / k), rank * k + i % k, c.datatype);
    default:  // send/recv ring: from the previous rank
      return movedValue((rank - 1 + n) % n, i, c.datatype);
  }
}

// Where a case's send and receive buffers lie in the arena (overlapping when in place), with
// poisoned guards between and after them; bytes is how much of the arena the case uses.
struct Layout {
  size_t bytes = 0;
  size_t sendAt = 0, recvAt = 0;  // byte offsets
};

Layout layoutOf(const GpuCase& c, int rank, int n) {
  const size_t elem = typeSize(c.datatype);
  const CallExtents e = callExtents(c.type, n, rank, c.root, c.count);
  Layout b;
  size_t sendAt = 0, recvAt = 0;
  if (c.inPlace && inPlaceOffsets(c.type, rank, c.root, c.count, &sendAt, &recvAt)) {
    b.sendAt = sendAt * elem;
    b.recvAt = recvAt * elem;
    b.bytes = std::max(b.sendAt + e.send * elem, b.recvAt + e.recv * elem) + kGuardBytes;
  } else {
    b.sendAt = 0;
    b.recvAt = e.send * elem + kGuardBytes;
    b.bytes = b.recvAt + e.recv * elem + kGuardBytes;
  }
  return b;
}

std::string check(const GpuCase& c, int rank, int n, const CallExtents& e, const Layout& b, const unsigned char* before,
                  const unsigned char* after) {
  const size_t elem = typeSize(c.datatype);
  std::vector<bool> isOutput(b.bytes, false);
  const bool hasOutput = e.recv > 0 && !(c.type == CollType::kReduce && rank != c.root) &&
                         !(c.type == CollType::kGather && rank != c.root);
  if (hasOutput) {
    for (size_t i = 0; i < e.recv; ++i) {
      const double want = expectedOutput(c, rank, n, i);
      if (!valueMatches(after + b.recvAt, i, c.datatype, c.op, want)) {
        std::ostringstream o;
        o << "output element " << i << " is " << loadValue(after + b.recvAt, i, c.datatype) << ", expected " << want;
        return o.str();
      }
    }
    std::fill(isOutput.begin() + b.recvAt, isOutput.begin() + b.recvAt + e.recv * elem, true);
  }
  for (size_t byte = 0; byte < b.bytes; ++byte)
    if (!isOutput[byte] && after[byte] != before[byte])
      return "byte " + std::to_string(byte) + " outside the output changed (send buffer or guard)";
  return "";
}

}  // namespace

std::string GpuCase::describe() const {
  std::ostringstream o;
  o << coll::collTypeName(type) << " " << typeName(datatype) << " " << opName(op) << " count " << count << " root "
    << root << (inPlace ? " in-place" : "") << " COLL_PROTO=" << coll::protoChoiceName(protocol);
  return o.str();
}

std::vector<GpuCase> gpuCases(int n, bool thorough, const std::string& filter) {
  std::vector<GpuCase> cases;
  const CollType reductions[] = {CollType::kAllReduce, CollType::kReduce, CollType::kReduceScatter};
  const CollType moves[] = {CollType::kBroadcast, CollType::kAllGather, CollType::kGather,
                            CollType::kScatter,   CollType::kAllToAll,  CollType::kSend};
  // Odd counts (LL-sized, and Simple); then counts over several slices of either protocol.
  const std::vector<size_t> small = {1, 4099};
  const std::vector<size_t> large = {2400001};  // several 4 MiB slices for broadcast, send, gather
  for (int t = 0; t < collNumTypes; ++t) {
    const auto type = static_cast<collDataType_t>(t);
    std::vector<size_t> counts = small;
    if (thorough || type == collFloat32 || type == collBfloat16)
      counts.insert(counts.end(), large.begin(), large.end());
    for (size_t count : counts)
      for (coll::ProtoChoice proto : {coll::ProtoChoice::kAuto, coll::ProtoChoice::kSimple})
        for (int inPlace = 0; inPlace <= 1; ++inPlace) {
          for (CollType coll : reductions)
            for (int op = 0; op < collNumOps; ++op)
              cases.push_back({coll, type, static_cast<collRedOp_t>(op), count, n - 1, inPlace != 0, proto});
          for (CollType coll : moves) {
            if (inPlace && (coll == CollType::kAllToAll || coll == CollType::kSend)) continue;
            cases.push_back({coll, type, collSum, count, n / 2, inPlace != 0, proto});
          }
        }
  }
  cases.push_back({CollType::kAllReduce, collFloat32, collSum, 0, 0, false, coll::ProtoChoice::kAuto});
  if (!filter.empty())
    cases.erase(std::remove_if(cases.begin(), cases.end(),
                               [&](const GpuCase& c) { return c.describe().find(filter) == std::string::npos; }),
                cases.end());
  return cases;
}

GpuArena::GpuArena(const std::vector<GpuCase>& cases, int rank, int nranks) {
  for (const GpuCase& c : cases) bytes_ = std::max(bytes_, layoutOf(c, rank, nranks).bytes);
  bytes_ = std::max<size_t>(bytes_, 1);
  cudaError_t rc = cudaMalloc(&device_, bytes_);
  if (rc == cudaSuccess) rc = cudaMallocHost(&before_, bytes_);
  if (rc == cudaSuccess) rc = cudaMallocHost(&after_, bytes_);
  if (rc != cudaSuccess)
    error_ = std::string("arena of ") + std::to_string(bytes_) + " bytes: " + cudaGetErrorString(rc);
}

GpuArena::~GpuArena() {
  cudaFree(device_);
  cudaFreeHost(before_);
  cudaFreeHost(after_);
}

std::string runGpuCaseWith(const GpuCaseRun& run, const GpuCase& c, GpuArena& arena) {
  if (!arena.error().empty()) return arena.error();
  const int n = run.nranks;
  const size_t elem = typeSize(c.datatype);
  const CallExtents e = callExtents(c.type, n, run.rank, c.root, c.count);
  const Layout b = layoutOf(c, run.rank, n);
  unsigned char* before = arena.before();
  poison(before, b.bytes);
  for (size_t i = 0; i < e.send; ++i) storeValue(before + b.sendAt, i, c.datatype, inputOf(c, run.rank, i));
  char* device = arena.device();
  if (cudaMemcpyAsync(device, before, b.bytes, cudaMemcpyHostToDevice, run.stream) != cudaSuccess)
    return "cudaMemcpyAsync of the inputs failed";
  coll::CollCall call;
  call.type = c.type;
  call.sendbuff = e.send > 0 ? device + b.sendAt : nullptr;
  call.recvbuff = e.recv > 0 ? device + b.recvAt : nullptr;
  call.count = c.count;
  call.datatype = c.datatype;
  call.op = c.op;
  call.root = c.root;
  call.elemSize = elem;
  const std::string issued = run.issue(call);
  if (!issued.empty()) return issued;
  unsigned char* after = arena.after();
  if (cudaMemcpyAsync(after, device, b.bytes, cudaMemcpyDeviceToHost, run.stream) != cudaSuccess)
    return "cudaMemcpyAsync of the outputs failed";
  const cudaError_t rc = cudaStreamSynchronize(run.stream);
  if (rc != cudaSuccess) return std::string("cudaStreamSynchronize: ") + cudaGetErrorString(rc);
  const std::string asyncError = run.asyncError();
  if (!asyncError.empty()) return "device error: " + asyncError;
  return check(c, run.rank, n, e, b, before, after);
}

std::string runGpuCase(GpuRank& rank, const GpuCase& c, GpuArena& arena) {
  GpuCaseRun run;
  run.rank = rank.rank;
  run.nranks = rank.nranks;
  run.stream = rank.stream;
  run.issue = [&](const coll::CollCall& planned) -> std::string {
    coll::CollCall call = planned;
    const int n = rank.nranks;
    coll::DeviceCallContext context = testCallContext(rank);
    context.forced = c.protocol;
    try {
      if (c.type == CollType::kSend) {
        coll::CollCall send = call, recv = call;
        send.type = CollType::kSend;
        send.peer = (rank.rank + 1) % n;
        send.recvbuff = nullptr;
        recv.type = CollType::kRecv;
        recv.peer = (rank.rank - 1 + n) % n;
        recv.sendbuff = nullptr;
        enqueueProgram(rank, coll::planDevicePointToPoint({send, recv}, context), collUint8, collSum, nullptr, nullptr);
      } else {
        enqueueProgram(rank, coll::planDeviceCall(call, context), c.datatype, c.op, call.sendbuff, call.recvbuff);
      }
    } catch (const std::exception& ex) {
      return std::string("enqueue: ") + ex.what();
    }
    return "";
  };
  run.asyncError = [&]() -> std::string {
    std::string message;
    return rank.engine->pollError(&message) != collSuccess ? message : "";
  };
  return runGpuCaseWith(run, c, arena);
}

}  // namespace colltest
