#pragma once
// An in-memory worker for the pools (pool/worker_channel.h): the test plays the worker. The pool
// spawns one through FakeWorkers::spawner(); the test reads what the pool sent it (decoded) and
// answers with frames, or makes it die, on its own thread, with no process and no sleep.
//
// Thread rule: FakeEnd is safe from any thread; say() and die() must not be called with a pool's
// lock held (they call the pool, as a reader thread would).

#include <signal.h>

#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "ipc/frame_codec.h"
#include "pool/worker_channel.h"

namespace isolane::test {

// What the pool sent a fake worker, decoded.
struct SentFrame {
  wire::Message type = wire::Message::NONE;
  std::uint64_t seq = 0;   // a Heartbeat's
  std::string app;         // a LoadApp's
  std::uint64_t id = 0;    // an Execute's, a Request's, a Cancel's
  std::size_t thread = 0;  // the executor thread whose socket it went on
};

// The test's end of one fake worker, shared with the channel the pool holds.
class FakeEnd {
 public:
  FakeEnd(WorkerSpawn spawn, pid_t pid) : spawn_(std::move(spawn)), pid_(pid) {}

  pid_t pid() const { return pid_; }
  const std::vector<std::string>& argv() const { return spawn_.argv; }
  std::size_t sockets() const { return spawn_.sockets; }

  // The frames the pool sent since the last call.
  std::vector<SentFrame> take() {
    std::deque<std::pair<std::size_t, std::string>> raw;
    {
      std::lock_guard lock(mu_);
      raw.swap(inbox_);
    }
    std::vector<SentFrame> out;
    for (const auto& [thread, bytes] : raw) {
      eachFrame(bytes, [&](const wire::Frame& f, std::string_view) {
        SentFrame s;
        s.type = f.message_type();
        s.thread = thread;
        if (auto* hb = f.message_as_Heartbeat()) s.seq = hb->seq();
        if (auto* load = f.message_as_LoadApp()) s.app = load->name() ? load->name()->str() : "";
        if (auto* exec = f.message_as_Execute()) s.id = exec->id();
        if (auto* request = f.message_as_Request()) s.id = request->id();
        if (auto* cancel = f.message_as_Cancel()) s.id = cancel->id();
        out.push_back(std::move(s));
      });
    }
    return out;
  }

  // The worker says `frame` (as its reader thread would hand it to the pool).
  void say(const Result<std::string>& frame) { eachFrame(frame.value(), spawn_.onFrame); }
  // Answers what the pool sent: each LoadApp with a successful AppLoaded, each Heartbeat with its
  // answer. Returns the frames it saw.
  std::vector<SentFrame> answer() {
    std::vector<SentFrame> sent = take();
    for (const SentFrame& s : sent) {
      if (s.type == wire::Message::LoadApp) say(encodeAppLoaded(s.app, true, "", kMax));
      if (s.type == wire::Message::Heartbeat) {
        wire::HeartbeatAckT ack;
        ack.seq = s.seq;
        say(encodeHeartbeatAck(ack, kMax));
      }
    }
    return sent;
  }

  // Its process ends (its reader thread's last call).
  void die(const std::string& reason) {
    {
      std::lock_guard lock(mu_);
      if (dead_) return;
      exited_ = dead_ = true;
    }
    exitCv_.notify_all();
    spawn_.onDeath(reason);
  }
  // The signal the pool sent it (0: none).
  int killedBy() const {
    std::lock_guard lock(mu_);
    return killedBy_;
  }
  bool shutdownSent() const {
    std::lock_guard lock(mu_);
    return shutdownSent_;
  }

