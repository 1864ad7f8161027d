// Device memory on a communicator: the lazy, collective setup of the device transports and the
// device engine, and their teardown.
//
// Why lazily: setting up device memory creates a CUDA context and allocates GPU memory on every
// rank, which a communicator that only ever moves host memory must not pay for. So init only
// notes the device the calling thread already works on (currentContextDevice, which creates no
// context), and the first call with a stream does the rest.
//
// Why that is safe to do collectively: the setup goes through the store (an all-gather of the
// device domains' cards, then a barrier), so it needs every rank. A collective's first call with a
// stream is made by every rank. Point-to-point calls need not be: this rank's first call with a
// stream, whatever it is (a send, a receive, a collective), joins the setup, and all ranks'
// first such calls meet there. So a program whose ranks all make some call with a stream works
// whatever those calls are; a rank that never makes one leaves the others' first call waiting
// until the timeout, and the error says why. (NCCL connects point-to-point peers pairwise at
// run time instead; our device domains are set up for all ranks at once, as every domain is.)
#include <string>

#include "bootstrap/bootstrap_ops.h"
#include "common/cuda_device.h"
#include "common/error.h"
#include "common/logging.h"
#include "src/algorithms/cost_model.h"
#include "src/comm.h"
#include "src/plan/device_program.h"
#include "transport/device_channels.h"

