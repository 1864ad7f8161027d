#include "emu_registry.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>

namespace verbs_emu {
namespace {

constexpr uint64_t kMagic = 0x766572627365'6d33ULL;  // "verbsem3": the third layout
constexpr long kLockRetryNs = 5000000;               // one bounded wait for the registry's lock

std::string registryPath() {
  const char* named = std::getenv("COLL_VERBS_EMU_REGISTRY");
  if (named != nullptr && named[0] != '\0') return named;
  return "/dev/shm/coll-verbs-emu-" + std::to_string(getuid());
}

Registry* mapFd(int fd) {
  void* p = mmap(nullptr, sizeof(Registry), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  return p == MAP_FAILED ? nullptr : static_cast<Registry*>(p);
}

// Makes an initialized registry under a private name and links it into place, so that no process
// ever maps a half-initialized one; false when another process linked its own first.
bool createRegistry(const std::string& path) {
  std::string temp = path + "." + std::to_string(getpid()) + ".tmp";
  int fd = open(temp.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd < 0) return false;
  Registry* r = ftruncate(fd, sizeof(Registry)) == 0 ? mapFd(fd) : nullptr;
  close(fd);
  if (r != nullptr) {
    pthread_mutexattr_t attr;
    pthread_mutexattr_init(&attr);
    pthread_mutexattr_setpshared(&attr, PTHREAD_PROCESS_SHARED);
    pthread_mutexattr_setrobust(&attr, PTHREAD_MUTEX_ROBUST);
    pthread_mutex_init(&r->lock, &attr);
    pthread_mutexattr_destroy(&attr);
    r->nextQpn = 0x100 + static_cast<uint32_t>(getpid() % 0x1000);
    r->nextKey = 0x1000;
    r->nextPd = 1;
    r->magic = kMagic;
    munmap(r, sizeof(Registry));
  }
  bool linked = r != nullptr && link(temp.c_str(), path.c_str()) == 0;
  unlink(temp.c_str());
  return linked;
}

Registry* openRegistry() {
  std::string path = registryPath();
  for (int attempt = 0; attempt < 3; attempt++) {
    int fd = open(path.c_str(), O_RDWR | O_CLOEXEC);
    if (fd < 0 && errno == ENOENT) {
      createRegistry(path);  // lost races are fine: the winner's file is opened next time round
      continue;
    }
    if (fd < 0) return nullptr;
    struct stat st;
    Registry* r = fstat(fd, &st) == 0 && st.st_size == static_cast<off_t>(sizeof(Registry)) ? mapFd(fd) : nullptr;
    close(fd);
    if (r != nullptr && r->magic == kMagic) return r;
    std::fprintf(stderr, "verbs emulator: %s is not a registry of this build\n", path.c_str());
    errno = EINVAL;
    return nullptr;
  }
  errno = EAGAIN;
  return nullptr;
}

}  // namespace

Registry* registry() {
  // Mapped once per process; a child forked afterwards shares the same mapping, which is what a
  // MAP_SHARED file mapping gives anyway.
  static Registry* mapped = nullptr;
  static std::once_flag once;
  std::call_once(once, [] { mapped = openRegistry(); });
  return mapped;
}

Locked::Locked(Registry* r) : r_(r) {
  // Waits in short bounded sleeps, each ending in a fresh attempt, rather than one unbounded
  // futex wait: after a member was SIGKILLed mid-run (tests/faults), a waiter was seen asleep for
  // good on a lock whose word read 0 (free, no owner), its wake-up lost. A few milliseconds later
  // the next attempt takes the free lock.
  for (;;) {
    timespec until{};
    clock_gettime(CLOCK_MONOTONIC, &until);
    until.tv_nsec += kLockRetryNs;
    if (until.tv_nsec >= 1000000000L) {
      until.tv_sec += 1;
      until.tv_nsec -= 1000000000L;
    }
    int rc = pthread_mutex_clocklock(&r_->lock, CLOCK_MONOTONIC, &until);
    if (rc == ETIMEDOUT) continue;
    if (rc == EOWNERDEAD) pthread_mutex_consistent(&r_->lock);
    return;
  }
}

Locked::~Locked() { pthread_mutex_unlock(&r_->lock); }

bool ownerGone(pid_t pid) {
  if (kill(pid, 0) != 0) return errno == ESRCH;
  // A process that exited but was not reaped yet (a zombie) still answers kill(); its QPs are gone
  // all the same, as a device's are when the kernel tears the process down.
  char path[32];
  std::snprintf(path, sizeof(path), "/proc/%d/stat", static_cast<int>(pid));
  FILE* stat = std::fopen(path, "r");
  if (stat == nullptr) return true;
  char state = '?';
  int matched = std::fscanf(stat, "%*d (%*[^)]) %c", &state);
  std::fclose(stat);
  return matched == 1 && (state == 'Z' || state == 'X');
}

int findQp(Registry* r, uint32_t qpn) {
  for (int i = 0; i < kMaxQps; i++)
    if (qpn != 0 && r->qps[i].qpn == qpn) return i;
  return -1;
}

int findMr(Registry* r, uint32_t key) {
  for (int i = 0; i < kMaxMrs; i++)
    if (key != 0 && r->mrs[i].key == key) return i;
  return -1;
}

namespace {

// A slot is free when no process owns it, or its owner died without destroying what it made.
template <typename Slot, size_t N>
int reusableSlot(Slot (&slots)[N]) {
  for (size_t i = 0; i < N; i++)
    if (slots[i].pid == 0 || ownerGone(slots[i].pid)) return static_cast<int>(i);
  return -1;
}

}  // namespace

int freeQpSlot(Registry* r) { return reusableSlot(r->qps); }
int freeMrSlot(Registry* r) { return reusableSlot(r->mrs); }
int freeCqSlot(Registry* r) { return reusableSlot(r->cqs); }

// QP numbers are 24 bits on the wire; keys 32. Skipping 0 and numbers still in use keeps them
// unique among live objects after a wrap.
uint32_t nextQpn(Registry* r) {
  uint32_t qpn;
  do {
    qpn = r->nextQpn++ & 0xffffff;
  } while (qpn == 0 || findQp(r, qpn) >= 0);
  return qpn;
}

uint32_t nextKey(Registry* r) {
  uint32_t key;
  do {
    key = r->nextKey++;
  } while (key == 0 || findMr(r, key) >= 0);
  return key;
}

bool pushCompletion(CqSlot* cq, const ibv_wc& wc) {
  if (cq->tail - cq->head >= cq->capacity) return false;
  cq->entries[cq->tail % kCqDepth] = wc;
  cq->tail++;
  return true;
}

}  // namespace verbs_emu
