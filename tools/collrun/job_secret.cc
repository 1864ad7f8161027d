#include "job_secret.h"

#include <sys/stat.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <fstream>

#include "common/random.h"

namespace collrun {
namespace {

bool isSet(const char* name) {
  const char* value = getenv(name);
  return value != nullptr && *value != '\0';
}

// The first line of FILE without surrounding whitespace; false (with a message) when unreadable or empty.
bool readSecretFile(const std::string& path, std::string* secret) {
  std::ifstream file(path);
  std::string line;
  if (!file || !std::getline(file, line)) {
    fprintf(stderr, "collrun: error: --secret-file %s: cannot read it (%s)\n", path.c_str(),
            file ? "empty" : strerror(errno));
    return false;
  }
  const char* blanks = " \t\r\n";
  const size_t first = line.find_first_not_of(blanks);
  if (first == std::string::npos) {
    fprintf(stderr, "collrun: error: --secret-file %s: its first line is empty\n", path.c_str());
    return false;
  }
  *secret = line.substr(first, line.find_last_not_of(blanks) - first + 1);
  struct stat info {};
  if (stat(path.c_str(), &info) == 0 && (info.st_mode & (S_IRWXG | S_IRWXO)) != 0) {
    fprintf(stderr, "collrun: warning: --secret-file %s is readable by others (mode %03o): chmod 600 it\n",
            path.c_str(), static_cast<unsigned>(info.st_mode & 0777));
  }
  return true;
}

}  // namespace

std::string randomHexSecret() {
  unsigned char bytes[32];
  try {
    coll::fillRandom(bytes, sizeof(bytes), "collrun's store secret");
  } catch (const std::exception&) {
    return "";
  }
  static const char kHex[] = "0123456789abcdef";
  std::string hex;
  for (unsigned char b : bytes) {
    hex += kHex[b >> 4];
    hex += kHex[b & 15];
  }
  return hex;
}

bool chooseJobSecret(const Options& opts, std::string* secret) {
  secret->clear();
  if (!opts.secretFile.empty()) return readSecretFile(opts.secretFile, secret);
  if (isSet("COLL_STORE_SECRET")) return true;  // the ranks inherit it
  if (opts.nnodes == 1) {
    *secret = randomHexSecret();
    if (secret->empty()) fprintf(stderr, "collrun: warning: getrandom failed; COLL_STORE_SECRET not set\n");
    return true;
  }
  const char* optOut = getenv("COLL_STORE_ALLOW_NO_SECRET");
  if (optOut != nullptr && strcmp(optOut, "1") == 0) return true;  // rank 0 warns
  fprintf(stderr,
          "collrun: error: --nnodes %d: the nodes need a shared secret, or anyone who can reach %s:%d can join "
          "the job. Make one (collrun --new-secret > FILE; chmod 600 FILE), copy FILE to every node and pass "
          "--secret-file FILE to every node's collrun, or export the same COLL_STORE_SECRET on every node. "
          "COLL_STORE_ALLOW_NO_SECRET=1 runs without authentication.\n",
          opts.nnodes, opts.masterAddr.c_str(), opts.masterPort);
  return false;
}

}  // namespace collrun