namespace coll {

Engine& Communicator::streamEngineFor(collStream_t stream) {
  // A stream means device buffers. Without a usable GPU that is a usage error that says what is
  // missing, asked before anything touches CUDA further (no context is created here).
  std::string why;
  if (!cudaDeviceAvailable(&why))
    throwError(collInvalidUsage,
               "no CUDA device: stream is not NULL (device buffers), but %s; pass NULL for host buffers", why.c_str());
  return deviceEngineFor(stream);
}

Engine& Communicator::deviceEngineFor(collStream_t stream) {
  if (Engine* ready = deviceEngineReady_.load()) return *ready;
  std::lock_guard<std::mutex> lock(deviceMutex_);
  if (Engine* ready = deviceEngineReady_.load()) return *ready;
  throwIfFailed();
  const int device = streamDevice(stream);
  const int recorded = cudaDevice_.load();
  if (recorded >= 0 && device != recorded)
    throwError(collInvalidUsage,
               "the stream is on CUDA device %d, but this communicator's device is %d (the device current when "
               "it was made): pass a stream of device %d",
               device, recorded, recorded);
  // First the ranks learn whose GPUs share memory (the islands go into the peer descriptions);
  // then every rank chooses the device routes from the same table and descriptions: a pair no
  // device transport connects is refused on every rank alike, as a usage error that leaves the
  // communicator usable for host memory.
  std::optional<LinkCost> gpuLink;
  try {
    CurrentDeviceScope scope(device);
    gpuLink = placeDeviceIslands(device);
  } catch (const CollError& e) {
    markFailed(e.code(), e.what());
    throwError(e.code(),
               "telling the ranks' GPUs apart at this rank's first call with a stream (every rank's first call "
               "with a stream joins this, docs/cuda.md): %s",
               e.what());
  }
  const transport::Routes routes =
      transport::chooseRoutes(peers_, rank_, params_.transports, transport::MemoryKind::kDevice);
  try {
    setupDevice(device, routes, gpuLink);
  } catch (const CollError& e) {
    // Peers may have joined the setup and wait for this rank: fail the communicator, so that
    // they learn it through every transport instead of at the timeout.
    teardownDevice();
    markFailed(e.code(), e.what());
    throwError(e.code(),
               "setting up device memory at this rank's first call with a stream (every rank's first call with a "
               "stream joins this setup, docs/cuda.md): %s",
               e.what());
  }
  cudaDevice_.store(device);
  deviceEngineReady_.store(deviceEngine_.get());
  return *deviceEngine_;
}

void Communicator::setupDevice(int device, const transport::Routes& routes, const std::optional<LinkCost>& gpuLink) {
  CurrentDeviceScope scope(device);
  // All ranks create the same domains from the same routes, so the setup rounds line up.
  deviceSettings_ = transportSettings_;
  deviceSettings_.device = device;
  createDomains(routes, &deviceSettings_, &deviceDomains_, nullptr);
  runDomainSetup(deviceDomains_, "device/", initDeadline());
  transport::DeviceChannels* channels = joinDeviceChannels(routes);
  // The layout for two-level plans: the ranks that share device memory, and the cost rows of a
  // hop inside a group and of a staged one between groups: over the host route that joins the
  // groups, the hosts' network, or the host's shared memory where every group is a device island
  // of one host.
  DeviceLayout layout;
  for (const transport::TransportEntry* entry : routes.used)
    layout.staged = layout.staged || entry->link != transport::LinkKind::kLocal;
  if (layout.staged) {
    const int group = routes.groupOf(rank_);
    bool betweenGroupsLocal = true;
    for (int r = 0; r < nranks_; ++r)
      if (routes.groupOf(r) != group)
        betweenGroupsLocal = betweenGroupsLocal && routes_.toRank[r]->link == transport::LinkKind::kLocal;
    layout.hosts = routes.localGroups;
    layout.localLink = params_.linkCosts.of(transport::MemoryKind::kDevice, transport::LinkKind::kLocal, routes.used);
    layout.networkLink =
        stagedLink(betweenGroupsLocal ? planContext_.localLink : planContext_.networkLink,
                   params_.linkCosts.of(transport::MemoryKind::kDevice, transport::LinkKind::kNetwork));
    layout.networkLinkName =
        betweenGroupsLocal
            ? transport::pricedEntry(transport::MemoryKind::kHost, transport::LinkKind::kLocal, routes_.used).price.name
            : planContext_.networkLinkName;
  }
  if (gpuLink) {
    layout.localLink = *gpuLink;
    layout.localLinkOfGpus = true;
  }
  deviceEngine_ = makeDeviceEngine(*channels, rank_, nranks_, params_, options_.timeoutMs, &layout,
                                   [this](const std::vector<uint8_t>& mine) { return gatherOnHost(mine); });
  COLL_INFO(kInit, "comm %s rank %d: device memory on GPU %d (%s kernels; %zu group(s) of ranks sharing GPU memory%s)",
            options_.name.c_str(), rank_, device, channels->kernelsConcurrent() ? "concurrent" : "serialized",
            layout.staged ? layout.hosts.size() : size_t(1), layout.staged ? ", staged between them" : "");
}

std::vector<std::vector<uint8_t>> Communicator::gatherOnHost(const std::vector<uint8_t>& mine) {
  std::vector<uint8_t> all(mine.size() * size_t(nranks_));
  CollCall call;
  call.type = CollType::kAllGather;
  call.sendbuff = mine.data();
  call.recvbuff = all.data();
  call.count = mine.size();
  call.datatype = collUint8;
  call.elemSize = 1;
  hostEngine_->run(call, nullptr);
  std::vector<std::vector<uint8_t>> each(nranks_);
  for (int r = 0; r < nranks_; ++r)
    each[r].assign(all.begin() + ptrdiff_t(r * mine.size()), all.begin() + ptrdiff_t((r + 1) * mine.size()));
  return each;
}

transport::DeviceChannels* Communicator::joinDeviceChannels(const transport::Routes& routes) {
  // createDomains made one domain per used entry, in the same order. One that serves every rank
  // (peer access on one host, or staging everywhere) is the kernels' channels as it is.
  for (size_t i = 0; i < routes.used.size(); ++i)
    if (routes.membersOf(routes.used[i]).size() == static_cast<size_t>(nranks_))
      return deviceDomains_[i]->deviceChannels();
  // Otherwise a domain that can adopt the others' channels (staging adopts the ranks of this host
  // that share device memory) gives one kernel every peer.
  for (size_t i = 0; i < routes.used.size(); ++i) {
    transport::DeviceChannels* joined = deviceDomains_[i]->deviceChannels();
    bool adopted = joined != nullptr;
    for (size_t j = 0; j < routes.used.size() && adopted; ++j) {
      transport::DeviceChannels* other = deviceDomains_[j]->deviceChannels();
      if (j != i) adopted = other != nullptr && joined->adoptPeers(*other, routes.membersOf(routes.used[j]));
    }
    if (adopted) return joined;
  }
  throwError(collInternalError, "device memory: no device transport can join the others' channels (%zu in use)",
             routes.used.size());
}

void Communicator::finalize() {
  if (Engine* device = deviceEngineReady_.load()) {
    CurrentDeviceScope scope(cudaDevice_.load());
    device->drain(initDeadline());
  }
}

void Communicator::teardownDevice() noexcept {
  if (deviceDomains_.empty() && !deviceEngine_) return;
  // The device the domains were made on (a failed setup may not have recorded it yet).
  const int device = deviceSettings_.device;
  try {
    CurrentDeviceScope scope(device);
    const Deadline deadline = initDeadline();
    bool healthy = asyncError_.load() == collSuccess;
    if (deviceEngine_) {
      try {
        deviceEngine_->drain(deadline);
      } catch (const CollError& e) {
        COLL_WARN(kColl, "comm %s rank %d: destroy: %s", options_.name.c_str(), rank_, e.what());
        healthy = false;
      }
    }
    // No peer may still write into this rank's channel memory when it is freed, nor this rank
    // into theirs once they close the handles. After a failure the peers may be gone: the
    // kernels were asked to stop, and waiting for dead ranks would only delay the error.
    if (healthy && deviceEngine_) bootstrap::barrier(*store_, "device/destroy", rank_, nranks_, deadline);
  } catch (const std::exception& e) {
    COLL_WARN(kColl, "comm %s rank %d: destroy: %s", options_.name.c_str(), rank_, e.what());
  }
  deviceEngineReady_.store(nullptr);
  try {
    CurrentDeviceScope scope(device);
    deviceEngine_.reset();
    // Unmaps the peers' memory, then frees this rank's channel memory.
    for (auto it = deviceDomains_.rbegin(); it != deviceDomains_.rend(); ++it) it->reset();
  } catch (const std::exception& e) {
    COLL_WARN(kColl, "comm %s rank %d: destroy: %s", options_.name.c_str(), rank_, e.what());
  }
  deviceEngine_.reset();
  deviceDomains_.clear();
}

}  // namespace coll
