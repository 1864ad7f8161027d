#include "bootstrap/host_secret.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <thread>

#include "common/error.h"
#include "common/fd.h"
#include "common/logging.h"
#include "common/random.h"

namespace coll {
namespace bootstrap {
namespace {

constexpr size_t kSecretTextBytes = 2 * sizeof(Secret) + 1;  // hex digits and a newline
const char* const kInstead = "; or give every rank the same COLL_STORE_SECRET (docs/launch.md)";

int hexDigit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

std::string hexOf(const uint8_t* data, size_t bytes) {
  static const char kDigits[] = "0123456789abcdef";
  std::string text;
  for (size_t i = 0; i < bytes; ++i) {
    text += kDigits[data[i] >> 4];
    text += kDigits[data[i] & 15];
  }
  return text;
}

std::string folderOf(const std::string& path) { return path.substr(0, path.rfind('/')); }

// The network namespace's inode: ranks in another namespace of this host (a container) cannot
// reach this one's loopback, and must not share its secret file either.
std::string networkNamespace() {
  char link[64] = {};
  const ssize_t n = readlink("/proc/self/ns/net", link, sizeof(link) - 1);
  std::string digits;
  for (ssize_t i = 0; i < n; ++i)
    if (link[i] >= '0' && link[i] <= '9') digits += link[i];
  return digits.empty() ? "0" : digits;
}

// Throws unless `st` (of `what` at `path`) belongs to this user alone.
void requireOwnedPrivately(const struct stat& st, const std::string& path, const char* what, bool folder) {
  const bool rightKind = folder ? S_ISDIR(st.st_mode) : S_ISREG(st.st_mode);
  if (rightKind && st.st_uid == geteuid() && (st.st_mode & 077) == 0) return;
  throwError(collInvalidUsage,
             "collCommInitFromEnv: %s %s is not a %s that only this user (uid %u) can use (owner uid %u, mode %03o), "
             "so the one-host rendezvous secret cannot be kept there: remove it, or point TMPDIR elsewhere%s",
             what, path.c_str(), folder ? "folder" : "file", static_cast<unsigned>(geteuid()),
             static_cast<unsigned>(st.st_uid), static_cast<unsigned>(st.st_mode & 0777), kInstead);
}

void checkFolder(const std::string& folder) {
  struct stat st {};
  if (lstat(folder.c_str(), &st) != 0)
    throwSystemError(
        formatString("collCommInitFromEnv: lstat(%s) for the one-host rendezvous secret", folder.c_str()).c_str());
  requireOwnedPrivately(st, folder, "the folder", true);
}

void makeFolder(const std::string& folder) {
  if (mkdir(folder.c_str(), 0700) != 0 && errno != EEXIST)
    throwSystemError(
        formatString("collCommInitFromEnv: mkdir(%s) for the one-host rendezvous secret", folder.c_str()).c_str());
  checkFolder(folder);
}

// The file's secret, or std::nullopt while it does not exist yet.
std::optional<Secret> tryRead(const std::string& path) {
  Fd fd(open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC));
  if (!fd.valid()) {
    if (errno == ENOENT) return std::nullopt;
    throwSystemError(
        formatString("collCommInitFromEnv: open(%s), the one-host rendezvous secret", path.c_str()).c_str());
  }
  struct stat st {};
  if (fstat(fd.get(), &st) != 0) throwSystemError("collCommInitFromEnv: fstat() of the one-host rendezvous secret");
  requireOwnedPrivately(st, path, "the secret file", false);
  char text[kSecretTextBytes + 1] = {};
  const ssize_t n = read(fd.get(), text, sizeof(text));
  std::optional<Secret> secret = parseHostSecret(std::string(text, n > 0 ? static_cast<size_t>(n) : 0));
  if (!secret)
    throwError(collInvalidUsage,
               "collCommInitFromEnv: the one-host rendezvous secret file %s holds %zd bytes that are not 64 "
               "hexadecimal digits and a newline: remove it%s",
               path.c_str(), n, kInstead);
  return secret;
}

}  // namespace

std::optional<Secret> parseHostSecret(const std::string& text) {
  if (text.size() != kSecretTextBytes || text.back() != '\n') return std::nullopt;
  Secret secret{};
  for (size_t i = 0; i < secret.size(); ++i) {
    const int high = hexDigit(text[2 * i]);
    const int low = hexDigit(text[2 * i + 1]);
    if (high < 0 || low < 0) return std::nullopt;
    secret[i] = static_cast<uint8_t>(high << 4 | low);
  }
  return secret;
}

std::string formatHostSecret(const Secret& secret) { return hexOf(secret.data(), secret.size()) + "\n"; }

std::string hostSecretPath(int port) {
  const char* tmp = getenv("TMPDIR");
  const std::string base = tmp != nullptr && *tmp != '\0' ? tmp : "/tmp";
  return formatString("%s/libcollective-%u/rendezvous-%s-%d.secret", base.c_str(), static_cast<unsigned>(geteuid()),
                      networkNamespace().c_str(), port);
}

HostSecretFile::HostSecretFile(std::string path, const Secret& secret) : path_(std::move(path)) {
  makeFolder(folderOf(path_));
  uint8_t name[8];
  fillRandom(name, sizeof(name), "the one-host secret file's temporary name");
  const std::string temporary = folderOf(path_) + "/.new-" + hexOf(name, sizeof(name));
  Fd fd(open(temporary.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600));
  if (!fd.valid())
    throwSystemError(
        formatString("collCommInitFromEnv: open(%s) for the one-host rendezvous secret", temporary.c_str()).c_str());
  const std::string text = formatHostSecret(secret);
  const bool written = write(fd.get(), text.data(), text.size()) == static_cast<ssize_t>(text.size());
  // Renamed into place whole: a rank never reads half a secret.
  if (!written || rename(temporary.c_str(), path_.c_str()) != 0) {
    const int error = errno;
    unlink(temporary.c_str());
    errno = error;
    throwSystemError(
        formatString("collCommInitFromEnv: writing the one-host rendezvous secret to %s", path_.c_str()).c_str());
  }
  COLL_INFO(kBootstrap, "one-host job: the rendezvous secret is in %s (mode 0600)", path_.c_str());
}

HostSecretFile::~HostSecretFile() { unlink(path_.c_str()); }

Secret readHostSecret(const std::string& path, Deadline deadline) {
  const auto start = Clock::now();
  for (;;) {
    struct stat st {};
    if (lstat(folderOf(path).c_str(), &st) == 0) {
      requireOwnedPrivately(st, folderOf(path), "the folder", true);
      if (std::optional<Secret> secret = tryRead(path)) return *secret;
    }
    if (Clock::now() >= deadline)
      throwError(collTimeout,
                 "collCommInitFromEnv: no one-host rendezvous secret in %s after %lld ms: rank 0 writes it once its "
                 "store listens (is rank 0 running, on this host, as LOCAL_WORLD_SIZE=WORLD_SIZE says?)%s",
                 path.c_str(), elapsedMs(start, Clock::now()), kInstead);
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

}  // namespace bootstrap
}  // namespace coll
