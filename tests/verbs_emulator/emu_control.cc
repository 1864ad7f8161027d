// The emulator's control path: devices "emu0".."emu3" (COLL_VERBS_EMU_DEVICES of them, default 1,
// so that device selection is testable), each with one active port, protection domains, memory
// regions, completion queues and reliable-connected QPs, each with its slot in the registry. The
// devices differ only in name, LID and GIDs: every one reaches every other, as on one fabric.
// Errors follow libibverbs: NULL or -1 with errno, or the errno returned (ibv_modify_qp).
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>

#include "emu_carrier.h"
#include "emu_faults.h"
#include "emu_objects.h"
#include "emu_registry.h"

// verbs.h wraps these exported names in macros; the definitions below are the exported functions.
#undef ibv_reg_mr
#undef ibv_query_port

using namespace verbs_emu;

namespace {

constexpr int kMaxDevices = 4;

ibv_device emuDevices[kMaxDevices] = {};
int pdsOnDevice[kMaxDevices] = {};  // this process's live PDs per device (coll_verbs_emu_pds_on)

int deviceCount() {
  const char* text = std::getenv("COLL_VERBS_EMU_DEVICES");
  const int n = text != nullptr ? std::atoi(text) : 1;
  return n < 1 ? 1 : n > kMaxDevices ? kMaxDevices : n;
}

ibv_device* emuDevice(int index) {
  ibv_device& d = emuDevices[index];
  if (d.name[0] == '\0') {
    d.node_type = IBV_NODE_CA;
    d.transport_type = IBV_TRANSPORT_IB;
    std::snprintf(d.name, sizeof(d.name), "emu%d", index);
    std::snprintf(d.dev_name, sizeof(d.dev_name), "uverbs-emu%d", index);
    // Where the transport looks for the device's PCI place: a test's made-up sysfs tree when
    // COLL_VERBS_EMU_SYSFS names one, else where rdma-core would point (absent here: unknown).
    const char* sysfs = std::getenv("COLL_VERBS_EMU_SYSFS");
    std::snprintf(d.ibdev_path, sizeof(d.ibdev_path), "%s/class/infiniband/emu%d",
                  sysfs != nullptr && *sysfs != '\0' ? sysfs : "/sys", index);
  }
  return &d;
}

// Which emulated device `device` is; -1 when it is none of ours.
int deviceIndex(const ibv_device* device) {
  for (int i = 0; i < kMaxDevices; ++i)
    if (device == &emuDevices[i] && emuDevices[i].name[0] != '\0') return i;
  return -1;
}

// Whether every page of [addr, addr + length) is mapped (msync refuses a range with a hole).
bool mapped(const void* addr, size_t length) {
  if (length == 0) return true;
  const auto page = static_cast<uintptr_t>(sysconf(_SC_PAGESIZE));
  const uintptr_t first = reinterpret_cast<uintptr_t>(addr) & ~(page - 1);
  const uintptr_t end = reinterpret_cast<uintptr_t>(addr) + length;
  if (end < first) return false;
  return msync(reinterpret_cast<void*>(first), end - first, MS_ASYNC) == 0;
}

// How many memory regions process `pid` holds (registry lock held).
long regionsOf(Registry* r, pid_t pid) {
  long n = 0;
  for (const MrSlot& mr : r->mrs) n += mr.pid == pid ? 1 : 0;
  return n;
}

template <typename T>
T* fail(int err) {
  errno = err;
  return nullptr;
}

// A process-local object for registry slot `slot` (-1: none left); nullptr and ENOMEM when either
// is missing.
template <typename T>
T* newFor(int slot) {
  T* obj = slot >= 0 ? new (std::nothrow) T{} : nullptr;
  if (obj == nullptr) return fail<T>(ENOMEM);
  obj->slot = slot;
  return obj;
}

}  // namespace

EMU_EXPORT ibv_device** ibv_get_device_list(int* num) {
  const int n = deviceCount();
  auto list = static_cast<ibv_device**>(std::calloc(n + 1, sizeof(ibv_device*)));
  if (list == nullptr) return fail<ibv_device*>(ENOMEM);
  for (int i = 0; i < n; ++i) list[i] = emuDevice(i);
  if (num != nullptr) *num = n;
  return list;
}

EMU_EXPORT void ibv_free_device_list(ibv_device** list) { std::free(list); }

EMU_EXPORT const char* ibv_get_device_name(ibv_device* device) { return device->name; }

EMU_EXPORT ibv_context* ibv_open_device(ibv_device* device) {
  if (deviceIndex(device) < 0) return fail<ibv_context>(ENODEV);
  if (registry() == nullptr) return nullptr;
  auto ctx = new (std::nothrow) ibv_context{};
  if (ctx == nullptr) return fail<ibv_context>(ENOMEM);
  ctx->device = device;
  ctx->cmd_fd = ctx->async_fd = -1;
  ctx->num_comp_vectors = 1;
  ctx->ops.post_send = postSend;
  ctx->ops.post_recv = postRecv;
  ctx->ops.poll_cq = pollCq;
  return ctx;
}

