#include "tagged_output.h"

#include <unistd.h>

#include <cerrno>

namespace collrun {
namespace {

// A rank that prints without newlines still gets its output through, in pieces of this size.
constexpr size_t kMaxPending = 64 * 1024;

void writeAll(int fd, const std::string& data) {
  size_t done = 0;
  while (done < data.size()) {
    ssize_t n = write(fd, data.data() + done, data.size() - done);
    if (n < 0) {
      if (errno == EINTR || errno == EAGAIN) continue;
      return;  // our stdout is gone (EPIPE): drop the output, keep supervising
    }
    done += static_cast<size_t>(n);
  }
}

}  // namespace

void TaggedOutput::add(int rank, int readFd, int destFd) { streams_.push_back({rank, readFd, destFd, {}}); }

void TaggedOutput::appendPollFds(std::vector<pollfd>* fds) const {
  for (const auto& s : streams_) {
    if (s.fd >= 0) fds->push_back({s.fd, POLLIN, 0});
  }
}

void TaggedOutput::handle(const std::vector<pollfd>& fds, size_t first) {
  size_t k = first;
  for (auto& s : streams_) {
    if (s.fd < 0) continue;
    if (k >= fds.size()) break;
    const pollfd& p = fds[k++];
    if (p.revents & (POLLIN | POLLHUP | POLLERR | POLLNVAL)) readFrom(&s);
  }
}

bool TaggedOutput::anyOpen() const {
  for (const auto& s : streams_) {
    if (s.fd >= 0) return true;
  }
  return false;
}

void TaggedOutput::flushAndCloseAll() {
  for (auto& s : streams_) {
    if (s.fd < 0) continue;
    emitLines(&s, true);
    close(&s);
  }
}

void TaggedOutput::readFrom(Stream* s) {
  char buf[16384];
  ssize_t n = read(s->fd, buf, sizeof(buf));
  if (n < 0 && (errno == EINTR || errno == EAGAIN)) return;
  if (n <= 0) {
    emitLines(s, true);
    close(s);
    return;
  }
  s->pending.append(buf, static_cast<size_t>(n));
  emitLines(s, s->pending.size() >= kMaxPending);
}

void TaggedOutput::emitLines(Stream* s, bool flushPartial) {
  const std::string prefix = "[" + std::to_string(s->rank) + "] ";
  std::string out;
  size_t start = 0;
  for (size_t nl; (nl = s->pending.find('\n', start)) != std::string::npos; start = nl + 1) {
    out += prefix;
    out.append(s->pending, start, nl + 1 - start);
  }
  s->pending.erase(0, start);
  if (flushPartial && !s->pending.empty()) {
    out += prefix + s->pending + "\n";
    s->pending.clear();
  }
  if (!out.empty()) writeAll(s->destFd, out);
}

void TaggedOutput::close(Stream* s) {
  ::close(s->fd);
  s->fd = -1;
}

}  // namespace collrun
