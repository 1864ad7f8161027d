#include "transport/p2p/p2p_domain.h"

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <map>

#include "common/cuda_check.h"
#include "common/cuda_device.h"
#include "common/error.h"
#include "common/hash.h"
#include "common/logging.h"
#include "kernels/cuda/launch.h"
#include "transport/p2p/p2p_card.h"
#include "transport/p2p/p2p_connection.h"
#include "transport/p2p/p2p_ipc_driver.h"
#include "transport/setup_stream.h"

namespace coll {
namespace transport {
namespace {

// The hardware queues CUDA multiplexes a process's streams onto (CUDA_DEVICE_MAX_CONNECTIONS,
// 8 unless set; 32 at most). Thread ranks on one GPU each wait in a kernel for the others'
// kernels; a stream queued behind another stream's waiting kernel in a shared queue cannot start,
// so that rank's kernel never comes and the call ends with the timeout (seen on an H200 with 4
// thread ranks and two streams each). One queue per stream rules it out: warn where that is unlikely.
void warnAboutSharedHardwareQueues(int rank, int device, int ranksHere) {
  const char* set = getenv("CUDA_DEVICE_MAX_CONNECTIONS");
  if (set != nullptr && *set == '\0') set = nullptr;  // empty means unset, as for every variable here
  const int queues = set != nullptr ? atoi(set) : 8;
  if (queues >= 32) return;
  COLL_WARN(kTransport,
            "rank %d: %d ranks of this process share GPU %d, whose streams CUDA runs through %d hardware queues "
            "(CUDA_DEVICE_MAX_CONNECTIONS %s): a stream queued behind another rank's waiting kernel cannot start, and "
            "the call then fails with the timeout. Set CUDA_DEVICE_MAX_CONNECTIONS=32 before the process's first CUDA "
            "call (docs/cuda.md, \"Several ranks per GPU\")",
            rank, ranksHere, device, queues, set != nullptr ? set : "unset");
}

}  // namespace

P2pDomain::P2pDomain(const DomainArgs& args) : rank_(args.rank), nranks_(args.nranks), device_(args.settings->device) {
  try {
    COLL_CUDACHECK(cudaSetDevice(device_));
    const SetupStream setup;
    const size_t bytes = device::connectionBytes() * static_cast<size_t>(nranks_);
    COLL_CUDACHECK(cudaMalloc(reinterpret_cast<void**>(&regions_), bytes));
    COLL_CUDACHECK(cudaMemsetAsync(regions_, 0, bytes, setup.get()));  // every slot free, every line unwritten
    COLL_CUDACHECK(
        cudaHostAlloc(reinterpret_cast<void**>(&hostStatus_), sizeof(device::DeviceStatus), cudaHostAllocMapped));
    memset(hostStatus_, 0, sizeof(device::DeviceStatus));
    COLL_CUDACHECK(cudaHostGetDevicePointer(reinterpret_cast<void**>(&deviceStatus_), hostStatus_, 0));
    COLL_CUDACHECK(cudaMalloc(reinterpret_cast<void**>(&laneBarrier_), sizeof(unsigned long long)));
    COLL_CUDACHECK(cudaMemsetAsync(laneBarrier_, 0, sizeof(unsigned long long), setup.get()));
    COLL_CUDACHECK(cudaMalloc(&scratch_, 16));
    COLL_CUDACHECK(cudaMemsetAsync(scratch_, 0, 16, setup.get()));
    setup.finish();
  } catch (...) {
    release();
    throw;
  }
}

P2pDomain::~P2pDomain() { release(); }

void P2pDomain::release() noexcept {
  // Errors are ignored: this runs on teardown and after failures, when the device may be gone.
  connections_.clear();
  if (deviceTable_ != nullptr) cudaFree(deviceTable_);
  if (regions_ != nullptr) cudaFree(regions_);
  if (laneBarrier_ != nullptr) cudaFree(laneBarrier_);
  if (scratch_ != nullptr) cudaFree(scratch_);
  if (hostStatus_ != nullptr) cudaFreeHost(hostStatus_);
  deviceTable_ = nullptr;
  regions_ = nullptr;
  laneBarrier_ = nullptr;
  scratch_ = nullptr;
  hostStatus_ = nullptr;
  deviceStatus_ = nullptr;
}

std::string P2pDomain::card(int) {
  P2pCard card;
  memset(&card, 0, sizeof card);
  card.magic = kP2pCardMagic;
  card.rank = rank_;
  card.nranks = nranks_;
  card.device = device_;
  card.layoutDigest = p2pLayoutDigest();
  card.process = p2pProcessIdentity();
  card.base = reinterpret_cast<uintptr_t>(regions_);
  card.regionBytes = device::connectionBytes();
  int sms = 0;
  COLL_CUDACHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device_));
  card.residentBlocks = sms * device::scheduleKernelBlocksPerSm();
  int mps = 0;
  // Older drivers do not know the attribute: then not an MPS client, the safe answer.
  if (cudaDeviceGetAttribute(&mps, cudaDevAttrMpsEnabled, device_) != cudaSuccess) {
    (void)cudaGetLastError();
    mps = 0;
  }
  card.mpsClient = mps != 0 ? 1 : 0;
  COLL_CUDACHECK(cudaIpcGetMemHandle(&card.handle, regions_));
  const std::string busId = cudaDeviceBusId(device_);
  if (busId.size() < sizeof card.busId) memcpy(card.busId, busId.c_str(), busId.size() + 1);
  return encodeP2pCard(card);
}