EMU_EXPORT int ibv_close_device(ibv_context* ctx) {
  delete ctx;
  return 0;
}

EMU_EXPORT int ibv_query_device(ibv_context*, ibv_device_attr* attr) {
  *attr = ibv_device_attr{};
  std::strcpy(attr->fw_ver, "emulator");
  attr->max_mr_size = UINT64_MAX;
  attr->page_size_cap = 4096;
  attr->max_qp = kMaxQps;
  attr->max_qp_wr = kRecvDepth;
  attr->max_sge = kMaxSge;
  attr->max_cq = kMaxCqs;
  attr->max_cqe = kCqDepth;
  attr->max_mr = kMaxMrs;
  attr->max_pd = 1 << 20;
  attr->phys_port_cnt = 1;
  return 0;
}

// Fills only the fields of the older, shorter struct the exported symbol is declared with (up to
// link_layer); the caller's tail is not ours to write.
EMU_EXPORT int ibv_query_port(ibv_context* ctx, uint8_t port, _compat_ibv_port_attr* compat) {
  if (port != 1) return errno = EINVAL, EINVAL;
  auto attr = reinterpret_cast<ibv_port_attr*>(compat);
  attr->state = IBV_PORT_ACTIVE;
  attr->max_mtu = attr->active_mtu = IBV_MTU_4096;
  attr->gid_tbl_len = 2;
  attr->max_msg_sz = 1U << 31;
  attr->pkey_tbl_len = 1;
  attr->lid = static_cast<uint16_t>(1 + deviceIndex(ctx->device));
  attr->link_layer = IBV_LINK_LAYER_INFINIBAND;
  return 0;
}

// Two GIDs per port, in the forms a RoCE port lists: index 0 link-local (fe80::n), index 1 an
// IPv4-mapped address (::ffff:10.0.0.n, RoCE v2's form), n the device's LID.
EMU_EXPORT int ibv_query_gid(ibv_context* ctx, uint8_t port, int index, ibv_gid* gid) {
  if (port != 1 || index < 0 || index > 1) return errno = EINVAL, -1;
  const auto n = static_cast<uint8_t>(1 + deviceIndex(ctx->device));
  *gid = ibv_gid{};
  if (index == 0) {
    gid->raw[0] = 0xfe;
    gid->raw[1] = 0x80;
  } else {
    gid->raw[10] = gid->raw[11] = 0xff;
    gid->raw[12] = 10;
  }
  gid->raw[15] = n;
  return 0;
}

EMU_EXPORT ibv_pd* ibv_alloc_pd(ibv_context* ctx) {
  auto pd = new (std::nothrow) EmuPd{};
  if (pd == nullptr) return fail<ibv_pd>(ENOMEM);
  pd->pd.context = ctx;
  Locked lock(registry());
  pd->id = registry()->nextPd++;
  ++pdsOnDevice[deviceIndex(ctx->device)];
  return &pd->pd;
}

EMU_EXPORT int ibv_dealloc_pd(ibv_pd* pd) {
  --pdsOnDevice[deviceIndex(pd->context->device)];
  delete emu(pd);
  return 0;
}

EMU_EXPORT ibv_mr* ibv_reg_mr(ibv_pd* pd, void* addr, size_t length, int access) {
  // As the real verbs: remote write needs local write.
  if ((access & IBV_ACCESS_REMOTE_WRITE) != 0 && (access & IBV_ACCESS_LOCAL_WRITE) == 0) return fail<ibv_mr>(EINVAL);
  // Any memory of the process may be registered, as on a device, but only memory that is mapped:
  // the kernel pins the pages, and a range with a hole fails with EFAULT.
  if (!mapped(addr, length)) return fail<ibv_mr>(EFAULT);
  Registry* r = registry();
  Locked lock(r);
  // Fault injection: a pinned-memory limit, counted in regions.
  if (maxMemoryRegions() >= 0 && regionsOf(r, getpid()) >= maxMemoryRegions()) return fail<ibv_mr>(ENOMEM);
  int slot = freeMrSlot(r);
  auto mr = slot >= 0 ? new (std::nothrow) ibv_mr{} : nullptr;
  if (mr == nullptr) return fail<ibv_mr>(ENOMEM);
  uint32_t key = nextKey(r);
  r->mrs[slot] = MrSlot{key, getpid(), emu(pd)->id, access, reinterpret_cast<uint64_t>(addr), length};
  mr->context = pd->context;
  mr->pd = pd;
  mr->addr = addr;
  mr->length = length;
  mr->handle = static_cast<uint32_t>(slot);
  mr->lkey = mr->rkey = key;
  // Fault injection: peers are told a key that opens nothing (their writes fail remotely).
  if (corruptRkey()) mr->rkey = corruptedRkey(key);
  return mr;
}

EMU_EXPORT int ibv_dereg_mr(ibv_mr* mr) {
  Registry* r = registry();
  {
    Locked lock(r);
    int slot = findMr(r, mr->lkey);
    if (slot >= 0) r->mrs[slot] = MrSlot{};
  }
  delete mr;
  return 0;
}

