#pragma once
// A loopback upstream for outbound-fetch tests. Answers every request after `delay` with
// "upstream <path>", one thread per connection, and counts what it sees: requests, and clients
// that closed the connection before it answered. `/late-body`: the head at once, the body 300 ms
// later (a reader that asks for the body meanwhile waits for it).

#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace isolane::test {

class Upstream {
 public:
  explicit Upstream(std::chrono::milliseconds delay) : delay_(delay) {
    fd_ = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    int one = 1;
    setsockopt(fd_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    bind(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr);
    listen(fd_, 1024);
    socklen_t len = sizeof addr;
    getsockname(fd_, reinterpret_cast<sockaddr*>(&addr), &len);
    port_ = ntohs(addr.sin_port);
    acceptor_ = std::thread([this] { acceptLoop(); });
  }
  ~Upstream() {
    stopping_ = true;
    shutdown(fd_, SHUT_RDWR);
    close(fd_);
    acceptor_.join();
    std::lock_guard<std::mutex> lock(mutex_);
    for (auto& t : workers_) t.join();
  }

  std::uint16_t port() const { return port_; }
  std::string base() const { return "http://127.0.0.1:" + std::to_string(port_); }
  int requests() const { return requests_; }
  int closedEarly() const { return closedEarly_; }
  int open() const { return open_; }
  std::vector<std::string> paths() {
    std::lock_guard<std::mutex> lock(mutex_);
    return paths_;
  }

 private:
  void acceptLoop() {
    while (!stopping_) {
      int c = accept4(fd_, nullptr, nullptr, SOCK_CLOEXEC);
      if (c < 0) continue;
      std::lock_guard<std::mutex> lock(mutex_);
      workers_.emplace_back([this, c] { serve(c); });
    }
  }

  void serve(int c) {
    ++open_;
    std::string in;
    char buf[4096];
    while (in.find("\r\n\r\n") == std::string::npos) {
      ssize_t n = recv(c, buf, sizeof buf, 0);
      if (n <= 0) {
        --open_;
        close(c);
        return;
      }
      in.append(buf, static_cast<std::size_t>(n));
    }
    ++requests_;
    std::string path = in.substr(in.find(' ') + 1);
    path = path.substr(0, path.find(' '));
    {
      std::lock_guard<std::mutex> lock(mutex_);
      paths_.push_back(path);
    }
    // Wait out the delay, noticing a client that hangs up meanwhile.
    pollfd p{c, POLLIN, 0};
    if (poll(&p, 1, static_cast<int>(delay_.count())) > 0) {
      ssize_t n = recv(c, buf, sizeof buf, MSG_PEEK);
      if (n <= 0) {
        ++closedEarly_;
        --open_;
        close(c);
        return;
      }
    }
    std::string body = "upstream " + path;
    std::string out = "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: " +
                      std::to_string(body.size()) + "\r\nConnection: close\r\n\r\n";
    if (path == "/late-body") {
      send(c, out.data(), out.size(), MSG_NOSIGNAL);
      std::this_thread::sleep_for(std::chrono::milliseconds(300));
      out.clear();
    }
    out += body;
    send(c, out.data(), out.size(), MSG_NOSIGNAL);
    --open_;
    close(c);
  }

  std::chrono::milliseconds delay_;
  int fd_ = -1;
  std::uint16_t port_ = 0;
  std::atomic<bool> stopping_{false};
  std::atomic<int> requests_{0}, closedEarly_{0}, open_{0};
  std::mutex mutex_;  // guards workers_, paths_
  std::vector<std::thread> workers_;
  std::vector<std::string> paths_;
  std::thread acceptor_;
};

}  // namespace isolane::test
