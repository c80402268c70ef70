#pragma once
// A client connection's strand, and its socket and timer bound to that strand by type.
//
// Named concretely on purpose: Asio's type-erased executor (behind tcp::socket, steady_timer and
// beast::tcp_stream) cannot hold a strand in its small buffer, so every operation that tracks
// work on it made a heap copy of it: about 13 allocations per request on the reactor's thread
// (bench/per_request.sh's malloc row went from 48 to 34 per hello request without them).

// clang-format off
#include <utility>  // before Asio: Boost 1.74's awaitable.hpp uses std::exchange without it
// clang-format on
#include <boost/asio/basic_stream_socket.hpp>
#include <boost/asio/basic_waitable_timer.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/strand.hpp>
#include <chrono>

namespace isolane {

using SessionStrand = boost::asio::strand<boost::asio::io_context::executor_type>;
using SessionSocket = boost::asio::basic_stream_socket<boost::asio::ip::tcp, SessionStrand>;
using SessionTimer =
    boost::asio::basic_waitable_timer<std::chrono::steady_clock,
                                      boost::asio::wait_traits<std::chrono::steady_clock>,
                                      SessionStrand>;

}  // namespace isolane
