// VerbsDevice (verbs_queue_pair.h): finding the device and port COLL_IB_HCA selects (the nearest to
// the rank when several are, verbs_locality.h), and its GID.
#include <cerrno>
#include <cstring>
#include <vector>

#include "common/error.h"
#include "transport/verbs/verbs_hca_spec.h"
#include "transport/verbs/verbs_locality.h"
#include "transport/verbs/verbs_queue_pair.h"

namespace coll {
namespace transport {
namespace {

bool isZero(const ibv_gid& gid) {
  for (uint8_t b : gid.raw)
    if (b != 0) return false;
  return true;
}

}  // namespace

VerbsDevice::VerbsDevice(std::shared_ptr<const VerbsApi> api, const std::string& hca, int gidIndex)
    : api_(std::move(api)) {
  std::string seen;
  bool anyMatched = false;
  if (!openSelected(hca, &seen, &anyMatched)) {
    if (!anyMatched)
      throwError(collInvalidUsage, "verbs transport: COLL_IB_HCA=\"%s\" selects none of the ports there are (%s)",
                 hca.c_str(), seen.empty() ? "none" : seen.c_str());
    throwError(collSystemError, "verbs transport: no selected port is active (%s)", seen.c_str());
  }
  ibv_device_attr attr{};
  pd_ = api_->allocPd(context_);
  if (api_->queryDevice(context_, &attr) != 0 || pd_ == nullptr) {
    release();
    throwError(collSystemError, "verbs transport: %s: querying the device or allocating a PD failed", name_.c_str());
  }
  maxCqe_ = attr.max_cqe;
  try {
    chooseGid(gidIndex);
  } catch (...) {
    release();
    throw;
  }
}

bool VerbsDevice::openSelected(const std::string& hca, std::string* seen, bool* anyMatched) {
  const VerbsHcaSpec spec = parseVerbsHcaSpec(hca);
  int count = 0;
  ibv_device** list = api_->getDeviceList(&count);
  if (list == nullptr || count < 1) {
    if (list != nullptr) api_->freeDeviceList(list);
    throwError(collSystemError, "verbs transport: %s lists no RDMA device", api_->library.c_str());
  }
  // Every selected active port is a candidate; the nearest to this rank's CPUs wins, and among
  // equals the first in the library's order (what a rank picked before nearness counted).
  const topo::CpuList binding = topo::processAffinity();
  struct Candidate {
    int device;
    int port;
    ibv_port_attr attr;
    VerbsNearness nearness;
  };
  std::vector<Candidate> candidates;
  std::vector<ibv_context*> opened(count, nullptr);
  std::vector<VerbsDevicePlace> places(count);
  for (int d = 0; d < count; ++d) {
    const std::string name = api_->getDeviceName(list[d]);
    ibv_context* ctx = api_->openDevice(list[d]);
    ibv_device_attr attr{};
    if (ctx == nullptr || api_->queryDevice(ctx, &attr) != 0) {
      *seen += (seen->empty() ? "" : ", ") + name + " (cannot be opened)";
      if (ctx != nullptr) api_->closeDevice(ctx);
      continue;
    }
    opened[d] = ctx;
    places[d] = verbsDevicePlace(list[d]->ibdev_path);
    for (int port = 1; port <= attr.phys_port_cnt; ++port) {
      ibv_port_attr portAttr{};
      const bool queried = api_->queryPort(ctx, static_cast<uint8_t>(port), &portAttr) == 0;
      const bool active = queried && portAttr.state == IBV_PORT_ACTIVE;
      *seen += (seen->empty() ? "" : ", ") + name + ":" + std::to_string(port) + (active ? "" : " (not active)");
      if (!verbsHcaSelects(spec, name, port)) continue;
      *anyMatched = true;
      if (active) candidates.push_back({d, port, portAttr, verbsNearness(places[d], binding)});
    }
  }
  const Candidate* best = nullptr;
  for (const Candidate& c : candidates)
    if (best == nullptr || c.nearness < best->nearness) best = &c;
  if (best != nullptr) {
    name_ = api_->getDeviceName(list[best->device]);
    context_ = opened[best->device];
    port_ = best->attr;
    portNumber_ = static_cast<uint8_t>(best->port);
    placement_ = name_ + ":" + std::to_string(best->port) + " (" + describeVerbsDevicePlace(places[best->device]) +
                 "), " + verbsNearnessName(best->nearness) + " to this rank's CPUs " +
                 (binding.empty() ? std::string("(unknown)") : topo::formatCpuList(binding));
    if (candidates.size() > 1) {
      placement_ += "; of";
      for (const Candidate& c : candidates)
        placement_ += std::string(&c == &candidates.front() ? " " : ", ") + api_->getDeviceName(list[c.device]) + ":" +
                      std::to_string(c.port) + " " + verbsNearnessName(c.nearness);
    }
  }
  for (int d = 0; d < count; ++d)
    if (opened[d] != nullptr && opened[d] != context_) api_->closeDevice(opened[d]);
  api_->freeDeviceList(list);
  return context_ != nullptr;
}

void VerbsDevice::chooseGid(int wanted) {
  const int table = port_.gid_tbl_len;
  if (wanted >= 0) {
    // RoCE v2 needs the index of the GID carrying the wanted address and version: the user names it.
    if (wanted >= table || api_->queryGid(context_, portNumber_, wanted, &gid_) != 0)
      throwError(collInvalidUsage, "verbs transport: COLL_IB_GID_INDEX=%d, but %s port %d has %d GID(s) (%s)", wanted,
                 name_.c_str(), portNumber_, table, wanted >= table ? "out of range" : std::strerror(errno));
    gidIndex_ = wanted;
    return;
  }
  // IB routes by LID and needs no GID; RoCE by the first GID the port reports (a zero GID is an
  // unused table entry).
  for (int i = 0; i < table; ++i) {
    if (api_->queryGid(context_, portNumber_, i, &gid_) == 0 && !isZero(gid_)) {
      gidIndex_ = i;
      return;
    }
  }
  gid_ = ibv_gid{};
  gidIndex_ = 0;
}

VerbsDevice::~VerbsDevice() { release(); }

void VerbsDevice::release() {
  if (pd_ != nullptr) api_->deallocPd(pd_);
  if (context_ != nullptr) api_->closeDevice(context_);
  pd_ = nullptr;
  context_ = nullptr;
}

}  // namespace transport
}  // namespace coll
