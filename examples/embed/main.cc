// A C++ program that runs JavaScript apps with isolane, without HTTP: isolane::Pool
// (include/isolane/pool.h). Built by `make` as build/examples/embed; run it with the path of an
// app module, e.g.
//   build/examples/embed examples/hello/app.js /hello
// It prints the status, the body, and a CPU-limited request's typed error.

#include <isolane/pool.h>

#include <filesystem>
#include <iostream>

int main(int argc, char** argv) {
  if (argc < 2) {
    std::cerr << "usage: embed APP.js [PATH]\n";
    return 2;
  }
  isolane::PoolConfig config;
  config.workers = 1;
  config.requestCpu = std::chrono::milliseconds(200);
  isolane::Pool pool(config);
  std::string module = std::filesystem::absolute(argv[1]).string();
  if (std::string error = pool.start({{"app", module, {{"GREETING", "hi"}}, {}}}); !error.empty()) {
    std::cerr << "embed: " << error << "\n";
    return 1;
  }
  isolane::PoolRequest request;
  request.app = "app";
  request.url = std::string("http://localhost") + (argc > 2 ? argv[2] : "/");
  isolane::PoolResponse response = pool.fetch(request);
  std::cout << "status " << response.status << "\n";
  if (!response.error.empty()) std::cout << "error " << response.error << "\n";
  std::cout << response.body << "\n";
  pool.stop();
  return response.error.empty() ? 0 : 3;
}
