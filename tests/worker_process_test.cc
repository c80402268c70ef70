// The master's end of one worker process (pool/worker_process.h), on a reactor of the test's:
// frames and the death arrive on the reactor's thread, a protocol error kills and reaps the
// child, and the destructor ends its child wherever it runs, leaving no zombie.

#include "pool/worker_process.h"

#include <gtest/gtest.h>
#include <signal.h>

#include <atomic>
#include <boost/asio/post.hpp>
#include <cerrno>
#include <chrono>
#include <future>
#include <memory>
#include <string>
#include <thread>

#include "ipc/frame_codec.h"
#include "ipc/reactor.h"

namespace isolane {
namespace {

using namespace std::chrono_literals;

struct Seen {
  std::atomic<int> frames{0};
  std::atomic<bool> framesOffTheReactor{false};
  std::promise<std::string> death;
  std::atomic<bool> deathOnTheReactor{false};
};

bool onTheReactor(Reactor& reactor) {
  return reactor.io().get_executor().running_in_this_thread();
}

Result<std::unique_ptr<WorkerProcess>> spawnOn(Reactor& reactor, std::vector<std::string> argv,
                                               Seen& seen) {
  return WorkerProcess::spawn(
      reactor.io(), argv, kDefaultMaxFrameBytes,
      [&](const wire::Frame&, std::string_view) {
        ++seen.frames;
        if (!onTheReactor(reactor)) seen.framesOffTheReactor = true;
      },
      [&](const std::string& why) {
        seen.deathOnTheReactor = onTheReactor(reactor);
        seen.death.set_value(why);
      });
}

// Gone and reaped: not even a zombie is left of it.
bool reaped(pid_t pid) { return ::kill(pid, 0) != 0 && errno == ESRCH; }

TEST(WorkerProcess, FramesAndTheDeathArriveOnTheReactorItWasGiven) {
  Reactor reactor(1, "test-io");
  Seen seen;
  auto died = seen.death.get_future();
  // "exit": it says hello, then exits at once (status 7).
  auto proc = spawnOn(reactor, {FAKE_WORKER, "exit"}, seen);
  ASSERT_TRUE(proc) << proc.error();
  ASSERT_EQ(died.wait_for(20s), std::future_status::ready);
  EXPECT_EQ(died.get(), "exited with status 7");  // the fake worker's own
  EXPECT_EQ(seen.frames, 1) << "its hello";
  EXPECT_FALSE(seen.framesOffTheReactor);
  EXPECT_TRUE(seen.deathOnTheReactor);
  EXPECT_FALSE((*proc)->alive());
  EXPECT_TRUE(reaped((*proc)->pid()));
}

TEST(WorkerProcess, AFrameOverTheCeilingKillsTheChildAndSaysWhy) {
  Reactor reactor(1, "test-io");
  Seen seen;
  auto died = seen.death.get_future();
  // A length prefix of 4 GiB, then it would sleep: the master kills it.
  auto proc =
      spawnOn(reactor, {"/bin/sh", "-c", "printf '\\377\\377\\377\\377' >&3; sleep 30"}, seen);
  ASSERT_TRUE(proc) << proc.error();
  ASSERT_EQ(died.wait_for(20s), std::future_status::ready);
  std::string why = died.get();
  EXPECT_NE(why.find("protocol error"), std::string::npos) << why;
  EXPECT_NE(why.find("killed by signal SIGKILL"), std::string::npos) << why;
  EXPECT_TRUE(reaped((*proc)->pid()));
}

TEST(WorkerProcess, TheDestructorEndsAndReapsTheChildWithNoDeathCallback) {
  Reactor reactor(1, "test-io");
  Seen seen;
  auto proc = spawnOn(reactor, {"/bin/sh", "-c", "sleep 30"}, seen);
  ASSERT_TRUE(proc) << proc.error();
  pid_t pid = (*proc)->pid();
  auto start = std::chrono::steady_clock::now();
  proc.value().reset();
  EXPECT_LT(std::chrono::steady_clock::now() - start, 10s);
  EXPECT_TRUE(reaped(pid)) << "the destructor returns once its end was handled";
  reactor.stop();
  EXPECT_EQ(seen.death.get_future().wait_for(0s), std::future_status::timeout)
      << "silenced: its owner is going away";
}

// A last reference may drop inside a callback: the destructor cannot wait for the reactor there
// (it is the reactor), so it silences the callbacks and the reactor finishes the end alone.
TEST(WorkerProcess, DestroyedOnTheReactorItDoesNotWaitForItself) {
  Reactor reactor(1, "test-io");
  Seen seen;
  auto proc = spawnOn(reactor, {"/bin/sh", "-c", "sleep 30"}, seen);
  ASSERT_TRUE(proc) << proc.error();
  pid_t pid = proc.value()->pid();
  std::shared_ptr<WorkerProcess> held(std::move(proc.value()));
  std::promise<void> destroyed;
  boost::asio::post(reactor.io(), [&] {
    held.reset();
    destroyed.set_value();
  });
  ASSERT_EQ(destroyed.get_future().wait_for(10s), std::future_status::ready);
  for (int i = 0; i < 1000 && !reaped(pid); ++i) std::this_thread::sleep_for(10ms);
  EXPECT_TRUE(reaped(pid));
}

}  // namespace
}  // namespace isolane
