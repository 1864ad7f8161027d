#include "transport/verbs/verbs_api.h"

#include <dlfcn.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "common/logging.h"

namespace coll {
namespace transport {
namespace {

const char kDefaultLibrary[] = "libibverbs.so.1";

// Resolves `name` into `fn`; false (and `missing` set) when the library lacks it.
template <typename Fn>
bool resolve(void* handle, const char* name, Fn* fn, std::string* missing) {
  *fn = reinterpret_cast<Fn>(dlsym(handle, name));
  if (*fn == nullptr && missing->empty()) *missing = name;
  return *fn != nullptr;
}

// The library's description in reasons: "libibverbs" for rdma-core's, the path otherwise, so that
// a log line says whether the emulator was in use.
std::string describe(const std::string& library) {
  return library == kDefaultLibrary ? std::string("libibverbs") : library;
}

}  // namespace

int VerbsApi::queryPort(ibv_context* context, uint8_t port, ibv_port_attr* attr) const {
  std::memset(attr, 0, sizeof(*attr));
  return queryPortCompat(context, port, reinterpret_cast<_compat_ibv_port_attr*>(attr));
}

std::string verbsLibraryName() {
  const char* named = std::getenv("COLL_VERBS_LIBRARY");
  return named != nullptr && named[0] != '\0' ? named : kDefaultLibrary;
}

std::shared_ptr<const VerbsApi> loadVerbsApi(const std::string& library, std::string* reason) {
  // RTLD_LOCAL: the ibv_* names stay out of the global namespace, so a second verbs user in the
  // process (an MPI linked against rdma-core) keeps its own. Never dlclose'd (see the header).
  void* handle = dlopen(library.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    const char* why = dlerror();
    *reason = "no " + library + ": " + (why != nullptr ? why : "dlopen failed");
    return nullptr;
  }
  auto api = std::make_shared<VerbsApi>();
  api->library = library;
  std::string missing;
  bool ok = resolve(handle, "ibv_get_device_list", &api->getDeviceList, &missing) &&
            resolve(handle, "ibv_free_device_list", &api->freeDeviceList, &missing) &&
            resolve(handle, "ibv_get_device_name", &api->getDeviceName, &missing) &&
            resolve(handle, "ibv_open_device", &api->openDevice, &missing) &&
            resolve(handle, "ibv_close_device", &api->closeDevice, &missing) &&
            resolve(handle, "ibv_query_device", &api->queryDevice, &missing) &&
            resolve(handle, "ibv_query_port", &api->queryPortCompat, &missing) &&
            resolve(handle, "ibv_query_gid", &api->queryGid, &missing) &&
            resolve(handle, "ibv_alloc_pd", &api->allocPd, &missing) &&
            resolve(handle, "ibv_dealloc_pd", &api->deallocPd, &missing) &&
            resolve(handle, "ibv_reg_mr", &api->regMr, &missing) &&
            resolve(handle, "ibv_dereg_mr", &api->deregMr, &missing) &&
            resolve(handle, "ibv_create_cq", &api->createCq, &missing) &&
            resolve(handle, "ibv_destroy_cq", &api->destroyCq, &missing) &&
            resolve(handle, "ibv_create_qp", &api->createQp, &missing) &&
            resolve(handle, "ibv_modify_qp", &api->modifyQp, &missing) &&
            resolve(handle, "ibv_destroy_qp", &api->destroyQp, &missing);
  if (!ok) {
    *reason = describe(library) + " loaded, but it lacks " + missing;
    return nullptr;
  }
  api->wcStatusStr = reinterpret_cast<const char* (*)(ibv_wc_status)>(dlsym(handle, "ibv_wc_status_str"));
  reason->clear();
  return api;
}

VerbsAvailability probeVerbs(const std::string& library) {
  VerbsAvailability result;
  std::shared_ptr<const VerbsApi> api = loadVerbsApi(library, &result.reason);
  if (api != nullptr) {
    // Without kernel RDMA support rdma-core answers NULL (errno ENOSYS) rather than an empty list.
    int count = 0;
    errno = 0;
    ibv_device** list = api->getDeviceList(&count);
    for (int i = 0; list != nullptr && i < count; i++) result.devices.emplace_back(api->getDeviceName(list[i]));
    if (list != nullptr) api->freeDeviceList(list);
    if (result.devices.empty()) {
      result.reason = describe(library) + " loaded, no RDMA device";
      if (list == nullptr && errno != 0) result.reason += std::string(" (") + std::strerror(errno) + ")";
    } else {
      result.api = api;
    }
  }
  if (result.available()) {
    std::string names;
    for (const std::string& d : result.devices) names += (names.empty() ? "" : ", ") + d;
    COLL_INFO(kTransport, "verbs: %s has %s", library.c_str(), names.c_str());
  } else {
    COLL_INFO(kTransport, "verbs unavailable: %s", result.reason.c_str());
  }
  return result;
}

}  // namespace transport
}  // namespace coll
