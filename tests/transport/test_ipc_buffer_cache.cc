// The reuse rule of the IPC caches of callers' buffers (transport/ipc_buffer_cache.h), against a
// fake driver whose allocations, like the CUDA driver's, may come back at an address a freed one
// had: a mapping is reused only for the very allocation it was opened for (base, size and buffer
// id), a freed and reallocated buffer at the same address gets a new handle and a new mapping
// (the stale one closed first, never read), and the cache stays within its capacity.
#include <gtest/gtest.h>

#include <cstring>
#include <map>
#include <set>

#include "common/error.h"
#include "tests/transport/fake_ipc_driver.h"
#include "transport/ipc_buffer_cache.h"

namespace coll {
namespace transport {
namespace {

using testing_ipc::FakeDriver;

const void* at(uint64_t address) { return reinterpret_cast<const void*>(address); }

TEST(IpcBufferCache, TheSameAllocationReusesItsHandleAndMapping) {
  FakeDriver driver;
  IpcExportCache out(driver);
  IpcImportCache in(driver, 8);
  driver.allocate(0x1000, 4096);
  for (int call = 0; call < 5; ++call) {
    auto [key, handle] = out.exportFor(at(0x1000 + 64 * call));  // anywhere inside it
    EXPECT_EQ(key.base, 0x1000u);
    in.mappingFor(1, key, handle);
  }
  EXPECT_EQ(driver.exported, 1);
  EXPECT_EQ(driver.opens, 1);
  EXPECT_EQ(in.size(), 1u);
}

// The rule: freed, then another allocation at the same base (same size too): a new handle, and
// the importer closes the stale mapping before it maps the new one, so that nothing reads the
// freed memory through a handle that outlived it.
TEST(IpcBufferCache, AFreedAndReusedAddressIsNeverReadThroughAStaleHandle) {
  FakeDriver driver;
  IpcExportCache out(driver);
  IpcImportCache in(driver, 8);
  driver.allocate(0x1000, 4096);
  auto first = out.exportFor(at(0x1000));
  void* old = in.mappingFor(1, first.first, first.second);
  driver.release(0x1000);
  driver.allocate(0x1000, 4096);  // the same base and size: only the buffer id differs
  auto second = out.exportFor(at(0x1000));
  EXPECT_NE(second.first, first.first);
  EXPECT_NE(second.second, first.second) << "the exporter must make a handle of the new allocation";
  void* fresh = in.mappingFor(1, second.first, second.second);
  EXPECT_NE(fresh, old);
  EXPECT_EQ(driver.closedIds.count(first.first.bufferId), 1u) << "the stale mapping must be closed";
  EXPECT_EQ(driver.openMappings.at(fresh), second.first.bufferId);
  EXPECT_EQ(in.size(), 1u);
  // A larger allocation at the same base is another allocation too.
  driver.release(0x1000);
  driver.allocate(0x1000, 8192);
  auto third = out.exportFor(at(0x1000));
  EXPECT_NE(in.mappingFor(1, third.first, third.second), fresh);
  EXPECT_EQ(driver.exported, 3);
  EXPECT_EQ(driver.opens, 3);
}

TEST(IpcBufferCache, PeersAreKeptApartAndTheLeastRecentlyUsedIsClosedFirst) {
  FakeDriver driver;
  IpcExportCache out(driver);
  IpcImportCache in(driver, 2);
  driver.allocate(0x1000, 4096);
  driver.allocate(0x9000, 4096);
  auto a = out.exportFor(at(0x1000));
  auto b = out.exportFor(at(0x9000));
  void* aFrom1 = in.mappingFor(1, a.first, a.second);
  void* aFrom2 = in.mappingFor(2, a.first, a.second);  // the same key from another peer: its own
  EXPECT_NE(aFrom1, aFrom2);
  in.mappingFor(1, a.first, a.second);  // peer 1's is now the most recent
  in.mappingFor(1, b.first, b.second);  // over capacity: peer 2's goes
  EXPECT_EQ(in.size(), 2u);
  EXPECT_EQ(driver.openMappings.count(aFrom2), 0u);
  EXPECT_EQ(in.mappingFor(1, a.first, a.second), aFrom1) << "still cached";
  EXPECT_EQ(in.closed(), 1u);
}

TEST(IpcBufferCache, AHostPointerIsRefused) {
  FakeDriver driver;
  IpcExportCache out(driver);
  EXPECT_THROW(out.exportFor(at(0x42)), CollError);
}

}  // namespace
}  // namespace transport
}  // namespace coll
