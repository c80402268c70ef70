#include "ipc/status_page.h"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <new>

#include "ipc/shared_memory.h"

namespace isolane {

namespace {

constexpr std::size_t kPageBytes = (sizeof(StatusPage) + 4095) / 4096 * 4096;

}  // namespace

WorkerLoad readWorkerLoad(const StatusPage& page, std::chrono::steady_clock::time_point now,
                          std::chrono::milliseconds wedgeAfter) {
  WorkerLoad load;
  if (page.magic.load(std::memory_order_acquire) != StatusPage::kMagic) return load;
  load.published = true;
  load.threads = std::min(page.threads.load(std::memory_order_relaxed), StatusPage::kMaxThreads);
  std::uint32_t reserve = std::min(page.reserve.load(std::memory_order_relaxed), load.threads);
  std::uint32_t regular = std::max<std::uint32_t>(load.threads - reserve, 1);
  std::int64_t nowNs = steadyNs(now);
  for (std::uint32_t i = 0; i < load.threads; ++i) {
    const ThreadStatus& t = page.thread[i];
    std::int64_t since = t.turnSinceNs.load(std::memory_order_relaxed);
    // A time in the future (a lying or racing worker) counts as "just now".
    std::int64_t turnNs = since > 0 ? std::max<std::int64_t>(0, nowNs - since) : 0;
    auto turn =
        std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::nanoseconds(turnNs));
    if (inLongTurn(t, nowNs, wedgeAfter)) ++load.wedged;
    load.longestTurn = std::max(load.longestTurn, turn);
    std::int64_t passSince = t.passSinceNs.load(std::memory_order_relaxed);
    if (passSince > 0) {
      auto pass = std::chrono::duration_cast<std::chrono::milliseconds>(
          std::chrono::nanoseconds(std::max<std::int64_t>(0, nowNs - passSince)));
      // Working "since now" counts: a pass that began in the future has just begun.
      load.longestPass = std::max({load.longestPass, pass, std::chrono::milliseconds(1)});
    }
    // Clamped so that a sum over 64 threads cannot overflow.
    load.pending += std::min<std::uint64_t>(t.pending.load(std::memory_order_relaxed), 1u << 24);
    load.cpuNs += std::min<std::uint64_t>(t.cpuNs.load(std::memory_order_relaxed), 1ull << 56);
    std::int64_t delay = 0;
    std::int64_t at = t.standingDelayAtNs.load(std::memory_order_relaxed);
    if (at > 0 && nowNs - at <= 2 * std::chrono::nanoseconds(kDelayInterval).count()) {
      delay = std::clamp<std::int64_t>(t.standingDelayNs.load(std::memory_order_relaxed), 0,
                                       std::int64_t{86'400} * 1'000'000'000);
    }
    auto ms =
        std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::nanoseconds(delay));
    if (i < regular) load.standingDelay = i == 0 ? ms : std::min(load.standingDelay, ms);
  }
  return load;
}

std::uint64_t appTag(std::string_view app) {
  std::uint64_t h = 14695981039346656037ull;
  for (unsigned char c : app) {
    h ^= c;
    h *= 1099511628211ull;
  }
  return h == 0 ? 1 : h;
}

std::size_t wedgedAppTags(const StatusPage& page, std::chrono::steady_clock::time_point now,
                          std::chrono::milliseconds wedgeAfter,
                          std::uint64_t (&out)[StatusPage::kMaxThreads]) {
  if (page.magic.load(std::memory_order_acquire) != StatusPage::kMagic) return 0;
  std::uint32_t threads =
      std::min(page.threads.load(std::memory_order_relaxed), StatusPage::kMaxThreads);
  std::int64_t nowNs = steadyNs(now);
  std::size_t n = 0;
  for (std::uint32_t i = 0; i < threads; ++i) {
    const ThreadStatus& t = page.thread[i];
    if (!inLongTurn(t, nowNs, wedgeAfter)) continue;
    std::uint64_t tag = t.turnApp.load(std::memory_order_relaxed);
    if (tag != 0) out[n++] = tag;
  }
  return n;
}

Result<std::unique_ptr<StatusPageFile>> StatusPageFile::create() {
  Result<int> fd = makeSealedMemory("isolane-status", kPageBytes);
  if (!fd) return Error{fd.error()};
  // Zeroed by the kernel: every atomic starts at 0, which is its constructed value.
  Result<void*> at = mapSharedMemory(fd.value(), kPageBytes, PROT_READ);
  if (!at) {
    close(fd.value());
    return Error{"mapping the status page: " + at.error()};
  }
  return std::unique_ptr<StatusPageFile>(
      new StatusPageFile(fd.value(), static_cast<const StatusPage*>(at.value())));
}

StatusPageFile::~StatusPageFile() {
  closeFd();
  munmap(const_cast<StatusPage*>(page_), kPageBytes);
}

void StatusPageFile::closeFd() {
  if (fd_ >= 0) close(fd_);
  fd_ = -1;
}

Result<StatusPage*> mapStatusPage(int fd) {
  Result<void*> at = mapInheritedMemory(fd, kPageBytes, "status page");
  if (!at) return Error{at.error()};
  // The bytes are zeros, which is what each atomic is constructed to: start their lifetimes.
  return new (at.value()) StatusPage;
}

}  // namespace isolane
