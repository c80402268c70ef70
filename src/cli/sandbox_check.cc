#include "cli/sandbox_check.h"

#include <chrono>
#include <future>
#include <iostream>
#include <memory>
#include <string>

#include "ipc/frame_codec.h"
#include "ipc/reactor.h"
#include "pool/worker_process.h"
#include "server/engine_command.h"

namespace isolane {

int sandboxCheck() {
  auto died = std::make_shared<std::promise<std::string>>();
  std::future<std::string> reason = died->get_future();
  Reactor reactor(1, "isolane-wio");
  auto worker = WorkerProcess::spawn(
      reactor.io(), engineCommand({"worker", "--probe-sandbox", "true"}), kDefaultMaxFrameBytes,
      [](const wire::Frame&, std::string_view) {}, [died](const std::string& why) { died->set_value(why); });
  if (!worker) {
    std::cerr << "isolane sandbox-check: " << worker.error() << "\n";
    return 2;
  }
  if (reason.wait_for(std::chrono::seconds(60)) != std::future_status::ready) {
    std::cerr << "isolane sandbox-check: the worker did not finish its probes within 60 s\n";
    return 2;
  }
  std::string why = reason.get();
  if (why == "exited with status 0") {
    std::cout << "sandbox-check: every probe held\n";
    return 0;
  }
  std::cout << "sandbox-check: FAILED (the worker " << why
            << "): a line above with \"held\":false names what got through\n";
  return 1;
}

}  // namespace isolane