EMU_EXPORT ibv_cq* ibv_create_cq(ibv_context* ctx, int cqe, void* cqContext, ibv_comp_channel* channel, int) {
  if (cqe < 1 || cqe > kCqDepth || channel != nullptr) return fail<ibv_cq>(EINVAL);
  Registry* r = registry();
  Locked lock(r);
  auto cq = newFor<EmuCq>(freeCqSlot(r));
  if (cq == nullptr) return nullptr;
  CqSlot& s = r->cqs[cq->slot];
  s.pid = getpid();
  s.head = s.tail = 0;
  s.heldCount = s.idlePolls = s.owed = 0;  // a reused slot may have held some for its dead owner
  s.capacity = static_cast<uint32_t>(cqe);
  cq->cq.context = ctx;
  cq->cq.cq_context = cqContext;
  cq->cq.cqe = cqe;
  return &cq->cq;
}

EMU_EXPORT int ibv_destroy_cq(ibv_cq* cq) {
  {
    Locked lock(registry());
    registry()->cqs[emu(cq)->slot].pid = 0;
  }
  delete emu(cq);
  return 0;
}

EMU_EXPORT ibv_qp* ibv_create_qp(ibv_pd* pd, ibv_qp_init_attr* init) {
  ibv_qp_cap& cap = init->cap;
  if (init->qp_type != IBV_QPT_RC || init->srq != nullptr || init->send_cq == nullptr || init->recv_cq == nullptr ||
      cap.max_recv_wr > kRecvDepth || cap.max_send_wr > kRecvDepth || cap.max_send_sge > kMaxSge ||
      cap.max_recv_sge > kMaxSge || cap.max_inline_data > kMaxInline)
    return fail<ibv_qp>(EINVAL);
  Registry* r = registry();
  Locked lock(r);
  auto qp = newFor<EmuQp>(freeQpSlot(r));
  if (qp == nullptr) return nullptr;
  QpSlot& s = r->qps[qp->slot];
  s = QpSlot{};
  s.qpn = nextQpn(r);
  s.pid = getpid();
  s.pd = emu(pd)->id;
  s.state = IBV_QPS_RESET;
  s.sendCq = emu(init->send_cq)->slot;
  s.recvCq = emu(init->recv_cq)->slot;
  s.maxRecv = cap.max_recv_wr;
  // Fault injection: this QP's arrivals are delivered late (emu_data_path.cc).
  static int created = 0;
  s.delayed = delayedQp(created++);
  // Where it lives, and with COLL_VERBS_EMU_TCP=1 where a writer in another namespace reaches it.
  publishCarrier(&s);
  qp->maxInline = cap.max_inline_data;
  qp->signalAll = init->sq_sig_all != 0;
  qp->qp.context = pd->context;
  qp->qp.qp_context = init->qp_context;
  qp->qp.pd = pd;
  qp->qp.send_cq = init->send_cq;
  qp->qp.recv_cq = init->recv_cq;
  qp->qp.qp_num = s.qpn;
  qp->qp.state = IBV_QPS_RESET;
  qp->qp.qp_type = IBV_QPT_RC;
  return &qp->qp;
}

EMU_EXPORT int ibv_modify_qp(ibv_qp* qp, ibv_qp_attr* attr, int mask) {
  int err = transition(emu(qp), *attr, mask);
  if (err != 0) errno = err;
  return err;
}

EMU_EXPORT int ibv_destroy_qp(ibv_qp* qp) {
  {
    Locked lock(registry());
    forgetQp(registry(), qp->qp_num);
    registry()->qps[emu(qp)->slot] = QpSlot{};  // a peer writing to it now finds no such QP
  }
  delete emu(qp);
  return 0;
}

// Words for a completion status, as rdma-core has them for messages (the emulator's own short set).
EMU_EXPORT const char* ibv_wc_status_str(ibv_wc_status status) {
  switch (status) {
    case IBV_WC_SUCCESS: return "success";
    case IBV_WC_LOC_PROT_ERR: return "local protection error";
    case IBV_WC_WR_FLUSH_ERR: return "Work Request Flushed Error";
    case IBV_WC_REM_ACCESS_ERR: return "remote access error";
    case IBV_WC_REM_OP_ERR: return "remote operation error";
    case IBV_WC_RETRY_EXC_ERR: return "transport retry counter exceeded";
    case IBV_WC_RNR_RETRY_EXC_ERR: return "RNR retry counter exceeded";
    default: return "unknown";
  }
}

// A statistic for tests (not a verbs function): how many receive completions of delayed QPs were
// delivered after a later one, in every process of this registry (COLL_VERBS_EMU_DELAY_QP).
EMU_EXPORT uint64_t coll_verbs_emu_overtaken() {
  Registry* r = verbs_emu::registry();
  if (r == nullptr) return 0;
  verbs_emu::Locked lock(r);
  return r->overtaken;
}

// Not a verbs function: how many protection domains this process holds on emulated device
// `device` (0..3; -1 for another index), so that a test sees which device a rank chose.
EMU_EXPORT int coll_verbs_emu_pds_on(int device) {
  return device >= 0 && device < kMaxDevices ? pdsOnDevice[device] : -1;
}