  // The channel's side.
  Status received(const std::string& frame, std::size_t thread = 0) {
    std::lock_guard lock(mu_);
    if (exited_) return Error{"the worker is gone"};
    inbox_.emplace_back(thread < spawn_.sockets ? thread : 0, frame);
    eachFrame(frame, [&](const wire::Frame& f, std::string_view) {
      shutdownSent_ |= f.message_type() == wire::Message::Shutdown;
    });
    return Status::success();
  }
  void signal(int sig) {
    {
      std::lock_guard lock(mu_);
      if (exited_) return;
      killedBy_ = sig;
      if (sig == SIGKILL) exited_ = true;  // (its death is the test's to deliver: die())
    }
    exitCv_.notify_all();
  }
  bool alive() const {
    std::lock_guard lock(mu_);
    return !exited_;
  }
  bool waitExit(std::chrono::steady_clock::time_point deadline) {
    std::unique_lock lock(mu_);
    // A fake told to shut down exits at once, as a well-behaved worker would.
    if (shutdownSent_) exited_ = true;
    if (deadline == std::chrono::steady_clock::time_point::max()) {
      exitCv_.wait(lock, [&] { return exited_; });
      return true;
    }
    return exitCv_.wait_until(lock, deadline, [&] { return exited_; });
  }

  static constexpr std::size_t kMax = kDefaultMaxFrameBytes;

 private:
  // Calls `fn` with each whole frame in `bytes` (verified, as the pool's reader does).
  template <typename Fn>
  void eachFrame(const std::string& bytes, Fn&& fn) const {
    FrameReader reader(spawn_.maxFrameBytes);
    reader.append(bytes.data(), bytes.size());
    const wire::Frame* f = nullptr;
    std::string error;
    while (reader.next(&f, &error) == FrameReader::Next::kFrame) fn(*f, reader.trailer());
  }

  WorkerSpawn spawn_;
  const pid_t pid_;
  mutable std::mutex mu_;
  std::condition_variable exitCv_;
  std::deque<std::pair<std::size_t, std::string>> inbox_;  // (thread, frame)
  int killedBy_ = 0;
  bool exited_ = false, dead_ = false, shutdownSent_ = false;
};

class FakeChannel final : public WorkerChannel {
 public:
  explicit FakeChannel(std::shared_ptr<FakeEnd> end) : end_(std::move(end)) {}
  Status send(std::string frame) override { return end_->received(frame); }
  Status sendTo(std::size_t thread, std::string frame) override {
    return end_->received(frame, thread);
  }
  Status sendTo(std::size_t thread, std::string head, std::string trailer) override {
    return end_->received(appendTrailer(std::move(head), trailer).value(), thread);
  }
  void kill(int signal) override { end_->signal(signal); }
  pid_t pid() const override { return end_->pid(); }
  bool alive() const override { return end_->alive(); }
  bool waitExit(std::chrono::steady_clock::time_point deadline) override {
    return end_->waitExit(deadline);
  }

 private:
  std::shared_ptr<FakeEnd> end_;
};

// Every fake worker a pool spawned, in order.
class FakeWorkers {
 public:
  WorkerSpawner spawner() {
    return [this](WorkerSpawn spawn) -> Result<std::unique_ptr<WorkerChannel>> {
      std::lock_guard lock(mu_);
      if (failSpawns_) return Error{"cannot start worker: no such file (a test's)"};
      auto end =
          std::make_shared<FakeEnd>(std::move(spawn), 1000 + static_cast<pid_t>(ends_.size()));
      ends_.push_back(end);
      return std::unique_ptr<WorkerChannel>(std::make_unique<FakeChannel>(end));
    };
  }
  std::size_t count() const {
    std::lock_guard lock(mu_);
    return ends_.size();
  }
  std::shared_ptr<FakeEnd> at(std::size_t i) const {
    std::lock_guard lock(mu_);
    return ends_.at(i);
  }
  std::shared_ptr<FakeEnd> last() const {
    std::lock_guard lock(mu_);
    return ends_.back();
  }
  void failSpawns(bool fail) {
    std::lock_guard lock(mu_);
    failSpawns_ = fail;
  }

 private:
  mutable std::mutex mu_;
  std::vector<std::shared_ptr<FakeEnd>> ends_;
  bool failSpawns_ = false;
};

}  // namespace isolane::test
