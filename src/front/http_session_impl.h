#pragma once
// What the files of HttpSession's implementation (http_session.cc, http_session_answer.cc,
// http_session_stream.cc, http_session_upload.cc) share beyond the class: the short names of
// Boost's namespaces they are written with. Included by those files only.

#include "front/http_session.h"

namespace isolane {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;

}  // namespace isolane
