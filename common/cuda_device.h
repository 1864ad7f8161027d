// Whether this process can use a CUDA device, asked by the communicator before it accepts a stream,
// and by tests and tools; which device a thread or a stream is on; and a scope that makes the
// communicator's device current for library work and gives the caller's back. Built with and
// without CUDA (cuda_device_none.cc), so callers need no #ifdef: without CUDA support compiled in,
// there is never a device. Nothing here creates a CUDA context unless its comment says so: a
// host-only user on a GPU machine must not pay a context (hundreds of MiB of GPU memory) for
// linking a library that also does device memory.
#pragma once

#include <string>

namespace coll {

// True when CUDA support is compiled in and the driver reports at least one device. Otherwise
// false, and *why (when given) says what is missing, e.g. "this build of libcollective has no
// CUDA support (COLL_WITH_CUDA=OFF)" or "cudaGetDeviceCount: no CUDA-capable device is detected".
// Asked once per process; later calls return the cached answer.
bool cudaDeviceAvailable(std::string* why = nullptr);

// Whether CUDA support is compiled into this library.
bool cudaCompiledIn();

// The device of the calling thread's current CUDA context, or -1 when the thread has none (or
// there is no device). Asks the driver for the current context, so it never creates one: this
// is how a communicator learns its device at init (a process that already works on a GPU has a
// current context; one that only moves host memory has none and keeps it that way).
int currentContextDevice();

// The device `stream` (a cudaStream_t) belongs to. A stream exists only in a context, so asking
// creates none. Throws collInvalidUsage for a handle the driver does not know.
int streamDevice(void* stream);

// For its lifetime, `device` is the calling thread's current device (its primary context, which
// this creates if needed: the caller is about to work on the device). The destructor makes the
// context that was current before current again, or none if none was: the caller's thread is left
// exactly as found, and no other device's context is created to restore it.
class CurrentDeviceScope {
 public:
  explicit CurrentDeviceScope(int device);
  ~CurrentDeviceScope();
  CurrentDeviceScope(const CurrentDeviceScope&) = delete;
  CurrentDeviceScope& operator=(const CurrentDeviceScope&) = delete;

 private:
  // Unused in builds without CUDA (cuda_device_none.cc).
  [[maybe_unused]] void* saved_ = nullptr;  // the CUcontext current before, possibly none
  [[maybe_unused]] bool changed_ = false;
};

// A driver API function, looked up through the runtime at `version` (the CUDA version whose
// signature the caller uses), so that libcollective links no libcuda. nullptr when the driver
// lacks it; without CUDA support, always nullptr.
void* cudaDriverFunction(const char* name, int version);

// Whether `pointer` is device memory the host cannot read (cudaMalloc'd, not managed), asked only
// where this thread has a current CUDA context (a process that never used CUDA pays nothing and
// gets false); *device is its GPU. For the calls with a NULL stream, which take host buffers.
bool isDeviceOnlyMemory(const void* pointer, int* device);
// Whether this thread has a current CUDA context: without one no buffer is asked about at all.
bool cudaContextIsCurrent();

// The PCI bus id of CUDA device `device` as the runtime names it ("0000:3B:00.0"): how ranks of
// one host tell their GPUs apart. "" when the runtime cannot say, or without CUDA support.
std::string cudaDeviceBusId(int device);
// This process's CUDA ordinal of the GPU whose PCI bus id is `busId`; -1 when that GPU is not
// visible to this process (CUDA_VISIBLE_DEVICES), or without CUDA.
int cudaDeviceOfBusId(const std::string& busId);
// Whether `device` may map the memory of the GPU whose PCI bus id is `busId`
// (cudaDeviceCanAccessPeer). False when that GPU is not visible to this process, or without CUDA.
bool cudaCanAccessPeerByBusId(int device, const std::string& busId);

}  // namespace coll
