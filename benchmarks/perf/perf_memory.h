// Where a perf program's buffers live: host memory (calls with a NULL stream) or GPU memory
// (calls on a CUDA stream, -m device). The driver fills, poisons and checks buffers through this
// interface; GPU buffers are staged through host memory for that, outside the timed loop.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "collective.h"
#include "perf_data.h"

namespace collperf {

class PerfMemory {
 public:
  virtual ~PerfMemory() = default;
  // Zeroed memory of at least `bytes`; exits the program with a message when it cannot.
  virtual char* allocate(size_t bytes) = 0;
  virtual void fillInput(const DataSpec& spec, char* buf, size_t count) = 0;
  virtual void fillPoison(const TypeInfo& type, char* buf, size_t count) = 0;
  virtual size_t countWrong(const DataSpec& spec, const char* buf, size_t count,
                            const std::vector<Segment>& segments) = 0;
  // What the collectives get as their stream (NULL for host memory).
  virtual collStream_t stream() = 0;
  // Waits until every call issued on stream() has finished.
  virtual void synchronize() = 0;
  // -1 for host memory, else the CUDA device the buffers are on.
  virtual int device() const = 0;
};

std::unique_ptr<PerfMemory> makeHostMemory();
// GPU memory on device LOCAL_RANK % (devices), made current. nullptr and *why set when this
// program was built without CUDA or the machine has no usable GPU.
std::unique_ptr<PerfMemory> makeDeviceMemory(std::string* why);
// Whether makeDeviceMemory can succeed here (for -m's default); no device memory is allocated.
bool deviceMemoryAvailable(std::string* why);

}  // namespace collperf
