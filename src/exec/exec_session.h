#pragma once
// The /v1/session WebSocket of `isolane executor`: many executions at once, one JSON object per
// message (see the README). Client: execute, tool_result, tool_error. Server: tool_call, result,
// error. A malformed message gets an `error` naming what is wrong and never touches the other
// executions of the socket. When the socket closes, tool calls waiting on it fail inside their
// guests, whose executions then settle on their own.
//
// Thread rule: a session runs on its strand; pool callbacks post to it.

#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http/message.hpp>
#include <boost/beast/http/string_body.hpp>
#include <memory>

#include "exec/exec_daemon.h"

namespace isolane {

// Takes over `stream` after the HTTP upgrade request `upgrade` and runs the session.
void runExecSession(std::shared_ptr<ExecDaemon::Shared> shared, boost::beast::tcp_stream stream,
                    boost::beast::http::request<boost::beast::http::string_body> upgrade);

}  // namespace isolane