void P2pDomain::connect(int, const std::vector<std::string>& cards, Deadline) {
  if (static_cast<int>(cards.size()) != nranks_)
    throwError(collInternalError, "P2P setup: %zu cards for %d ranks", cards.size(), nranks_);
  COLL_CUDACHECK(cudaSetDevice(device_));
  // Kernels run at the same time when each GPU serves one process (different GPUs run on their
  // own, a process's streams share its context; two processes on one GPU time-slice, unless every
  // one of them is a client of the GPU's MPS server, which runs their kernels side by side) and
  // holds every lane of every rank on it at once. Every rank decides from the same cards, so all
  // agree on the mode (and with it the protocol).
  struct DeviceUse {
    uint64_t process;
    bool severalProcesses;
    bool allMps;
    int ranks;
    int residentBlocks;
  };
  std::map<std::string, DeviceUse> devices;  // by gpuKey: processes number their GPUs differently
  int ranksHere = 0;  // threads of this process on this GPU, this rank among them
  int firstHere = nranks_;
  kernelsConcurrent_ = true;
  sharedAddressSpace_ = true;
  bool oneDevice = true;
  sameProcess_.assign(nranks_, false);
  connections_.clear();
  table_.assign(nranks_, device::PeerChannels{});
  const P2pCard mine = parseP2pCard(cards[rank_], rank_, nranks_);
  for (int r = 0; r < nranks_; ++r) {
    const P2pCard peer = parseP2pCard(cards[r], r, nranks_);
    const bool onMyGpu = sameGpu(peer, mine);
    auto [entry, fresh] =
        devices.emplace(gpuKey(peer), DeviceUse{peer.process, false, peer.mpsClient != 0, 0, peer.residentBlocks});
    DeviceUse& use = entry->second;
    if (!fresh && use.process != peer.process) use.severalProcesses = true;
    // One GPU too: peer access does not reach every allocation of another GPU (memory pools,
    // cuMemCreate), and the direct kernel writes into the peers' own buffers.
    sameProcess_[r] = peer.process == p2pProcessIdentity();
    oneDevice = oneDevice && onMyGpu;
    if (!sameProcess_[r] || !onMyGpu) {
      sharedAddressSpace_ = false;
    } else {
      ++ranksHere;
      firstHere = std::min(firstHere, r);
    }
    use.allMps = use.allMps && peer.mpsClient != 0;
    if (++use.ranks * static_cast<int>(device::kSimpleGeometry.lanes) > use.residentBlocks) kernelsConcurrent_ = false;
    connections_.push_back(std::make_unique<P2pConnection>(peer, onMyGpu, device_, rank_, regions_));
    table_[r] = connections_.back()->channels();
  }
  for (const auto& [device, use] : devices)
    if (use.severalProcesses && !use.allMps) kernelsConcurrent_ = false;
  mapsCallBuffers_ = oneDevice && kernelsConcurrent_ && !sharedAddressSpace_;
  // One warning per communicator and GPU: from the first of the ranks sharing it.
  if (ranksHere > 1 && firstHere == rank_ && kernelsConcurrent_)
    warnAboutSharedHardwareQueues(rank_, device_, ranksHere);
  COLL_CUDACHECK(cudaMalloc(reinterpret_cast<void**>(&deviceTable_), sizeof(device::PeerChannels) * nranks_));
  const SetupStream setup;
  COLL_CUDACHECK(cudaMemcpyAsync(deviceTable_, table_.data(), sizeof(device::PeerChannels) * nranks_,
                                 cudaMemcpyHostToDevice, setup.get()));
  setup.finish();
  COLL_INFO(kTransport, "P2P: rank %d on GPU %d connected to %d ranks (%s kernels)", rank_, device_, nranks_,
            kernelsConcurrent_ ? "concurrent" : "serialized");
}

SendConnection* P2pDomain::sendConnection(int peer) {
  throwError(collInternalError, "p2p carries device memory: no host connection to rank %d", peer);
}

RecvConnection* P2pDomain::recvConnection(int peer) {
  throwError(collInternalError, "p2p carries device memory: no host connection to rank %d", peer);
}

void P2pDomain::checkPeers() const {
  std::string message;
  collResult_t code = deviceStatusError(hostStatus_, rank_, &message);
  if (code != collSuccess) throwError(code, "%s", message.c_str());
}

void P2pDomain::requestAbort() {
  if (hostStatus_ != nullptr) reinterpret_cast<volatile uint32_t*>(&hostStatus_->abort)[0] = 1;
}

void P2pDomain::mapCallBuffers(const void* send, void* recv, uint64_t bytes, const ExchangeRecords& exchange,
                               const std::function<void()>& quiesce, const char** sends, char** recvs) {
  if (!mapsCallBuffers_)
    throwError(collInternalError, "P2P: rank %d's ranks do not map each other's call buffers", rank_);
  if (!callBuffers_) {
    ipcDriver_ = makeCudaIpcDriver();
    // Enough for every peer's send and receive buffers of many calls: a full cache waits for the
    // launched kernels before it closes a mapping (quiesce). (design value)
    callBuffers_ = std::make_unique<IpcCallBuffers>(*ipcDriver_, rank_, sameProcess_, 64 * size_t(nranks_));
  }
  callBuffers_->describeExchangeAndMap(send, recv, bytes, exchange, sends, recvs, quiesce);
}

std::unique_ptr<Domain> makeP2pDomain(const DomainArgs& args) { return std::make_unique<P2pDomain>(args); }

}  // namespace transport
}  // namespace coll
