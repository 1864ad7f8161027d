// The part of libibverbs (rdma-core) that the verbs transport uses, loaded with dlopen at run time
// so that libcollective loads and runs where rdma-core or an RDMA device is absent. The library is
// libibverbs.so.1, or the one COLL_VERBS_LIBRARY names: the verbs emulator (tests/verbs_emulator)
// is a test double with the same entry points, never loaded unless named there.
//
// Types and signatures come from rdma-core's own header (libibverbs-dev), so the real library and
// the emulator are called through exactly the declarations rdma-core publishes. Two kinds of entry
// point exist there:
//   - exported functions (ibv_open_device, ibv_reg_mr, ibv_modify_qp, ...): resolved with dlsym
//     into the table below, by their exported names (ibv_reg_mr and ibv_query_port are also macros
//     in verbs.h that wrap the exported symbols; the string names are unaffected);
//   - the data path (ibv_post_send, ibv_post_recv, ibv_poll_cq): static inline in verbs.h, calling
//     through the ops table of the ibv_context the provider filled. Nothing to resolve: we call the
//     inline functions, and the emulator fills ctx->ops like any provider. The fast path thus costs
//     one indirect call, as with rdma-core linked directly.
// This file is built only where libibverbs-dev is installed (tools/install-deps.sh installs it;
// transport/CMakeLists.txt leaves the folder out, with a message, where the header is missing).
#pragma once

#include <infiniband/verbs.h>

#include <memory>
#include <string>
#include <vector>

namespace coll {
namespace transport {

// The exported entry points, resolved from one loaded library. Every pointer is set when loading
// succeeded. Signatures are verbs.h's.
struct VerbsApi {
  std::string library;  // the name it was loaded by, for messages
  ibv_device** (*getDeviceList)(int* numDevices) = nullptr;
  void (*freeDeviceList)(ibv_device** list) = nullptr;
  const char* (*getDeviceName)(ibv_device* device) = nullptr;
  ibv_context* (*openDevice)(ibv_device* device) = nullptr;
  int (*closeDevice)(ibv_context* context) = nullptr;
  int (*queryDevice)(ibv_context* context, ibv_device_attr* attr) = nullptr;
  // The exported ibv_query_port fills the older, shorter port struct (_compat_ibv_port_attr, a
  // prefix of ibv_port_attr): queryPort() below zeroes the rest first.
  int (*queryPortCompat)(ibv_context* context, uint8_t port, _compat_ibv_port_attr* attr) = nullptr;
  int (*queryGid)(ibv_context* context, uint8_t port, int index, ibv_gid* gid) = nullptr;
  ibv_pd* (*allocPd)(ibv_context* context) = nullptr;
  int (*deallocPd)(ibv_pd* pd) = nullptr;
  ibv_mr* (*regMr)(ibv_pd* pd, void* addr, size_t length, int access) = nullptr;
  int (*deregMr)(ibv_mr* mr) = nullptr;
  ibv_cq* (*createCq)(ibv_context* context, int cqe, void* cqContext, ibv_comp_channel* channel,
                      int compVector) = nullptr;
  int (*destroyCq)(ibv_cq* cq) = nullptr;
  ibv_qp* (*createQp)(ibv_pd* pd, ibv_qp_init_attr* attr) = nullptr;
  int (*modifyQp)(ibv_qp* qp, ibv_qp_attr* attr, int attrMask) = nullptr;
  int (*destroyQp)(ibv_qp* qp) = nullptr;
  // Optional (nullptr when the library lacks it): words for a completion status, for messages.
  const char* (*wcStatusStr)(ibv_wc_status status) = nullptr;

  int queryPort(ibv_context* context, uint8_t port, ibv_port_attr* attr) const;
  // The data path, through the provider's ops table (verbs.h's inline functions).
  static int postSend(ibv_qp* qp, ibv_send_wr* wr, ibv_send_wr** bad) { return ibv_post_send(qp, wr, bad); }
  static int postRecv(ibv_qp* qp, ibv_recv_wr* wr, ibv_recv_wr** bad) { return ibv_post_recv(qp, wr, bad); }
  static int pollCq(ibv_cq* cq, int entries, ibv_wc* wc) { return ibv_poll_cq(cq, entries, wc); }
};

// The library to load: COLL_VERBS_LIBRARY when set and not empty, else libibverbs.so.1.
std::string verbsLibraryName();

// Loads `library` (dlopen) and resolves every entry point. nullptr when it does not load or lacks
// one; `reason` then says why ("no libibverbs.so.1: <dlerror>"). The library stays loaded for the
// life of the process: rdma-core's providers are not made to be unloaded.
std::shared_ptr<const VerbsApi> loadVerbsApi(const std::string& library, std::string* reason);

// Whether verbs can be used here, for the transport table and the INFO log: the library loads and
// lists at least one device.
struct VerbsAvailability {
  std::shared_ptr<const VerbsApi> api;  // nullptr when unavailable
  std::vector<std::string> devices;     // the names ibv_get_device_list gave
  std::string reason;                   // why unavailable ("libibverbs loaded, no RDMA device"), or ""
  bool available() const { return api != nullptr && !devices.empty(); }
};
VerbsAvailability probeVerbs(const std::string& library);
inline VerbsAvailability probeVerbs() { return probeVerbs(verbsLibraryName()); }

}  // namespace transport
}  // namespace coll
